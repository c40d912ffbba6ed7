"""Feature normalisation, per feature as the feature set says; fitted statistics travel with the model.

Global methods (``zscore``, ``minmax``) learn their statistics on the training matrix; per-query
methods (``query_zscore``, ``query_minmax``) rescale within each candidate list, which makes
scores from queries of different lengths comparable (first-stage BM25 scores, for instance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr.featureset import NORMALISATIONS


def _per_query(X: np.ndarray, offsets: np.ndarray, how: str) -> np.ndarray:
    if len(X) == 0:
        return X
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    if how == "query_minmax":
        lo = np.minimum.reduceat(X, starts, axis=0)
        hi = np.maximum.reduceat(X, starts, axis=0)
        lo, span = np.repeat(lo, sizes, axis=0), np.repeat(hi - lo, sizes, axis=0)
        return np.where(span > 0, (X - lo) / np.where(span > 0, span, 1), 0.0)
    mean = np.add.reduceat(X, starts, axis=0) / sizes[:, None]
    sq = np.add.reduceat(X * X, starts, axis=0) / sizes[:, None]
    std = np.sqrt(np.maximum(sq - mean * mean, 0.0))
    mean, std = np.repeat(mean, sizes, axis=0), np.repeat(std, sizes, axis=0)
    return np.where(std > 0, (X - mean) / np.where(std > 0, std, 1), 0.0)


@dataclass
class Normaliser:
    methods: list[str]
    stats: dict[str, list[float]]  # per-feature parameters of the global methods

    @classmethod
    def fit(cls, X: np.ndarray, methods: list[str]) -> Normaliser:
        for m in methods:
            if m not in NORMALISATIONS:
                raise ValueError(f"unknown normalisation {m!r}")
        X = np.asarray(X, dtype=np.float64)
        with np.errstate(all="ignore"):
            mean = np.nan_to_num(np.nanmean(X, axis=0)) if len(X) else np.zeros(X.shape[1])
            std = np.nan_to_num(np.nanstd(X, axis=0)) if len(X) else np.ones(X.shape[1])
            lo = np.nan_to_num(np.nanmin(X, axis=0)) if len(X) else np.zeros(X.shape[1])
            hi = np.nan_to_num(np.nanmax(X, axis=0)) if len(X) else np.ones(X.shape[1])
        return cls(list(methods), {"mean": mean.tolist(), "std": std.tolist(), "min": lo.tolist(),
                                   "max": hi.tolist()})

    def transform(self, X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[1] != len(self.methods):
            raise ValueError(f"normaliser expects {len(self.methods)} features, got {X.shape[1]}")
        out = X.copy()
        methods = np.array(self.methods)
        mean, std = np.array(self.stats["mean"]), np.array(self.stats["std"])
        lo, hi = np.array(self.stats["min"]), np.array(self.stats["max"])
        if (cols := np.flatnonzero(methods == "zscore")).size:
            s = np.where(std[cols] > 0, std[cols], 1.0)
            out[:, cols] = (X[:, cols] - mean[cols]) / s
        if (cols := np.flatnonzero(methods == "minmax")).size:
            span = np.where(hi[cols] > lo[cols], hi[cols] - lo[cols], 1.0)
            out[:, cols] = (X[:, cols] - lo[cols]) / span
        if (cols := np.flatnonzero(methods == "log1p")).size:
            out[:, cols] = np.sign(X[:, cols]) * np.log1p(np.abs(X[:, cols]))
        for how in ("query_minmax", "query_zscore"):
            if (cols := np.flatnonzero(methods == how)).size:
                out[:, cols] = _per_query(X[:, cols], offsets, how)
        return out

    def to_json(self) -> dict:
        return {"methods": self.methods, "stats": self.stats}

    @classmethod
    def from_json(cls, obj: dict) -> Normaliser:
        return cls(list(obj["methods"]), {k: list(map(float, v)) for k, v in obj["stats"].items()})
