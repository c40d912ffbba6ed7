"""Rocchio expansion (the CMR 'qe' system) on the tiny index: what it adds and how the ranking moves."""

from __future__ import annotations

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic
from hybrid.retrieval.rocchio import RocchioBM25
from hybrid.retrieval.sparse import MultiFieldBM25

DOC = "mention=1.0,mention:context=0.1"  # the CMR 'doc' system


def checkin_query(sparse_index) -> Topic:
    """'checked into' in Lindsay Lohan's sentence (document c3)."""
    text = sparse_index.passage_text("c3:0")
    return Topic(qid="q", text=text, start=text.index("checked into"), end=text.index(" a rehab"), doc_id="c3",
                 passage_id="c3:0", kind="event")


def test_feedback_adds_the_top_candidates_field_terms(sparse_index):
    topic = checkin_query(sparse_index)
    base = MultiFieldBM25(sparse_index, DOC, same_kind=False)([topic])["q"]
    # The doc system finds only Tara Reid's 'checked into' (a1:0): 'into' is a stop word.
    assert [h.docid for h in base] == ["a1:0"]
    qe = RocchioBM25(sparse_index, DOC, same_kind=False, fb_docs=1, fb_terms=20)
    run = qe([topic])["q"]
    terms = {(t.field, t.term): t.weight for t in qe.expansions["q"]}
    # Feedback = the matched mention of a1:0 ('checked into') and its sentence as context.
    assert ("mention", "check") in terms and ("context", "reid") in terms and ("context", "tara") in terms
    assert all(field in ("mention", "context") for field, _ in terms)
    # The heaviest term gets expansion_weight x the system's weight for its field; context terms <= 0.1 x 0.1.
    assert max(terms.values()) == pytest.approx(0.1)
    assert all(w <= 0.01 + 1e-12 for (field, _), w in terms.items() if field == "context")
    # Expansion terms retrieve new candidates: Tara Reid's other document (b2) now appears, the sentence
    # with both 'tara' and 'reid' in its context above the one with 'reid' only; the feedback passage stays first.
    assert [h.docid for h in run] == ["a1:0", "b2:0", "b2:1"]
    assert run[0].score > 0.9 * base[0].score  # 0.9 x the original score plus its own expansion matches
    assert all(not h.docid.startswith("c3:") for h in run)  # own document still excluded


def test_zero_expansion_weight_is_the_base_system(sparse_index, data_dir):
    from hybrid.core.formats import read_topics

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    base = MultiFieldBM25(sparse_index, DOC, same_kind=False)(topics)
    qe = RocchioBM25(sparse_index, DOC, same_kind=False, expansion_weight=0.0)
    run = qe(topics)
    assert all(v == [] for v in qe.expansions.values())
    for topic in topics:  # the second pass searches the parent's own query, through its pyjnius path
        assert [h.docid for h in run[topic.qid]] == [h.docid for h in base[topic.qid]]
        assert [h.score for h in run[topic.qid]] == pytest.approx([h.score for h in base[topic.qid]], rel=1e-5)


def test_expansion_is_deterministic_and_respects_the_kind_filter(sparse_index):
    topic = checkin_query(sparse_index)
    a = RocchioBM25(sparse_index, DOC, same_kind=True, fb_docs=2, fb_terms=5)
    b = RocchioBM25(sparse_index, DOC, same_kind=True, fb_docs=2, fb_terms=5)
    run_a, run_b = a([topic]), b([topic])
    assert a.expansions == b.expansions and len(a.expansions["q"]) <= 5
    assert [(h.docid, h.mention_id) for h in run_a["q"]] == [(h.docid, h.mention_id) for h in run_b["q"]]
    # With the kind filter on, every hit's matched mention is an event (or of unknown kind).
    for hit in run_a["q"]:
        record = next(r for r in sparse_index.mention_records(hit.docid) if r.start == hit.mention_start)
        assert record.kind in ("event", None)


def test_bad_settings_are_config_errors(sparse_index):
    with pytest.raises(ConfigError, match="fb_docs"):
        RocchioBM25(sparse_index, DOC, fb_docs=0)
    with pytest.raises(ConfigError, match="feedback field"):
        RocchioBM25(sparse_index, DOC, fb_fields=["body"])
    with pytest.raises(ConfigError, match="original_weight"):
        RocchioBM25(sparse_index, DOC, original_weight=0)
