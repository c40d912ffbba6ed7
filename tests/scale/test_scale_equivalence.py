"""The key property: a 3-shard index searches exactly like one index over the same corpus (in-process engine).

Top-100 runs must agree in ids and order, scores within 1e-5 (in practice bit for bit), for plain BM25
(two query formulations: Anserini's tie adjustment and own-document exclusion across shards), multi-field
BM25 over mentions (collection-wide statistics of the mention index, best-mention collapse), dense
retrieval and fused runs.
"""

from __future__ import annotations

import json

import pytest
from scale_helpers import needs_sharded_search, same_run

from hybrid.core.errors import ConfigError

K = 100


@pytest.fixture(scope="module")
def indexes(sample_single, sample_sharded):
    needs_sharded_search()
    from indexes.sharded_index import ShardedIndex, open_index
    from indexes.sparse_index import SparseIndex

    single = SparseIndex(sample_single)
    sharded = open_index(sample_sharded, engine="local")
    assert isinstance(sharded, ShardedIndex) and sharded.n_shards == 3
    return single, sharded


@pytest.fixture(scope="module")
def topics(indexes, sample_topics):
    from hybrid.core.formats.topics import read_topics

    single, _ = indexes
    found = read_topics(sample_topics, resolve=single.passage_text)
    assert len(found) > 200
    return found


@pytest.mark.parametrize("formulation", ["sentence", "mention+args"])
def test_passage_bm25_equals_single_index(indexes, topics, formulation):
    from hybrid.retrieval.sparse import PassageBM25
    from hybrid.scale.sharded_search import shard_retriever

    single, sharded = indexes
    expected = PassageBM25(single, formulation).search(topics, K)
    got = shard_retriever(PassageBM25(sharded, formulation), sharded).search(topics, K)
    same_run(expected, got, spans=False)
    assert sum(len(h) for h in got.values()) > 50 * len(topics)  # deep runs, not trivially short


def test_multifield_bm25_equals_single_index(indexes, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25
    from hybrid.scale.sharded_search import ShardedMultiField, shard_retriever

    single, sharded = indexes
    expected = MultiFieldBM25(single).search(topics, K)
    retriever = shard_retriever(MultiFieldBM25(sharded), sharded)
    assert isinstance(retriever, ShardedMultiField)
    got = retriever.search(topics, K)
    same_run(expected, got)
    assert any(len(h) == K for h in got.values())


def test_own_document_never_returned(indexes, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
    from hybrid.scale.sharded_search import shard_retriever

    _, sharded = indexes
    with_doc = [t for t in topics if t.doc_id]
    assert with_doc
    for base in (PassageBM25(sharded), MultiFieldBM25(sharded)):
        run = shard_retriever(base, sharded).search(with_doc, K)
        for topic in with_doc:
            own = set(sharded.document_passage_ids(topic.doc_id))
            assert own and not own & {h.docid for h in run[topic.qid]}


def test_scores_use_collection_wide_statistics(indexes):
    """A shard alone scores differently (its own df/avgdl); the sharded searcher matches the single index."""
    from pyserini.search.lucene import LuceneSearcher

    single, sharded = indexes
    query = "pirates attack navy ship"
    expected = single.passages.search(query, k=20)
    got = sharded.passages.search(query, k=20)
    assert [(h.docid, h.score) for h in got] == [(h.docid, h.score) for h in expected]
    shard0 = LuceneSearcher(str(sharded.path / sharded.metadata["shards"][0]["name"] / "passages"))
    alone = {h.docid: h.score for h in shard0.search(query, k=20)}
    shared = {h.docid: h.score for h in expected if h.docid in alone}
    assert shared and any(abs(alone[d] - s) > 1e-3 for d, s in shared.items())


def test_stored_passages_and_documents_resolve_across_shards(indexes, sample_corpus):
    import json

    single, sharded = indexes
    rows = [json.loads(line) for line in sample_corpus.read_text(encoding="utf-8").splitlines()]
    for row in rows[::97]:
        assert sharded.passage_json(row["id"]) == single.passage_json(row["id"]) is not None
        assert sharded.document_passage_ids(row["doc_id"]) == single.document_passage_ids(row["doc_id"])
    assert sharded.passage_json("no-such-passage") is None


@pytest.fixture(scope="module")
def dense(indexes, sample_single, sample_sharded, tiny_encoder):
    from features.encoder import BiEncoder
    from hybrid.retrieval.dense import DenseRetriever
    from hybrid.scale.sharded_search import ShardedDense
    from indexes.faiss_index import build_dense_index
    from indexes.shards import build_dense_shards, verify_shards

    single, sharded = indexes
    encoder = BiEncoder.load(tiny_encoder, device="cpu")
    build_dense_index(single, encoder, sample_single / "dense", progress=False)
    manifest = build_dense_shards(sample_sharded, str(tiny_encoder), engine="local", progress=False)
    assert manifest["dense"]["vectors"] == single_vectors(sample_single)
    assert verify_shards(sample_sharded) == []
    # Sharded dense search scores mention vectors only (passage vectors are not searched across shards yet), so
    # the single index is compared with its passage vectors off.
    return (DenseRetriever(sample_single / "dense", encoder=encoder, passage_weight=0.0),
            ShardedDense(sharded, encoder=encoder))


def single_vectors(path) -> int:
    from indexes.faiss_index import DenseIndex

    return DenseIndex(path / "dense").size


def test_dense_equals_single_index(dense, topics):
    single, sharded = dense
    same_run(single.search(topics, K), sharded.search(topics, K))


@pytest.mark.parametrize("method", ["rrf", "combsum"])
def test_fused_equals_single_index(indexes, dense, topics, method):
    from hybrid.fusion.fuse import Fuse
    from hybrid.retrieval.sparse import MultiFieldBM25
    from hybrid.scale.sharded_search import shard_retriever

    single, sharded = indexes
    dense_single, dense_sharded = dense
    some = topics[::2]
    expected = Fuse([MultiFieldBM25(single), dense_single], method=method).search(some, K)
    got = Fuse([shard_retriever(MultiFieldBM25(sharded), sharded), dense_sharded], method=method).search(some, K)
    same_run(expected, got)


@pytest.mark.parametrize("recipe", ["bm25", "multifield", "multifield-net"])
def test_recipes_adapt_to_a_sharded_index(indexes, topics, recipe):
    """A recipe built on a sharded index (as hybrid.search, hybrid.experiment and hybrid.api build them) runs
    exactly like the same recipe on one index: the builders wrap their retrievers for the shards."""
    from hybrid.recipes import Context, load_recipe

    single, sharded = indexes
    some = topics[::3]
    expected = load_recipe(recipe).build(Context(index=single)).search(some, K)
    got = load_recipe(recipe).build(Context(index=sharded)).search(some, K)
    same_run(expected, got)


def test_a_recipe_without_a_sharded_search_is_refused(indexes):
    """Rocchio has no sharded counterpart yet: building it on shards is a clear error, not a wrong run."""
    from hybrid.core.errors import ConfigError
    from hybrid.recipes import Context, load_recipe

    _, sharded = indexes
    with pytest.raises(ConfigError, match="cannot search a sharded index"):
        load_recipe("cmr-qe").build(Context(index=sharded))


def test_dense_shards_in_onnx_are_the_torch_vectors_within_rounding(dense, sample_sharded, tiny_encoder, tmp_path):
    """build_dense_shards(backend="onnx"): each shard's vectors within the backend's tolerance of the torch build
    (the `dense` fixture's), and every shard's metadata and the manifest say the backend and precision."""
    import shutil

    import faiss
    import numpy as np

    from indexes.shards import build_dense_shards, read_manifest

    copy = tmp_path / "sample3"
    shutil.copytree(sample_sharded, copy)
    manifest = build_dense_shards(copy, str(tiny_encoder), engine="local", progress=False, overwrite=True,
                                  backend="onnx")
    assert manifest["dense"]["backend"] == "onnx" and manifest["dense"]["precision"] == "fp32"
    assert read_manifest(sample_sharded)["dense"]["backend"] == "torch"
    for shard in manifest["shards"]:
        meta = json.loads((copy / shard["name"] / "dense" / "dense-index.json").read_text())
        assert (meta["backend"], meta["gpus"]) == ("onnx", 0)
        onnx, torch_built = (faiss.read_index(str(root / shard["name"] / "dense" / "vectors.faiss"))
                             for root in (copy, sample_sharded))
        assert onnx.ntotal == torch_built.ntotal > 0
        np.testing.assert_allclose(onnx.reconstruct_n(0, onnx.ntotal), torch_built.reconstruct_n(0, onnx.ntotal),
                                   atol=1e-5)
    with pytest.raises(ConfigError, match="runs in fp32"):
        build_dense_shards(copy, str(tiny_encoder), engine="local", progress=False, overwrite=True,
                           backend="onnx", precision="bf16")
