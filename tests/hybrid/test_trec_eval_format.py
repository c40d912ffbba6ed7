"""Issue 38, item 1: ``hybrid.eval`` written as trec_eval (``-m``, trec_eval names, ``-q``, ``-c``) prints what
trec_eval prints: ``measure<TAB>qid<TAB>value`` with trec_eval's names, queries and averages.

The numbers of ``tests/data/tiny_run.trec`` against ``tiny_qrels.txt`` are worked out by hand below, and the
whole output is compared with Pyserini's ``trec_eval`` run on the same files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.eval import main as eval_main
from hybrid.evaluation.trec_format import trec_name

DATA = Path(__file__).resolve().parents[1] / "data"
QRELS, RUN = str(DATA / "tiny_qrels.txt"), str(DATA / "tiny_run.trec")
DOC = Path(__file__).resolve().parents[2] / "docs" / "trec-eval-output.md"
# q-ev-checkin: its one relevant passage (b2:0) at rank 3 of 3 -> AP 1/3, P_10 0.1, RR 1/3, ndcg_cut_10 0.5
# q-en-reid: relevant b2:1 and b2:0 at ranks 1 and 3 -> AP (1 + 2/3) / 2, P_10 0.2, RR 1
# q-ev-quake is judged but not in the run; q-extra is in the run but not judged
AP = {"q-en-reid": (1 + 2 / 3) / 2, "q-ev-checkin": 1 / 3}
MEASURES = ["-m", "map", "-m", "P.10", "-m", "recip_rank", "-m", "num_q", "-m", "num_rel_ret"]


def row(measure: str, qid: str, value: str) -> str:
    return f"{measure:<22}\t{qid}\t{value}"


def lines_of(argv: list[str], capsys) -> list[str]:
    assert run_cli(eval_main, argv) == 0
    return capsys.readouterr().out.splitlines()


def test_trec_eval_names_give_trec_eval_rows_over_the_queries_run_and_qrels_share(capsys):
    assert lines_of([*MEASURES, QRELS, RUN], capsys) == [
        row("map", "all", f"{(AP['q-en-reid'] + AP['q-ev-checkin']) / 2:6.4f}"),  # 0.5833
        row("P_10", "all", "0.1500"),
        row("recip_rank", "all", f"{(1 + 1 / 3) / 2:6.4f}"),
        row("num_q", "all", "2"),
        row("num_rel_ret", "all", "3"),
    ]


def test_q_adds_per_query_rows_in_query_order_and_c_averages_over_every_judged_query(capsys):
    lines = lines_of(["-q", "-c", *MEASURES, QRELS, RUN], capsys)
    assert lines[:8] == [
        row("map", "q-en-reid", f"{AP['q-en-reid']:6.4f}"), row("P_10", "q-en-reid", "0.2000"),
        row("recip_rank", "q-en-reid", "1.0000"), row("num_rel_ret", "q-en-reid", "2"),
        row("map", "q-ev-checkin", f"{AP['q-ev-checkin']:6.4f}"), row("P_10", "q-ev-checkin", "0.1000"),
        row("recip_rank", "q-ev-checkin", "0.3333"), row("num_rel_ret", "q-ev-checkin", "1"),
    ]
    assert lines[8:] == [row("map", "all", f"{(AP['q-en-reid'] + AP['q-ev-checkin']) / 3:6.4f}"),
                         row("P_10", "all", "0.1000"), row("recip_rank", "all", f"{(1 + 1 / 3) / 3:6.4f}"),
                         row("num_q", "all", "3"), row("num_rel_ret", "all", "3")]
    # what a script written for trec_eval reads
    assert [line.split("\t")[0].strip() for line in lines] == [line.split()[0] for line in lines]


def test_J_scores_condensed_lists(capsys):
    # unjudged c3:0 and d4:0 removed: b2:0 second for q-ev-checkin (AP 1/2), q-en-reid relevant at 1 and 2 (AP 1)
    assert lines_of(["-J", "-m", "map", QRELS, RUN], capsys) == [row("map", "all", "0.7500")]


def test_ir_measures_names_keep_the_table_and_json_refuses_trec_flags(capsys):
    table = lines_of([QRELS, RUN, "--measures", "AP", "P@10"], capsys)
    assert table[0].split() == ["group", "#q", "AP", "P@10"]
    assert table[1].split() == ["all", "3", f"{sum(AP.values()) / 3:.4f}", "0.1000"]  # the table: every judged query
    assert lines_of([QRELS, RUN, "--format", "trec", "--measures", "AP", "RR@10", "Judged@10"], capsys) == [
        row("map", "all", f"{sum(AP.values()) / 2:6.4f}"), row("RR@10", "all", f"{(1 + 1 / 3) / 2:6.4f}"),
        row("Judged@10", "all", f"{(2 / 3 + 2 / 3) / 2:6.4f}")]  # no trec_eval name: the ir_measures one
    assert run_cli(eval_main, ["--json", "-q", "-m", "map", QRELS, RUN]) == 2
    json_error = "--json prints the table as JSON, not trec_eval's text format (-q): give one or the other"
    assert json_error in capsys.readouterr().err
    assert run_cli(eval_main, ["--format", "table", "-c", QRELS, RUN]) == 2
    table_error = "--format table does not take trec_eval's -c: drop --format table, or use --per-query"
    assert table_error in capsys.readouterr().err
    errors = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text(encoding="utf-8")
    for message in (json_error, table_error.replace("-c", "-q"), "no query has both results in the run and "
                    "judgments in the qrels (trec_eval stops here too"):
        assert message in errors


def test_no_shared_query_is_an_error_as_in_trec_eval(tmp_path, capsys):
    other = tmp_path / "other.trec"
    other.write_text("zz Q0 a1:0 1 1.0 t\n")
    assert run_cli(eval_main, ["-m", "map", QRELS, str(other)]) == 2
    assert "no query has both results in the run and judgments in the qrels" in capsys.readouterr().err
    assert lines_of(["-c", "-m", "map", "-m", "num_q", QRELS, str(other)], capsys) == [
        row("map", "all", "0.0000"), row("num_q", "all", "3")]


@pytest.mark.parametrize(("measure", "name"), [
    ("AP", "map"), ("AP@100", "map_cut_100"), ("P@10", "P_10"), ("RR", "recip_rank"), ("nDCG", "ndcg"),
    ("nDCG@10", "ndcg_cut_10"), ("R@100", "recall_100"), ("NumQ", "num_q"), ("NumRelRet", "num_rel_ret"),
    ("Rprec", "Rprec"), ("Bpref", "bpref"), ("infAP", "infAP"), ("RR@10", "RR@10"), ("Judged@10", "Judged@10"),
])
def test_trec_names(measure, name):
    assert trec_name(measure) == name


def test_same_output_as_pyserini_trec_eval(capsys):
    """Every (measure, query) row and its printed value, as Pyserini's trec_eval prints them."""
    argv = ["-q", "-c", "-m", "map", "-m", "P.10", "-m", "recip_rank", "-m", "ndcg_cut.10", "-m", "num_ret",
            "-m", "num_rel", "-m", "num_rel_ret", QRELS, RUN]
    done = subprocess.run([sys.executable, "-m", "hybrid.pyserini", "eval.trec_eval", *argv], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    theirs = [line for line in done.stdout.splitlines() if re.match(r"\S+\s+\t\S+\t", line)]
    ours = lines_of(argv, capsys)
    assert sorted(ours) == sorted(theirs) and len(ours) == 7 * 3


def test_the_documented_output_is_what_the_command_prints(capsys):
    """docs/trec-eval-output.md shows a command on the tiny files and its output; both must stay true."""
    text = DOC.read_text(encoding="utf-8")
    command, output = re.search(r"```\n\$ python -m hybrid\.eval ([^\n]+)\n(.*?)```", text, re.S).groups()
    argv = [QRELS if a.endswith("tiny_qrels.txt") else RUN if a.endswith("tiny_run.trec") else a
            for a in command.split()]
    assert lines_of(argv, capsys) == output.rstrip("\n").splitlines()


def test_the_warning_about_missing_queries_says_what_happens_to_them(capsys):
    assert run_cli(eval_main, ["-m", "map", QRELS, RUN]) == 0
    assert "1 of 3 judged queries have no results in the run and are left out of the averages" in \
        capsys.readouterr().err
    assert run_cli(eval_main, ["-c", "-m", "map", QRELS, RUN]) == 0
    assert "1 of 3 judged queries have no results in the run and score 0" in capsys.readouterr().err
