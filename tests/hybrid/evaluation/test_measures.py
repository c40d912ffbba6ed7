"""Evaluation numbers on a tiny hand-checked example."""

from __future__ import annotations

import pytest

from hybrid.core.measures import evaluate, group_means, group_qids, per_query
from hybrid.core.records import Hit

QRELS = {"q1": {"d1": 1, "d3": 1, "d9": 0}, "q2": {"d5": 1}}
RUN = {
    "q1": [Hit("d2", 3.0), Hit("d1", 2.0), Hit("d9", 1.5), Hit("d3", 1.0)],
    "q2": [Hit("d6", 2.0), Hit("d7", 1.0)],
}


def test_hand_checked_measures():
    pq = per_query(QRELS, RUN, ("RR@10", "AP@100", "R@10", "P@2", "Judged@10"))
    # q1: relevant at ranks 2 and 4 -> RR 1/2, AP (1/2 + 2/4) / 2 = 0.5
    assert pq["RR@10"]["q1"] == pytest.approx(0.5)
    assert pq["AP@100"]["q1"] == pytest.approx(0.5)
    assert pq["R@10"]["q1"] == pytest.approx(1.0)
    assert pq["Judged@10"]["q1"] == pytest.approx(3 / 4)
    # q2: nothing relevant retrieved
    assert pq["RR@10"]["q2"] == 0.0 and pq["AP@100"]["q2"] == 0.0


def test_groups_and_missing_queries_count_as_zero():
    table = evaluate(QRELS, {"q1": RUN["q1"]}, ("AP@100",), groups={"q1": "event", "q2": "entity"})
    assert table["all"]["AP@100"] == pytest.approx(0.25)
    assert table["event"]["AP@100"] == pytest.approx(0.5) and table["event"]["#q"] == 1
    assert table["entity"]["AP@100"] == 0.0


def test_group_qids_all_first_then_groups_sorted_in_query_order():
    kinds = {"q3": "event", "q1": "entity", "q2": "event"}
    assert group_qids(["q3", "q1", "q2", "q4"], kinds) == {"all": ["q3", "q1", "q2", "q4"], "entity": ["q1"],
                                                          "event": ["q3", "q2"]}  # q4 has no kind: in no group
    assert group_qids(["q4", "q1"], kinds, missing="unknown") == {"all": ["q4", "q1"], "entity": ["q1"],
                                                                  "unknown": ["q4"]}
    # names: groups listed even without a query (hybrid.eval's and hybrid.compare's tables list every kind)
    assert group_qids(["q1"], kinds, names=kinds.values()) == {"all": ["q1"], "entity": ["q1"], "event": []}


def test_the_three_means_by_kind_are_group_means():
    """evaluate (hybrid.eval / search), ltr.metrics.by_kind (hybrid.ltr) and compare (hybrid.compare) agree."""
    from hybrid.evaluation.comparison import compare
    from ltr.metrics import by_kind

    groups = {"q1": "event", "q2": "entity"}
    pq = per_query(QRELS, RUN, ("AP@100", "RR@10"))
    table = evaluate(QRELS, RUN, ("AP@100", "RR@10"), groups)
    compared = compare({"a": RUN, "b": RUN}, QRELS, groups, "a", ("AP@100",), permutations=10)["results"]
    for measure in ("AP@100", "RR@10"):
        means = group_means(pq[measure], sorted(QRELS), groups)
        assert {g: table[g][measure] for g in table} == means == by_kind(pq[measure], groups)
    assert group_means(pq["AP@100"], sorted(QRELS), groups) == {"all": (0.5 + 0.0) / 2, "entity": 0.0, "event": 0.5}
    assert {g: compared[g]["b"]["AP@100"]["mean"] for g in compared} == group_means(pq["AP@100"], QRELS, groups)
    assert {g: table[g]["#q"] for g in table} == {"all": 2, "entity": 1, "event": 1}
