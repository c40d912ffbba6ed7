"""``--overwrite`` and ``--output`` never destroy data that is not theirs (issue 22, defect 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.cli.index import main as index_main
from hybrid.cli.search import main as search_main
from hybrid.core.errors import InputError
from indexes.lucene import METADATA, check_index_target


def test_overwrite_refuses_a_folder_holding_the_corpus(tiny_corpus, tmp_path, capsys):
    data = tmp_path / "mydata"
    data.mkdir()
    corpus = data / "corpus.jsonl"
    shutil.copy(tiny_corpus, corpus)
    (data / "notes.txt").write_text("precious\n")
    rc = run_cli(index_main, ["--corpus", str(corpus), "--index", str(data), "--overwrite", "--quiet"])
    assert rc == 2
    assert f"--index contains --corpus ({corpus})" in capsys.readouterr().err
    assert corpus.read_bytes() == tiny_corpus.read_bytes()
    assert (data / "notes.txt").read_text() == "precious\n"
    assert_documented("replacing it would delete an input")


def test_overwrite_refuses_a_folder_that_is_not_an_index(tiny_corpus, tmp_path, capsys):
    other = tmp_path / "results"
    other.mkdir()
    (other / "paper.tex").write_text("draft\n")
    rc = run_cli(index_main, ["--corpus", str(tiny_corpus), "--index", str(other), "--overwrite", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"error: {other}: is not a hybrid index (no {METADATA}) and not empty" in err
    assert (other / "paper.tex").read_text() == "draft\n"
    assert_documented("is not a hybrid index (no hybrid-index.json) and not empty")


def test_overwrite_refuses_a_file(tmp_path):
    target = tmp_path / "idx"
    target.write_text("x")
    with pytest.raises(InputError, match="exists and is not a directory"):
        check_index_target(target, None, overwrite=True)
    assert_documented("exists and is not a directory; --overwrite replaces only a hybrid index")


@pytest.mark.parametrize("marker", [METADATA, "hybrid-shards.json", None])
def test_overwrite_accepts_an_index_or_an_empty_folder(tmp_path, marker):
    target = tmp_path / "idx"
    target.mkdir()
    if marker:
        (target / marker).write_text("{}")
        (target / "passages").mkdir()
    check_index_target(target, tmp_path / "corpus.jsonl", overwrite=True)  # no error
    check_index_target(tmp_path / "new", tmp_path / "corpus.jsonl", overwrite=True)


def test_sharded_build_checks_too(tiny_corpus, tmp_path):
    from features.annotate import AnnotationConfig
    from indexes.lucene import IndexConfig
    from indexes.shards import build_sharded_index

    data = tmp_path / "mydata"
    data.mkdir()
    (data / "keep.txt").write_text("x")
    config = IndexConfig(corpus=str(tiny_corpus), annotation=AnnotationConfig())
    with pytest.raises(InputError, match="is not a hybrid index"):
        build_sharded_index(config, data, 2, overwrite=True, progress=False)
    assert (data / "keep.txt").exists()


def _topics(tmp_path: Path, data_dir: Path) -> Path:
    topics = tmp_path / "topics.tsv"
    shutil.copy(data_dir / "tiny_topics.tsv", topics)
    return topics


@pytest.mark.parametrize("clash", ["output=topics", "spans=output", "spans=topics", "output=qrels", "spans=qrels"])
def test_search_refuses_to_overwrite_an_input(tiny_index, data_dir, tmp_path, capsys, clash):
    topics = _topics(tmp_path, data_dir)
    qrels = tmp_path / "qrels.txt"
    shutil.copy(data_dir / "tiny_qrels.txt", qrels)
    run = tmp_path / "run.trec"
    paths = {"topics": str(topics), "qrels": str(qrels), "output": str(run), "spans": str(tmp_path / "s.jsonl")}
    left, right = clash.split("=")
    # the same file under another spelling: resolved paths are compared
    paths[left] = str(tmp_path / "." / Path(paths[right]).name)
    before = {p: Path(p).read_bytes() for p in (topics, qrels)}
    rc = run_cli(search_main, ["--index", str(tiny_index), "--topics", paths["topics"], "--qrels", paths["qrels"],
                               "--output", paths["output"], "--spans", paths["spans"], "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "refusing to overwrite an input" in err or "name the same file" in err
    assert {p: Path(p).read_bytes() for p in (topics, qrels)} == before
    assert_documented("is the same file as --topics; refusing to overwrite an input",
                      "--spans and --output name the same file; give each its own")


def test_search_refuses_a_hard_link_to_the_topics(tiny_index, data_dir, tmp_path, capsys):
    topics = _topics(tmp_path, data_dir)
    link = tmp_path / "link.trec"
    link.hardlink_to(topics)
    rc = run_cli(search_main, ["--index", str(tiny_index), "--topics", str(topics), "--output", str(link),
                               "--quiet"])
    assert rc == 2
    assert "--output is the same file as --topics" in capsys.readouterr().err
    assert topics.read_text() == (data_dir / "tiny_topics.tsv").read_text()


def test_search_refuses_a_fused_component_that_is_the_topics(tiny_index, data_dir, tmp_path, capsys):
    topics = tmp_path / "fused.bm25.trec"  # the name the bm25 component run of fused.trec would get
    shutil.copy(data_dir / "tiny_topics.tsv", topics)
    rc = run_cli(search_main, ["--index", str(tiny_index), "--topics", str(topics), "--model", "fused",
                               "--fuse", "multifield,bm25", "--output", str(tmp_path / "fused.trec"), "--quiet"])
    assert rc == 2
    assert "the bm25 component run is the same file as --topics" in capsys.readouterr().err


def test_search_still_writes_distinct_outputs(tiny_index, data_dir, tmp_path):
    out = tmp_path / "run.trec"
    rc = search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.tsv"), "--output", str(out),
                      "--spans", str(tmp_path / "run.spans.jsonl"), "--hits", "3", "--quiet"])
    assert rc == 0 and out.is_file()
    assert json.loads(Path(f"{out}.meta.json").read_text())["run"] == str(out)


@pytest.mark.parametrize("cli", ["ltr", "reader"])
def test_rerankers_refuse_to_overwrite_their_input_run(cli, tmp_path, capsys):
    import importlib

    main = importlib.import_module(f"hybrid.cli.{cli}").main
    run = tmp_path / "first.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    argv = ["rerank", "--model", str(tmp_path / "no-model"), "--run", str(run), "--topics", str(tmp_path / "t.tsv"),
            "--index", str(tmp_path / "idx"), "--output", str(run)]
    assert run_cli(main, argv) == 2
    assert "--output is the same file as --run; refusing to overwrite an input" in capsys.readouterr().err
    assert run.read_text() == "q1 Q0 d1 1 1.0 t\n"
