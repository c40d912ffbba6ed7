"""One progress style, one --quiet, help that does not contradict itself, the default job's outputs ignored
(issue 38, item 5)."""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
from pathlib import Path

import pytest

from hybrid.core.progress import open_bars, progress

ROOT = Path(__file__).resolve().parents[3]
#: every command that shows a progress bar
WITH_BARS = ["index", "search", "prepare", "experiment", "index_dense", "train_dense", "ltr", "reader", "fuse",
             "collect"]
#: sub-commands of those that print a listing or convert a file, with no bar to silence
NO_BARS = {"python -m hybrid.ltr features", "python -m hybrid.reader evaluate-spans",
           "python -m hybrid.collect ecb-events"}
ALL_CLIS = WITH_BARS + ["eval", "report", "recipe_train", "fewshot", "compare"]


def _parsers(name: str) -> list[argparse.ArgumentParser]:
    module = importlib.import_module(f"hybrid.cli.{name}")
    parser = module.parser()
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += list(action.choices.values())
    return found


def test_a_bar_names_its_unit_and_total(capsys):
    for _ in progress(range(3), desc="search", unit="query"):
        pass
    err = capsys.readouterr().err
    assert "search: 100%" in err and "3/3 query" in err and "it/s" not in err
    bar = progress(desc="annotate", unit="passage")  # no total known: a count, no percentage
    bar.update(5)
    bar.close()
    err = capsys.readouterr().err
    assert "annotate: 5 passage" in err and "%" not in err and open_bars() == 0


def test_nested_bars_print_no_escape_codes_in_a_log(capsys):
    with progress(desc="recipe", unit="query", total=2) as outer:
        for _ in range(2):
            for _ in progress(range(4), desc="inner-retriever", unit="query"):
                pass
            outer.update(1)
    err = capsys.readouterr().err
    assert "\x1b[A" not in err and "[A" not in err
    assert "recipe: 100%" in err and "inner-retriever" not in err  # only the outermost bar prints to a non-terminal
    assert open_bars() == 0


def test_quiet_shows_nothing(capsys):
    for _ in progress(range(3), desc="search", unit="query", enabled=False):
        pass
    assert capsys.readouterr().err == "" and open_bars() == 0


def test_every_bar_goes_through_the_one_helper():
    offenders = []
    for package in ("hybrid", "indexes", "features", "ltr"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "progress.py" and path.parent.name == "core":
                continue
            if re.search(r"^\s*(from tqdm|import tqdm)", path.read_text(encoding="utf-8"), re.M):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"use hybrid.core.progress.progress instead of tqdm in {offenders}"


@pytest.mark.parametrize("name", WITH_BARS)
def test_every_command_with_bars_takes_quiet(name):
    parsers = _parsers(name)
    leaves = [p for p in parsers if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
              and p.prog not in NO_BARS]
    for p in leaves:
        assert "--quiet" in p._option_string_actions, p.prog


def test_collect_keeps_no_progress_as_a_hidden_alias():
    from hybrid.cli.collect import parser

    p = parser()
    given = ["run", "--corpus", "c.jsonl", "--output", "o.trec"]
    assert p.parse_args([*given, "--no-progress"]).quiet is True and p.parse_args([*given, "--quiet"]).quiet is True
    assert p.parse_args(given).quiet is False
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    assert "--no-progress" not in sub.format_help() and "--quiet" in sub.format_help()


@pytest.mark.parametrize("name", ALL_CLIS)
def test_help_never_contradicts_itself(name):
    for p in _parsers(name):
        for action in p._actions:
            if action.help in (None, argparse.SUPPRESS) or not action.option_strings:
                continue
            shown = p.formatter_class(p.prog)._get_help_string(action) or ""
            assert "(default: True)" not in shown and "(default: False)" not in shown, (p.prog, action.option_strings)
            if "default" in action.help:  # a default stated in words is not followed by another one
                assert shown == action.help, (p.prog, action.option_strings, shown)


def test_report_options_say_what_they_are():
    (p,) = _parsers("report")
    for flag in ("--run", "--output"):
        assert p._option_string_actions[flag].help, flag


def test_search_fusion_help_states_both_defaults_once():
    (p,) = _parsers("search")
    shown = p.formatter_class(p.prog)._get_help_string(p._option_string_actions["--fusion"])
    assert shown.count("(default") == 1 and "combsum" in shown and "rrf" in shown


def test_the_default_jobs_outputs_are_ignored_by_git():
    from hybrid.cli.search import default_outputs

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    run, spans = default_outputs(argparse.Namespace(output=None, spans=None, topics="sample", model="multifield"))
    names = [run, spans, f"{run}.meta.json"]
    done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", *names], capture_output=True, text=True)
    assert sorted(done.stdout.split()) == sorted(names)
