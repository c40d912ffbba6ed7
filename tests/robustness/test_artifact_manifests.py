"""Manifests, models, recipes and options against tampering, wrong shapes and overflow: one line naming the file
(or option) and the fix, never a traceback, never a silently used artifact. Also what a run records of the
artifacts it used.

Fixtures are built once per module: a two-shard index of the tiny corpus, a tiny LTR model.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from documented import assert_documented

from hybrid.core.errors import ConfigError, IndexMissingError, InputError
from hybrid.core.provenance import METADATA, used_artifacts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ltr"))
from test_ltr_learners import featureset, toy_matrix  # noqa: E402  (tests/ltr is not a package)

USER_ERRORS = (InputError, IndexMissingError)


def refused(load, where: Path | str) -> str:
    with pytest.raises(USER_ERRORS) as caught:
        load()
    message = str(caught.value)
    assert str(where) in message and "\n" not in message, message
    return message


# -- sharded indexes: verified on open ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, tiny_corpus) -> Path:
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig
    from indexes.shards import build_sharded_index

    out = tmp_path_factory.mktemp("sharded") / "idx"
    build_sharded_index(IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY), out, 2, progress=False)
    return out


def edit_manifest(folder: Path, change) -> Path:
    from indexes.shards import MANIFEST

    manifest = json.loads((folder / MANIFEST).read_text())
    change(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder / MANIFEST


def first_file(shard: Path) -> Path:
    return max((p for p in (shard / "mentions").iterdir() if p.is_file()), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("attack", ["outside", "absolute", "extra shard", "dropped shard", "counts", "totals",
                                    "shape", "not json", "duplicate"])
def test_a_tampered_shard_manifest_is_refused(sharded, tmp_path, attack):
    from indexes.shards import MANIFEST, read_manifest

    copy = shutil.copytree(sharded, tmp_path / "idx")
    if attack == "outside":
        where = edit_manifest(copy, lambda m: m["shards"][0].update(name="../idx"))
    elif attack == "absolute":
        where = edit_manifest(copy, lambda m: m["shards"][0].update(name=str(sharded / "shard-00000")))
    elif attack == "extra shard":
        shutil.copytree(copy / "shard-00000", copy / "shard-00002")
        where = copy / MANIFEST
    elif attack == "dropped shard":
        where = edit_manifest(copy, lambda m: m["shards"].pop())
    elif attack == "counts":
        where = copy / "shard-00000" / METADATA  # another shard's metadata swapped in: its counts differ
        meta = json.loads(where.read_text())
        meta["counts"]["passages"] += 1
        where.write_text(json.dumps(meta))
    elif attack == "totals":
        where = edit_manifest(copy, lambda m: m["counts"].update(mentions=1))
    elif attack == "shape":
        where = edit_manifest(copy, lambda m: m.update(shards={"a": 1}))
    elif attack == "duplicate":
        where = edit_manifest(copy, lambda m: m["shards"].append(dict(m["shards"][0])))
    else:
        (copy / MANIFEST).write_text("{not json")
        where = copy / MANIFEST
    refused(lambda: read_manifest(copy), where)


def test_a_truncated_shard_file_is_refused_on_open(sharded, tmp_path):
    from indexes.sharded_index import ShardedIndex

    copy = shutil.copytree(sharded, tmp_path / "idx")
    victim = first_file(copy / "shard-00001")
    victim.write_bytes(victim.read_bytes()[:-7])
    message = refused(lambda: ShardedIndex(copy), victim)
    assert "truncated or replaced" in message
    assert_documented("damaged sharded index")


def test_a_same_size_corruption_of_a_shard_is_caught_by_the_full_check(sharded, tmp_path, monkeypatch):
    from hybrid.core.provenance import VERIFY_ENV
    from indexes.shards import MANIFEST, read_manifest

    copy = shutil.copytree(sharded, tmp_path / "idx")
    victim = first_file(copy / "shard-00000")
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    read_manifest(copy)  # the fast check sees the same sizes
    monkeypatch.setenv(VERIFY_ENV, "full")
    assert "sha256" in refused(lambda: read_manifest(copy), copy / MANIFEST)


def test_an_intact_sharded_index_opens(sharded):
    from indexes.sharded_index import ShardedIndex

    index = ShardedIndex(sharded)
    try:
        assert index.n_shards == 2 and len(index.manifest_sha256) == 64
    finally:
        index.close()


# -- hybrid-index.json of the wrong shape ---------------------------------------------------------------------


@pytest.mark.parametrize("change", [
    lambda m: m.clear() or m.update(x=1), lambda m: m.update(config=[]), lambda m: m["config"].pop("annotation"),
    lambda m: m["config"]["annotation"].update(windw=3), lambda m: m.update(counts={"passages": "ten"}),
    lambda m: m.update(max_doc_passages=2**40), lambda m: m["config"]["annotation"].update(annotation="bogus")])
def test_a_hybrid_index_json_of_the_wrong_shape_is_refused(tiny_index, tmp_path, change):
    from indexes.sparse_index import SparseIndex

    copy = shutil.copytree(tiny_index, tmp_path / "idx")
    meta = json.loads((copy / METADATA).read_text())
    change(meta)
    (copy / METADATA).write_text(json.dumps(meta))

    def open_and_annotate():
        SparseIndex(copy).annotation_config  # noqa: B018 - what the first query reads

    refused(open_and_annotate, copy / METADATA)


def test_a_run_records_the_index_it_opened_not_the_file_now(tiny_index, tmp_path):
    """Rebuilt while the run searched: the meta names the manifest that was read when the index was opened."""
    from hybrid.core.provenance import file_sha256, inputs
    from indexes.sparse_index import SparseIndex

    copy = shutil.copytree(tiny_index, tmp_path / "idx")
    index = SparseIndex(copy)
    opened = file_sha256(copy / METADATA)
    meta = json.loads((copy / METADATA).read_text())
    meta["built_at"] = "later"
    (copy / METADATA).write_text(json.dumps(meta))  # the rebuild's new manifest
    assert inputs(None, copy, index=index)["index_metadata"]["sha256"] == opened
    assert inputs(None, copy)["index_metadata"]["sha256"] != opened


# -- LTR models -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ltr_model(tmp_path_factory) -> Path:
    from ltr.model import train_model

    model = train_model("logistic", {}, featureset("zscore"), toy_matrix(), seed=0)
    return model.save(tmp_path_factory.mktemp("ltr") / "model")


@pytest.mark.parametrize("change", [
    lambda m: m.pop("learner"), lambda m: m.pop("payload"), lambda m: m.update(learner=["x"]),
    lambda m: m.update(normaliser=None), lambda m: m.update(featureset={"groups": 3}),
    lambda m: m.update(payload={"weights.json": "0" * 64, "../x": "0"}), lambda m: m.update(payload=[1]),
    lambda m: m["normaliser"].update(stats={"a": ["x"]}), lambda m: m.update(payload={"gone.json": "0" * 64})])
def test_a_tampered_ltr_model_json_is_one_error(ltr_model, tmp_path, change):
    from ltr.model import MODEL_FILE, TrainedModel

    copy = shutil.copytree(ltr_model, tmp_path / "model")
    meta = json.loads((copy / MODEL_FILE).read_text())
    change(meta)
    (copy / MODEL_FILE).write_text(json.dumps(meta))
    refused(lambda: TrainedModel.load(copy), copy)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe", b"[1, 2]", b"{\"format\": "])
def test_an_ltr_model_json_that_is_not_an_object_is_one_error(ltr_model, tmp_path, content):
    from ltr.model import MODEL_FILE, TrainedModel

    copy = shutil.copytree(ltr_model, tmp_path / "model")
    (copy / MODEL_FILE).write_bytes(content)
    refused(lambda: TrainedModel.load(copy), copy / MODEL_FILE)


def test_the_loaded_model_is_an_artifact_with_its_fingerprint(ltr_model):
    from hybrid.core.provenance import file_sha256
    from ltr.model import MODEL_FILE, TrainedModel

    model = TrainedModel.load(ltr_model)

    class Stage:  # what a pipeline looks like to the walker: project objects holding artifacts
        __module__ = "hybrid.fake"

        def __init__(self):
            self.parts = [{"model": model}, (model,)]

    assert used_artifacts(Stage()) == [{"kind": "ltr_model", "path": str(ltr_model),
                                        "fingerprint": file_sha256(ltr_model / MODEL_FILE),
                                        "featureset_fingerprint": model.fingerprint}]


# -- recipes and options: nesting and overflow -----------------------------------------------------------------


def test_a_deeply_nested_recipe_is_refused(tmp_path):
    from hybrid.recipes.registry import load_recipe

    path = tmp_path / "deep.toml"
    path.write_text('name = "x"\n[system]\ntype = "bm25"\nweights = ' + "[" * 5000 + "]" * 5000 + "\n")
    message = refused(lambda: load_recipe(str(path)), path)
    assert "nested too deeply" in message
    path.write_text('name = "x"\n[system]\ntype = "bm25"\nweights = ' + "[" * 40 + "]" * 40 + "\n")
    assert "nested too deeply" in refused(lambda: load_recipe(str(path)), path)
    assert_documented("nested too deeply (more than 32 levels")


def test_an_infinite_field_weight_is_refused():
    from hybrid.retrieval.sparse import parse_clauses

    with pytest.raises(ConfigError, match="must be a finite number >= 0, got inf"):
        parse_clauses("mention=1e309")
    assert_documented("must be a finite number >= 0, got inf")


@pytest.mark.parametrize("argv", [["--hits", "2147483648"], ["--net-depth", "100000000000"],
                                  ["--threads", "99999999999"]])
def test_counts_that_would_overflow_java_are_refused(argv, capsys):
    from hybrid.cli.search import parser

    with pytest.raises(SystemExit) as caught:
        parser().parse_args(["--topics", "sample", *argv])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "below 2**31" in err and argv[0] in err
    assert_documented("below 2**31 (2147483648)")


def test_a_recipe_count_that_would_overflow_is_refused(tmp_path, sparse_index):
    from hybrid.recipes import Context
    from hybrid.recipes.registry import load_recipe

    path = tmp_path / "big.toml"
    path.write_text('name = "x"\n[system]\ntype = "safety-net"\ndepth = 100000000000\n'
                    'base = { type = "multifield" }\n')
    with pytest.raises(ConfigError, match="below 2") as caught:
        load_recipe(str(path)).build(Context(index=sparse_index))
    assert f"{path}:4" in str(caught.value)


def test_numpy_is_not_needed_for_the_walker():
    assert used_artifacts(None) == [] and used_artifacts({"a": [1, "x", np.float32(1)]}) == []


def test_the_ltr_feature_cache_follows_the_index_content_not_its_path(tiny_index, tmp_path):
    """A rebuilt index at the same path (a new manifest) must not reuse the old index's cached features; the
    same index moved keeps them."""
    from hybrid.cli.ltr import Inputs

    moved = shutil.copytree(tiny_index, tmp_path / "moved")
    split = Inputs.__new__(Inputs)  # no run or topics files: the index's part of the key only
    split.paths = {}
    key = split.key(tiny_index)
    assert split.key(moved) == key
    meta = json.loads((moved / METADATA).read_text())
    meta["built_at"] = "rebuilt"
    (moved / METADATA).write_text(json.dumps(meta))
    assert split.key(moved) != key


# -- collect caches -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def entity_cache(tmp_path_factory, tiny_corpus):
    """A collection of the tiny corpus with one made-up entity per passage, saved as the entity cache."""
    from hybrid.collect.collection import Collection, Occurrence

    collection = Collection.from_corpus(tiny_corpus)
    collection.entities = [[Occurrence("k", p.text[:3], "ORG", 0, 3)] for p in collection.passages]
    path = tmp_path_factory.mktemp("collect") / "entities.jsonl"
    collection.save_entities(path)
    return path


@pytest.mark.parametrize("tamper", [
    lambda row: row.pop("entities"), lambda row: row.update(entities=[["k", "t", "ORG", 0]]),
    lambda row: row.update(entities=[["k", "t", "ORG", "0", 3]]), lambda row: row.update(entities=[["k", "t", "ORG",
                                                                                                  0, 10**6]]),
    lambda row: row.update(entities="k"), lambda row: row.update(entities=[None])])
def test_a_tampered_entity_cache_is_one_error(entity_cache, tiny_corpus, tmp_path, tamper):
    from hybrid.collect.collection import Collection

    lines = entity_cache.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    tamper(row)
    lines[2] = json.dumps(row)
    copy = tmp_path / "entities.jsonl"
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    collection = Collection.from_corpus(tiny_corpus)
    collection.load_entities(entity_cache)  # the intact cache loads
    with pytest.raises(InputError) as caught:
        collection.load_entities(copy)
    assert f"{copy}:3" in str(caught.value)
    assert_documented("is not [key, text, label, start, end] inside the passage")


@pytest.mark.parametrize("content", [b"", b"garbage" * 20, None])
def test_a_damaged_embedding_cache_is_encoded_again(tiny_corpus, tiny_bert, tmp_path, content, caplog):
    from features.encoder import BiEncoder
    from hybrid.collect.collection import Collection

    encoder = BiEncoder.load(tiny_bert, device="cpu")
    collection = Collection.from_corpus(tiny_corpus)
    cache = tmp_path / "vectors.npy"
    if content is None:
        np.save(cache, np.full((len(collection.doc_ids), 4), np.nan, dtype=np.float32))  # right rows, not finite
    else:
        cache.write_bytes(content)
    vectors = collection.embeddings(encoder, cache=cache, progress=False)
    assert vectors.shape == (len(collection.doc_ids), encoder.hidden) and np.isfinite(vectors).all()
    assert "re-encoding" in caplog.text
    assert np.array_equal(np.load(cache), vectors)  # the cache is made again


# -- Lucene files damaged after the build ----------------------------------------------------------------------


def damaged_copy(tiny_index: Path, target: Path, rel: str) -> Path:
    copy = shutil.copytree(tiny_index, target)
    victim = copy / rel
    data = bytearray(victim.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 40):
        data[i] ^= 0x5A
    victim.write_bytes(bytes(data))
    return copy


@pytest.mark.parametrize("rel", ["passages/_0.fdt", "mentions/_0_Lucene99_0.doc"])
def test_the_full_check_finds_a_changed_lucene_file_on_open(tiny_index, tmp_path, monkeypatch, rel):
    """Postings with flipped bytes search without any error (silently other results): only the checksum sees it."""
    from hybrid.core.provenance import VERIFY_ENV
    from indexes.sparse_index import SparseIndex

    copy = damaged_copy(tiny_index, tmp_path / "idx", rel)
    monkeypatch.setenv(VERIFY_ENV, "full")
    message = refused(lambda: SparseIndex(copy), copy)
    assert "checksum" in message and rel.split("/")[0] in message
    assert_documented("fails Lucene's checksum check")


def test_stored_fields_damaged_at_read_time_are_one_line(tiny_index, tiny_bert, tmp_path, capsys):
    """hybrid.index_dense reads every passage's stored document (a BM25 search no longer reads any: hit ids come
    from doc values): stored fields it cannot read are one line naming the index, not an AttributeError."""
    from hybrid.cli.common import run_cli
    from hybrid.cli.index_dense import main

    copy = damaged_copy(tiny_index, tmp_path / "idx", "passages/_0.fdt")
    rc = run_cli(main, ["--index", str(copy), "--encoder", str(tiny_bert), "--output", str(tmp_path / "dense"),
                        "--quiet"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert rc == 2 and len(err) == 1 and "HYBRID_VERIFY=full" in err[0] and str(copy) in err[0], err
    assert not (tmp_path / "dense").exists()
    assert_documented("the stored document of passage number")


# -- an index built from a pipe ---------------------------------------------------------------------------------


def test_an_index_built_from_a_fifo_records_the_hash_of_what_it_read(tiny_corpus, tmp_path):
    """A FIFO cannot be read twice: hashing it after the build blocked forever (or hashed nothing)."""
    import os
    import threading

    from features.annotate import LEGACY
    from hybrid.core.provenance import file_sha256
    from indexes.lucene import IndexConfig, build_index

    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as out:
            out.write(tiny_corpus.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    meta = build_index(IndexConfig(corpus=str(fifo), annotation=LEGACY), tmp_path / "idx", progress=False)
    writer.join(timeout=5)
    assert meta["corpus_sha256"] == file_sha256(tiny_corpus)
    assert meta["counts"]["passages"] == len(tiny_corpus.read_text().splitlines())


def test_the_streamed_hash_is_the_file_hash_even_past_an_overlong_line(tmp_path):
    import hashlib

    from hybrid.core.formats.lines import MAX_LINE_BYTES, SkipReport, iter_lines
    from hybrid.core.provenance import file_sha256

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * (MAX_LINE_BYTES + 3 * (1 << 20)) + b"\n" + b'{"b": 2}\n')
    digest = hashlib.sha256()
    report = SkipReport()
    assert [n for n, _ in iter_lines(path, on_error=report.add, digest=digest)] == [1, 3]
    assert digest.hexdigest() == file_sha256(path)
