"""*our-full*: LambdaMART over the event-collection rankers' scores (Phase 7 of paper 003).

Training rows are the candidate documents of each training event query (the union of every ranker's
top documents, :mod:`hybrid.collect.features`), labelled 1 when the document belongs to the event.
Cross-validation folds are whole events (:func:`ltr.cv.grouped_folds` over the event of each query:
the one-seed, k-seed and name queries of an event share its documents, so they must never be split
between training and test). The model is saved as a directory (``model.json`` + LightGBM's text
model, checksummed) and loaded without pickle; the recipe system type ``eventcoll-ltr``
(:mod:`hybrid.recipes.builders`) runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybrid.collect.features import DEPTH, candidates, feature_matrix, feature_names
from hybrid.collect.rankers import RANKERS, EventScores
from hybrid.core.errors import InputError
from hybrid.core.outputs import Kind
from hybrid.core.records import Hit, Rankings
from ltr.cv import assert_disjoint, grouped_folds
from ltr.learners import LEARNER, SCORERS, Scorer, make_learner
from ltr.model import read_model_meta, read_payload, write_model_dir

MODEL_FILE = "model.json"
FORMAT = "hybrid-eventcoll-ltr"
#: An event-collection model folder, for the output policy (hybrid.core.outputs): replaced only by another.
EVENT_MODEL = Kind("event-collection model", manifests=(MODEL_FILE,), format=("format", FORMAT))
#: Small data (tens of events): shallower trees and bigger leaves than the mention-level default.
DEFAULT_PARAMS = {"num_boost_round": 200, "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
                  "num_threads": 1}


@dataclass
class EventMatrix:
    """The candidate rows and features of one event query."""

    qid: str
    doc_ids: list[str]
    X: np.ndarray


def event_matrix(scored: EventScores, collection, rankers: tuple[str, ...] = RANKERS,
                 depth: int = DEPTH) -> EventMatrix:
    rows = candidates(scored, depth)
    return EventMatrix(scored.evidence.event.qid, [collection.doc_ids[i] for i in rows],
                       feature_matrix(scored, rows, rankers))


def stack(matrices: list[EventMatrix], qrels: Mapping[str, Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray,
                                                                                         np.ndarray]:
    """(X, labels, group sizes) of the judged queries, in the given order."""
    X, y, sizes = [], [], []
    for m in matrices:
        if m.qid not in qrels or not len(m.doc_ids):
            continue
        judged = qrels[m.qid]
        X.append(m.X)
        y.append(np.array([1 if judged.get(d, 0) > 0 else 0 for d in m.doc_ids]))
        sizes.append(len(m.doc_ids))
    if not X:
        raise InputError(None, None, "no judged training event with candidates")
    return np.vstack(X), np.concatenate(y), np.array(sizes)


@dataclass
class EventModel:
    """A trained combination of the rankers (``rankers`` fixes the feature order)."""

    scorer: Scorer
    rankers: tuple[str, ...]
    learner: str = LEARNER.default
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    depth: int = DEPTH
    trained_on: list[str] = field(default_factory=list)

    def combiner(self) -> Callable[[np.ndarray], np.ndarray]:
        return self.scorer.predict

    def rerank(self, matrix: EventMatrix, k: int = 1000) -> list[Hit]:
        if not matrix.doc_ids:
            return []
        scores = self.scorer.predict(matrix.X)
        hits = [Hit(docid=d, score=float(s)) for d, s in zip(matrix.doc_ids, scores, strict=True)]
        return sorted(hits, key=lambda h: (-round(h.score, 9), h.docid))[:k]

    def save(self, path: str | Path, overwrite: bool = False, extra: dict | None = None) -> Path:
        files = self.scorer.payload()
        meta = {"format": FORMAT, "learner": self.learner, "params": self.params, "seed": self.seed,
                "depth": self.depth, "rankers": list(self.rankers), "features": feature_names(self.rankers),
                "trained_on": self.trained_on, **(extra or {})}
        write_model_dir(path, MODEL_FILE, meta, files, overwrite)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> EventModel:
        path = Path(path)
        meta_path, meta = read_model_meta(path, MODEL_FILE, f"not an event-collection model (no {MODEL_FILE}); "
                                          "train one with `python -m hybrid.collect train`")
        if meta.get("format") != FORMAT or meta.get("learner") not in SCORERS:
            raise InputError(meta_path, None, f"not a {FORMAT} model (format {meta.get('format')!r})")
        unknown = [r for r in meta["rankers"] if r not in RANKERS]
        if unknown or meta.get("features") != feature_names(tuple(meta["rankers"])):
            raise InputError(meta_path, None, "the model's features are not this version's (retrain it)")
        files = read_payload(path, meta_path, meta["payload"])
        return cls(SCORERS[meta["learner"]].from_payload(files), tuple(meta["rankers"]), meta["learner"],
                   meta.get("params", {}), int(meta.get("seed", 0)), int(meta.get("depth", DEPTH)),
                   list(meta.get("trained_on", [])))


def train(matrices: list[EventMatrix], qrels: Mapping[str, Mapping[str, int]], rankers: tuple[str, ...] = RANKERS,
          learner: str = LEARNER.default, params: dict[str, Any] | None = None, seed: int = 0,
          depth: int = DEPTH) -> EventModel:
    """Fit the learner on the judged event queries' candidates."""
    merged = {**DEFAULT_PARAMS, **(params or {})} if learner == "lambdamart" else dict(params or {})
    X, y, sizes = stack(matrices, qrels)
    scorer = make_learner(learner, merged).fit(X, y, sizes, seed)
    return EventModel(scorer, rankers, learner, merged, seed, depth, sorted(m.qid for m in matrices))


Folds = list[tuple[list[str], list[str]]]


def cross_validate(matrices: list[EventMatrix], qrels: Mapping[str, Mapping[str, int]], group_of: Callable[[str], str],
                   k: int = 5, seed: int = 0, learner: str = LEARNER.default, params: dict[str, Any] | None = None,
                   rankers: tuple[str, ...] = RANKERS, hits: int = 1000) -> tuple[Rankings, Folds]:
    """Out-of-fold runs: each query scored by a model trained on the other folds' events (never its own)."""
    by_qid = {m.qid: m for m in matrices}
    qids = sorted(q for q in by_qid if q in qrels)
    groups = {q: group_of(q) for q in qids}
    folds = grouped_folds(qids, groups, k, seed)
    assert_disjoint(folds, groups)
    run: Rankings = {}
    for train_qids, test_qids in folds:
        model = train([by_qid[q] for q in train_qids], qrels, rankers, learner, params, seed)
        for q in test_qids:
            run[q] = model.rerank(by_qid[q], hits)
    return run, folds
