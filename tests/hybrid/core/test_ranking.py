"""hybrid.core.ranking.top_k: Python's order of (-score, id) pairs, whether or not it prunes before sorting."""

from __future__ import annotations

import random

import numpy as np

from hybrid.core.ranking import top_k


def python_order(scores: list[float], ids: list[str], k: int) -> list[int]:
    return [i for _, _, i in sorted((-s, ids[i], i) for i, s in enumerate(scores))[:k]]


def test_ties_at_the_cut_go_by_id_not_by_position():
    scores = np.array([1.0, 2.0, 1.0, 1.0, 0.5])
    ids = ["e", "a", "c", "b", "d"]
    assert top_k(scores, ids.__getitem__, 3) == [1, 3, 2]  # a (2.0), then b and c of the three 1.0s


def test_random_lists_with_ties_infinities_and_nans_sort_as_python_does():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(0, 30)
        scores = [rng.choice([0.0, -0.0, 1.0, 0.5, rng.random(), float("inf"), float("-inf"), float("nan")])
                  if rng.random() < 0.5 else rng.random() for _ in range(n)]
        if rng.random() < 0.5:  # finite lists take the pruning path
            scores = [s if np.isfinite(s) else 0.25 for s in scores]
        ids = [f"p{rng.randint(0, 99):02d}-{i}" for i in range(n)]
        k = rng.randint(0, n + 2)
        assert top_k(np.array(scores, dtype=np.float64), ids.__getitem__, k) == python_order(scores, ids, k)
