"""The Java fast path of MultiFieldBM25 gives the same run as the pyjnius path (ids, order, scores, spans)."""

from __future__ import annotations

import pytest

from hybrid.core.jvm import JAR_BUILD_COMMAND, project_jar

pytestmark = pytest.mark.skipif(project_jar() is None, reason=f"project jar not built: {JAR_BUILD_COMMAND}")


@pytest.fixture(scope="module")
def topics(sparse_index, data_dir):
    from hybrid.core.formats.topics import read_topics

    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def _rows(hits):
    return [(h.docid, h.mention_start, h.mention_end, h.mention_id) for h in hits]


@pytest.mark.parametrize(
    ("clauses", "same_kind", "k"),
    [
        (None, True, 100),
        (None, False, 100),
        (None, False, 3),
        ("mention=1,sentence=0.2,ner=0.7,type:type=0.1", False, 5),
        ("context=1", True, 2),
    ],
)
def test_fast_path_equals_pyjnius_path(sparse_index, topics, clauses, same_kind, k):
    from hybrid.core.java import available
    from hybrid.retrieval.sparse import DEFAULT_CLAUSES, MultiFieldBM25

    assert available()
    retriever = MultiFieldBM25(sparse_index, clauses or DEFAULT_CLAUSES, same_kind=same_kind)
    fast = retriever.search(topics, k)
    slow = {t.qid: retriever.search_one(t, k) for t in topics}
    assert set(fast) == {t.qid for t in topics}
    n_hits = 0
    for topic in topics:
        assert _rows(fast[topic.qid]) == _rows(slow[topic.qid]), topic.qid
        for a, b in zip(fast[topic.qid], slow[topic.qid], strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-5)
        n_hits += len(fast[topic.qid])
        assert len(fast[topic.qid]) <= k
    assert n_hits > 0


def test_fast_path_orders_by_score_then_passage_id_and_excludes_own_document(sparse_index, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25

    run = MultiFieldBM25(sparse_index, same_kind=False).search(topics, 100)
    for topic in topics:
        hits = run[topic.qid]
        keys = [(-h.score, h.docid) for h in hits]
        assert keys == sorted(keys)
        assert len({h.docid for h in hits}) == len(hits)
        own = sparse_index.exclude_doc(topic)
        assert own and all(sparse_index.passage_json(h.docid)["doc_id"] != own for h in hits)
        for h in hits:  # the span is a real mention of that passage
            spans = {(r.start, r.end) for r in sparse_index.mention_records(h.docid)}
            assert (h.mention_start, h.mention_end) in spans


def test_fast_path_threads_do_not_change_the_run(sparse_index, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25

    one = MultiFieldBM25(sparse_index).search(topics, 100)
    retriever = MultiFieldBM25(sparse_index)
    retriever.threads = 2
    two = retriever.search(topics, 100)
    assert {q: [(h.docid, h.score) for h in hits] for q, hits in one.items()} == {
        q: [(h.docid, h.score) for h in hits] for q, hits in two.items()
    }
