"""Ablation: one row per left-out group, deltas and paired tests, the predictive group's removal hurts."""

from __future__ import annotations

import numpy as np
from test_ltr_learners import SMALL, featureset, toy_matrix

from ltr.ablation import ablate, format_ablation, paired_tests


def qrels_of(matrix):
    out = {}
    for q, d, y in zip(matrix.qids, matrix.docids, matrix.labels, strict=True):
        out.setdefault(str(q), {})[str(d)] = int(y)
    return out


def test_removing_the_predictive_group_hurts_and_is_significant():
    train, test = toy_matrix(seed=1), toy_matrix(seed=2)
    kinds = {q: ("event" if int(q[1:]) % 2 else "entity") for q in test.query_ids}
    rows = ablate(featureset(), "logistic", SMALL["logistic"], qrels_of(test), kinds, train, test)
    assert [r.label for r in rows] == ["full", "-a", "-b"]
    full, no_a, no_b = rows
    assert full.means["AP@100"]["all"] == 1.0
    assert no_a.delta["AP@100"] < -0.2 and no_a.p_wilcoxon["AP@100"] < 0.01 and no_a.p_ttest["AP@100"] < 0.01
    assert abs(no_b.delta["AP@100"]) < 0.05
    assert set(full.means["AP@100"]) == {"all", "event", "entity"}
    table = format_ablation(rows)
    assert table.splitlines()[0].startswith("| variant | #f | AP@100 event")
    assert len(table.splitlines()) == 2 + 3


def test_ablation_by_cross_validation():
    matrix = toy_matrix(n_queries=24)
    groups = {q: f"t{int(q[1:]) % 6}" for q in matrix.query_ids}
    rows = ablate(featureset(), "logistic", {}, qrels_of(matrix), {}, matrix, groups=groups, k=3)
    assert rows[0].means["AP@100"]["all"] == 1.0 and rows[1].delta["AP@100"] < 0


def test_paired_tests():
    assert paired_tests([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) == (1.0, 1.0)
    rng = np.random.default_rng(0)
    a = rng.uniform(size=50)
    t, w = paired_tests(list(a + 0.2 + rng.normal(scale=0.05, size=50)), list(a))
    assert t < 1e-6 and w < 1e-6
