"""Weighted CombMNZ (Fox & Shaw 1994): CombSUM times the number of runs that returned the document.

Rewards agreement between retrievers; only runs with a non-zero weight count.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid.core.normalize import DEFAULT_NORMALISATION
from hybrid.core.records import Rankings
from hybrid.fusion.combsum import normalised_contributions, summed
from hybrid.fusion.common import assemble, check_weights


def combmnz(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
            k: int | None = None) -> Rankings:
    weights = check_weights(runs, weights)
    contributions, floors = normalised_contributions(runs, weights, norm)
    return assemble(contributions, lambda q, d, parts: len({n for n, _, _ in parts}) * summed(parts, floors[q]), k)
