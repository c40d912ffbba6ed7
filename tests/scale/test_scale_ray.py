"""The same 3-shard build and search on Ray (local mode, 2 CPUs): Ray Data annotation and encoding jobs, one
Ray task per Lucene shard, one Ray actor per shard at search time (queries shipped as QueryCodec text).

The run must equal the single index's run, as on the in-process engine."""

from __future__ import annotations

import json

import pytest
from scale_helpers import needs_sharded_search, same_run

pytest.importorskip("ray")
pytest.importorskip("ray.data")

K = 100


@pytest.fixture(scope="module")
def engine():
    needs_sharded_search()
    from hybrid.core.ray_engine import RayEngine

    engine = RayEngine(num_cpus=2, object_store_memory=256 * 1024**2)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def ray_sharded(engine, sample_corpus, tiny_encoder, tmp_path_factory):
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig
    from indexes.shards import build_dense_shards, build_sharded_index

    path = tmp_path_factory.mktemp("ray") / "sample3"
    config = IndexConfig(corpus=str(sample_corpus), annotation=LEGACY, batch_docs=16)
    manifest = build_sharded_index(config, path, 3, engine=engine, progress=False)
    assert manifest["config"]["engine"] == "ray"
    build_dense_shards(path, str(tiny_encoder), engine=engine, chunk=256, progress=False)
    return path


def test_ray_build_matches_the_in_process_build(ray_sharded, sample_sharded):
    from indexes.shards import read_manifest, verify_shards

    on_ray, local = read_manifest(ray_sharded), read_manifest(sample_sharded)
    keys = ("name", "passages", "documents", "mentions", "gold_mentions", "auto_mentions", "max_doc_passages")
    assert [{k: s[k] for k in keys} for s in on_ray["shards"]] == [{k: s[k] for k in keys} for s in local["shards"]]
    assert on_ray["dense"]["engine"] == "ray" and on_ray["dense"]["vectors"] > on_ray["counts"]["passages"]
    assert verify_shards(ray_sharded) == []
    for shard in on_ray["shards"]:
        assert json.loads((ray_sharded / shard["name"] / "dense" / "dense-index.json").read_text())["shard"]["of"] == 3


@pytest.fixture(scope="module")
def searched(engine, ray_sharded, sample_single, sample_topics, tiny_encoder):
    from features.encoder import BiEncoder
    from hybrid.core.formats.topics import read_topics
    from hybrid.retrieval.dense import DenseRetriever
    from hybrid.scale.sharded_search import ShardedDense
    from indexes.faiss_index import build_dense_index
    from indexes.sharded_index import open_index
    from indexes.sparse_index import SparseIndex

    single = SparseIndex(sample_single)
    encoder = BiEncoder.load(tiny_encoder, device="cpu")
    if not (sample_single / "dense").exists():
        build_dense_index(single, encoder, sample_single / "dense", progress=False)
    sharded = open_index(ray_sharded, engine=engine)
    assert len(sharded.groups) == 3  # one actor per shard
    topics = read_topics(sample_topics, resolve=single.passage_text)[::2]
    # Sharded dense search scores mention vectors only (no passage vectors across shards yet).
    dense = (DenseRetriever(sample_single / "dense", encoder=encoder, passage_weight=0.0),
             ShardedDense(sharded, encoder=encoder))
    return single, sharded, topics, dense


def test_passage_bm25_on_ray_equals_single_index(searched):
    from hybrid.retrieval.sparse import PassageBM25
    from hybrid.scale.sharded_search import shard_retriever

    single, sharded, topics, _ = searched
    got = shard_retriever(PassageBM25(sharded), sharded).search(topics, K)
    same_run(PassageBM25(single).search(topics, K), got, spans=False)


def test_multifield_and_fused_on_ray_equal_single_index(searched):
    from hybrid.fusion.fuse import Fuse
    from hybrid.retrieval.sparse import MultiFieldBM25
    from hybrid.scale.sharded_search import shard_retriever

    single, sharded, topics, (dense_single, dense_sharded) = searched
    multifield = shard_retriever(MultiFieldBM25(sharded), sharded)
    same_run(MultiFieldBM25(single).search(topics, K), multifield.search(topics, K))
    same_run(dense_single.search(topics, K), dense_sharded.search(topics, K))
    expected = Fuse([MultiFieldBM25(single), dense_single], method="rrf").search(topics, K)
    same_run(expected, Fuse([multifield, dense_sharded], method="rrf").search(topics, K))
