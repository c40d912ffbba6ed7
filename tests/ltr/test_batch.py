"""Feature registry and batch extraction over the tiny index (real Lucene index, real first stage)."""

from __future__ import annotations

import numpy as np
import pytest

from features.pairs import registry
from hybrid.core.formats.topics import read_topics
from ltr.batch import build_batch, select_candidate
from ltr.resources import IndexResources


@pytest.fixture(scope="module")
def resources(sparse_index):
    return IndexResources(sparse_index)


@pytest.fixture(scope="module")
def topics(sparse_index, data_dir):
    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_every_feature_is_named_documented_and_unique():
    seen = set()
    for provider in registry.BUILTIN:
        for name, feat in provider.features().items():
            assert name == feat.name and feat.group == provider.group
            assert feat.doc and len(feat.doc) > 10, name
            assert name not in seen
            seen.add(name)
    assert set(registry.catalogue()) >= seen
    assert len(seen) >= 90


def test_batch_over_multifield_run_uses_the_matched_mentions(sparse_index, resources, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25

    run = MultiFieldBM25(sparse_index).search(topics, 10)
    batch = build_batch(resources, topics, run, depth=10)
    assert len(batch) == sum(len(run[t.qid]) for t in topics)
    assert batch.offsets[-1] == len(batch) and len(batch.queries) == len(topics)
    for pair in batch.pairs:
        assert pair.candidate.record.start == pair.hit.mention_start
        assert pair.candidate.record.end == pair.hit.mention_end
        assert pair.doc.id == pair.passage.doc_id
    for provider in registry.BUILTIN:
        names = list(provider.features())
        values = provider.compute(batch, names)
        assert values.shape == (len(batch), len(names))
        assert np.isfinite(values).all(), provider.group
    # the in-corpus query's record is the indexed one: its chain comes from its own document
    checkin = next(q for q in batch.queries if q.topic.qid == "q-ev-checkin")
    assert checkin.record.mention == "checked into" and "entered" in checkin.record.record.coref
    assert checkin.doc.id == "a1" and len(checkin.doc.passages) == 2


def test_passage_level_run_gets_the_most_query_like_mention(sparse_index, resources, topics):
    from hybrid.retrieval.sparse import PassageBM25

    run = PassageBM25(sparse_index).search(topics, 10)
    batch = build_batch(resources, topics, run, depth=10)
    reid = [p for p in batch.pairs if p.query.topic.qid == "q-en-reid" and p.hit.docid == "b2:0"]
    assert reid and reid[0].candidate.mention == "Tara Reid"
    query = batch.queries[0].record
    passage = resources.passage("c3:0")
    chosen = select_candidate(query, passage)
    assert chosen.kind == query.kind and chosen.mention == "checked into"


def test_depth_limits_pairs(sparse_index, resources, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25

    run = MultiFieldBM25(sparse_index).search(topics, 10)
    batch = build_batch(resources, topics, run, depth=2)
    assert all(hi - lo <= 2 for lo, hi in zip(batch.offsets, batch.offsets[1:], strict=False))
    assert [p.rank for p in batch.pairs[: batch.offsets[1]]] == list(range(1, batch.offsets[1] + 1))
