"""Dense index build/load/search round trips on the tiny hybrid index with a tiny random BERT."""

import json

import numpy as np
import pytest

from hybrid.dense.encoder import BiEncoder, EncoderConfig
from hybrid.errors import ConfigError, IndexMissingError
from hybrid.records import Topic
from hybrid.retrieval.dense import DenseRetriever
from indexes.faiss_index import DENSE_METADATA, DenseIndex, build_dense_index, iter_index_passages


@pytest.fixture(scope="module")
def encoder(tmp_path_factory, tiny_bert):
    # No query markers: a query then encodes exactly like the same mention inside an indexed passage.
    enc = BiEncoder.load(tiny_bert, EncoderConfig(mark_query=False), device="cpu")
    return enc.save(tmp_path_factory.mktemp("enc") / "tiny-dense")


@pytest.fixture(scope="module")
def dense_dir(tmp_path_factory, sparse_index, encoder):
    out = tmp_path_factory.mktemp("dense") / "dense"
    build_dense_index(sparse_index, BiEncoder.load(encoder, device="cpu"), out, progress=False, chunk=3)
    return out


def test_one_vector_per_candidate_mention(dense_dir, sparse_index, encoder):
    index = DenseIndex(dense_dir)
    passages = iter_index_passages(sparse_index)
    expected = sum(max(len(p.mentions), 1) for p in passages)
    assert index.size == expected == len(index.rows)
    meta = json.loads((dense_dir / DENSE_METADATA).read_text())
    assert meta["encoder"]["path"] == str(encoder)
    assert meta["counts"]["passages"] == len(passages) == len(index.passage_ids)
    assert meta["source_index"]["corpus_sha256"] == sparse_index.metadata["corpus_sha256"]
    assert isinstance(index.rows, np.memmap)
    for number, start, end, _ in index.rows:
        if start >= 0:
            pid = index.passage_ids[number]
            assert any((r.start, r.end) == (start, end) for r in sparse_index.mention_records(pid))


def test_query_finds_the_identical_mention_and_keeps_its_span(dense_dir, encoder, sparse_index):
    retriever = DenseRetriever(dense_dir, encoder, k=5, same_kind=False)
    text = sparse_index.passage_text("b2:0")
    topic = Topic("q", text, 0, 9, doc_id="someone-else")  # "Tara Reid" of b2:0, from another document
    (top, *_) = retriever.search([topic], 5)["q"]
    assert top.docid == "b2:0" and (top.mention_start, top.mention_end) == (0, 9)
    assert top.score == pytest.approx(1.0, abs=1e-4)
    assert top.mention_id == "b2:0#0-9"


def test_own_document_and_other_kinds_are_excluded(dense_dir, encoder, sparse_index):
    retriever = DenseRetriever(dense_dir, encoder, k=100)
    text = sparse_index.passage_text("b2:0")
    topics = [Topic("own", text, 0, 9, doc_id="b2", kind="entity"),
              Topic("pid", text, 10, 17, passage_id="b2:0")]  # no doc id: own doc from the passage, kind indexed
    run = retriever.search(topics, 100)
    assert run["own"] and all(not h.docid.startswith("b2:") for h in run["own"])
    assert all(not h.docid.startswith("b2:") for h in run["pid"])
    index = retriever.index
    for qid, kind in (("own", 2), ("pid", 1)):
        for h in run[qid]:
            if h.mention_start is not None:
                here = (index.row_passage == index.passage_number[h.docid]) & (index.rows[:, 1] == h.mention_start)
                rows = index.rows[here]
                assert set(rows[:, 3]) & {kind, 0}
    assert len({h.docid for h in run["own"]}) == len(run["own"])  # one hit per passage
    scores = [h.score for h in run["own"]]
    assert scores == sorted(scores, reverse=True)


def test_k_larger_than_the_first_fetch(dense_dir, encoder):
    retriever = DenseRetriever(dense_dir, encoder, k=2, same_kind=False, overfetch=1)
    run = retriever.search([Topic("q", "Reid went to rehab.", 0, 4)], 8)
    assert len(run["q"]) == 8  # grew the fetch until 8 distinct passages were found


def test_mismatched_query_encoder_is_refused(dense_dir, tiny_bert, tmp_path, encoder):
    with pytest.raises(ConfigError, match="not the encoder this index was built with"):
        DenseRetriever(dense_dir, BiEncoder.load(tiny_bert, device="cpu"))  # raw checkpoint, other config
    other = BiEncoder.load(encoder, device="cpu")
    with __import__("torch").no_grad():
        other.query_model.encoder.layer[0].output.dense.weight.add_(0.01)
    other.save(tmp_path / "changed")
    with pytest.raises(ConfigError):
        DenseRetriever(dense_dir, tmp_path / "changed")


def test_hnsw_agrees_with_flat(tmp_path, sparse_index, encoder, dense_dir):
    out = tmp_path / "hnsw"
    build_dense_index(sparse_index, BiEncoder.load(encoder, device="cpu"), out, index_type="hnsw", hnsw_m=8,
                      progress=False)
    assert json.loads((out / DENSE_METADATA).read_text())["faiss"]["type"] == "hnsw"
    topic = Topic("q", "Lindsay Lohan checked into a rehab clinic in Utah.", 0, 13)
    flat = DenseRetriever(dense_dir, encoder, k=5, same_kind=False).search([topic], 5)["q"]
    hnsw = DenseRetriever(out, encoder, k=5, same_kind=False).search([topic], 5)["q"]
    assert [h.docid for h in flat] == [h.docid for h in hnsw]


def test_build_is_atomic_and_refuses_to_clobber(tmp_path, sparse_index, encoder, dense_dir):
    with pytest.raises(FileExistsError):
        build_dense_index(sparse_index, BiEncoder.load(encoder, device="cpu"), dense_dir, progress=False)
    assert DenseIndex(dense_dir).size > 0
    with pytest.raises(IndexMissingError):
        DenseIndex(tmp_path / "nowhere")
    assert not list(dense_dir.parent.glob(".dense.*.building"))


def test_index_dense_cli(tmp_path, tiny_index, encoder):
    from hybrid.index_dense import main

    out = tmp_path / "cli-dense"
    assert main(["--index", str(tiny_index), "--encoder", str(encoder), "--output", str(out), "--limit", "4",
                 "--quiet"]) == 0
    index = DenseIndex(out)
    assert len(index.passage_ids) == 4
    assert json.loads((out / DENSE_METADATA).read_text())["limit"] == 4
