"""Paired significance tests over per-query scores, with Holm's step-down correction.

Researchers compare systems on the same topics, so tests are paired: Student's paired t-test and the
Wilcoxon signed-rank test (zero differences dropped, as scipy's default "wilcox" method does), each
corrected for the number of systems compared with the same baseline (Holm-Bonferroni).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PairedTest:
    mean_delta: float
    t_p: float
    wilcoxon_p: float
    n: int


def paired_test(system: Mapping[str, float], baseline: Mapping[str, float]) -> PairedTest:
    """Tests over the queries both runs scored (missing queries must already count as 0 upstream)."""
    qids = sorted(set(system) & set(baseline))
    a = np.array([system[q] for q in qids], dtype=float)
    b = np.array([baseline[q] for q in qids], dtype=float)
    diff = a - b
    if len(qids) < 2 or np.allclose(diff, 0):
        return PairedTest(float(diff.mean()) if len(qids) else 0.0, 1.0, 1.0, len(qids))
    t_p = float(stats.ttest_rel(a, b).pvalue)
    if math.isnan(t_p):
        t_p = 1.0
    try:
        w_p = float(stats.wilcoxon(a, b).pvalue)
    except ValueError:  # all differences zero after dropping ties
        w_p = 1.0
    return PairedTest(float(diff.mean()), t_p, w_p, len(qids))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (monotone, capped at 1), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
