"""hybrid.prepare under the output policy (issue 36 §1): its model set may not be, lie inside or contain what it
reads (the index, its corpus, the training files), a folder that is not a model set is never filled, and
``--overwrite`` makes every step again, each replacing only an artifact of its own kind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from prepare_kit import write_labels, write_recipe

from hybrid.cli.common import run_cli
from hybrid.cli.prepare import main as prepare_main
from hybrid.store.models import INDEX_LINK, list_sets

ERRORS_DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


@pytest.fixture
def ws(tmp_path, tiny_index, tiny_corpus, monkeypatch) -> Path:
    """A workspace: labels under data/, a copy of the tiny index (whose labelled corpus is data/labelled.jsonl),
    a recipe, a foreign folder; the store under cache/."""
    monkeypatch.setenv("HYBRID_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HYBRID_ARTIFACTS", raising=False)
    write_labels(tiny_corpus, tmp_path / "data")
    shutil.copytree(tiny_index, tmp_path / "index")
    (tmp_path / "recipes").mkdir()
    write_recipe(tmp_path / "recipes")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("years of work\n")
    return tmp_path


def train(ws: Path, tiny_bert: Path | None = None) -> list[str]:
    """prepare's arguments; without ``tiny_bert`` a base that does not exist (a refused run must not train)."""
    data = ws / "data"
    return [str(ws / "recipes" / "tiny-dense-net.toml"), "--index", str(ws / "index"),
            "--train", str(data / "labelled.jsonl"),
            "--train-topics", str(data / "queries.jsonl"), "--train-qrels", str(data / "qrels.txt"),
            "--dense-base", str(tiny_bert or ws / "no-base"), "--dense-steps", "2", "--threads", "1", "--quiet"]


def snapshot(root: Path) -> dict[str, object]:
    return {str(p.relative_to(root)): ("dir" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*")) if not p.is_symlink()}


def refused(argv: list[str], capsys, fragment: str) -> None:
    rc = run_cli(prepare_main, argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err and fragment in err, err


ARTIFACTS = {  # --artifacts -> the refusal
    "the index": ("index", "--artifacts is the same file as --index; refusing to overwrite an input"),
    "inside the index": ("index/models", "--artifacts is inside --index"),
    "a folder holding the index": (".", "--artifacts contains --index"),
    "the labelled corpus": ("data/labelled.jsonl", "--artifacts is the same file as --train; refusing"),
    "the folder of the training files": ("data", "--artifacts contains --train"),
    "the folder of the recipe": ("recipes", "--artifacts contains the recipe"),
    "a foreign folder": ("thesis", "is not a model set (no model-set.json) and not empty"),
}


@pytest.mark.parametrize("case", sorted(ARTIFACTS))
def test_artifacts_may_not_be_an_input_or_a_foreign_folder(case, ws, capsys):
    where, fragment = ARTIFACTS[case]
    before = snapshot(ws)
    refused([*train(ws), "--artifacts", str(ws / where)], capsys, fragment)
    assert snapshot(ws) == before  # nothing written: not the store's training set, not the index's link


def test_a_link_to_the_index_is_the_index(ws, capsys):
    (ws / "link").symlink_to(ws / "index")
    refused([*train(ws), "--artifacts", str(ws / "link")], capsys, "--artifacts is the same file as --index")


def test_hybrid_artifacts_names_the_variable(ws, capsys, monkeypatch):
    monkeypatch.setenv("HYBRID_ARTIFACTS", str(ws / "index"))
    refused(train(ws)[:3] + ["--quiet"], capsys, "$HYBRID_ARTIFACTS is the same file as --index")


def test_an_artifacts_folder_of_the_older_layout_is_filled(ws, capsys):
    """A folder holding only the recipe's model folders (dense/, ltr/) is an artifacts folder: it is planned."""
    legacy = ws / "artifacts"
    (legacy / "dense" / "other").mkdir(parents=True)
    assert prepare_main([*train(ws), "--artifacts", str(legacy), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["models"] == str(legacy)
    (legacy / "notes.txt").write_text("mine\n")
    refused([*train(ws), "--artifacts", str(legacy), "--dry-run"], capsys, "is not a model set")


def test_overwrite_makes_every_step_again_and_only_over_its_own_kind(ws, tiny_bert, capsys):
    argv = train(ws, tiny_bert)
    assert prepare_main(argv) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["encoder", "dense-index", "ltr"]
    (model_set,) = list_sets(ws / "cache" / "models")
    encoder_meta = model_set.path / "dense" / "encoder" / "hybrid-encoder.json"
    ltr = model_set.path / "ltr" / "tiny-dense-net"
    # without --overwrite an existing artifact is kept
    assert prepare_main(argv) == 0
    assert json.loads(capsys.readouterr().out)["made"] == []
    # a folder that is not an LTR model where the LTR model goes: --overwrite refuses before any step
    shutil.move(ltr, ws / "ltr-saved")
    ltr.mkdir()
    (ltr / "notes.txt").write_text("not a model\n")
    before = snapshot(ws)
    refused([*argv, "--overwrite"], capsys, "is not an LTR model (no ltr-model.json) and not empty")
    assert snapshot(ws) == before
    shutil.rmtree(ltr)
    shutil.move(ws / "ltr-saved", ltr)
    # the plan shows what is made again
    assert prepare_main([*argv, "--overwrite", "--dry-run"]) == 0
    assert capsys.readouterr().err.count("REBUILD") == 3
    stamp = os.stat(encoder_meta).st_mtime_ns
    assert prepare_main([*argv, "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["encoder", "dense-index", "ltr"]
    assert os.stat(encoder_meta).st_mtime_ns != stamp and (ltr / "ltr-model.json").is_file()
    assert (ws / "index" / INDEX_LINK).is_file() and len(list_sets(ws / "cache" / "models")) == 1


def test_prepare_refusals_are_documented():
    docs = ERRORS_DOC.read_text(encoding="utf-8")
    for fragment in ("is not a model set (no model-set.json) and not empty", "hybrid.prepare --overwrite"):
        assert fragment in docs, fragment
