"""Evaluation helpers for LTR experiments: runs from scores, per-query metrics, means by query kind.

Official numbers go through :mod:`hybrid.core.measures` (ir_measures / trec_eval). :func:`fast_ap` is a
numpy AP@k over a feature matrix used inside loops (permutation importance), where calling
trec_eval per permutation would dominate the time; it counts relevant passages missing from the
candidate list, exactly like trec_eval's AP.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hybrid.core.formats.qrels import Qrels
from hybrid.core.measures import group_means, per_query
from hybrid.core.records import Rankings

REPORT_MEASURES = ("AP@100", "RR@10", "R@100", "nDCG@10")


def restrict(qrels: Qrels, qids: list[str] | set[str]) -> Qrels:
    keep = set(qids)
    return {q: j for q, j in qrels.items() if q in keep}


def per_query_metrics(qrels: Qrels, run: Rankings, measures: tuple[str, ...] = REPORT_MEASURES,
                      qids: list[str] | None = None) -> dict[str, dict[str, float]]:
    """measure -> qid -> value over the judged queries among ``qids`` (default: the run's queries)."""
    return per_query(restrict(qrels, qids if qids is not None else list(run)), run, measures)


def by_kind(values: Mapping[str, float], kinds: Mapping[str, str]) -> dict[str, float]:
    """Mean over all queries and per kind (``event``/``entity``; ``unknown`` for a query without one)."""
    return group_means(values, values, kinds, missing="unknown")


def fast_ap(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, n_relevant: np.ndarray,
            k: int = 100) -> np.ndarray:
    """AP@k per query of a matrix ordered by ``scores`` (``n_relevant``: judged relevant per query)."""
    out = np.zeros(len(offsets) - 1)
    for i in range(len(offsets) - 1):
        lo, hi = offsets[i], offsets[i + 1]
        order = np.lexsort((np.arange(hi - lo), -scores[lo:hi]))[:k]
        rel = labels[lo:hi][order] > 0
        if n_relevant[i] > 0 and rel.any():
            hits = np.cumsum(rel)
            out[i] = float(np.sum(hits[rel] / (np.flatnonzero(rel) + 1))) / n_relevant[i]
    return out


def relevant_counts(qrels: Qrels, query_ids: list[str]) -> np.ndarray:
    return np.array([sum(1 for r in qrels.get(q, {}).values() if r > 0) for q in query_ids], dtype=np.float64)
