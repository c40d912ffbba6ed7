"""Weight tuning picks the obviously best mix."""

import pytest

from hybrid.core.records import Hit
from hybrid.fusion.tune import simplex_grid, tune_weights

QRELS = {f"q{i}": {f"rel{i}": 1} for i in range(4)}


def good_run():
    return {q: [Hit(f"rel{i}", 1.0), Hit("shared", 0.9), Hit("junk2", 0.0)] for i, q in enumerate(QRELS)}


def bad_run():
    # "shared" is near the top of both runs: any weight on this run lifts it above the relevant passage
    return {q: [Hit("shared", 1.0), Hit("junk4", 0.9), Hit("junk5", 0.1)] for q in QRELS}


def test_simplex_grid():
    assert simplex_grid(2, 0.5) == [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]
    assert len(simplex_grid(3, 0.1)) == 66
    assert all(sum(w) == pytest.approx(1) for w in simplex_grid(3, 0.25))
    with pytest.raises(ValueError):
        simplex_grid(2, 0.3)


@pytest.mark.parametrize("method", ["rrf", "combsum", "combmnz"])
def test_tuning_puts_the_weight_on_the_good_run(method):
    result = tune_weights([bad_run(), good_run()], QRELS, method=method, metric="AP@100", step=0.25)
    assert result.score == pytest.approx(1.0)
    assert result.weights == [0.0, 1.0]
    equal = [s for w, s in result.tried if w == [0.5, 0.5]]
    assert equal and equal[0] < 1.0  # the equal mix is measurably worse, so the choice is not a tie-break


def test_tuning_finds_a_mix_when_both_runs_are_needed():
    # run a ranks q0/q1's passage first and q2/q3's second; run b the other way round; only a mix
    # ranks every relevant passage first
    def run(first: set[int], name: str):
        return {q: ([Hit(f"rel{i}", 1.0), Hit(f"{name}_mid", 0.5)] if i in first else
                    [Hit(f"{name}_top", 1.0), Hit(f"rel{i}", 0.6)]) + [Hit(f"{name}_low", 0.0)]
                for i, q in enumerate(QRELS)}

    a, b = run({0, 1}, "a"), run({2, 3}, "b")
    result = tune_weights([a, b], QRELS, method="combsum", norm="minmax", metric="RR@10", step=0.5)
    assert result.weights == [0.5, 0.5]
    assert result.score == pytest.approx(1.0)


def test_tuning_on_a_topic_subset():
    result = tune_weights([bad_run(), good_run()], QRELS, method="combsum", qids=["q0", "q1"], step=0.5)
    assert result.weights == [0.0, 1.0]
