"""Phase 7's input: the rankers' scores of an event's candidate documents as a feature matrix.

Candidates are the union of every ranker's top ``depth`` documents. Per ranker three features: the raw
score (0 when not retrieved), the score over the event's best score of that ranker (scales differ
between events: a long seed sentence has a larger TF-IDF norm than a three-word name), and the
reciprocal rank (0 when not retrieved). Two event features tell the learner which query form it sees.
"""

from __future__ import annotations

import numpy as np

from hybrid.collect.rankers import RANKERS, EventScores

DEPTH = 100
EVENT_FEATURES = ("has_name", "n_seeds")


def feature_names(rankers: tuple[str, ...] = RANKERS) -> list[str]:
    return [f"{r}:{part}" for r in rankers for part in ("score", "norm", "rr")] + list(EVENT_FEATURES)


def candidates(scores: EventScores, depth: int = DEPTH) -> np.ndarray:
    """Rows of the union of every ranker's top ``depth`` retrieved documents, sorted."""
    rows: set[int] = set()
    for values in scores.scores.values():
        finite = np.flatnonzero(np.isfinite(values))
        if len(finite):
            order = finite[np.lexsort((finite, -values[finite]))][:depth]
            rows.update(int(i) for i in order)
    return np.array(sorted(rows), dtype=np.int64)


def feature_matrix(scores: EventScores, rows: np.ndarray, rankers: tuple[str, ...] = RANKERS) -> np.ndarray:
    """``[len(rows), len(feature_names(rankers))]`` features of the candidate rows."""
    event = scores.evidence.event
    columns = []
    for ranker in rankers:
        values = scores.scores[ranker]
        finite = np.isfinite(values)
        raw = np.where(finite, values, 0.0)
        best = float(raw[finite].max()) if finite.any() else 0.0
        rank = np.zeros(len(values))
        order = np.flatnonzero(finite)
        order = order[np.lexsort((order, -values[order]))]
        rank[order] = 1.0 / np.arange(1, len(order) + 1)
        columns += [raw[rows], raw[rows] / best if best > 0 else np.zeros(len(rows)), rank[rows]]
    columns.append(np.full(len(rows), 1.0 if event.name else 0.0))
    columns.append(np.full(len(rows), float(len(event.seeds))))
    return np.stack(columns, axis=1) if len(rows) else np.zeros((0, len(feature_names(rankers))))
