"""The order every ranking stage cuts to ``k`` by: score descending, ties by passage id (Python's order of
``(-score, id)`` pairs), so equal scores never depend on the order candidates were found in."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def top_k(scores: np.ndarray, id_of: Callable[[int], str], k: int) -> list[int]:
    """The positions of the ``k`` best of ``scores`` (float64), best first, equal scores by ``id_of(position)``.

    When every score is finite, only the candidates scoring at least the ``k``-th best are sorted (those tied with
    it still go by id); with a NaN or an infinity all are, in Python's order of the pairs.
    """
    values = scores.tolist()
    keep: list[int] | range = range(len(values))
    if 0 < k < len(values) and np.isfinite(scores).all():
        keep = np.nonzero(scores >= -np.partition(-scores, k - 1)[k - 1])[0].tolist()
    return [i for _, _, i in sorted((-values[i], id_of(i), i) for i in keep)[:k]]
