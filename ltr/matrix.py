"""Feature matrices: one row per (query, candidate passage), rows of a query contiguous, first-stage order.

A matrix is extracted once with the union of the features any experiment needs and then sliced by
column (ablations) or by query (folds), so retraining never re-extracts. Saved as ``.npz`` without
pickled objects (strings as fixed-width unicode arrays), written atomically.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from features.pairs.base import FeatureProvider, PairBatch
from features.pairs.registry import configured, lookup
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import Qrels
from hybrid.core.records import Hit, Rankings, Topic


@dataclass
class FeatureMatrix:
    qids: np.ndarray  # (n,) str
    docids: np.ndarray  # (n,) str
    X: np.ndarray  # (n, f) float32
    names: list[str]
    scores: np.ndarray  # (n,) first-stage scores
    spans: np.ndarray  # (n, 2) int64 mention start/end, -1 when unknown
    labels: np.ndarray | None = None  # (n,) int relevance

    def __post_init__(self) -> None:
        if self.X.shape != (len(self.qids), len(self.names)):
            raise ValueError(f"matrix shape {self.X.shape} does not match {len(self.qids)} rows x {len(self.names)}")

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def offsets(self) -> np.ndarray:
        """Start row of each query plus the end: rows ``offsets[i]:offsets[i+1]`` are query i."""
        if len(self.qids) == 0:
            return np.zeros(1, dtype=np.int64)
        change = np.flatnonzero(self.qids[1:] != self.qids[:-1]) + 1
        return np.concatenate([[0], change, [len(self.qids)]]).astype(np.int64)

    @property
    def query_ids(self) -> list[str]:
        return [str(self.qids[i]) for i in self.offsets[:-1]]

    @property
    def group_sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def columns(self, names: Sequence[str]) -> FeatureMatrix:
        missing = [n for n in names if n not in self.names]
        if missing:
            raise KeyError(f"matrix lacks feature(s) {missing}; re-extract with them")
        idx = [self.names.index(n) for n in names]
        return FeatureMatrix(self.qids, self.docids, self.X[:, idx], list(names), self.scores, self.spans, self.labels)

    def queries(self, qids: Sequence[str] | set[str]) -> FeatureMatrix:
        return self.rows(np.isin(self.qids, np.array(sorted(set(qids)), dtype=self.qids.dtype)))

    def rows(self, keep: np.ndarray) -> FeatureMatrix:
        """The rows a boolean mask keeps, in order (labels included)."""
        return FeatureMatrix(self.qids[keep], self.docids[keep], self.X[keep], list(self.names), self.scores[keep],
                             self.spans[keep], None if self.labels is None else self.labels[keep])

    def with_labels(self, qrels: Qrels) -> FeatureMatrix:
        labels = np.array([max(qrels.get(q, {}).get(d, 0), 0) for q, d in zip(self.qids, self.docids, strict=True)],
                          dtype=np.int64)
        return FeatureMatrix(self.qids, self.docids, self.X, list(self.names), self.scores, self.spans, labels)

    def to_run(self, scores: np.ndarray) -> Rankings:
        """A run ordering every query's rows by ``scores`` (ties: first-stage order), spans kept."""
        run: Rankings = {}
        offsets = self.offsets
        for i in range(len(offsets) - 1):
            lo, hi = offsets[i], offsets[i + 1]
            order = np.lexsort((np.arange(hi - lo), -scores[lo:hi]))
            hits = []
            for j in order:
                row = lo + j
                start, end = int(self.spans[row, 0]), int(self.spans[row, 1])
                hits.append(Hit(docid=str(self.docids[row]), score=float(scores[row]),
                                mention_start=None if start < 0 else start, mention_end=None if end < 0 else end))
            # Strictly decreasing printed scores keep this order (ties included) through a TREC file.
            for prev, hit in zip(hits, hits[1:], strict=False):
                if round(hit.score, 6) >= round(prev.score, 6):
                    hit.score = round(prev.score, 6) - 1e-6
            run[str(self.qids[lo])] = hits
        return run

    def save(self, path: str | Path, meta: dict | None = None) -> None:
        arrays = {"qids": self.qids.astype(str), "docids": self.docids.astype(str), "X": self.X,
                  "names": np.array(self.names, dtype=str), "scores": self.scores, "spans": self.spans,
                  "meta": np.array(json.dumps(meta or {}), dtype=str)}
        if self.labels is not None:
            arrays["labels"] = self.labels
        with atomic_write(path, "wb") as out:
            np.savez(out, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> tuple[FeatureMatrix, dict]:
        try:
            with np.load(path, allow_pickle=False) as data:
                labels = data["labels"] if "labels" in data.files else None
                matrix = cls(data["qids"], data["docids"], data["X"], [str(n) for n in data["names"]], data["scores"],
                             data["spans"], labels)
                meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(path, None, f"not a feature matrix file: {exc}") from None
        return matrix, meta


#: A provider's work started before the pairs were built: given the batch, what waits for its values.
EarlyStart = Callable[[PairBatch], Callable[[], np.ndarray]]


def providers_of(names: Sequence[str],
                 options: dict[str, dict] | None = None) -> dict[str, tuple[FeatureProvider, list[str]]]:
    """group -> (its provider set up with its ``options``, the names of its features among ``names``, in order)."""
    options = options or {}
    by_provider: dict[str, tuple[FeatureProvider, list[str]]] = {}
    for name in names:
        group = lookup(name)[0].group
        if group not in by_provider:
            by_provider[group] = (configured(group, options.get(group)), [])
        by_provider[group][1].append(name)
    return by_provider


def start_early(resources: object, topics: Sequence[Topic], names: Sequence[str],
                options: dict[str, dict] | None = None) -> dict[str, EarlyStart]:
    """group -> what its provider's :meth:`~features.pairs.base.FeatureProvider.start_early` started for these
    topics (only the providers that started something): :func:`extract` of the batch built from the same resources
    and topics takes it as ``early``."""
    started = {}
    for group, (provider, pnames) in providers_of(names, options).items():
        handle = provider.start_early(resources, topics, pnames)
        if handle is not None:
            started[group] = handle
    return started


def extract(batch: PairBatch, names: Sequence[str], options: dict[str, dict] | None = None,
            early: dict[str, EarlyStart] | None = None) -> FeatureMatrix:
    """Compute the named features for every pair of the batch, provider by provider.

    ``options``: group -> provider options (a feature set's ``[providers.<group>]`` tables); ``early``: what
    :func:`start_early` started for the batch's topics, before the batch was built.
    """
    early = early or {}
    by_provider = providers_of(names, options)
    X = np.zeros((len(batch.pairs), len(names)), dtype=np.float32)
    col = {n: i for i, n in enumerate(names)}
    # Providers that search in the background (Java) start first, those started early already; the others compute
    # meanwhile, in this thread.
    started = [(early[group](batch) if group in early else provider.start(batch, pnames), pnames)
               for group, (provider, pnames) in by_provider.items()]
    for (provider, pnames), (wait, _) in zip(by_provider.values(), started, strict=True):
        if wait is None:
            X[:, [col[n] for n in pnames]] = provider.compute(batch, pnames)
    for wait, pnames in started:
        if wait is not None:
            X[:, [col[n] for n in pnames]] = wait()
    spans = np.array([[-1 if p.hit.mention_start is None else p.hit.mention_start,
                       -1 if p.hit.mention_end is None else p.hit.mention_end] for p in batch.pairs],
                     dtype=np.int64).reshape(-1, 2)
    return FeatureMatrix(np.array(batch.qids, dtype=str), np.array(batch.docids, dtype=str), X, list(names),
                         np.array([p.hit.score for p in batch.pairs], dtype=np.float64), spans)
