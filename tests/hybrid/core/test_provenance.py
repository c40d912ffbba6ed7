"""Run metas record the code version, the sha256 of the topics and of the index's hybrid-index.json, and only the
options that applied to the model that ran."""

from __future__ import annotations

import json
import subprocess

from hybrid.cli.search import main as search_main
from hybrid.cli.search import parser
from hybrid.core.formats.runs import sha256_file
from hybrid.core.provenance import code_version, search_options, source_sha256, versions


def test_search_meta_records_code_inputs_and_applied_options(tiny_index, data_dir, tmp_path):
    out = tmp_path / "bm25.trec"
    topics = data_dir / "tiny_topics.tsv"
    assert search_main(["--index", str(tiny_index), "--topics", str(topics), "--model", "bm25", "--output", str(out),
                        "--quiet"]) == 0
    meta = json.loads((tmp_path / "bm25.trec.meta.json").read_text())
    assert meta["inputs"]["topics"]["sha256"] == sha256_file(topics)
    assert meta["inputs"]["index_metadata"]["sha256"] == sha256_file(tiny_index / "hybrid-index.json")
    assert meta["code"] == code_version()
    config = meta["config"]
    assert config["model"] == "bm25" and config["query"] == "sentence" and config["k1"] == 0.9
    for other in ("weights", "fusion", "norm", "dense_index", "encoder", "bm25f_fields", "passage_weight", "fuse"):
        assert other not in config


def test_applied_options_by_model():
    def options(*argv):
        return search_options(parser().parse_args(["--topics", "t.tsv", *argv]))

    multifield = options("--model", "multifield")
    assert "weights" in multifield and "passage_weight" in multifield and "query" not in multifield
    rrf = options("--model", "fused", "--fuse", "multifield,bm25", "--fusion", "rrf")
    assert {"fuse", "fusion", "weights", "query"} <= set(rrf) and "norm" not in rrf and "encoder" not in rrf
    assert "norm" in options("--model", "fused", "--fusion", "combsum")
    assert "engine" not in multifield and options("--engine", "ray")["engine"] == "ray"


def test_code_version_is_a_commit_or_a_source_hash():
    in_git = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).returncode == 0
    version = code_version()
    if in_git:  # (other commits may land while the tests run: the form is checked, not the value)
        assert len(version["git_commit"]) == 40 and isinstance(version["dirty"], bool)
    else:
        assert len(version["source_sha256"]) == 64
    assert len(source_sha256()) == 64


def test_encoder_and_reader_save_without_pyserini(tiny_bert, tmp_path, monkeypatch):
    """Saving records the Anserini jar as not installed when pyserini is absent, instead of failing."""
    import sys

    from features.encoder import BiEncoder
    from ltr.reader.store import load_reader, new_reader, save_reader

    encoder = BiEncoder.load(tiny_bert, device="cpu")
    reader = new_reader(tiny_bert)
    monkeypatch.setitem(sys.modules, "pyserini", None)  # what an environment without pyserini finds
    assert versions()["anserini_jar"] == "not installed"
    encoder.save(tmp_path / "encoder")
    saved = json.loads((tmp_path / "encoder" / "hybrid-encoder.json").read_text())
    assert saved["versions"]["anserini_jar"] == "not installed"
    save_reader(reader, tmp_path / "reader")
    assert load_reader(tmp_path / "reader", device="cpu").meta["versions"]["anserini_jar"] == "not installed"
