"""Score-based fusion methods under ranx's and Pyserini's names, beside CombSUM / CombMNZ.

They differ from :mod:`hybrid.fusion.combsum` in one way, on purpose: a run that did not return a
passage contributes nothing to it (ranx's convention), where CombSUM gives it the run's floor. Scores
are normalised per query first (:mod:`hybrid.core.normalize`, ``minmax`` by default as in ranx's
``fuse``); Pyserini's ``interpolation`` and ``average`` use the raw scores, as Pyserini does.

* ``wsum`` (ranx ``wsum``): ``sum_i w_i * s_i(d)``
* ``wmnz`` (ranx ``wmnz``, Wu & Crestani 2002): the sum of the scores times the sum of the weights of the runs
  that returned ``d``
* ``max`` / ``min`` (ranx ``max`` / ``min``, Fox & Shaw CombMAX / CombMIN): over the runs that returned ``d``
* ``anz`` (ranx ``anz``, CombANZ): the mean over the runs that returned ``d``
* ``interpolation`` (Pyserini): ``alpha * s_1(d) + (1 - alpha) * s_2(d)`` of exactly two runs, raw scores;
  ``alpha`` is the first weight (``--weights 0.3,0.7``), 0.5 by default
* ``average`` (Pyserini): ``sum_i s_i(d) / n`` over all ``n`` runs, raw scores
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hybrid.core.errors import ConfigError
from hybrid.core.normalize import DEFAULT_NORMALISATION, normaliser
from hybrid.core.records import Hit, Rankings
from hybrid.fusion.common import Contributions, all_qids, assemble, check_weights

Parts = list[tuple[int, float, Hit]]


def _contributions(runs: Sequence[Rankings], norm: str, scale: Sequence[float]) -> Contributions:
    """Per (qid, docid) the normalised score times ``scale[n]`` from each run ``n`` that returned it."""
    normalise = normaliser(norm)
    contributions: Contributions = {}
    for qid in all_qids(runs):
        docs = contributions.setdefault(qid, {})
        for n, run in enumerate(runs):
            if scale[n] == 0:
                continue
            hits = run.get(qid, [])
            values = normalise(hits)
            for hit in hits:
                docs.setdefault(hit.docid, []).append((n, scale[n] * values[hit.docid], hit))
    return contributions


def _fused(runs: Sequence[Rankings], weights: Sequence[float] | None, norm: str, k: int | None,
           score: Callable[[Parts], float]) -> Rankings:
    weights = check_weights(runs, weights)
    return assemble(_contributions(runs, norm, weights), lambda q, d, parts: score(parts), k)


def wsum(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
         k: int | None = None) -> Rankings:
    return _fused(runs, weights, norm, k, lambda parts: sum(c for _, c, _ in parts))


def wmnz(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
         k: int | None = None) -> Rankings:
    weights = check_weights(runs, weights)
    contributions = _contributions(runs, norm, [1.0 if w > 0 else 0.0 for w in weights])

    def score(q: str, d: str, parts: Parts) -> float:
        return sum(c for _, c, _ in parts) * sum(weights[n] for n, _, _ in parts)

    return assemble(contributions, score, k)


def comb_max(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
             k: int | None = None) -> Rankings:
    return _fused(runs, weights, norm, k, lambda parts: max(c for _, c, _ in parts))


def comb_min(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
             k: int | None = None) -> Rankings:
    return _fused(runs, weights, norm, k, lambda parts: min(c for _, c, _ in parts))


def comb_anz(runs: Sequence[Rankings], weights: Sequence[float] | None = None, norm: str = DEFAULT_NORMALISATION,
             k: int | None = None) -> Rankings:
    return _fused(runs, weights, norm, k, lambda parts: sum(c for _, c, _ in parts) / len(parts))


def interpolation(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None) -> Rankings:
    if len(runs) != 2:
        raise ConfigError(None, None, f"interpolation fuses exactly two runs, got {len(runs)}")
    alpha = 0.5 if weights is None else float(weights[0])
    if weights is not None and (len(weights) != 2 or abs(weights[0] + weights[1] - 1) > 1e-9):
        raise ConfigError(None, None, f"interpolation weights are alpha,1-alpha (summing to 1), got {list(weights)}")
    return assemble(_contributions(runs, "none", [alpha, 1 - alpha]), lambda q, d, parts: sum(c for _, c, _ in parts),
                    k)


def average(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None) -> Rankings:
    check_weights(runs, None)
    n = len(runs)
    return assemble(_contributions(runs, "none", [1.0 / n] * n), lambda q, d, parts: sum(c for _, c, _ in parts), k)
