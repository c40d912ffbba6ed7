"""Per-query score normalisations for score-based fusion (CombSUM, CombMNZ).

Scores of different retrievers live on different scales (BM25 sums vs cosine similarities), so each
run's scores are mapped per query before they are added:

* ``minmax``: ``(s - min) / (max - min)``; all-equal scores map to 1.
* ``zscore``: ``(s - mean) / std`` over the query's hits; zero spread maps to 0.
* ``rank``: ``1 - (r - 1) / n`` for the hit at 1-based rank ``r`` of ``n`` (scores ignored).
* ``none``: raw scores (only for runs already on one scale).

A document that a run did not return gets that run's lowest normalised score for the query (its
*floor*): as bad as the worst document the run did return, never better. For ``minmax`` the floor is
0, for the others it is the value at the bottom of the list.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hybrid.core.errors import ConfigError
from hybrid.core.formats.runs import sorted_hits
from hybrid.core.records import Hit

Normalised = dict[str, float]


def minmax(hits: list[Hit]) -> Normalised:
    if not hits:
        return {}
    lo, hi = min(h.score for h in hits), max(h.score for h in hits)
    if hi == lo:
        return {h.docid: 1.0 for h in hits}
    return {h.docid: (h.score - lo) / (hi - lo) for h in hits}


def zscore(hits: list[Hit]) -> Normalised:
    if not hits:
        return {}
    # math.fsum is exactly rounded, so the result does not depend on the order of the hits (a plain sum
    # differs in the last bit between orders, and a fused run would then depend on how its inputs are sorted)
    mean = math.fsum(h.score for h in hits) / len(hits)
    std = math.sqrt(math.fsum((h.score - mean) ** 2 for h in hits) / len(hits))
    if std == 0:
        return {h.docid: 0.0 for h in hits}
    return {h.docid: (h.score - mean) / std for h in hits}


def rank(hits: list[Hit]) -> Normalised:
    n = len(hits)
    return {h.docid: 1.0 - r / n for r, h in enumerate(sorted_hits(hits))}


def none(hits: list[Hit]) -> Normalised:
    return {h.docid: float(h.score) for h in hits}


#: The normalisation score-based fusion uses when none is named.
DEFAULT_NORMALISATION = "minmax"
NORMALISATIONS: dict[str, Callable[[list[Hit]], Normalised]] = {
    "minmax": minmax, "zscore": zscore, "rank": rank, "none": none,
}


def normaliser(name: str) -> Callable[[list[Hit]], Normalised]:
    if name not in NORMALISATIONS:
        raise ConfigError(None, None, f"unknown normalisation {name!r}; choose from {tuple(NORMALISATIONS)}")
    return NORMALISATIONS[name]


def floor(values: Normalised) -> float:
    """The score a missing document gets: the lowest normalised score of the list (0 if empty)."""
    return min(values.values()) if values else 0.0
