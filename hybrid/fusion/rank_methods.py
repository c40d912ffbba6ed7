"""Rank-based fusion methods under ranx's names, beside RRF: scores are ignored, ranks count.

Ranks follow the run writer's order (score, then docid), as in :mod:`hybrid.fusion.rrf`.

* ``isr`` (ranx ``isr``, Mourão et al. 2015): ``n(d) * sum_i 1 / rank_i(d)^2`` over the ``n(d)`` runs that
  returned ``d``
* ``log_isr`` (ranx ``log_isr``): ``log(n(d)) * sum_i 1 / rank_i(d)^2`` (a passage one run alone returned
  scores 0)
* ``bordafuse`` (ranx ``bordafuse``, Aslam & Montague 2001): with ``C`` candidates (the union of the runs'
  passages for the query), a run gives its passage at rank ``r`` ``C - r + 1`` points and each passage it did
  not return ``(C - len(run) + 1) / 2``; the points are summed
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hybrid.core.formats.runs import sorted_hits
from hybrid.core.records import Rankings
from hybrid.fusion.common import Contributions, all_qids, assemble, check_weights


def _by_rank(runs: Sequence[Rankings], points) -> Contributions:
    """Per (qid, docid) ``points(rank, hits)`` from each run that returned it."""
    contributions: Contributions = {}
    for qid in all_qids(runs):
        docs = contributions.setdefault(qid, {})
        for n, run in enumerate(runs):
            hits = sorted_hits(run.get(qid, []))
            for r, hit in enumerate(hits, start=1):
                docs.setdefault(hit.docid, []).append((n, points(r, hits, qid), hit))
    return contributions


def isr(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None) -> Rankings:
    check_weights(runs, None)
    contributions = _by_rank(runs, lambda r, hits, qid: 1.0 / r**2)
    return assemble(contributions, lambda q, d, parts: len(parts) * sum(c for _, c, _ in parts), k)


def log_isr(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None) -> Rankings:
    check_weights(runs, None)
    contributions = _by_rank(runs, lambda r, hits, qid: 1.0 / r**2)
    return assemble(contributions, lambda q, d, parts: math.log(len(parts)) * sum(c for _, c, _ in parts), k)


def bordafuse(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None) -> Rankings:
    check_weights(runs, None)
    candidates = {qid: len({h.docid for run in runs for h in run.get(qid, [])}) for qid in all_qids(runs)}
    contributions = _by_rank(runs, lambda r, hits, qid: float(candidates[qid] - r + 1))

    def points(qid: str, parts) -> float:
        present = {n for n, _, _ in parts}
        unranked = sum((candidates[qid] - len(run.get(qid, [])) + 1) / 2 for n, run in enumerate(runs)
                       if n not in present)
        return sum(c for _, c, _ in parts) + unranked

    return assemble(contributions, lambda q, d, parts: points(q, parts), k)
