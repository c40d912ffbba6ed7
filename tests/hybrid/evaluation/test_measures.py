"""Evaluation numbers on a tiny hand-checked example."""

from __future__ import annotations

import pytest

from hybrid.core.measures import evaluate, per_query
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
