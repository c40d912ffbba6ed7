"""A dense index is bound to the hybrid index it was built from: used with another one it is refused, naming both.

Without the binding a dense index opened beside a foreign hybrid index searches silently and its runs name
the other collection's passages. The foreign index here is a real one (half of the tiny corpus), built once.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from documented import assert_documented

from features.encoder import BiEncoder, EncoderConfig
from hybrid.core.errors import ConfigError
from indexes.faiss_index import DENSE_METADATA, DenseIndex, build_dense_index, check_bound, content_sha256


@pytest.fixture(scope="module")
def encoder(tmp_path_factory, tiny_bert) -> Path:
    enc = BiEncoder.load(tiny_bert, EncoderConfig(mark_query=False), device="cpu")
    return enc.save(tmp_path_factory.mktemp("enc") / "tiny-dense")


@pytest.fixture(scope="module")
def dense_dir(tmp_path_factory, sparse_index, encoder) -> Path:
    out = tmp_path_factory.mktemp("dense") / "dense"
    build_dense_index(sparse_index, BiEncoder.load(encoder, device="cpu"), out, progress=False,
                      passage_vectors=False)
    return out


@pytest.fixture(scope="module")
def foreign_index(tmp_path_factory, tiny_corpus) -> Path:
    """Another collection: the first half of the tiny corpus, indexed the same way."""
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig, build_index

    folder = tmp_path_factory.mktemp("foreign")
    corpus = folder / "half.jsonl"
    corpus.write_text("".join(tiny_corpus.read_text(encoding="utf-8").splitlines(keepends=True)[:5]),
                      encoding="utf-8")
    build_index(IndexConfig(corpus=str(corpus), annotation=LEGACY), folder / "index", progress=False)
    return folder / "index"


def old_copy(dense_dir: Path, target: Path, **source) -> Path:
    """The dense index as built before bindings were recorded (source_index: path, corpus, counts only)."""
    shutil.copytree(dense_dir, target)
    meta = json.loads((target / DENSE_METADATA).read_text())
    meta["source_index"] = {k: meta["source_index"][k] for k in ("path", "corpus_sha256", "counts")} | source
    (target / DENSE_METADATA).write_text(json.dumps(meta))
    return target


def test_the_dense_index_records_the_content_of_its_hybrid_index(dense_dir, sparse_index, tiny_index):
    source = json.loads((dense_dir / DENSE_METADATA).read_text())["source_index"]
    assert source["content_sha256"] == content_sha256(sparse_index.metadata)
    assert source["path"] == str(tiny_index) and len(source["manifest_sha256"]) == 64
    check_bound(DenseIndex(dense_dir), sparse_index)  # its own index: fine, as object or as folders
    check_bound(dense_dir, tiny_index)


def test_a_copy_of_the_same_index_elsewhere_is_still_its_index(dense_dir, tiny_index, tmp_path):
    moved = shutil.copytree(tiny_index, tmp_path / "moved")
    check_bound(dense_dir, moved)


def test_a_foreign_index_is_refused_naming_both(dense_dir, foreign_index, tiny_index):
    with pytest.raises(ConfigError) as caught:
        check_bound(DenseIndex(dense_dir), foreign_index)
    message = str(caught.value)
    assert str(dense_dir) in message and str(foreign_index) in message and str(tiny_index) in message
    assert "python -m hybrid.index_dense --index" in message
    assert_documented("was built from the hybrid index")


def test_search_with_a_foreign_index_exits_2_naming_both(dense_dir, foreign_index, data_dir, tmp_path, capsys):
    from hybrid.cli.common import run_cli
    from hybrid.cli.search import main

    out = tmp_path / "run.trec"
    rc = run_cli(main, ["--index", str(foreign_index), "--dense-index", str(dense_dir), "--topics",
                        str(data_dir / "tiny_topics.jsonl"), "--model", "dense", "--output", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and not out.exists()
    assert len(err) == 1 and str(dense_dir) in err[0] and str(foreign_index) in err[0]


def test_an_old_dense_index_opens_with_one_warning(dense_dir, tiny_index, tmp_path, caplog):
    old = old_copy(dense_dir, tmp_path / "old")
    with caplog.at_level(logging.WARNING, logger="indexes.faiss_index"):
        check_bound(old, tiny_index)
        check_bound(old, tiny_index)
    warnings = [r.getMessage() for r in caplog.records if "records no binding" in r.getMessage()]
    assert len(warnings) == 1 and str(old) in warnings[0] and "\n" not in warnings[0]


def test_an_old_dense_index_whose_corpus_differs_is_still_refused(dense_dir, foreign_index, tmp_path):
    old = old_copy(dense_dir, tmp_path / "old")
    with pytest.raises(ConfigError, match="corpus sha256"):
        check_bound(old, foreign_index)


def test_a_tampered_binding_is_refused(dense_dir, tiny_index, tmp_path):
    tampered = old_copy(dense_dir, tmp_path / "tampered", content_sha256="0" * 64)
    with pytest.raises(ConfigError, match="was built from the hybrid index"):
        check_bound(tampered, tiny_index)


def test_a_dense_run_records_the_artifacts_it_used(dense_dir, encoder, tiny_index, data_dir, tmp_path):
    """The run's meta names the dense index and the query encoder with their fingerprints."""
    from hybrid.cli.search import main
    from hybrid.core.provenance import file_sha256

    out = tmp_path / "run.trec"
    assert main(["--index", str(tiny_index), "--dense-index", str(dense_dir), "--topics",
                 str(data_dir / "tiny_topics.jsonl"), "--model", "dense", "--output", str(out), "--quiet",
                 "--hits", "5"]) == 0
    meta = json.loads(out.with_name("run.trec.meta.json").read_text())
    kinds = {a["kind"]: a for a in meta["artifacts"]}
    assert kinds["dense_index"]["path"] == str(dense_dir)
    assert kinds["dense_index"]["fingerprint"] == file_sha256(dense_dir / DENSE_METADATA)
    assert kinds["encoder"]["fingerprint"] == BiEncoder.load(encoder, device="cpu").fingerprint
    assert meta["inputs"]["index_metadata"]["sha256"] == file_sha256(tiny_index / "hybrid-index.json")
