"""The recall safety net: passage BM25 + document context around a mention-level retriever."""

from __future__ import annotations

import json

import pytest

from hybrid.core.records import Hit, Topic
from hybrid.core.stage import Retriever
from hybrid.retrieval.doc_context import (
    _JAVA_SPACE,
    HEAD_KEYS,
    JAVA_MENTIONS_KEY,
    DocumentVectors,
    SafetyNet,
    directory_heads,
    document_vectors,
    passage_head,
    stored_passage_heads,
    stored_passages,
)
from indexes.lucene import PASSAGES
from indexes.lucene_access import stored_prefixes, stored_raw

# Passage "c:1" is annotated with no mentions at all ("mentions": [] kept as annotated), so no mention-level
# retriever can reach it; its words are the query's, and its document is about the same story.
CORPUS = [
    {"id": "q:0", "doc_id": "q", "sent_id": 0, "text": "A powerful earthquake struck Yushu county on Wednesday.",
     "mentions": [{"start": 11, "end": 21, "text": "earthquake", "kind": "event", "tag": "ACTION_OCCURRENCE"}]},
    {"id": "q:1", "doc_id": "q", "sent_id": 1, "text": "Rescuers searched collapsed schools in Qinghai.",
     "mentions": []},
    {"id": "c:0", "doc_id": "c", "sent_id": 0, "text": "Rescuers in Qinghai dug through collapsed schools.",
     "mentions": []},
    {"id": "c:1", "doc_id": "c", "sent_id": 1, "text": "The earthquake struck Yushu county early Wednesday.",
     "mentions": []},
    {"id": "d:0", "doc_id": "d", "sent_id": 0, "text": "The central bank raised interest rates on Wednesday.",
     "mentions": [{"start": 17, "end": 23, "text": "raised", "kind": "event", "tag": "ACTION_OCCURRENCE"}]},
]


@pytest.fixture(scope="module")
def net_index(tmp_path_factory):
    from features.annotate import AnnotationConfig
    from indexes.lucene import IndexConfig, build_index
    from indexes.sparse_index import SparseIndex

    root = tmp_path_factory.mktemp("net")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in CORPUS), encoding="utf-8")
    config = AnnotationConfig(annotation="corpus", ner="heuristic", detect="heuristic",
                              empty_means_unannotated=False)
    build_index(IndexConfig(corpus=str(corpus), annotation=config), root / "index", progress=False)
    return SparseIndex(root / "index")


def query() -> Topic:
    return Topic(qid="t1", text=CORPUS[0]["text"], start=11, end=21, doc_id="q", passage_id="q:0", kind="event")


def test_safety_net_returns_a_passage_with_no_detected_mention(net_index):
    from hybrid.retrieval.sparse import MultiFieldBM25

    assert net_index.mention_records("c:1") == []
    mention_level = MultiFieldBM25(net_index).search([query()], 10)["t1"]
    assert "c:1" not in [h.docid for h in mention_level]
    netted = SafetyNet(MultiFieldBM25(net_index), net_index).search([query()], 10)["t1"]
    ids = [h.docid for h in netted]
    assert ids[0] == "c:1"
    assert not {"q:0", "q:1"} & set(ids)  # the query's own document stays excluded


def test_document_context_alone_ranks_the_same_story_first(net_index):
    class Nothing(Retriever):
        name = "nothing"

        def search(self, topics, k):
            return {t.qid: [] for t in topics}

    hits = SafetyNet(Nothing(), net_index, passage_weight=0.0, doc_weight=1.0, expand_docs=5).search([query()], 10)
    ids = [h.docid for h in hits["t1"]]
    assert set(ids[:2]) == {"c:0", "c:1"} and ids[-1] == "d:0"
    none = SafetyNet(Nothing(), net_index, passage_weight=0.0, doc_weight=1.0, expand_docs=0).search([query()], 10)
    assert none["t1"] == []


def test_equal_scores_go_by_passage_id_and_k_cuts_the_whole_ranking(net_index):
    class Fixed(Retriever):
        name = "fixed"

        def search(self, topics, k):  # d:0 and c:1 tie at the top, in the opposite order to their ids
            return {t.qid: [Hit("d:0", 2.0, 17, 23, mention_id="d:0#17-23"), Hit("c:1", 2.0), Hit("c:0", 1.0)]
                    for t in topics}

    net = SafetyNet(Fixed(), net_index, passage_weight=0.0, doc_weight=0.0, expand_docs=0)
    whole = net.search([query()], 10)["t1"]
    assert [(h.docid, h.score, h.mention_id) for h in whole] == [("c:1", 1.0, None), ("d:0", 1.0, "d:0#17-23"),
                                                                 ("c:0", 0.0, None)]
    assert net.search([query()], 1)["t1"] == whole[:1]
    # with document context: each score is the documented sum of Python floats, bit for bit
    context = SafetyNet(Fixed(), net_index, passage_weight=0.0, doc_weight=0.7, expand_docs=0)
    vectors = document_vectors(net_index)
    sims = vectors.similarities(vectors.query_vector("q", query().text))
    expected = sorted(((1.0 * mm + 0.7 * float(sims[vectors.row_of[pid.split(":")[0]]]), pid)
                       for pid, mm in (("d:0", 1.0), ("c:1", 1.0), ("c:0", 0.0))), key=lambda p: (-p[0], p[1]))
    assert [(h.score, h.docid) for h in context.search([query()], 10)["t1"]] == expected


def test_mention_spans_are_kept_and_scores_combine_as_documented(net_index):
    class Fixed(Retriever):
        name = "fixed"

        def search(self, topics, k):
            return {"t1": [Hit("d:0", 3.0, 17, 23, "raised", "d:0#17-23"), Hit("c:0", 1.0)]}

    net = SafetyNet(Fixed(), net_index, passage_weight=0.0, doc_weight=0.0, expand_docs=0)
    hits = net.search([query()], 10)["t1"]
    assert [(h.docid, h.score, h.mention_start, h.mention_end) for h in hits] == [
        ("d:0", 1.0, 17, 23), ("c:0", 0.0, None, None)]


def test_document_vectors_join_a_documents_passages_in_sentence_order(net_index):
    vectors = DocumentVectors.from_passages(list(stored_passages(net_index)))
    assert vectors.doc_ids == ["c", "d", "q"]
    assert vectors.passages_of["c"] == ["c:0", "c:1"]
    sims = vectors.similarities(vectors.query_vector("q", ""))
    assert sims[vectors.row_of["q"]] == pytest.approx(1.0, abs=1e-5)
    assert sims[vectors.row_of["c"]] > sims[vectors.row_of["d"]]


def test_passage_heads_are_the_stored_passages_keys_and_give_the_same_document_vectors(net_index):
    """The stored passages decoded up to their mentions (Anserini stores them pretty-printed) agree with whole
    decodes on every key the document vectors read, and so give the same vectors."""
    whole, heads = list(stored_passages(net_index)), list(stored_passage_heads(net_index))
    assert [{key: p[key] for key in HEAD_KEYS} for p in heads] == [{key: p[key] for key in HEAD_KEYS} for p in whole]
    assert all("mentions" not in p for p in heads)  # the cut was taken, not the whole-record fallback
    vectors = document_vectors(net_index)
    expected = DocumentVectors.from_passages(whole)
    assert vectors.doc_ids == expected.doc_ids and vectors.passages_of == expected.passages_of
    assert (vectors.matrix != expected.matrix).nnz == 0


def test_passages_cut_on_the_java_side_are_passage_head_of_each(net_index):
    """The jar's cut (JAVA_MENTIONS_KEY) gives passage_head's dicts; a cut whose head does not decode (before
    "contents": a trailing comma), or no match, decodes the whole record, as passage_head does."""
    directory = net_index.path / PASSAGES
    raws = list(stored_raw(directory))
    if stored_prefixes(directory, "raw", JAVA_MENTIONS_KEY) is None:  # the pyjnius path: the other tests' own
        pytest.skip("the project jar predates io.hybrid.lucene.StoredText: rebuild it (mvn package)")
    assert list(directory_heads(directory)) == [passage_head(raw) for raw in raws]
    assert all("mentions" not in head for head in directory_heads(directory))
    assert list(directory_heads(directory, ',\\s*"contents"')) == [json.loads(raw) for raw in raws]
    assert list(directory_heads(directory, "no such text")) == [json.loads(raw) for raw in raws]


def test_the_java_space_class_is_pythons_whitespace(net_index):
    # Python's \s in a str pattern is str.isspace; the class JAVA_MENTIONS_KEY spells out must match exactly those
    # characters in Java, over the whole Basic Multilingual Plane (every whitespace character is in it)
    from jnius import autoclass

    text = "".join(chr(c) for c in range(1, 0x10000) if not 0xD800 <= c <= 0xDFFF)
    matcher = autoclass("java.util.regex.Pattern").compile(_JAVA_SPACE).matcher(text)
    found = []
    while matcher.find():
        found.append(text[matcher.start()])
    assert found == [c for c in text if c.isspace()] and len(found) == 29


@pytest.mark.parametrize("record", [
    {"id": "a", "doc_id": "d", "sent_id": 3, "contents": 'say ", \\"mentions\\": [" then', "mentions": [{"x": 1}]},
    {"id": "a", "doc_id": "d", "sent_id": None, "contents": "t", "mentions": []},
    {"mentions": [{"id": "m"}], "id": "a", "doc_id": "d", "sent_id": 1, "contents": "mentions first"},
    {"id": "a", "doc_id": "d", "meta": {"mentions": [1]}, "sent_id": 0, "contents": "nested key first",
     "mentions": [2]},
    {"id": "a", "doc_id": "d", "contents": "no sent_id before the mentions", "mentions": [], "sent_id": 7},
])
@pytest.mark.parametrize("indent", [None, 2])
def test_passage_head_decodes_the_head_keys_exactly_as_a_whole_decode(record, indent):
    raw = json.dumps(record, indent=indent)
    head = passage_head(raw)
    assert {key: head[key] for key in HEAD_KEYS} == {key: record[key] for key in HEAD_KEYS}


def test_batched_similarities_equal_one_query_at_a_time(net_index):
    """similarities_many is the per-query product for a batch: indexed documents and free texts, bit for bit."""
    vectors = DocumentVectors.from_passages(list(stored_passages(net_index)))
    queries = [("q", ""), (None, "earthquake in Yushu"), ("c", "ignored"), ("unknown-doc", "interest rates bank")]
    batched = vectors.similarities_many(queries)
    assert batched.shape == (4, len(vectors.doc_ids))
    for row, (doc_id, text) in zip(batched, queries, strict=True):
        assert row.tolist() == vectors.similarities(vectors.query_vector(doc_id, text)).tolist()
    assert batched[1, vectors.row_of["q"]] > 0 and batched[3, vectors.row_of["d"]] > 0
    assert vectors.similarities_many([]).shape == (0, len(vectors.doc_ids))


def test_bad_weights_are_refused(net_index):
    from hybrid.core.errors import ConfigError
    from hybrid.retrieval.sparse import MultiFieldBM25

    with pytest.raises(ConfigError):
        SafetyNet(MultiFieldBM25(net_index), net_index, passage_weight=1.5)


def test_the_first_stage_runs_with_the_cyclic_collector_paused(net_index):
    import gc

    seen = []

    class Probe(Retriever):
        name = "probe"

        def search(self, topics, k):  # the mention-level stage, inside the safety net's search
            seen.append(gc.get_threshold()[0])
            return {t.qid: [Hit("c:0", 1.0)] for t in topics}

    before = gc.get_threshold()
    hits = SafetyNet(Probe(), net_index, passage_weight=0.0, doc_weight=0.0, expand_docs=0).search([query()], 10)
    assert seen == [0] and gc.get_threshold() == before  # paused inside, the thresholds restored after
    assert [h.docid for h in hits["t1"]] == ["c:0"]
