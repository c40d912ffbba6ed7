"""Issue 38, item 6: ``--index sample`` means the bundled sample's index in every command, as in
``hybrid.open_index("sample")``, through one helper (:func:`hybrid.sample.index_location`).

The tiny test index stands in for the sample's (building the real one takes minutes), as
``test_search_defaults`` lets the tiny data stand in for the sample's files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hybrid
import hybrid.sample
from hybrid.cli.common import run_cli
from hybrid.cli.recipe_train import main as recipe_train_main
from hybrid.cli.search import main as search_main
from hybrid.core.formats.runs import read_run

COMMANDS = Path(hybrid.__file__).resolve().parent / "cli"


@pytest.fixture
def tiny_sample(tiny_index, monkeypatch):
    monkeypatch.setattr(hybrid.sample, "sample_index", lambda progress=True: tiny_index)
    return tiny_index


def test_index_location_resolves_sample_and_leaves_paths_alone(tiny_sample, tmp_path):
    assert hybrid.sample.index_location("sample") == tiny_sample
    assert hybrid.sample.index_location(tmp_path / "idx") == tmp_path / "idx"
    assert hybrid.open_index("sample").path == hybrid.open_index(tiny_sample).path


def test_search_takes_index_sample(tiny_sample, data_dir, tmp_path):
    topics = str(data_dir / "tiny_topics.jsonl")
    by_name, by_path = tmp_path / "sample.trec", tmp_path / "path.trec"
    assert search_main(["--index", "sample", "--topics", topics, "--model", "bm25", "--output", str(by_name),
                        "--quiet"]) == 0
    assert search_main(["--index", str(tiny_sample), "--topics", topics, "--model", "bm25", "--output",
                        str(by_path), "--quiet"]) == 0
    assert read_run(by_name) == read_run(by_path) and read_run(by_name)


def test_recipe_train_takes_index_sample(tiny_sample, data_dir, capsys):
    """Refused before as 'index sample does not exist'; now the index opens and the recipe is what is refused."""
    rc = run_cli(recipe_train_main, ["bm25", "--index", "sample", "--topics", str(data_dir / "tiny_topics.jsonl"),
                                     "--qrels", str(data_dir / "tiny_qrels.txt")])
    err = capsys.readouterr().err
    assert rc == 2 and "has no ltr reranker to train" in err and "does not exist" not in err


def test_every_command_reading_an_index_resolves_it_through_the_helper():
    """A command module that takes --index (hybrid.index's --index is the directory it writes) opens it through
    index_location or hybrid.api.open_index, so 'sample' cannot be forgotten by a new command."""
    offenders = []
    for path in sorted([*COMMANDS.glob("*.py"), *COMMANDS.parent.glob("*/__main__.py")]):
        text = path.read_text(encoding="utf-8")
        if '"--index"' not in text or path.name == "index.py" or path.name == "regress.py":
            continue
        api_open = "from hybrid.api import" in text and re.search(r"from hybrid\.api import [^\n]*\bopen_index\b", text)
        raw = re.findall(r"open_one_index\(args\.index\b", text) or (
            not api_open and re.findall(r"open_index\(args\.index\b", text))
        if raw or not ("index_location(" in text or api_open):
            offenders.append(path.name)
    assert offenders == []
