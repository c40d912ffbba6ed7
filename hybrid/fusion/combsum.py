"""Weighted CombSUM (Fox & Shaw 1994): ``sum_i w_i * norm_i(d)`` over per-query normalised scores.

See :mod:`hybrid.core.normalize` for the normalisations and for what a document missing from a
run gets (the run's floor).
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid.core.normalize import DEFAULT_NORMALISATION, floor, normaliser
from hybrid.core.records import Hit, Rankings
from hybrid.fusion.common import Contributions, all_qids, assemble, check_weights

#: qid -> per run: the weighted floor (what the run gives a document it did not return)
Floors = dict[str, list[float]]


def normalised_contributions(runs: Sequence[Rankings], weights: list[float], norm: str) -> tuple[Contributions, Floors]:
    """Per (qid, docid) the weighted normalised score from each run that returned it, and the floors."""
    normalise = normaliser(norm)
    contributions: Contributions = {}
    floors: Floors = {}
    for qid in all_qids(runs):
        docs = contributions.setdefault(qid, {})
        floors[qid] = [0.0] * len(runs)
        for n, (run, w) in enumerate(zip(runs, weights, strict=True)):
            if w == 0:
                continue
            hits = run.get(qid, [])
            values = normalise(hits)
            floors[qid][n] = w * floor(values)
            for hit in hits:
                docs.setdefault(hit.docid, []).append((n, w * values[hit.docid], hit))
    return contributions, floors


def summed(parts: list[tuple[int, float, Hit]], run_floors: list[float]) -> float:
    """The contributions plus the floors of the runs that did not return the document."""
    present = {n for n, _, _ in parts}
    return sum(c for _, c, _ in parts) + sum(f for n, f in enumerate(run_floors) if n not in present)


def combsum(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
            k: int | None = None) -> Rankings:
    weights = check_weights(runs, weights)
    contributions, floors = normalised_contributions(runs, weights, norm)
    return assemble(contributions, lambda q, d, parts: summed(parts, floors[q]), k)
