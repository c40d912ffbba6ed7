"""PassageBM25 searches in bounded batches (Anserini keeps each hit's stored document on the Java heap)."""

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.formats.topics import read_topics
from hybrid.retrieval.sparse import PassageBM25


@pytest.fixture(scope="module")
def topics(data_dir, sparse_index):
    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_batches_give_the_same_run_and_bound_each_java_call(sparse_index, topics, monkeypatch):
    assert len(topics) >= 3
    whole = PassageBM25(sparse_index, batch_size=len(topics)).search(topics, 10)
    searcher = sparse_index.passages
    sizes = []
    original = searcher.batch_search

    def counting(queries, qids, **kwargs):
        sizes.append(len(qids))
        return original(queries, qids, **kwargs)

    monkeypatch.setattr(searcher, "batch_search", counting)
    batched = PassageBM25(sparse_index, batch_size=2).search(topics, 10)
    assert max(sizes) <= 2 and sum(sizes) == len(topics)
    assert list(batched) == list(whole)
    for qid, hits in whole.items():
        assert [(h.docid, h.score) for h in batched[qid]] == [(h.docid, h.score) for h in hits]


def test_batch_size_must_be_positive(sparse_index):
    with pytest.raises(ConfigError):
        PassageBM25(sparse_index, batch_size=0)


def test_sentence_queries_of_topics_naming_their_document_read_no_mention_record(tiny_index, data_dir):
    """Query by sentence: a topic that names its document needs no record (no parser is loaded), and its own
    document is excluded exactly as when its document comes from its passage instead."""
    import dataclasses

    from indexes.sparse_index import SparseIndex

    index = SparseIndex(tiny_index)  # a fresh one: nothing parsed or cached yet
    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=index.passage_text)
    named = [t for t in topics if t.doc_id]
    assert named
    run = PassageBM25(index).search(named, 10)
    assert "annotator" not in vars(index)
    by_passage = [dataclasses.replace(t, doc_id=None) for t in named if t.passage_id]
    assert by_passage
    other = PassageBM25(SparseIndex(tiny_index)).search(by_passage, 10)
    for topic in by_passage:
        assert run[topic.qid] == other[topic.qid]
        assert not any(h.docid.startswith(f"{index.passage_json(topic.passage_id)['doc_id']}:") for h in run[topic.qid])
