"""CombMNZ on hand-computed examples."""

import pytest

from hybrid.core.records import Hit
from hybrid.fusion.combmnz import combmnz

A = {"q": [Hit("d1", 3.0), Hit("d2", 2.0), Hit("d3", 1.0)]}
B = {"q": [Hit("d2", 0.9), Hit("d4", 0.5), Hit("d5", 0.1)]}


def test_combmnz_minmax_multiplies_by_number_of_runs():
    got = {h.docid: h.score for h in combmnz([A, B], norm="minmax")["q"]}
    # combsum: d1 1, d2 1.5, d3 0, d4 .5, d5 0 ; d2 is in both runs
    assert got == {"d1": 1.0, "d2": 3.0, "d3": 0.0, "d4": 0.5, "d5": 0.0}


def test_combmnz_rewards_agreement_over_combsum():
    # d1 tops A alone; d2 is second in both: CombMNZ prefers d2 more strongly than CombSUM
    a = {"q": [Hit("d1", 1.0), Hit("d2", 0.8), Hit("d3", 0.0)]}
    b = {"q": [Hit("d4", 1.0), Hit("d2", 0.3), Hit("d5", 0.0)]}
    got = {h.docid: h.score for h in combmnz([a, b], weights=[2, 1], norm="minmax")["q"]}
    assert got["d2"] == pytest.approx(2 * (2 * 0.8 + 0.3))
    assert got["d1"] == pytest.approx(2.0)
    assert max(got, key=got.get) == "d2"


def test_combmnz_zero_weight_run_does_not_count():
    got = {h.docid: h.score for h in combmnz([A, B], weights=[1, 0], norm="minmax")["q"]}
    assert got == {"d1": 1.0, "d2": 0.5, "d3": 0.0}
