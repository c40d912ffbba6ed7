"""Fusion methods under ranx's and Pyserini's names give those libraries' scores on the same runs (issue 38, item 8).

Tolerance: 1e-9 absolute on every fused score (float sums in another order; ranx computes in float64 too).
The runs have distinct scores within each list, so ranks are the same in every library, different lengths
and partly overlapping passages, so "missing from a run" is exercised.
"""

from __future__ import annotations

import random

import pytest

from hybrid.core.formats.runs import write_run
from hybrid.core.records import Hit
from hybrid.fusion import fuse_runs
from hybrid.fusion.registry import FUSIONS

TOLERANCE = 1e-9
#: our name -> (ranx method, whether ranx takes weights)
RANX = {"rrf": ("rrf", False), "wsum": ("wsum", True), "wmnz": ("wmnz", True), "max": ("max", False),
        "min": ("min", False), "anz": ("anz", False), "isr": ("isr", False), "log_isr": ("log_isr", False),
        "bordafuse": ("bordafuse", False)}


def _runs(seed: int = 5, n_runs: int = 3) -> list[dict]:
    rng = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(30)]
    runs = []
    for n in range(n_runs):
        run = {}
        for q in range(4):
            chosen = rng.sample(docs, rng.randint(6, 18))
            scores = rng.sample(range(1, 10_000), len(chosen))  # distinct, so ranks agree everywhere
            run[f"q{q}"] = [Hit(d, s / (100.0 if n else 7.0), mention_start=n, mention_end=n + 3, mention_text=f"r{n}")
                            for d, s in zip(chosen, scores, strict=True)]
        runs.append(run)
    return runs


def _scores(run) -> dict:
    return {qid: {h.docid: h.score for h in hits} for qid, hits in run.items()}


def _assert_close(mine: dict, theirs: dict) -> None:
    assert set(mine) == set(theirs)
    for qid in mine:
        assert set(mine[qid]) == set(theirs[qid]), qid
        for docid, score in mine[qid].items():
            assert score == pytest.approx(theirs[qid][docid], abs=TOLERANCE), (qid, docid)


@pytest.mark.parametrize("name", sorted(RANX))
def test_ranx_methods_give_ranx_scores(name):
    import ranx  # a dev dependency (pyproject [dev])

    method, weighted = RANX[name]
    runs = _runs()
    weights = [0.5, 0.3, 0.2] if weighted else None
    mine = fuse_runs(runs, name, weights)
    rank_based = "norm" not in FUSIONS[name].params
    params = {"weights": weights} if weighted else {}
    theirs = ranx.fuse([ranx.Run(_scores(r)) for r in runs], norm=None if rank_based else "min-max", method=method,
                       params=params)
    _assert_close(_scores(mine), theirs.to_dict())


def test_pyserini_interpolation_and_average_give_pyserinis_scores(tmp_path):
    from hybrid.core.jvm import start_jvm

    start_jvm()  # pyserini is imported only after the project's JVM start
    from pyserini.fusion import average, interpolation
    from pyserini.trectools import TrecRun

    runs = _runs(seed=9, n_runs=2)
    paths = []
    for n, run in enumerate(runs):
        write_run(run, tmp_path / f"r{n}.trec")
        paths.append(str(tmp_path / f"r{n}.trec"))

    def pyserini_scores(fused) -> dict:
        out: dict = {}
        for row in fused.to_numpy():
            out.setdefault(str(row[0]), {})[str(row[2])] = float(row[4])
        return out

    written = [_scores({q: [Hit(h.docid, round(h.score, 6)) for h in hits] for q, hits in r.items()}) for r in runs]
    rounded = [{q: [Hit(d, s) for d, s in hits.items()] for q, hits in r.items()} for r in written]
    _assert_close(_scores(fuse_runs(rounded, "interpolation", [0.3, 0.7])),
                  pyserini_scores(interpolation([TrecRun(p) for p in paths], alpha=0.3)))
    _assert_close(_scores(fuse_runs(rounded, "average")), pyserini_scores(average([TrecRun(p) for p in paths])))


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_every_method_keeps_a_span_on_every_fused_hit(name):
    runs = _runs(n_runs=2)
    fused = fuse_runs(runs, name)
    for qid, hits in fused.items():
        assert hits, qid
        for hit in hits:
            assert (hit.mention_start, hit.mention_text) in ((0, "r0"), (1, "r1")), (name, qid, hit)
            assert hit.docid in {h.docid for run in runs for h in run[qid]}


def test_unweighted_methods_refuse_weights_and_interpolation_needs_two_runs():
    from hybrid.core.errors import ConfigError

    runs = _runs()
    with pytest.raises(ConfigError, match="isr takes no weights"):
        fuse_runs(runs, "isr", [0.5, 0.3, 0.2])
    with pytest.raises(ConfigError, match="exactly two runs"):
        fuse_runs(runs, "interpolation")
    with pytest.raises(ConfigError, match="unknown fusion method 'nope'"):
        fuse_runs(runs, "nope")


def test_fuse_command_takes_the_registered_names(tmp_path, capsys):
    import json

    from hybrid.cli.common import run_cli
    from hybrid.cli.fuse import main
    from hybrid.core.formats.runs import read_run

    runs = _runs(n_runs=2)
    for n, run in enumerate(runs):
        write_run(run, tmp_path / f"r{n}.trec")
    given = ["--runs", str(tmp_path / "r0.trec"), str(tmp_path / "r1.trec"), "--quiet"]
    assert main([*given, "--method", "bordafuse", "--output", str(tmp_path / "b.trec")]) == 0
    expected = fuse_runs([read_run(tmp_path / "r0.trec"), read_run(tmp_path / "r1.trec")], "bordafuse", k=1000)
    assert _scores(read_run(tmp_path / "b.trec")) == _scores(expected)  # Borda points are halves: exact
    meta = json.loads((tmp_path / "b.trec.meta.json").read_text())
    assert meta["fusion"]["method"] == "bordafuse" and "norm" not in meta["fusion"] and "rrf_k" not in meta["fusion"]
    assert run_cli(main, [*given, "--method", "isr", "--tune", "--qrels", str(tmp_path / "r0.trec"), "--output",
                          str(tmp_path / "t.trec")]) == 2
    assert "--method isr takes none" in capsys.readouterr().err
