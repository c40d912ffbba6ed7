"""``python -m hybrid.compare``: saved runs compared as hybrid.experiment compares recipes, names, errors."""

from __future__ import annotations

import json

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.compare import main as compare_main
from hybrid.cli.compare import named_runs
from hybrid.cli.eval import main as eval_main

QRELS = "ev-1 0 d1 1\nev-1 0 d3 1\nen-2 0 d5 1\nen-2 0 d6 1\nev-3 0 d2 1\n"
RUNS = {
    "a": "ev-1 Q0 d2 1 3 t\nev-1 Q0 d1 2 2 t\nen-2 Q0 d5 1 2 t\nen-2 Q0 d9 2 1 t\nev-3 Q0 d7 1 1 t\n",
    "b": "ev-1 Q0 d1 1 3 t\nev-1 Q0 d8 2 2 t\nev-1 Q0 d3 3 1 t\nen-2 Q0 d6 1 2 t\nen-2 Q0 d5 2 1 t\n",
    "c": "ev-1 Q0 d3 1 3 t\nen-2 Q0 d9 1 2 t\nev-3 Q0 d2 1 1 t\n",
}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    for name, text in RUNS.items():
        (tmp_path / f"{name}.trec").write_text(text)
    (tmp_path / "judged.txt").write_text("d2\nd9\n")
    kinds = {"ev-1": "event", "en-2": "entity", "ev-3": "event"}
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"qid": q, "text": "a <m> b </m>", "kind": k}) + "\n"
                                                   for q, k in kinds.items()))
    return tmp_path


def test_means_deltas_and_files_match_hybrid_eval(files, capsys):
    out = files / "out"
    argv = ["--qrels", str(files / "qrels.txt"), str(files / "a.trec"), "second=" + str(files / "b.trec"),
            str(files / "c.trec"), "--judged", str(files / "judged.txt"), "--measures", "AP@100", "RR@10",
            "--output-dir", str(out), "--topics", str(files / "topics.jsonl")]
    assert compare_main(argv) == 0
    printed = capsys.readouterr().out
    assert "| second |" in printed and "Condensed lists" in printed
    assert "q/s" not in printed  # no timings for runs made elsewhere
    results = json.loads((out / "results.json").read_text())
    assert results["baseline"] == "a" and set(results["results"]) == {"all", "event", "entity"}
    assert (out / "per_query.tsv").is_file() and (out / "per_query.condensed.tsv").is_file()
    for name, path in (("a", "a.trec"), ("second", "b.trec"), ("c", "c.trec")):
        for extra, table in (([], results["results"]), (["-J"], results["condensed"]["results"])):
            assert eval_main(["--qrels", str(files / "qrels.txt"), "--run", str(files / path), "--judged",
                              str(files / "judged.txt"), "--json", "--by-kind", "--measures", "AP@100", "RR@10",
                              "--topics", str(files / "topics.jsonl"), *extra]) == 0
            expected = json.loads(capsys.readouterr().out)
            for group in ("all", "event", "entity"):
                assert table[group][name]["AP@100"]["mean"] == pytest.approx(expected[group]["AP@100"])
    second = results["results"]["all"]["second"]["AP@100"]
    assert second["delta"] == pytest.approx(second["mean"] - results["results"]["all"]["a"]["AP@100"]["mean"])
    assert 0 <= second["t_p"] <= 1 and 0 <= second["w_p"] <= 1


def test_baseline_by_name_and_a_missing_query_warns(files, capsys):
    argv = ["--qrels", str(files / "qrels.txt"), str(files / "a.trec"), str(files / "b.trec"), "--baseline", "b"]
    assert compare_main(argv) == 0
    captured = capsys.readouterr()
    assert "vs `b`" in captured.out
    assert "warning: b:" in captured.err and "ev-3" in captured.err  # b has no hits for the judged ev-3


def test_names_and_errors(files, capsys):
    assert named_runs(["x=runs/a.trec", "runs/b.trec"]) == {"x": "runs/a.trec", "b": "runs/b.trec"}
    odd = files / "k=1.trec"
    odd.write_text(RUNS["a"])
    assert named_runs([str(odd)]) == {"k=1": str(odd)}  # an existing path holding '=' is a path
    base = ["--qrels", str(files / "qrels.txt")]
    assert run_cli(compare_main, [*base, str(files / "a.trec"), str(files / "a.trec")]) != 0
    assert "two runs are named 'a'" in capsys.readouterr().err
    assert run_cli(compare_main, [*base, str(files / "a.trec"), "--baseline", "zz"]) != 0
    assert "--baseline 'zz' is not one of the runs" in capsys.readouterr().err
    assert run_cli(compare_main, [*base, str(files / "missing.trec")]) != 0
    assert "missing.trec" in capsys.readouterr().err


def test_randomization_p_and_the_correction_are_reported(files, capsys):
    """Issue 38, item 9: Fisher's randomization p beside t / Wilcoxon, corrected as --correction says."""
    from hybrid.evaluation.significance import paired_test

    base = ["--qrels", str(files / "qrels.txt"), str(files / "a.trec"), str(files / "b.trec"), str(files / "c.trec"),
            "--measures", "RR@10", "--output-dir"]
    cells = {}
    for correction in ("none", "bonferroni", "holm"):
        out = files / correction
        assert compare_main([*base, str(out), "--correction", correction]) == 0
        printed = capsys.readouterr().out
        assert "paired t-test / Wilcoxon / randomization" in printed
        document = json.loads((out / "results.json").read_text())
        assert document["significance"] == {"correction": correction, "permutations": 10_000}
        cells[correction] = {n: document["results"]["all"][n]["RR@10"] for n in ("b", "c")}
    raw = {name: cells["none"][name]["r_p"] for name in ("b", "c")}
    assert 0 < min(raw.values()) and max(raw.values()) <= 1
    for name in ("b", "c"):
        assert cells["bonferroni"][name]["r_p"] == pytest.approx(min(1.0, 2 * raw[name]))
        assert cells["bonferroni"][name]["t_p"] == pytest.approx(min(1.0, 2 * cells["none"][name]["t_p"]))
    low, high = sorted(raw, key=raw.get)
    assert cells["holm"][low]["r_p"] == pytest.approx(min(1.0, 2 * raw[low]))
    assert cells["holm"][high]["r_p"] == pytest.approx(max(cells["holm"][low]["r_p"], raw[high]))
    assert paired_test({"q": 1.0}, {"q": 0.0}).randomization_p == 1.0  # one query: no test
