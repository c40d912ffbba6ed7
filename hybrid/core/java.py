"""Python side of the project's Java extension (``src/main/java/io/hybrid/lucene``, built by ``pom.xml``).

The Java classes take whole batches (many queries, their texts, their candidates) and answer with one
little-endian byte array, because every pyjnius call and every Java object handed to Python costs
microseconds: per-hit or per-pair calls are what made the pure-pyjnius paths slow. This module opens the
Java objects once per index, passes them pyserini's own analyzer object (so query terms are analysed
exactly as the index was) and decodes the arrays with numpy.

* :class:`MentionSearch` - boosted-sum and BM25F batch search over a mention index, best mention per
  passage collapsed inside Java (``io.hybrid.lucene.MentionSearcher``).
* :class:`FeatureBatch` - per-field features for (query, candidate) pairs
  (``io.hybrid.lucene.FeatureExtractor``).

Everything here needs the jar: :func:`available` says whether it is on the running JVM's class path,
and :func:`require` raises with the command that builds it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hybrid.core.anserini import english_analyzer
from hybrid.core.jvm import has_project_jar, require_project_jar
from hybrid.core.params import BM25_B, BM25_K1

#: The stable per-channel feature names, in column order (see FeatureExtractor.java for definitions).
FEATURES = ("bm25", "ql", "tfidf", "matched", "coverage", "tf", "length", "min_span", "proximity")
_LOCK = threading.Lock()


def available() -> bool:
    """True when the project's jar is on the running JVM's class path (starts the JVM if needed)."""
    return has_project_jar()


def require() -> None:
    """Raise a RuntimeError naming the build command when the jar is missing."""
    require_project_jar()


@lru_cache(maxsize=1)
def analyzer():
    """Anserini's default English analyzer (the one the index was built with), as a Java object."""
    return english_analyzer()


def _bytes(java_bytes) -> bytes:
    return java_bytes.tostring()


def _check_texts(texts: list[str]) -> list[str]:
    return ["" if t is None else str(t) for t in texts]


@dataclass
class PassageHits:
    """One query's collapsed hits: passage ids with their best mention's score and span, best first."""

    passage_ids: list[str]
    scores: np.ndarray  # float32
    starts: np.ndarray  # int32, -1 when the index is not a mention index
    ends: np.ndarray


class MentionSearch:
    """``io.hybrid.lucene.MentionSearcher`` on one Lucene mention index, opened once per path."""

    _open: dict[str, MentionSearch] = {}

    def __init__(self, lucene_dir: str | Path, filter_field: str = "type", exclude_field: str = "docref"):
        require()
        from jnius import autoclass

        self.path = str(Path(lucene_dir).resolve())
        self.java = autoclass("io.hybrid.lucene.MentionSearcher")(self.path, analyzer(), filter_field, exclude_field)
        self.passage_ids: list[str] = list(self.java.passageIds())

    @classmethod
    def open(cls, lucene_dir: str | Path) -> MentionSearch:
        key = str(Path(lucene_dir).resolve())
        with _LOCK:
            if key not in cls._open:
                cls._open[key] = cls(key)
            return cls._open[key]

    def _decode(self, raw, n_queries: int) -> list[PassageHits]:
        buf = _bytes(raw)
        counts = np.frombuffer(buf, dtype="<i4", count=n_queries)
        total = int(counts.sum())
        offset = 4 * n_queries
        passages = np.frombuffer(buf, dtype="<i4", count=total, offset=offset)
        scores = np.frombuffer(buf, dtype="<f4", count=total, offset=offset + 4 * total)
        starts = np.frombuffer(buf, dtype="<i4", count=total, offset=offset + 8 * total)
        ends = np.frombuffer(buf, dtype="<i4", count=total, offset=offset + 12 * total)
        out, at, ids = [], 0, self.passage_ids
        for count in counts.tolist():
            sl = slice(at, at + count)
            out.append(PassageHits([ids[p] for p in passages[sl].tolist()], scores[sl], starts[sl], ends[sl]))
            at += count
        return out

    def search_boosted(self, fields: list[str], weights: list[float], texts: list[list[str]], filters: list[str],
                       excludes: list[str], k1: float, b: float, k: int, threads: int = 1) -> list[PassageHits]:
        """Weighted sum of per-field BM25. ``texts[q][c]`` is query q's text for clause c (field, weight)."""
        if any(len(t) != len(fields) for t in texts):
            raise ValueError("every query needs one text per clause")
        flat = _check_texts([x for row in texts for x in row])
        raw = self.java.searchBoosted(list(fields), [float(w) for w in weights], flat, _check_texts(filters),
                                      _check_texts(excludes), float(k1), float(b), int(k), int(threads))
        return self._decode(raw, len(texts))

    def search_combined(self, fields: list[str], weights: list[float], texts: list[str], filters: list[str],
                        excludes: list[str], k1: float, b: float, k: int, threads: int = 1) -> list[PassageHits]:
        """BM25F (Lucene CombinedFieldQuery per query term) over the weighted fields; one text per query."""
        raw = self.java.searchCombined(list(fields), [float(w) for w in weights], _check_texts(texts),
                                       _check_texts(filters), _check_texts(excludes), float(k1), float(b), int(k),
                                       int(threads))
        return self._decode(raw, len(texts))


class FeatureBatch:
    """``io.hybrid.lucene.FeatureExtractor`` on one Lucene index, opened once per (path, k1, b, mu)."""

    _open: dict[tuple, FeatureBatch] = {}

    def __init__(self, lucene_dir: str | Path, k1: float = BM25_K1, b: float = BM25_B, mu: float = 1000.0):
        require()
        from jnius import autoclass

        self.path = str(Path(lucene_dir).resolve())
        self.java = autoclass("io.hybrid.lucene.FeatureExtractor")(self.path, analyzer(), float(k1), float(b),
                                                                   float(mu))
        names = tuple(self.java.featureNames())
        if names != FEATURES:
            raise RuntimeError(
                f"the jar's features {names} differ from hybrid.core.java.FEATURES {FEATURES}; rebuild it"
            )

    @classmethod
    def open(cls, lucene_dir: str | Path, k1: float = BM25_K1, b: float = BM25_B, mu: float = 1000.0) -> FeatureBatch:
        key = (str(Path(lucene_dir).resolve()), float(k1), float(b), float(mu))
        with _LOCK:
            if key not in cls._open:
                cls._open[key] = cls(*key)
            return cls._open[key]

    def extract(self, fields: list[str], texts: list[list[str]], candidates: list[list[str]],
                threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Features of many queries at once.

        ``texts[q][c]``: query q's text for channel c (index field ``fields[c]``); ``candidates[q]``: its
        candidate ids. Returns ``(X, docs)``: float32 ``[sum of candidates, len(fields) * len(FEATURES)]``
        (channel-major columns) and the Lucene doc each row describes (-1: unknown id).
        """
        if len(texts) != len(candidates) or any(len(t) != len(fields) for t in texts):
            raise ValueError("need one text per channel for every query, and one candidate list per query")
        offsets = np.concatenate([[0], np.cumsum([len(c) for c in candidates])]).astype(int).tolist()
        flat_texts = _check_texts([x for row in texts for x in row])
        flat_cands = [str(c) for row in candidates for c in row]
        raw = self.java.extract(list(fields), flat_texts, flat_cands, offsets, int(threads))
        buf = _bytes(raw)
        n, width = len(flat_cands), len(fields) * len(FEATURES)
        matrix = np.frombuffer(buf, dtype="<f4", count=n * width).reshape(n, width).copy()
        docs = np.frombuffer(buf, dtype="<i4", count=n, offset=4 * n * width).copy()
        return matrix, docs

    def doc_ids(self, docs: np.ndarray) -> list[str | None]:
        return list(self.java.docIds([int(d) for d in docs]))
