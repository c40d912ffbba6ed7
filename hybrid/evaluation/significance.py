"""Paired significance tests over per-query scores, with a multiple-comparison correction.

Researchers compare systems on the same topics, so tests are paired: Student's paired t-test, the
Wilcoxon signed-rank test (zero differences dropped, as scipy's default "wilcox" method does) and
Fisher's randomization test (the permutation test TREC papers use most; Smucker, Allan & Carterette,
CIKM 2007), each corrected for the number of systems compared with the same baseline: Holm's step-down
(the default), Bonferroni, or none (:data:`CORRECTIONS`).

The randomization test is two-sided over the mean difference: under the null hypothesis each query's
pair of scores could have come from either system, so each difference's sign is flipped at random. With
at most log2(``permutations``) queries every one of the 2^n sign patterns is enumerated (an exact p, as
``scipy.stats.permutation_test`` gives); otherwise ``permutations`` random patterns are drawn from a seeded
generator, and p = (count + 1) / (permutations + 1), which is never 0 (the observed pattern counts as one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Random sign patterns of the randomization test (as ranx and the TREC tools: 10,000 by default).
PERMUTATIONS = 10_000
#: Seed of the randomization test's generator: the same runs give the same p-values.
PERMUTATION_SEED = 0
#: The multiple-comparison corrections over the systems compared with one baseline.
CORRECTIONS = ("holm", "bonferroni", "none")
#: Relative tolerance when comparing a permuted statistic with the observed one (float sums of the same
#: numbers in another order differ in the last bits; scipy uses the same guard).
_TIE = 1e-12


@dataclass(frozen=True)
class PairedTest:
    mean_delta: float
    t_p: float
    wilcoxon_p: float
    n: int
    randomization_p: float = 1.0


def randomization_test(a: Sequence[float], b: Sequence[float], permutations: int = PERMUTATIONS,
                       seed: int = PERMUTATION_SEED) -> float:
    """Two-sided p-value of Fisher's paired randomization test of mean(a - b) = 0 (see the module docstring)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(diff)
    if n == 0 or not np.any(diff):
        return 1.0
    observed = abs(diff.mean())
    threshold = observed - _TIE * max(observed, 1.0)
    if n <= math.log2(permutations):  # exact: every sign pattern once
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        extreme = int(np.count_nonzero(np.abs(patterns @ diff) / n >= threshold))
        return extreme / 2**n
    rng = np.random.default_rng(seed)
    extreme, left = 0, permutations
    while left:
        chunk = min(left, max(1, (1 << 22) // n))
        patterns = rng.integers(0, 2, size=(chunk, n), dtype=np.int8) * 2 - 1
        extreme += int(np.count_nonzero(np.abs(patterns @ diff) / n >= threshold))
        left -= chunk
    return (extreme + 1) / (permutations + 1)


def paired_test(system: Mapping[str, float], baseline: Mapping[str, float], permutations: int = PERMUTATIONS,
                seed: int = PERMUTATION_SEED) -> PairedTest:
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
    return PairedTest(float(diff.mean()), t_p, w_p, len(qids), randomization_test(a, b, permutations, seed))


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


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni adjusted p-values: each times the number of comparisons, capped at 1."""
    return [min(1.0, len(p_values) * p) for p in p_values]


def correct(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """``p_values`` adjusted by one of :data:`CORRECTIONS` (``none`` returns them as they are)."""
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "none":
        return [float(p) for p in p_values]
    raise ValueError(f"unknown correction {method!r}; choose from {', '.join(CORRECTIONS)}")
