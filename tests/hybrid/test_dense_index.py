"""Dense index build/load/search round trips on the tiny hybrid index with a tiny random BERT."""

import json

import numpy as np
import pytest

from features.encoder import BiEncoder, EncoderConfig
from hybrid.core.errors import ConfigError, IndexMissingError
from hybrid.core.records import Topic
from hybrid.retrieval.dense import DenseRetriever
from indexes.faiss_index import (
    DENSE_METADATA,
    PASSAGE_VECTORS,
    PRODUCT_BLOCK,
    DenseIndex,
    _exact_scores_of_bests,
    _FlatFill,
    _float64_products,
    best_mention_of_passage,
    best_mention_of_passages,
    build_dense_index,
    iter_index_passages,
    stored_vectors,
)


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


@pytest.fixture(scope="module")
def old_dense_dir(tmp_path_factory, sparse_index, encoder):
    """A dense index as built before passage vectors (no passages.faiss, no passage_vectors metadata)."""
    out = tmp_path_factory.mktemp("dense-old") / "dense"
    build_dense_index(sparse_index, BiEncoder.load(encoder, device="cpu"), out, progress=False, chunk=3,
                      passage_vectors=False)
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


@pytest.mark.parametrize("options, score", [({"passage_weight": 0}, 1.0), ({"combine": "max"}, 1.0),
                                             ({}, 2.0)])  # the default, sum: identical mention + identical sentence
def test_query_finds_the_identical_mention_and_keeps_its_span(dense_dir, encoder, sparse_index, options, score):
    retriever = DenseRetriever(dense_dir, encoder, k=5, same_kind=False, **options)
    text = sparse_index.passage_text("b2:0")
    topic = Topic("q", text, 0, 9, doc_id="someone-else")  # "Tara Reid" of b2:0, from another document
    (top, *_) = retriever.search([topic], 5)["q"]
    assert top.docid == "b2:0" and (top.mention_start, top.mention_end) == (0, 9)
    assert top.score == pytest.approx(score, abs=1e-4)
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


def test_exact_scores_depend_on_nothing_but_the_pair(dense_dir):
    # One index and a sharding of it, or two batch sizes, must score a (query, mention) pair bit for bit alike:
    # a row's score may not depend on which other rows are scored with it, nor on their order.
    index = DenseIndex(dense_dir)
    rng = np.random.default_rng(0)
    query = rng.standard_normal(index.faiss.d).astype(np.float32)
    rows = np.arange(index.size)
    full = index.exact_scores(query, rows)
    for _ in range(5):
        subset = rng.permutation(rows)[: rng.integers(1, index.size + 1)]
        assert np.array_equal(index.exact_scores(query, subset), full[subset])
    vectors = index.faiss.reconstruct_n(0, index.size).astype(np.float64)
    np.testing.assert_allclose(full, vectors @ query.astype(np.float64), rtol=1e-12, atol=1e-12)
    assert index.exact_scores(query, rows[:0]).shape == (0,)


@pytest.mark.parametrize("n", [1, 2, PRODUCT_BLOCK - 1, PRODUCT_BLOCK, PRODUCT_BLOCK + 1, 3 * PRODUCT_BLOCK + 5])
def test_float64_products_in_blocks_are_the_bits_of_all_rows_at_once(n):
    # Exact scores go PRODUCT_BLOCK rows at a time; every row must keep the bits of one numpy product over all rows.
    rng = np.random.default_rng(n)
    vectors = rng.standard_normal((n + 7, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    rows = rng.permutation(n + 7)[:n]
    expected = np.multiply(vectors[rows], query.astype(np.float64)[None, :]).sum(axis=1)
    assert _float64_products(vectors, query, rows).tobytes() == expected.tobytes()
    assert _float64_products(vectors[rows], query).tobytes() == expected.tobytes()
    for i in (0, n - 1):
        assert _float64_products(vectors[rows[i : i + 1]], query).tobytes() == expected[i : i + 1].tobytes()


def test_flat_vectors_are_read_in_place_and_other_indexes_reconstructed(dense_dir):
    import faiss

    index = DenseIndex(dense_dir)
    assert index._stored is not None and not index._stored.flags.writeable
    assert index._stored.tobytes() == index.faiss.reconstruct_n(0, index.size).tobytes()
    assert index._stored_passages.tobytes() == index.passage_vectors.reconstruct_n(
        0, index.passage_vectors.ntotal).tobytes()
    rng = np.random.default_rng(3)
    query = rng.standard_normal(index.faiss.d).astype(np.float32)
    rows = rng.integers(0, index.size, 300)
    in_place = index.exact_scores(query, rows)
    index._stored = None  # the reconstructing path, as for an HNSW index
    assert index.exact_scores(query, rows).tobytes() == in_place.tobytes()
    hnsw = faiss.IndexHNSWFlat(8, 4, faiss.METRIC_INNER_PRODUCT)
    hnsw.add(rng.standard_normal((10, 8)).astype(np.float32))
    assert stored_vectors(hnsw) is None and stored_vectors(faiss.IndexFlatIP(8)) is None


def test_best_mentions_of_passages_are_those_of_every_row_scored_exactly(dense_dir):
    # Only the rows that float32 scores cannot rule out are scored exactly: each passage's best row, score and span
    # stay those of scoring every row exactly (best_mention_of_passage), for every kind and query
    index = DenseIndex(dense_dir)
    rng = np.random.default_rng(5)
    numbers = np.arange(len(index.passage_ids))
    queries = [rng.standard_normal(index.faiss.d).astype(np.float32), np.array(index._stored[3]),
               np.array(index._stored[len(index.rows) - 1]) * np.float32(1e-30)]
    for query in queries:
        for kind in (None, 1, 2):
            expected = [best_mention_of_passage(index, query, int(n), kind) for n in numbers]
            assert best_mention_of_passages(index, query, numbers, kind) == expected
            assert best_mention_of_passages(index, query, numbers[::-1], kind) == expected[::-1]


def test_rows_ruled_out_by_float32_scores_are_never_a_groups_best(dense_dir):
    # groups of near ties whose float32 scores order them against their exact scores (copies of a vector with one
    # product nudged up and another down by 1 ulp),
    # plus duplicates: every group keeps its exact best and all rows tied with it
    index = DenseIndex(dense_dir)
    rng = np.random.default_rng(11)
    d = index.faiss.d
    query = rng.standard_normal(d).astype(np.float32)
    pairs = []
    for _ in range(4000):
        base = rng.standard_normal(d).astype(np.float32)
        nudged = base.copy()
        up, down = rng.choice(d, 2, replace=False)  # one product 1 ulp higher, another 1 ulp lower
        nudged[up] = np.nextafter(nudged[up], np.float32(np.inf) * np.sign(query[up]))
        nudged[down] = np.nextafter(nudged[down], -np.float32(np.inf) * np.sign(query[down]))
        approx = np.stack([base, nudged]) @ query
        exact = np.stack([base, nudged]).astype(np.float64) @ query.astype(np.float64)
        if approx[1] < approx[0] and exact[1] > exact[0] > 1:  # float32 orders them the other way round
            pairs.append((base, nudged))
        if len(pairs) == 6:
            break
    assert len(pairs) == 6
    far = rng.standard_normal((30, d)).astype(np.float32) * np.float32(0.01)  # each scores below 1
    index._stored = np.concatenate([np.stack([v for pair in pairs for v in pair]), far, np.stack(pairs[0])])
    rows = np.arange(len(index._stored))
    owner = np.concatenate([np.repeat(np.arange(6), 2), rng.integers(0, 6, 30), [0, 0]])
    pruned = _exact_scores_of_bests(index, query, rows, owner, 6)
    exact = index.exact_scores(query, rows)
    kept = np.isfinite(pruned)
    assert pruned[kept].tobytes() == exact[kept].tobytes() and not kept.all()
    for group in range(6):
        mine = owner == group
        best = exact[mine].max()
        assert pruned[mine].max() == best
        assert (pruned[mine] == best).sum() == (exact[mine] == best).sum()
    assert (pruned[owner == 0] == exact[owner == 0].max()).sum() == 2  # the nudged vector and its duplicate


@pytest.mark.parametrize("which", ["old index", "passage weight 0"])
def test_dense_scores_are_the_exact_scores_of_the_best_mention(dense_dir, old_dense_dir, encoder, which):
    # mention vectors only: an index without passage vectors, or passage vectors weighted 0
    # (with them, see test_passage_scores_are_the_max_of_mention_and_weighted_passage)
    where, options = (old_dense_dir, {}) if which == "old index" else (dense_dir, {"passage_weight": 0})
    index = DenseIndex(where)
    retriever = DenseRetriever(where, encoder, k=5, same_kind=False, **options)
    topic = Topic("q", "Lindsay Lohan checked into a rehab clinic in Utah.", 0, 13)
    hits = retriever.search([topic], 5)["q"]
    query = retriever.encoder.encode_queries([topic])[0]
    for hit in hits:
        number = index.passage_number[hit.docid]
        mine = np.nonzero(index.row_passage == number)[0]
        assert hit.score == index.exact_scores(query, mine).max()


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
    from hybrid.cli.index_dense import main

    out = tmp_path / "cli-dense"
    assert main(["--index", str(tiny_index), "--encoder", str(encoder), "--output", str(out), "--limit", "4",
                 "--quiet"]) == 0
    index = DenseIndex(out)
    assert len(index.passage_ids) == 4
    assert json.loads((out / DENSE_METADATA).read_text())["limit"] == 4


def test_index_dense_cli_backend_onnx_builds_the_torch_vectors_within_rounding(tmp_path, tiny_index, encoder,
                                                                                 dense_dir):
    """--backend onnx: the same rows as the torch build, vectors within the backend's tolerance, recorded."""
    from hybrid.cli.index_dense import main

    out = tmp_path / "onnx-dense"
    assert main(["--index", str(tiny_index), "--encoder", str(encoder), "--output", str(out), "--device", "cpu",
                 "--backend", "onnx", "--quiet"]) == 0
    onnx, torch_built = DenseIndex(out), DenseIndex(dense_dir)
    assert onnx.passage_ids == torch_built.passage_ids and onnx.size == torch_built.size
    assert json.loads((out / DENSE_METADATA).read_text())["backend"] == "onnx"
    assert json.loads((dense_dir / DENSE_METADATA).read_text())["backend"] == "torch"
    for a, b in ((onnx._stored, torch_built._stored), (onnx._stored_passages, torch_built._stored_passages)):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_search_cli_backend_onnx_encodes_queries_with_it_and_records_it(tmp_path, tiny_index, dense_dir, data_dir):
    from hybrid.cli.search import main as search_main
    from hybrid.core.formats.runs import read_run

    topics = str(data_dir / "tiny_topics.jsonl")
    runs, metas = {}, {}
    for name, extra in (("torch", []), ("onnx", ["--backend", "onnx"])):
        out = tmp_path / f"{name}.trec"
        assert search_main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics", topics,
                            "--model", "dense", "--output", str(out), "--hits", "5", "--quiet", "--no-safety-net",
                            "--device", "cpu", *extra]) == 0
        runs[name] = {(q, h.docid): h.score for q, hits in read_run(out).items() for h in hits}
        metas[name] = json.loads((tmp_path / f"{name}.trec.meta.json").read_text())
    assert runs["onnx"].keys() == runs["torch"].keys()
    assert max(abs(runs["onnx"][key] - runs["torch"][key]) for key in runs["torch"]) < 1e-4
    encoders = {name: [a for a in meta["artifacts"] if a["kind"] == "encoder"] for name, meta in metas.items()}
    assert [a.get("backend") for a in encoders["onnx"]] == ["onnx"] and "backend" not in encoders["torch"][0]
    assert metas["onnx"]["config"]["backend"] == "onnx"
    for extra, says in ((["--precision", "bf16"], "<input>: --backend onnx runs in fp32"),
                        (["--device", "cuda"], "<input>: --backend onnx runs on the CPU, not on cuda")):
        with pytest.raises(ConfigError) as refused:
            search_main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics", topics, "--model",
                         "dense", "--output", str(tmp_path / "x.trec"), "--quiet", "--backend", "onnx", *extra])
        assert str(refused.value).startswith(says)  # named as the options they are, not as a recipe's key


def test_search_cli_dense_and_fused_write_each_run(tmp_path, tiny_index, dense_dir, data_dir):
    """One command runs multifield + dense, writes both component runs, and fuses exactly those runs
    (the safety net around them is off here: tests/hybrid/test_doc_context.py covers it)."""
    from hybrid.cli.search import main as search_main
    from hybrid.core.formats.runs import read_run
    from hybrid.fusion import fuse_runs

    topics = str(data_dir / "tiny_topics.jsonl")
    dense_out = tmp_path / "dense.trec"
    assert search_main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics", topics,
                        "--model", "dense", "--output", str(dense_out), "--hits", "5", "--quiet",
                        "--no-safety-net"]) == 0
    dense_run = read_run(dense_out)
    assert dense_run and all(0 < len(hits) <= 5 for hits in dense_run.values())

    fused_out, spans = tmp_path / "fused.trec", tmp_path / "fused.spans.jsonl"
    assert search_main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics", topics,
                        "--model", "fused", "--fuse", "multifield,dense", "--fusion", "combsum", "--norm", "zscore",
                        "--fusion-weights", "0.7,0.3", "--output", str(fused_out), "--spans", str(spans),
                        "--hits", "5", "--quiet", "--no-safety-net"]) == 0
    parts = [read_run(tmp_path / "fused.multifield.trec"), read_run(tmp_path / "fused.dense.trec")]
    assert parts[1] == dense_run  # the dense component is the same search as --model dense
    expected = fuse_runs(parts, "combsum", [0.7, 0.3], "zscore", k=5)
    got = read_run(fused_out)
    assert {q: [h.docid for h in hits] for q, hits in got.items()} == \
        {q: [h.docid for h in hits] for q, hits in expected.items()}
    assert (tmp_path / "fused.dense.spans.jsonl").exists() and spans.exists()
    meta = json.loads((tmp_path / "fused.trec.meta.json").read_text())
    assert set(meta["components"]) == {"multifield", "dense"}


@pytest.mark.parametrize("bad", [["--fuse", "multifield"], ["--fuse", "multifield,bogus"],
                                 ["--fuse", "dense,dense"], ["--fusion-weights", "1,2,3"]])
def test_search_cli_rejects_bad_fusion_options(tmp_path, tiny_index, dense_dir, data_dir, bad, capsys):
    from hybrid.cli.common import run_cli
    from hybrid.cli.search import main as search_main

    rc = run_cli(search_main, ["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics",
                               str(data_dir / "tiny_topics.jsonl"), "--model", "fused", "--output",
                               str(tmp_path / "f.trec"), "--quiet", *bad])
    assert rc != 0 and "fus" in capsys.readouterr().err.lower()
    assert not (tmp_path / "f.trec").exists()


def test_search_cli_dense_without_a_dense_index_names_the_path(tmp_path, tiny_index, data_dir, capsys):
    from hybrid.cli.common import run_cli
    from hybrid.cli.search import main as search_main

    rc = run_cli(search_main, ["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"),
                               "--model", "dense", "--output", str(tmp_path / "d.trec"), "--quiet"])
    assert rc != 0 and "dense" in capsys.readouterr().err


# "c:1" is annotated with no mentions at all ("mentions": [] kept as annotated): its only dense row is the
# span-less one; "e:0" has an entity mention only, so an event query has no mention of it to match.
LONELY = [
    {"id": "q:0", "doc_id": "q", "text": "A powerful earthquake struck Yushu county on Wednesday.",
     "mentions": [{"start": 11, "end": 21, "text": "earthquake", "kind": "event", "tag": "ACTION_OCCURRENCE"}]},
    {"id": "c:0", "doc_id": "c", "text": "Rescuers in Qinghai dug through collapsed schools.",
     "mentions": [{"start": 0, "end": 8, "text": "Rescuers", "kind": "entity", "tag": "HUMAN_PART_PER"}]},
    {"id": "c:1", "doc_id": "c", "text": "The earthquake struck Yushu county early Wednesday.", "mentions": []},
    {"id": "d:0", "doc_id": "d", "text": "The central bank raised interest rates on Wednesday.",
     "mentions": [{"start": 17, "end": 23, "text": "raised", "kind": "event", "tag": "ACTION_OCCURRENCE"}]},
    {"id": "e:0", "doc_id": "e", "text": "Yushu county lies in the south of Qinghai province.",
     "mentions": [{"start": 0, "end": 12, "text": "Yushu county", "kind": "entity", "tag": "LOC_GEO"}]},
]


def _indexed_with_dense(tmp_path_factory, encoder, name: str, passages: list[dict]):
    """A hybrid index of ``passages`` (their own mentions, an empty list kept as annotated) and its dense index."""
    from features.annotate import AnnotationConfig
    from indexes.lucene import IndexConfig, build_index
    from indexes.sparse_index import SparseIndex

    root = tmp_path_factory.mktemp(name)
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    config = AnnotationConfig(annotation="corpus", ner="heuristic", detect="heuristic", empty_means_unannotated=False)
    build_index(IndexConfig(corpus=str(corpus), annotation=config), root / "index", progress=False)
    sparse = SparseIndex(root / "index")
    build_dense_index(sparse, BiEncoder.load(encoder, device="cpu"), root / "dense", progress=False)
    return sparse, root / "dense"


@pytest.fixture(scope="module")
def lonely_dense(tmp_path_factory, encoder):
    """A hybrid index with a passage that has no mention record, and its dense index (passage vectors on)."""
    return _indexed_with_dense(tmp_path_factory, encoder, "lonely", LONELY)


def test_passage_vectors_are_stored_one_per_passage(dense_dir, old_dense_dir, encoder):
    index = DenseIndex(dense_dir)
    meta = json.loads((dense_dir / DENSE_METADATA).read_text())["passage_vectors"]
    assert index.has_passage_vectors and (dense_dir / PASSAGE_VECTORS).is_file()
    assert index.passage_vectors.ntotal == len(index.passage_ids) == meta["count"]
    assert meta["pooling"] == "mean" and meta["marked"] is False and index.passage_vectors.d == meta["dim"]
    enc = BiEncoder.load(encoder, device="cpu")
    from indexes.sparse_index import SparseIndex

    texts = [SparseIndex(json.loads((dense_dir / DENSE_METADATA).read_text())["source_index"]["path"])
             .passage_text(pid) for pid in index.passage_ids]
    np.testing.assert_allclose(index.passage_vectors.reconstruct_n(0, len(texts)), enc.encode_texts(texts), atol=1e-5)
    # the mention side is the same with or without passage vectors
    old = DenseIndex(old_dense_dir)
    assert not old.has_passage_vectors and not (old_dense_dir / PASSAGE_VECTORS).exists()
    assert "passage_vectors" not in json.loads((old_dense_dir / DENSE_METADATA).read_text())
    np.testing.assert_array_equal(np.asarray(old.rows), np.asarray(index.rows))
    np.testing.assert_allclose(old.faiss.reconstruct_n(0, old.size), index.faiss.reconstruct_n(0, index.size),
                               atol=1e-6)


def test_a_passage_without_mention_records_is_found_by_its_passage_vector(lonely_dense, encoder):
    sparse, dense = lonely_dense
    assert sparse.mention_records("c:1") == []
    index = DenseIndex(dense)
    assert index.rows[index.rows_of_passage(index.passage_number["c:1"]), 1].tolist() == [-1]  # span-less row only
    text = LONELY[2]["text"]
    topic = Topic("q", text, 4, 14, doc_id="someone-else", kind="event")  # the sentence of c:1, from elsewhere
    default = DenseRetriever(dense, encoder, k=5)  # sum: its span-less row + its passage vector (1.0)
    found = {h.docid: h for h in default.search([topic], 5)["q"]}
    row = index.rows_of_passage(index.passage_number["c:1"])
    query = default.encoder.encode_queries([topic])[0]
    assert found["c:1"].score == pytest.approx(1.0 + index.exact_scores(query, row)[0], abs=1e-4)
    retriever = DenseRetriever(dense, encoder, k=3, passage_weight=1.0, combine="max")
    assert retriever.uses_passage_vectors
    (top, *_) = retriever.search([topic], 3)["q"]
    assert top.docid == "c:1" and top.score == pytest.approx(1.0, abs=1e-4)  # the query sentence is the passage
    assert top.mention_start is None and top.mention_id is None  # won by its passage vector: no span
    mention_only = DenseRetriever(dense, encoder, k=5, passage_weight=0).search([topic], 5)["q"]
    assert {h.docid: h.score for h in mention_only}.get("c:1", 0.0) < 1.0 - 1e-3
    # an event query whose candidate has entity mentions only: the kind filter drops them all, the passage
    # vector (no kind) still brings it, and the own document stays excluded
    text = LONELY[4]["text"]
    hits = retriever.search([Topic("e", text, 0, 12, doc_id="c", kind="event")], 3)["e"]
    assert hits[0].docid == "e:0" and hits[0].mention_start is None
    assert "e:0" not in [h.docid for h in DenseRetriever(dense, encoder, k=5, passage_weight=0).search(
        [Topic("e", text, 0, 12, doc_id="c", kind="event")], 5)["e"]]
    hits = retriever.search([Topic("own", text, 0, 12, doc_id="e", kind="event")], 5)["own"]
    assert hits and "e:0" not in [h.docid for h in hits]


def test_passage_scores_are_the_max_of_mention_and_weighted_passage(dense_dir, encoder):
    index = DenseIndex(dense_dir)
    topics = [Topic("q", "Lindsay Lohan checked into a rehab clinic in Utah.", 0, 13, doc_id="c3", kind="entity"),
              Topic("r", "Rescue workers searched the rubble for survivors.", 0, 14, kind="event")]
    for weight in (0.3, 1.0, 2.5):
        retriever = DenseRetriever(dense_dir, encoder, k=4, passage_weight=weight, combine="max")
        run = retriever.search(topics, 4)
        queries = retriever.encoder.encode_queries(topics)
        sentences = retriever.encoder.encode_texts([t.text for t in topics], "query")
        for qi, topic in enumerate(topics):
            kind = {"entity": 2, "event": 1}[topic.kind]
            expected = []
            for n, pid in enumerate(index.passage_ids):
                if topic.doc_id and pid.startswith(topic.doc_id + ":"):
                    continue
                rows = index.rows_of_passage(n)
                rows = rows[np.isin(index.row_kind[rows], (kind, 0))]
                mention = index.exact_scores(queries[qi], rows).max() if len(rows) else -np.inf
                plain = weight * index.passage_exact_scores(sentences[qi], np.array([n]))[0]
                expected.append((-max(mention, plain), pid))
            expected.sort()
            got = run[topic.qid]
            assert [h.docid for h in got] == [pid for _, pid in expected[:4]]
            assert [h.score for h in got] == pytest.approx([-s for s, _ in expected[:4]], abs=1e-9)


def test_old_dense_index_and_weight_zero_search_as_before(dense_dir, old_dense_dir, encoder):
    """No passage vectors (an index built before them) or passage_weight 0: the mention-only retriever exactly."""
    topics = [Topic("q", "Lindsay Lohan checked into a rehab clinic in Utah.", 0, 13),
              Topic("k", "Tara Reid entered a rehab facility in Malibu this week.", 10, 17, doc_id="b2", kind="event")]
    old = DenseRetriever(old_dense_dir, encoder, k=5)
    assert not old.uses_passage_vectors
    off = DenseRetriever(dense_dir, encoder, k=5, passage_weight=0)
    assert not off.uses_passage_vectors
    a, b = old.search(topics, 5), off.search(topics, 5)
    assert {q: [(h.docid, h.score, h.mention_start, h.mention_end) for h in hits] for q, hits in a.items()} == \
        {q: [(h.docid, h.score, h.mention_start, h.mention_end) for h in hits] for q, hits in b.items()}


def test_search_cli_dense_passage_weight(tmp_path, tiny_index, dense_dir, old_dense_dir, data_dir):
    from hybrid.cli.search import main as search_main
    from hybrid.core.formats.runs import read_run

    topics = str(data_dir / "tiny_topics.jsonl")
    runs = {}
    for name, where, extra in (("new0", dense_dir, ["--dense-passage-weight", "0"]), ("old", old_dense_dir, []),
                               ("new", dense_dir, [])):
        out = tmp_path / f"{name}.trec"
        assert search_main(["--index", str(tiny_index), "--dense-index", str(where), "--topics", topics,
                            "--model", "dense", "--output", str(out), "--hits", "5", "--quiet",
                            "--passage-weight", "0", "--doc-weight", "0", "--expand-docs", "0", *extra]) == 0
        runs[name] = read_run(out)
    assert runs["new0"] == runs["old"]
    assert runs["new"] and all(0 < len(hits) <= 5 for hits in runs["new"].values())


def test_search_cli_precision_encodes_queries_in_it_and_records_it(tmp_path, tiny_index, dense_dir, data_dir):
    """--precision reaches the query encoder: bf16 moves the scores (by less than the encoder's half-precision
    bound), the run's meta records it with the encoder, and fp32 (the default) is the search without the flag."""
    from hybrid.cli.search import main as search_main
    from hybrid.core.formats.runs import read_run

    topics = str(data_dir / "tiny_topics.jsonl")
    runs, metas = {}, {}
    for name, extra in (("plain", []), ("fp32", ["--precision", "fp32"]), ("bf16", ["--precision", "bf16"])):
        out = tmp_path / f"{name}.trec"
        assert search_main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics", topics,
                            "--model", "dense", "--output", str(out), "--hits", "5", "--quiet", "--no-safety-net",
                            *extra]) == 0
        runs[name] = read_run(out)
        metas[name] = json.loads((tmp_path / f"{name}.trec.meta.json").read_text())
    assert runs["fp32"] == runs["plain"]
    encoders = {name: [a for a in meta["artifacts"] if a["kind"] == "encoder"] for name, meta in metas.items()}
    assert all("precision" not in a for a in encoders["plain"] + encoders["fp32"])
    assert [a["precision"] for a in encoders["bf16"]] == ["bf16"]
    assert metas["bf16"]["config"]["precision"] == "bf16"
    fp32 = {(q, h.docid): h.score for q, hits in runs["fp32"].items() for h in hits}
    bf16 = {(q, h.docid): h.score for q, hits in runs["bf16"].items() for h in hits}
    shared = set(fp32) & set(bf16)
    assert shared
    moved = max(abs(fp32[key] - bf16[key]) for key in shared)
    assert 0 < moved < 0.1  # bf16 really ran; a score is an inner product of two vectors each within 0.05


def test_combine_sum_adds_the_weighted_passage_score(dense_dir, encoder):
    index = DenseIndex(dense_dir)
    topic = Topic("q", "Lindsay Lohan checked into a rehab clinic in Utah.", 0, 13, doc_id="c3", kind="entity")
    retriever = DenseRetriever(dense_dir, encoder, k=4, passage_weight=0.5, combine="sum")
    hits = retriever.search([topic], 4)["q"]
    query = retriever.encoder.encode_queries([topic])[0]
    sentence = retriever.encoder.encode_texts([topic.text], "query")[0]
    assert hits and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        n = index.passage_number[hit.docid]
        rows = index.rows_of_passage(n)
        rows = rows[np.isin(index.row_kind[rows], (2, 0))]
        expected = index.exact_scores(query, rows).max() + 0.5 * index.passage_exact_scores(sentence, np.array([n]))[0]
        assert hit.score == pytest.approx(expected, abs=1e-9) and not hit.docid.startswith("c3:")
    with pytest.raises(ValueError, match="combine"):
        DenseRetriever(dense_dir, encoder, combine="product")


def test_search_cli_passes_an_encoder_name_to_the_loader(tmp_path, tiny_index, dense_dir, data_dir, capsys):
    """--encoder takes a folder or a model name (resolved by BiEncoder.load), not only an existing path."""
    from hybrid.cli.common import run_cli
    from hybrid.cli.search import main as search_main

    rc = run_cli(search_main, ["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics",
                               str(data_dir / "tiny_topics.jsonl"), "--model", "dense", "--encoder", "no-such/encoder",
                               "--output", str(tmp_path / "d.trec"), "--quiet"])
    assert rc != 0
    assert "'no-such/encoder' is neither a local folder nor a cached Hugging Face model" in capsys.readouterr().err


def test_a_query_sentence_that_is_an_indexed_passage_takes_its_stored_vector(dense_dir, encoder, sparse_index,
                                                                              monkeypatch):
    """Query by example: the sentence's vector is the passage's stored one (no second forward pass), equal to
    encoding it within float rounding; a text that differs from the indexed passage's is encoded."""
    retriever = DenseRetriever(dense_dir, encoder, k=5, same_kind=False)
    text = sparse_index.passage_text("b2:0")
    topics = [Topic("same", text, 0, 9, passage_id="b2:0"), Topic("edited", text + " Really.", 0, 9, passage_id="b2:0"),
              Topic("free", text, 0, 9, doc_id="b2")]  # the same own document, no passage named
    index = retriever.index
    assert index.text_hashes is not None and index.stored_passage_number("b2:0", text) == index.passage_number["b2:0"]
    assert index.stored_passage_number("b2:0", text + " Really.") is None
    assert index.stored_passage_number(None, text) is None
    encoded: list[str] = []
    original = retriever.encoder.encode_texts
    monkeypatch.setattr(retriever.encoder, "encode_texts",
                        lambda texts, *a, **kw: (encoded.extend(texts), original(texts, *a, **kw))[1])
    sentences = retriever.query_sentences(topics)
    assert encoded == [text + " Really.", text]  # the first topic took the stored vector
    np.testing.assert_allclose(sentences[0], sentences[2], atol=1e-5)
    np.testing.assert_array_equal(sentences[0], index.passage_vectors.reconstruct(index.passage_number["b2:0"]))
    monkeypatch.undo()
    run = retriever.search(topics, 5)
    assert [h.docid for h in run["same"]] == [h.docid for h in run["free"]]
    assert [h.score for h in run["same"]] == pytest.approx([h.score for h in run["free"]], abs=1e-5)


def test_an_hnsw_index_has_an_exact_copy_for_the_gpu():
    """FAISS has no GPU HNSW: the GPU searches the HNSW index's exact copy, which ranks as a flat index does."""
    import faiss

    from indexes.faiss_index import exact_copy

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    hnsw = faiss.IndexHNSWFlat(16, 8, faiss.METRIC_INNER_PRODUCT)
    hnsw.add(vectors)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)
    copy = exact_copy(hnsw)
    assert not hasattr(copy, "hnsw") and copy.metric_type == faiss.METRIC_INNER_PRODUCT and copy.ntotal == 300
    np.testing.assert_array_equal(copy.search(queries, 10)[1], flat.search(queries, 10)[1])
    assert exact_copy(flat) is flat


def test_a_gpu_search_without_a_gpu_is_refused_in_one_line(dense_dir):
    from indexes.faiss_index import faiss_has_gpu

    if faiss_has_gpu():
        pytest.skip("FAISS sees a GPU here")
    with pytest.raises(ConfigError, match="gpu extra"):
        DenseIndex(dense_dir, gpu=True)
    assert not DenseIndex(dense_dir).on_gpu


def test_gpu_search_ranks_as_the_cpu_search(dense_dir, encoder, sparse_index):
    """Needs faiss-gpu and a CUDA device (the gpu extra); CI has neither and skips it."""
    from indexes.faiss_index import GPU_MAX_K, faiss_has_gpu

    if not faiss_has_gpu():
        pytest.skip("needs faiss-gpu and a GPU")
    cpu, gpu = DenseIndex(dense_dir, gpu=False), DenseIndex(dense_dir, gpu=True)
    assert gpu.on_gpu and not cpu.on_gpu
    topics = [Topic(pid, sparse_index.passage_text(pid), 0, 4, passage_id=pid) for pid in cpu.passage_ids[:4]]
    runs = [DenseRetriever(index, encoder, k=5, same_kind=False).search(topics, 5) for index in (cpu, gpu)]
    for qid in runs[0]:
        assert [h.docid for h in runs[0][qid]] == [h.docid for h in runs[1][qid]]
        assert [h.score for h in runs[0][qid]] == pytest.approx([h.score for h in runs[1][qid]], abs=1e-5)
    queries = cpu.faiss.reconstruct_n(0, 2)
    assert gpu.search(queries, GPU_MAX_K + 1)[1].shape == (2, min(GPU_MAX_K + 1, gpu.size))  # CPU past the limit


# Five documents with the same sentence (identical vectors, so exactly tied scores), ids not in index order, and one
# other sentence.
TWINS = [{"id": f"{d}:0", "doc_id": d, "sent_id": 0, "text": "The earthquake struck Yushu county on Wednesday.",
          "mentions": [{"start": 4, "end": 14, "text": "earthquake", "kind": "event", "tag": "ACTION_OCCURRENCE"}]}
         for d in ("d", "b", "e", "a", "c")] + [
    {"id": "z:0", "doc_id": "z", "sent_id": 0, "text": "The central bank raised interest rates.",
     "mentions": [{"start": 17, "end": 23, "text": "raised", "kind": "event", "tag": "ACTION_OCCURRENCE"}]}]


@pytest.fixture(scope="module")
def twins_dense(tmp_path_factory, encoder):
    return _indexed_with_dense(tmp_path_factory, encoder, "twins", TWINS)[1]


@pytest.mark.parametrize("options", [{"passage_weight": 0}, {"combine": "sum"}, {"combine": "max"}])
def test_exact_ties_cut_at_k_go_by_passage_id(twins_dense, encoder, options):
    """Tied passages straddling the k-th place: every top k is the first k of the whole ranking, ties by id."""
    topic = Topic("q", TWINS[0]["text"], 4, 14, doc_id="elsewhere", kind="event")
    retriever = DenseRetriever(twins_dense, encoder, k=6, **options)
    whole = retriever.search([topic], 6)["q"]
    assert [h.docid for h in whole[:5]] == ["a:0", "b:0", "c:0", "d:0", "e:0"]
    assert len({h.score for h in whole[:5]}) == 1 and whole[5].score < whole[0].score  # exactly tied
    for k in range(1, 6):
        assert retriever.search([topic], k)["q"] == whole[:k]


@pytest.mark.parametrize("bound", [0, 4, 15, 1000])  # none, too small (grows), exact, generous (cut at the end)
def test_a_flat_index_filled_in_place_is_the_index_add_makes(bound):
    import faiss

    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((n, 16), dtype=np.float32) for n in (5, 0, 7, 3)]
    added = faiss.IndexFlatIP(16)
    filled = _FlatFill(faiss.IndexFlatIP(16), bound)
    for part in parts:
        added.add(part)
        filled.add(part)
    index = filled.close()
    assert index.ntotal == 15 and index.codes.size() == 15 * 16 * 4
    assert bytes(faiss.serialize_index(index)) == bytes(faiss.serialize_index(added))
    assert (index.search(parts[2], 4)[1] == added.search(parts[2], 4)[1]).all()
    hnsw = _FlatFill(faiss.IndexHNSWFlat(16, 8, faiss.METRIC_INNER_PRODUCT), bound)  # not flat: add, as before
    for part in parts:
        hnsw.add(part)
    assert hnsw.close().ntotal == 15


def test_a_dense_index_too_big_for_memory_is_refused_before_encoding(tmp_path, tiny_index, encoder, monkeypatch,
                                                                     capsys):
    """The vectors' buffer is allocated before the first passage is encoded: a collection whose dense index cannot
    be held is one line at once, not an out-of-memory kill after the encoding (here: a bound of 10^13 rows, which
    no machine allocates)."""
    import indexes.faiss_index as faiss_index
    from hybrid.cli.common import run_cli
    from hybrid.cli.index_dense import main

    monkeypatch.setattr(faiss_index, "row_bound", lambda index, limit=None: 10**13)
    out = tmp_path / "too-big"
    assert run_cli(main, ["--index", str(tiny_index), "--encoder", str(encoder), "--output", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "dense index needs ~" in err and "10,000,000,000,000 vectors" in err
    assert "cannot allocate it" in err and not out.exists()
