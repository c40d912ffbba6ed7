"""``python -m hybrid.fuse``: fusion of run files (hybrid.fusion's math), spans of the run that contributed most,
tuning, provenance, and the documented errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from hybrid.api import Run
from hybrid.cli.fuse import main as fuse_main
from hybrid.core.formats.runs import read_run, write_run_set
from hybrid.core.records import Hit
from hybrid.fusion import combsum, fuse_runs, rrf

# docs/errors.md as the catalogue tests see it (tests/robustness/documented.py, loaded by path: tests is no package)
_spec = importlib.util.spec_from_file_location(
    "documented", Path(__file__).resolve().parents[1] / "robustness" / "documented.py")
_documented = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_documented)
assert_documented = _documented.assert_documented

# run A ranks d1 > d2 > d3, run B ranks d3 > d2 > d4; q2 only in A
RUN_A = {"q1": [Hit("d1", 9.0, 0, 4, "a-d1"), Hit("d2", 5.0, 1, 5, "a-d2"), Hit("d3", 1.0, 2, 6, "a-d3")],
         "q2": [Hit("d5", 3.0, 0, 2, "a-d5"), Hit("d6", 2.0, 0, 3, "a-d6")]}
RUN_B = {"q1": [Hit("d3", 0.9, 7, 9, "b-d3"), Hit("d2", 0.8, 6, 9, "b-d2"), Hit("d4", 0.1, 5, 9, "b-d4")]}
QRELS = "q1 0 d3 1\nq1 0 d4 1\nq2 0 d6 1\n"


@pytest.fixture()
def runs(tmp_path):
    paths = {}
    for name, run in (("a", RUN_A), ("b", RUN_B)):
        trec, spans = tmp_path / f"{name}.trec", tmp_path / f"{name}.spans.jsonl"
        write_run_set(run, trec, tag=name, spans_path=spans, meta={"model": name})
        paths[name], paths[f"{name}_spans"] = str(trec), str(spans)
    (tmp_path / "qrels.txt").write_text(QRELS)
    paths["qrels"] = str(tmp_path / "qrels.txt")
    return paths


def docids(run, qid):
    return [h.docid for h in run[qid]]


def test_rrf_is_hybrid_fusion_rrf_with_provenance(runs, tmp_path):
    out = tmp_path / "fused.trec"
    assert fuse_main(["--runs", runs["a"], runs["b"], "--method", "rrf", "--output", str(out), "--quiet"]) == 0
    expected = rrf([read_run(runs["a"]), read_run(runs["b"])])
    fused = read_run(out)
    assert {q: docids(fused, q) for q in fused} == {q: docids(expected, q) for q in expected}
    assert set(docids(fused, "q1")[:2]) == {"d2", "d3"}  # in both runs
    meta = json.loads((tmp_path / "fused.trec.meta.json").read_text())
    assert meta["fusion"] == {"method": "rrf", "weights": [1.0, 1.0], "hits": 1000, "rrf_k": 60}  # no norm: rrf
    assert [i["run"] for i in meta["inputs"]] == [runs["a"], runs["b"]] and all(i["run_sha256"] for i in meta["inputs"])
    assert "git_commit" in meta["code"] or "source_sha256" in meta["code"]
    assert out.read_text().split("\n")[0].split()[5] == "rrf"


def test_weighted_combsum_keeps_the_span_of_the_run_that_contributed_most(runs, tmp_path):
    out = tmp_path / "fused.trec"
    assert fuse_main(["--runs", runs["a"], runs["b"], "--spans", runs["a_spans"], runs["b_spans"],
                      "--method", "combsum", "--norm", "minmax", "--weights", "0.6,0.4", "--output", str(out),
                      "--quiet"]) == 0
    expected = combsum([read_run(runs["a"]), read_run(runs["b"])], [0.6, 0.4], norm="minmax")
    fused = read_run(out)
    assert docids(fused, "q1") == docids(expected, "q1")
    spans = fused_spans(tmp_path / "fused.spans.jsonl")
    # min-max: A gives d1, d2, d3 1, 0.5, 0; B gives d3, d2, d4 1, 0.875, 0
    assert spans["q1", "d1"] == "a-d1"  # only in A
    assert spans["q1", "d3"] == "b-d3"  # A 0.6 * 0, B 0.4 * 1
    assert spans["q1", "d2"] == "b-d2"  # A 0.6 * 0.5 = 0.3 < B 0.4 * 0.875 = 0.35 (both rank it 2nd)
    assert spans["q1", "d4"] == "b-d4"
    meta = json.loads((tmp_path / "fused.trec.meta.json").read_text())
    assert meta["fusion"]["norm"] == "minmax" and "rrf_k" not in meta["fusion"]
    assert meta["spans"] == str(tmp_path / "fused.spans.jsonl") and meta["inputs"][1]["spans_sha256"]


def fused_spans(path) -> dict[tuple[str, str], str | None]:
    return {(r["qid"], r["docid"]): r["mention"] for r in map(json.loads, Path(path).read_text().splitlines())}


@pytest.mark.parametrize(("method", "weights"), [("rrf", None), ("rrf", "0.3,0.7"), ("combsum", "1,0"),
                                                 ("combmnz", "0.6,0.4"), ("wsum", None), ("interpolation", "0.2,0.8"),
                                                 ("bordafuse", None)])
def test_spans_are_the_librarys(runs, tmp_path, method, weights):
    """hybrid.fuse and the library (the Fuse stage of hybrid.search --model fused, recipes) give a fused passage
    the same span: the one of the run that contributed most to its fused score."""
    out = tmp_path / "fused.trec"
    argv = ["--runs", runs["a"], runs["b"], "--spans", runs["a_spans"], runs["b_spans"], "--method", method,
            "--output", str(out), "--quiet"]
    assert fuse_main(argv + (["--weights", weights] if weights else [])) == 0
    inputs = [Run.read(runs[name], runs[f"{name}_spans"]) for name in ("a", "b")]
    expected = fuse_runs(inputs, method, [float(w) for w in weights.split(",")] if weights else None, k=1000)
    assert fused_spans(tmp_path / "fused.spans.jsonl") == {(q, h.docid): h.mention_text for q, hits in expected.items()
                                                          for h in hits}


def test_a_run_weighted_0_gives_no_span(runs, tmp_path):
    """B ranks d3 first, but with weight 0 it contributes nothing: d3 keeps A's span."""
    fuse_main(["--runs", runs["a"], runs["b"], "--spans", runs["a_spans"], runs["b_spans"], "--method", "combsum",
               "--weights", "1,0", "--output", str(tmp_path / "fused.trec"), "--quiet"])
    assert fused_spans(tmp_path / "fused.spans.jsonl")["q1", "d3"] == "a-d3"


def test_spans_for_one_run_only_and_depth(runs, tmp_path):
    out = tmp_path / "fused.trec"
    fuse_main(["--runs", runs["a"], runs["b"], "--spans", "-", runs["b_spans"], "--depth", "1", "--output", str(out),
               "--output-spans", str(tmp_path / "s.jsonl"), "--quiet"])
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert {r["docid"] for r in rows if r["qid"] == "q1"} == {"d1", "d3"}  # each run's top 1
    assert {r["docid"]: r["mention"] for r in rows if r["qid"] == "q1"} == {"d1": None, "d3": "b-d3"}


def test_tuned_weights_beat_or_match_equal_weights(runs, tmp_path, capsys):
    out = tmp_path / "tuned.trec"
    assert fuse_main(["--runs", runs["a"], runs["b"], "--method", "combsum", "--tune", "--qrels", runs["qrels"],
                      "--measure", "map", "--step", "0.25", "--output", str(out)]) == 0
    meta = json.loads((tmp_path / "tuned.trec.meta.json").read_text())
    tuning = meta["tuning"]
    assert tuning["measure"] == "AP" and tuning["weights"] == meta["fusion"]["weights"] and tuning["tried"] >= 5
    from hybrid.fusion.tune import score_weights

    equal = score_weights([read_run(runs["a"]), read_run(runs["b"])], {"q1": {"d3": 1, "d4": 1}, "q2": {"d6": 1}},
                          [0.5, 0.5], "combsum", "minmax", "AP", None, 1000)
    assert tuning["score"] >= equal - 1e-12
    assert "tuned weights" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--runs", "{a}", "--output", "{out}"], "--runs needs two or more run files, got 1"),
    (["--runs", "{a}", "{a}", "--output", "{out}"], "--runs names this run twice"),
    (["--runs", "{a}", "{b}", "--weights", "0.5", "--output", "{out}"],
     "--weights: 1 weight(s) for 2 run(s); give one per run, in the order of --runs"),
    (["--runs", "{a}", "{b}", "--weights", "x,y", "--output", "{out}"],
     "give one number >= 0 per run, comma separated, not all 0"),
    (["--runs", "{a}", "{b}", "--spans", "{a_spans}", "--output", "{out}"], "--spans: 1 spans file(s) for 2 run(s)"),
    (["--runs", "{a}", "{b}", "--spans", "{b_spans}", "{a_spans}", "--output", "{out}"],
     "is not the spans file of a.trec"),
    (["--runs", "{a}", "{b}", "--tune", "--output", "{out}"], "--tune needs --qrels"),
    (["--runs", "{a}", "{b}", "--tune", "--qrels", "{qrels}", "--weights", "1,1", "--output", "{out}"],
     "--tune chooses the weights; give --weights or --tune, not both"),
    (["--runs", "{a}", "{b}", "--output", "{a}"], "--output is the same file as --runs"),
    (["--runs", "{a}", "{b}", "--measure", "bogus", "--output", "{out}"], "--measure: unknown measure 'bogus'"),
])
def test_errors_are_one_documented_line(runs, tmp_path, capsys, argv, message):
    from hybrid.cli.common import run_cli

    values = dict(runs, out=str(tmp_path / "out.trec"))
    assert run_cli(fuse_main, [a.format(**values) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert_documented(message.replace("a.trec", "run.trec"))
