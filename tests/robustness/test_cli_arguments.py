"""Bad arguments and damaged inputs end in one line and exit 2, before any work (issue 22, defect 5 + allow_abbrev)."""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
from pathlib import Path

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.core.errors import IndexMissingError, InputError
from hybrid.core.formats.qrels import read_qrels

COMMANDS = Path(__file__).resolve().parents[2] / "hybrid" / "cli"
CLIS = ["index", "search", "eval", "experiment", "report", "recipe_train", "index_dense", "train_dense", "fewshot",
        "ltr", "reader", "fuse"]


def _usage_error(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "wording"), [
    ("--tag", "a b", "must be one word without whitespace"),
    ("--batch-size", "0", "must be an integer >= 1, got '0'"),
    ("--threads", "0", "must be an integer >= 1, got '0'"),
    ("--hits", "0", "must be an integer >= 1, got '0'"),
    ("--hits", "ten", "must be an integer >= 1, got 'ten'"),
    ("--k1", "-5", "must be a finite number >= 0, got '-5'"),
    ("--k1", "nan", "must be a finite number >= 0, got 'nan'"),
    ("--b", "1.5", "must be a number between 0 and 1, got '1.5'"),
    ("--depth", "-1", "must be an integer >= 1"),
])
def test_search_arguments_are_checked_before_anything_runs(option, value, wording, tmp_path, capsys):
    from hybrid.cli.search import main

    # The index does not exist: an argument checked only after opening it would report the index instead.
    err = _usage_error(main, ["--index", str(tmp_path / "none"), "--topics", "sample", f"{option}={value}"], capsys)
    assert f"argument {option}: {wording}" in err
    assert "Traceback" not in err
    assert_documented(wording.split(", got")[0])


def test_output_that_is_a_directory(tmp_path, capsys):
    from hybrid.cli.search import main

    err = _usage_error(main, ["--index", str(tmp_path / "none"), "--topics", "sample", "--output", str(tmp_path)],
                       capsys)
    assert f"argument --output: {tmp_path} is a directory; give the name of a file to write" in err
    assert_documented("is a directory; give the name of a file to write")


def test_abbreviated_options_are_refused(tmp_path, capsys):
    from hybrid.cli.search import main

    err = _usage_error(main, ["--index", str(tmp_path / "none"), "--topics", "sample", "--k", "10"], capsys)
    assert "unrecognized arguments: --k 10" in err


@pytest.mark.parametrize("name", CLIS)
def test_every_cli_parser_refuses_abbreviations_and_shows_defaults(name):
    parser = importlib.import_module(f"hybrid.cli.{name}").parser()
    parsers = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers += list(action.choices.values())
    for p in parsers:
        assert p.allow_abbrev is False, p.prog
        assert issubclass(p.formatter_class, argparse.ArgumentDefaultsHelpFormatter), p.prog
    assert "(default: 100)" in importlib.import_module("hybrid.cli.search").parser().format_help()


def test_no_cli_builds_its_own_argument_parser():
    offenders = [p.name for p in COMMANDS.glob("*.py")
                 if p.name != "common.py" and re.search(r"ArgumentParser\(|\.add_parser\(", p.read_text())]
    assert not offenders, f"use hybrid.cli.common.make_parser/add_subparser in {offenders}"


def test_regress_parser_refuses_abbreviations(capsys):
    from hybrid.cli.regress import main

    err = _usage_error(main, ["x.toml", "--upd"], capsys)
    assert "unrecognized arguments: --upd" in err


@pytest.mark.parametrize("relevance", ["100000000000000000000000", "-2147483648", "2147483648"])
def test_qrels_relevance_must_fit_an_int(relevance, tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(f"q1 0 d1 1\nq1 0 d2 {relevance}\n")
    with pytest.raises(InputError) as caught:
        read_qrels(path)
    assert caught.value.line == 2 and "is out of range (a 32-bit integer, |relevance| < 2**31" in caught.value.reason
    assert_documented("is out of range (a 32-bit integer, |relevance| < 2**31")
    path.write_text("q1 0 d1 2147483647\nq1 0 d2 -2147483647\n")
    assert read_qrels(path) == {"q1": {"d1": 2**31 - 1, "d2": -(2**31 - 1)}}


def test_empty_corpus_is_one_line(tmp_path, capsys):
    from hybrid.cli.index import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n")
    assert run_cli(main, ["--corpus", str(corpus), "--index", str(tmp_path / "idx"), "--quiet"]) == 2
    assert f"error: {corpus}: no passages to index" in capsys.readouterr().err
    assert not (tmp_path / "idx").exists()


def test_damaged_lucene_index_names_itself_and_the_rebuild_command(tiny_index, tmp_path, data_dir, capsys):
    from hybrid.cli.search import main

    damaged = tmp_path / "damaged"
    shutil.copytree(tiny_index, damaged)
    fnm = next((damaged / "mentions").glob("*.fnm"))
    data = bytearray(fnm.read_bytes())
    data[40:48] = b"garbage!"
    fnm.write_bytes(bytes(data))
    rc = run_cli(main, ["--index", str(damaged), "--topics", str(data_dir / "tiny_topics.tsv"),
                        "--output", str(tmp_path / "r.trec"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"error: index {damaged} is damaged: Lucene cannot open its mentions/" in err
    assert f"--index {damaged} --overwrite`" in err and "python -m hybrid.index --corpus " in err
    assert "Traceback" not in err and "\tat " not in err
    assert_documented("is damaged: Lucene cannot open its mentions/")
    with pytest.raises(IndexMissingError):
        from indexes.sparse_index import SparseIndex

        SparseIndex(damaged)


@pytest.mark.parametrize(("content", "line", "wording"), [
    ('{"qid": "q", "docid": "d", "start": 0, "end": 3}\n{"qid": "q", "docid"\n', 2, "broken JSON"),
    ('{"qid": "q", "start": 0, "end": 3}\n', 1, "missing required field 'docid'"),
    ('{"qid": "q", "docid": "d", "start": "0", "end": 3}\n', 1, "field 'start' must be int"),
    ('{"qid": "q", "docid": "d", "start": 5, "end": 3}\n', 1, "span [5, 3) is not a character span"),
])
def test_report_rejects_a_bad_spans_file(content, line, wording, tmp_path):
    from hybrid.cli.report import read_spans

    path = tmp_path / "s.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_spans(path)
    assert caught.value.line == line and wording in caught.value.reason
    assert_documented(wording)
