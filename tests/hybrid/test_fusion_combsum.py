"""CombSUM and the normalisations on hand-computed examples."""

import math

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.normalize import floor, minmax, rank, zscore
from hybrid.core.records import Hit
from hybrid.fusion.combsum import combsum

A = {"q": [Hit("d1", 3.0, 0, 2), Hit("d2", 2.0, 0, 4), Hit("d3", 1.0)]}
B = {"q": [Hit("d2", 0.9, 5, 9), Hit("d4", 0.5), Hit("d5", 0.1)]}


def as_dict(run):
    return {h.docid: h.score for h in run["q"]}


def test_normalisations_hand_computed():
    assert minmax(A["q"]) == {"d1": 1.0, "d2": 0.5, "d3": 0.0}
    z = zscore(A["q"])
    s = math.sqrt(2 / 3)
    assert z == {"d1": pytest.approx(1 / s), "d2": pytest.approx(0.0), "d3": pytest.approx(-1 / s)}
    assert rank(A["q"]) == {"d1": 1.0, "d2": pytest.approx(2 / 3), "d3": pytest.approx(1 / 3)}
    assert floor(rank(A["q"])) == pytest.approx(1 / 3)
    assert minmax([Hit("x", 2.0), Hit("y", 2.0)]) == {"x": 1.0, "y": 1.0}
    assert zscore([Hit("x", 2.0)]) == {"x": 0.0}
    assert floor({}) == 0.0


def test_zscore_does_not_depend_on_the_order_of_the_hits():
    # a plain left-to-right sum of these scores differs in the last bit between orders (found by hypothesis)
    hits = [Hit("d0", -30.0), Hit("d1", -36.5), Hit("d2", -0.125)]
    orders = [[hits[i] for i in order] for order in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))]
    assert all(zscore(order) == zscore(hits) for order in orders)  # exactly, not approximately


def test_combsum_minmax_equal_weights():
    # A: d1 1, d2 .5, d3 0 ; B: d2 1, d4 .5, d5 0 ; floors 0
    fused = combsum([A, B], norm="minmax")
    assert [h.docid for h in fused["q"]] == ["d2", "d1", "d4", "d3", "d5"]
    assert as_dict(fused) == {"d1": 1.0, "d2": 1.5, "d3": 0.0, "d4": 0.5, "d5": 0.0}


def test_combsum_minmax_weighted():
    fused = combsum([A, B], weights=[3, 1], norm="minmax")
    assert as_dict(fused) == {"d1": 3.0, "d2": 2.5, "d3": 0.0, "d4": 0.5, "d5": 0.0}
    assert fused["q"][0].docid == "d1"


def test_combsum_zscore_missing_documents_get_the_floor():
    za = 1 / math.sqrt(2 / 3)  # A: +za, 0, -za
    sb = math.sqrt(((0.9 - 0.5) ** 2 + 0 + (0.1 - 0.5) ** 2) / 3)
    zb = {"d2": 0.4 / sb, "d4": 0.0, "d5": -0.4 / sb}
    expected = {"d1": za + zb["d5"], "d2": 0.0 + zb["d2"], "d3": -za + zb["d5"], "d4": -za + zb["d4"],
                "d5": -za + zb["d5"]}
    got = as_dict(combsum([A, B], norm="zscore"))
    assert got == {d: pytest.approx(v) for d, v in expected.items()}


def test_combsum_rank():
    # A ranks: 1, 2/3, 1/3 (floor 1/3); B ranks: 1, 2/3, 1/3 (floor 1/3)
    got = as_dict(combsum([A, B], norm="rank"))
    third = 1 / 3
    expected = {"d1": 1 + third, "d2": 2 * third + 1, "d3": third + third, "d4": third + 2 * third,
                "d5": third + third}
    assert got == {d: pytest.approx(v) for d, v in expected.items()}


def test_combsum_spans_and_zero_weight():
    fused = combsum([A, B], norm="minmax")
    d2 = next(h for h in fused["q"] if h.docid == "d2")
    assert (d2.mention_start, d2.mention_end) == (5, 9)  # B's 1.0 beats A's 0.5
    only_a = combsum([A, B], weights=[1, 0], norm="minmax")
    assert [h.docid for h in only_a["q"]] == ["d1", "d2", "d3"]


def test_combsum_span_from_a_run_that_knows_it():
    spanless = {"q": [Hit("d2", 10.0)]}
    spanned = {"q": [Hit("d2", 0.1, 3, 7), Hit("d9", 0.05, 1, 2)]}
    d2 = next(h for h in combsum([spanless, spanned], weights=[5, 1])["q"] if h.docid == "d2")
    assert (d2.mention_start, d2.mention_end) == (3, 7)


def test_unknown_normalisation():
    with pytest.raises(ConfigError):
        combsum([A, B], norm="softmax")
