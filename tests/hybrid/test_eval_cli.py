"""``python -m hybrid.eval`` (issue 22, defect 2): missing queries score 0, trec_eval names and syntax, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.eval import main as eval_main
from hybrid.core.measures import parse_measures, per_query
from hybrid.core.records import Hit

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq1 Q0 d7 3 1.0 t\n"  # q2 missing


@pytest.fixture
def files(tmp_path):
    qrels, run, empty = tmp_path / "qrels.txt", tmp_path / "run.trec", tmp_path / "empty.trec"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    empty.write_text("")
    return qrels, run, empty


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_empty_run_scores_zero_with_every_default_measure(files, capsys):
    qrels, _, empty = files
    assert run_cli(eval_main, ["--qrels", str(qrels), "--run", str(empty), "--json"]) == 0
    table = _json(capsys)
    assert table["all"]["#q"] == 2
    assert all(value == 0.0 for key, value in table["all"].items() if key != "#q")
    assert "Judged@10" in table["all"]


def test_run_missing_a_judged_query_scores_it_zero(files, capsys):
    qrels, run, _ = files
    assert eval_main(["--qrels", str(qrels), "--run", str(run), "--json", "--measures", "Judged@10", "RR@10"]) == 0
    table = _json(capsys)
    # q1: 2 of 3 hits judged, first relevant at rank 2; q2: no hits -> 0
    assert table["all"]["Judged@10"] == pytest.approx((2 / 3 + 0) / 2)
    assert table["all"]["RR@10"] == pytest.approx((0.5 + 0) / 2)
    pq = per_query({"q1": {"d1": 1}, "q2": {"d3": 1}}, {"q1": [Hit("d1", 1.0)], "q2": []}, ("Judged@10",))
    assert pq["Judged@10"] == {"q1": 1.0, "q2": 0.0}


def test_trec_eval_names_positional_files_and_repeatable_m(files, capsys):
    qrels, run, _ = files
    assert eval_main(["-m", "map", "-m", "recip_rank", "-m", "ndcg_cut_10", "-m", "P_10", "-m", "recall_100",
                      "-m", "map_cut_100", str(qrels), str(run), "--json"]) == 0
    by_trec = _json(capsys)["all"]
    assert set(by_trec) == {"AP", "RR", "nDCG@10", "P@10", "R@100", "AP@100", "#q"}
    assert eval_main(["--qrels", str(qrels), "--run", str(run), "--json", "--measures", "AP", "RR", "nDCG@10",
                      "P@10", "R@100", "AP@100"]) == 0
    assert _json(capsys)["all"] == by_trec
    assert by_trec["AP"] == pytest.approx(0.25)  # q1: AP 1/2, q2: 0


def test_measures_map_is_not_a_traceback(files, capsys):
    qrels, run, _ = files
    assert run_cli(eval_main, ["--qrels", str(qrels), "--run", str(run), "--measures", "map"]) == 0
    assert capsys.readouterr().out.split() == ["map", "all", "0.5000"]  # a trec_eval name: trec_eval's output
    assert run_cli(eval_main, ["--qrels", str(qrels), "--run", str(run), "--measures", "map", "--format", "table"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[-1] == "AP"


def test_unknown_measure_is_a_clear_error_before_reading_files(tmp_path, capsys):
    rc = run_cli(eval_main, ["--qrels", str(tmp_path / "none.txt"), "--run", str(tmp_path / "none.trec"),
                             "-m", "bogus"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "error: <input>: --measures: unknown measure 'bogus'; give an ir_measures name" in err
    assert "unknown measure 'bogus'; give an ir_measures name" in DOCS.read_text()
    with pytest.raises(Exception, match="unknown measure"):
        parse_measures(["AP@x"])


def test_qrels_and_run_are_required_and_not_given_twice(files, capsys):
    qrels, run, _ = files
    assert run_cli(eval_main, [str(qrels)]) == 2
    assert "give the run: python -m hybrid.eval QRELS RUN" in capsys.readouterr().err
    assert run_cli(eval_main, [str(qrels), str(run), "--run", str(qrels)]) == 2
    assert "the run is given twice" in capsys.readouterr().err
    docs = DOCS.read_text()
    assert "give the run: python -m hybrid.eval QRELS RUN" in docs and "is given twice" in docs


def test_json_per_query_is_one_json_document(files, capsys):
    qrels, run, _ = files
    assert eval_main([str(qrels), str(run), "--json", "--per-query", "-m", "RR@10"]) == 0
    document = _json(capsys)
    assert document["summary"]["all"]["RR@10"] == pytest.approx(0.25)
    assert document["per_query"] == {"q1": {"RR@10": 0.5}, "q2": {"RR@10": 0.0}}


def test_plain_per_query_rows_then_table(files, capsys):
    qrels, run, _ = files
    assert eval_main([str(qrels), str(run), "--per-query", "--measures", "RR@10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["q1 RR@10=0.5000", "q2 RR@10=0.0000"]
    assert lines[2].split()[0] == "group"


def test_judged_list_and_condensed_lists(tmp_path, capsys):
    qrels, run, judged = tmp_path / "qrels.txt", tmp_path / "run.trec", tmp_path / "judged.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 1\n")
    run.write_text("q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq1 Q0 d8 3 1.5 t\nq1 Q0 d3 4 1.0 t\n")
    judged.write_text("d2\n")
    base = ["--qrels", str(qrels), "--run", str(run), "--json", "--measures", "AP@100", "Judged@10"]
    assert eval_main(base) == 0
    assert _json(capsys)["all"] == {"AP@100": pytest.approx(0.5), "Judged@10": pytest.approx(0.5), "#q": 1}
    assert eval_main([*base, "--judged", str(judged)]) == 0
    assert _json(capsys)["all"] == {"AP@100": pytest.approx(0.5), "Judged@10": pytest.approx(0.75), "#q": 1}
    assert eval_main([*base, "--judged", str(judged), "-J"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["all"]["AP@100"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert "1 of 4 retrieved passages are unjudged and removed" in out.err


def test_bad_judged_list_names_file_and_line(tmp_path, capsys):
    qrels, run, judged = tmp_path / "qrels.txt", tmp_path / "run.trec", tmp_path / "judged.txt"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    judged.write_text("d1\nd2\tq1\n")
    assert run_cli(eval_main, ["--qrels", str(qrels), "--run", str(run), "--judged", str(judged)]) != 0
    assert f"{judged}:2" in capsys.readouterr().err


def test_api_evaluate_takes_the_judged_list(tmp_path):
    import hybrid

    run = {"q1": [Hit("d2", 3.0), Hit("d1", 2.0), Hit("d8", 1.5), Hit("d3", 1.0)]}
    qrels = {"q1": {"d1": 1, "d3": 1}}
    standard = hybrid.evaluate(run, qrels, measures=["AP@100"], by_kind=False)["all"]["AP@100"]
    condensed = hybrid.evaluate(run, qrels, measures=["AP@100"], by_kind=False, judged=["d2"],
                                judged_only=True)["all"]["AP@100"]
    assert standard == pytest.approx(0.5) and condensed == pytest.approx((1 / 2 + 2 / 3) / 2)
    sample = hybrid.evaluate(run, qrels, measures=["Judged@10"], by_kind=False, judged="sample")
    assert sample["all"]["Judged@10"] == pytest.approx(0.5)  # d1..d8 are not sample passages


def test_by_kind_says_why_when_it_cannot_split(data_dir, tmp_path, capsys):
    """Issue 38, item 2: tiny's query ids carry no ECB+ 'ev-'/'en-' prefix and TSV topics no kind: one line
    says so instead of a table of 'all' alone; JSONL topics with 'kind' split."""
    qrels, run = str(data_dir / "tiny_qrels.txt"), str(data_dir / "tiny_run.trec")
    base = [qrels, run, "--by-kind", "--measures", "AP"]
    for extra, why in (([], "give --topics as JSONL with a 'kind' field"),
                       (["--topics", str(data_dir / "tiny_topics.tsv")], "TSV topics")):
        assert eval_main([*base, *extra]) == 0
        out = capsys.readouterr()
        assert [line.split()[0] for line in out.out.splitlines()] == ["group", "all"]
        note = [line for line in out.err.splitlines() if line.startswith("note: --by-kind")]
        assert len(note) == 1 and "3 of 3 judged queries have no kind (e.g. q-en-reid)" in note[0] and why in note[0]
    assert eval_main([*base, "--topics", str(data_dir / "tiny_topics.jsonl")]) == 0
    out = capsys.readouterr()
    assert [line.split()[0] for line in out.out.splitlines()] == ["group", "all", "entity", "event"]
    assert "--by-kind" not in out.err
    # some queries with a kind, some without: the rest is its own 'unknown' group, so the groups add up
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join((data_dir / "tiny_topics.jsonl").read_text().splitlines()[:2]) + "\n")
    assert eval_main([*base, "--topics", str(partial), "--json"]) == 0
    out = capsys.readouterr()
    table = json.loads(out.out)
    assert {g: table[g]["#q"] for g in table} == {"all": 3, "entity": 1, "event": 1, "unknown": 1}
    assert "1 of 3 judged queries have no kind (e.g. q-ev-quake), counted under 'unknown'" in out.err
