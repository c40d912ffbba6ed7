"""Sharded build: whole documents per shard, balanced shards, complete shard indexes, manifest checksums,
atomic replacement, the CLI, and the pieces of the merge (tie adjustment, k-way merge)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scale_helpers import needs_sharded_search

from hybrid.core.records import Mention, Passage


@pytest.fixture(scope="module")
def tiny_sharded(tiny_corpus, tmp_path_factory):
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig
    from indexes.shards import build_sharded_index

    path = tmp_path_factory.mktemp("tiny-shards") / "tiny3"
    build_sharded_index(IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY), path, 3,
                        engine="local", progress=False)
    return path


def test_documents_stay_whole_and_shards_balance(sample_sharded, sample_single):
    from indexes.shards import read_manifest
    from indexes.sparse_index import SparseIndex

    manifest = read_manifest(sample_sharded)
    single = json.loads((sample_single / "hybrid-index.json").read_text())
    assert manifest["counts"] == single["counts"]
    assert manifest["max_doc_passages"] == single["max_doc_passages"]
    seen: dict[str, str] = {}
    sizes = []
    whole = SparseIndex(sample_single)
    for shard in manifest["shards"]:
        index = SparseIndex(sample_sharded / shard["name"])  # every shard is a complete hybrid index
        meta = index.metadata
        assert meta["shard"]["of"] == 3 and meta["counts"]["passages"] == shard["passages"]
        docs = {index.passage_json(pid)["doc_id"] for pid in _passage_ids(index)}
        assert len(docs) == shard["documents"]
        for doc in docs:
            assert doc not in seen, f"document {doc} in {seen.get(doc)} and {shard['name']}"
            seen[doc] = shard["name"]
            assert set(index.document_passage_ids(doc)) == set(whole.document_passage_ids(doc))
        sizes.append(shard["passages"])
    assert len(seen) == single["counts"]["documents"]
    assert max(sizes) - min(sizes) <= manifest["max_doc_passages"]


def _passage_ids(index) -> list[str]:
    reader = index.passages.object.reader
    stored = reader.storedFields()
    return [stored.document(i).get("id") for i in range(reader.maxDoc())]


def test_manifest_checksums_catch_a_changed_or_extra_file(tiny_sharded, tmp_path):
    from indexes.shards import MANIFEST, read_manifest, verify_shards

    copy = tmp_path / "copy"
    shutil.copytree(tiny_sharded, copy)
    assert verify_shards(copy) == []
    manifest = read_manifest(copy)
    shard = manifest["shards"][1]
    assert shard["sha256"] and shard["bytes"] == sum(f["bytes"] for f in shard["files"].values())
    assert json.loads((copy / MANIFEST).read_text())["config"]["shards"] == 3
    victim = next(p for p in sorted((copy / shard["name"] / "mentions").iterdir()) if p.stat().st_size > 100)
    data = bytearray(victim.read_bytes())
    data[50] ^= 0xFF
    victim.write_bytes(bytes(data))
    (copy / shard["name"] / "stray.txt").write_text("x")
    problems = verify_shards(copy)
    assert any(victim.name in p and "sha256" in p for p in problems)
    assert any("stray.txt" in p and "not in the manifest" in p for p in problems)


def test_more_shards_than_documents_is_a_clear_error(tiny_corpus, tmp_path):
    from features.annotate import LEGACY
    from hybrid.core.errors import ConfigError
    from indexes.lucene import IndexConfig
    from indexes.shards import build_sharded_index

    with pytest.raises(ConfigError, match="5 documents cannot fill 6 shards"):
        build_sharded_index(IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY), tmp_path / "x", 6,
                            engine="local", progress=False)
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".x.*"))  # nothing half-built left


def test_existing_index_is_kept_without_overwrite(tiny_corpus, tiny_sharded):
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig
    from indexes.shards import MANIFEST, build_sharded_index

    before = (tiny_sharded / MANIFEST).read_bytes()
    with pytest.raises(FileExistsError):
        build_sharded_index(IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY), tiny_sharded, 2,
                            engine="local", progress=False)
    assert (tiny_sharded / MANIFEST).read_bytes() == before


def test_passages_survive_the_split_format():
    from indexes.shards import passage_from_json, passage_to_json

    passages = [
        Passage("d:0", "d", "Tara Reid entered rehab.", [Mention(0, 9, "Tara Reid", "entity", "PER", "c1", "7")], 0,
                {"topic": 1}),
        Passage("d:1", "d", "No annotations here.", None, 1),
        Passage("e:0", "e", "Annotated, no mentions.", []),
    ]
    for passage in passages:
        assert passage_from_json(json.loads(json.dumps(passage_to_json(passage)))) == passage


def test_index_and_search_cli_on_a_sharded_index(tiny_corpus, tiny_index, data_dir, tmp_path):
    needs_sharded_search()
    from hybrid.cli.index import main as index_main
    from hybrid.cli.search import main as search_main

    sharded = tmp_path / "cli-shards"
    assert index_main(["--corpus", str(tiny_corpus), "--index", str(sharded), "--shards", "2", "--engine", "local",
                       "--annotation", "corpus", "--detect", "heuristic", "--ner", "heuristic", "--quiet"]) == 0
    for model in ("bm25", "multifield"):
        runs = {}
        for name, index in (("single", tiny_index), ("sharded", sharded)):
            runs[name] = tmp_path / f"{name}.{model}.trec"
            assert search_main(["--index", str(index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--model",
                                model, "--output", str(runs[name]), "--quiet"]) == 0
        assert runs["single"].read_text() == runs["sharded"].read_text()
        assert runs["single"].read_text().strip()


def test_index_cli_refuses_a_dense_backend_it_cannot_run_before_building(tiny_corpus, tmp_path):
    from hybrid.cli.index import main as index_main
    from hybrid.core.errors import ConfigError

    target = tmp_path / "never"
    with pytest.raises(ConfigError, match="--backend onnx runs in fp32"):
        index_main(["--corpus", str(tiny_corpus), "--index", str(target), "--shards", "2", "--engine", "local",
                    "--dense-encoder", "minilm", "--backend", "onnx", "--precision", "bf16", "--quiet"])
    assert not target.exists()


def test_anserini_tie_adjustment_by_hand():
    from hybrid.core.anserini import _java_round, anserini_tie_adjust

    assert [_java_round(x) for x in (2.5, -2.5, 2.4999999999999996, 0.49999999999999994, -0.5)] == [3, -2, 2, 0, 0]
    f32 = np.float32
    raw = [float(f32(x)) for x in (7.123449, 5.00004, 5.00001, 4.99996, 4.9)]  # Lucene scores are floats
    adjusted = anserini_tie_adjust(raw)
    assert adjusted[0] == float(f32(7.1234))
    assert adjusted[1] == float(f32(5.0))
    assert adjusted[2] == float(f32(f32(5.0) - f32(1e-6)))  # within 1e-4 of its predecessor: nudged once
    assert adjusted[3] == float(f32(f32(5.0) - f32(f32(1e-6) * f32(2))))  # 4.99996 rounds to 5.0: nudged twice
    assert adjusted[4] == float(f32(4.9))
    assert adjusted == sorted(adjusted, reverse=True)


def test_merge_orders_by_score_then_id_and_cuts_at_k():
    from indexes.sharded_index import merge_top

    a = (["b", "d"], [2.0, 1.0])
    b = (["a", "c", "e"], [2.0, 1.0, 0.5], ["a#0-1", "c#0-1", "e#0-1"])
    assert merge_top([a, b], 4) == [("a", 2.0, "a#0-1"), ("b", 2.0, None), ("c", 1.0, "c#0-1"), ("d", 1.0, None)]
    assert merge_top([([], []), a], 10) == [("b", 2.0, None), ("d", 1.0, None)]


def test_engine_choice(monkeypatch):
    from hybrid.core.errors import ConfigError
    from hybrid.core.ray_engine import LocalEngine, get_engine

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert isinstance(get_engine("local"), LocalEngine)
    assert isinstance(get_engine("auto"), LocalEngine)  # Ray only when asked for or a cluster is named
    with pytest.raises(ConfigError, match="unknown engine"):
        get_engine("spark")


def test_local_engine_batches_lines_in_order(tmp_path):
    from hybrid.core.ray_engine import LocalEngine

    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    files[0].write_text("1\n2\n\n3\n")
    files[1].write_text("4\n5\n")
    out = list(LocalEngine().map_batches(files, _Lengths, {"offset": 10}, batch_size=2))
    assert [b["value"] for b in out] == [[11, 12], [13, 14], [15]]


class _Lengths:
    def __init__(self, offset: int):
        self.offset = offset

    def __call__(self, batch):
        return {"value": np.array([int(t) + self.offset for t in batch["text"]])}
