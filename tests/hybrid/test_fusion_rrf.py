"""RRF on hand-computed examples."""

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.records import Hit
from hybrid.fusion.rrf import rrf

A = {"q": [Hit("d1", 3.0, 0, 2), Hit("d2", 2.0, 0, 4), Hit("d3", 1.0)]}
B = {"q": [Hit("d2", 0.9, 5, 9), Hit("d4", 0.5)]}


def scores(run):
    return [(h.docid, h.score) for h in run["q"]]


def test_rrf_equal_weights_hand_computed():
    fused = rrf([A, B])
    assert [d for d, _ in scores(fused)] == ["d2", "d1", "d4", "d3"]
    expected = {"d1": 1 / 61, "d2": 1 / 62 + 1 / 61, "d3": 1 / 63, "d4": 1 / 62}
    for docid, score in scores(fused):
        assert score == pytest.approx(expected[docid])


def test_rrf_weights_and_k():
    fused = rrf([A, B], weights=[1, 3], k=2)
    assert scores(fused) == [("d2", pytest.approx(1 / 62 + 3 / 61)), ("d4", pytest.approx(3 / 62))]


def test_rrf_custom_constant():
    fused = rrf([A], rrf_k=0)
    assert scores(fused) == [("d1", 1.0), ("d2", 0.5), ("d3", pytest.approx(1 / 3))]


def test_rrf_keeps_span_of_best_contribution():
    d2 = next(h for h in rrf([A, B])["q"] if h.docid == "d2")
    assert (d2.mention_start, d2.mention_end) == (5, 9)  # rank 1 in B beats rank 2 in A
    d2 = next(h for h in rrf([A, B], weights=[3, 1])["q"] if h.docid == "d2")
    assert (d2.mention_start, d2.mention_end) == (0, 4)
    assert set(d2.extra["fusion"]) == {"0", "1"}


def test_rrf_ranks_ties_by_docid():
    tied = {"q": [Hit("b", 1.0), Hit("a", 1.0)]}
    assert [h.docid for h in rrf([tied])["q"]] == ["a", "b"]


def test_rrf_query_missing_from_one_run():
    fused = rrf([A, {"other": [Hit("x", 1.0)]}])
    assert set(fused) == {"q", "other"}
    assert fused["other"][0].score == pytest.approx(1 / 61)


def test_rrf_rejects_bad_weights():
    with pytest.raises(ConfigError):
        rrf([A, B], weights=[1])
    with pytest.raises(ConfigError):
        rrf([A, B], weights=[0, 0])
    with pytest.raises(ConfigError):
        rrf([A, B], weights=[1, -1])
