"""Fusion weights tuned on a topic set for one ir_measures metric: a simplex grid, then local refinement.

Fused rankings are invariant to scaling all weights together (RRF, CombSUM and CombMNZ alike), so the
search runs over weight vectors that sum to 1: first every point of a grid with spacing ``step``,
then ``refine`` rounds of coordinate moves of half the previous spacing around the best point
(moving weight from one run to another), keeping a move only if it improves the metric. Ties keep
the earlier point (grid order is lexicographic), so the result is deterministic.

Tune on one topic set and report on another when you can (``qids``); the benchmark reports both
tuned-on-dev and 2-fold cross-validated numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from hybrid.core.formats.qrels import Qrels
from hybrid.core.measures import aggregate, per_query
from hybrid.core.normalize import DEFAULT_NORMALISATION
from hybrid.core.params import RRF_K
from hybrid.core.records import Rankings
from hybrid.fusion.fuse import fuse_runs


@dataclass
class TuneResult:
    weights: list[float]
    score: float
    metric: str
    method: str
    norm: str
    tried: list[tuple[list[float], float]] = field(default_factory=list)


def simplex_grid(n: int, step: float) -> list[list[float]]:
    """All weight vectors of ``n`` non-negative multiples of ``step`` summing to 1, lexicographic."""
    if n < 1:
        raise ValueError("need at least one run")
    units = round(1 / step)
    if abs(units * step - 1) > 1e-9:
        raise ValueError(f"step {step} must divide 1")
    points = [list(c) for c in itertools.product(range(units + 1), repeat=n) if sum(c) == units]
    return [[round(c / units, 10) for c in p] for p in sorted(points, reverse=True)]


def score_weights(runs: Sequence[Rankings], qrels: Qrels, weights: Sequence[float], method: str, norm: str,
                  metric: str, qids: Sequence[str] | None, k: int, rrf_k: int = RRF_K) -> float:
    judged = [q for q in (qids if qids is not None else qrels) if q in qrels]
    sub_qrels = {q: qrels[q] for q in judged}
    sub_runs = [{q: run.get(q, []) for q in judged} for run in runs]
    fused = fuse_runs(sub_runs, method, weights, norm, k, rrf_k)
    return aggregate(per_query(sub_qrels, fused, (metric,))[metric], judged)


def tune_weights(runs: Sequence[Rankings], qrels: Qrels, method: str = "combsum",
                 norm: str = DEFAULT_NORMALISATION, metric: str = "AP@100", step: float = 0.1, refine: int = 2,
                 qids: Sequence[str] | None = None, k: int = 100, rrf_k: int = RRF_K) -> TuneResult:
    """Best weights for fusing ``runs`` on ``qids`` (default: every judged query)."""
    tried: list[tuple[list[float], float]] = []
    cache: dict[tuple[float, ...], float] = {}

    def evaluate(weights: list[float]) -> float:
        key = tuple(round(w, 10) for w in weights)
        if key not in cache:
            cache[key] = score_weights(runs, qrels, weights, method, norm, metric, qids, k, rrf_k)
            tried.append((list(key), cache[key]))
        return cache[key]

    grid = [w for w in simplex_grid(len(runs), step) if any(w)]
    best = grid[0]
    best_score = evaluate(best)
    for weights in grid[1:]:
        s = evaluate(weights)
        if s > best_score:
            best, best_score = weights, s
    delta = step
    for _ in range(refine):
        delta /= 2
        improved = True
        while improved:
            improved = False
            for i, j in itertools.permutations(range(len(runs)), 2):
                cand = list(best)
                cand[i], cand[j] = round(cand[i] + delta, 10), round(cand[j] - delta, 10)
                if cand[j] < 0:
                    continue
                s = evaluate(cand)
                if s > best_score:
                    best, best_score, improved = cand, s, True
    return TuneResult(best, best_score, metric, method, norm, tried)
