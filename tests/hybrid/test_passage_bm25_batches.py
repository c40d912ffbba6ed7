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
