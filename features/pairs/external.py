"""Adapters that plug other parts of the project in as feature groups (see :class:`FeatureProvider`).

Each adapter wraps a module owned by another part of the project. It is *available* when that
module imports and what it needs exists (the project's jar, a dense index, a reader checkpoint);
otherwise ``available()`` says why, and a feature set naming its features fails with that reason.

* ``sparse_fields`` - :mod:`features.sparse_features` (Java batch extractor): BM25 / query
  likelihood / TF-IDF / matched terms / coverage / tf / length / minimal span / proximity for each
  (query source, index field) channel, for the pair's candidate mention, one Java call per batch.
* ``bm25f`` - :class:`hybrid.retrieval.bm25f.BM25F` (Lucene ``CombinedFieldQuery``): the candidate
  passage's BM25F score and rank in a BM25F search of the same query (absent below its depth).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence

import numpy as np

from features.pairs.base import Feature, FeatureProvider, PairBatch
from hybrid.records import Run


def _module_missing(name: str) -> str | None:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    return None if found is not None else f"module {name} is not installed"


def _jar_missing() -> str | None:
    from hybrid.jvm import JAR_BUILD_COMMAND, project_jar

    return None if project_jar() else f"the project's jar is not built ({JAR_BUILD_COMMAND})"


# -- per-field sparse features (Java extractor) ---------------------------------------------------------

SPARSE_FEATURE_DOCS = {
    "bm25": "BM25 of the query text in the field (Lucene scorer, search k1/b)",
    "ql": "Dirichlet query log-likelihood of the query text (mu=1000)",
    "tfidf": "TF-IDF (sqrt tf x idf^2, no length norm)",
    "matched": "distinct query terms found in the field",
    "coverage": "share of distinct query terms found in the field",
    "tf": "occurrences of query terms in the field",
    "length": "field length in tokens",
    "min_span": "smallest window holding every matched query term (0: no match)",
    "proximity": "matched terms / minimal span (0: no match)",
}


class SparseFieldsProvider(FeatureProvider):
    """Per-field sparse features of the candidate mention (:class:`features.sparse_features.SparseFeatureExtractor`)."""

    group = "sparse_fields"
    description = "per-field BM25/LM/TF-IDF/coverage/proximity of (query source, index field) channels (Java)"

    def __init__(self, channels: Sequence[str] | None = None, version: int = 1):
        self._channels = channels
        self.version = version
        self._extractors: dict[str, object] = {}

    def available(self) -> str | None:
        return _module_missing("features.sparse_features") or _module_missing("hybrid.java") or _jar_missing()

    def _channel_specs(self) -> list:
        from features.sparse_features import DEFAULT_CHANNELS, parse_channels

        return parse_channels(list(self._channels or DEFAULT_CHANNELS))

    def features(self) -> dict[str, Feature]:
        from hybrid.java import FEATURES

        out = {}
        for ch in self._channel_specs():
            for f in FEATURES:
                name = f"{ch.name}:{f}"
                doc = f"{SPARSE_FEATURE_DOCS.get(f, f)}: query {ch.source} against the candidate's {ch.field} field"
                out[name] = Feature(name, self.group, doc, self.version)
        return out

    def extractor(self, index):
        key = str(index.path)
        if key not in self._extractors:
            from features.sparse_features import SparseFeatureExtractor

            self._extractors[key] = SparseFeatureExtractor(index, [c.name for c in self._channel_specs()])
        return self._extractors[key]

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        from indexes.lucene import mention_doc_id

        if batch.resources is None:
            raise ValueError("sparse_fields features need a batch built from an index")
        extractor = self.extractor(batch.resources.index)
        queries, records, candidates = [], [], []
        for i, q in enumerate(batch.queries):
            pairs = batch.pairs[batch.offsets[i] : batch.offsets[i + 1]]
            queries.append(q.topic)
            records.append(q.record.record)
            candidates.append([mention_doc_id(p.candidate.record) if p.candidate.record.end > p.candidate.record.start
                               else p.hit.docid for p in pairs])
        if not queries:
            return np.zeros((0, len(names)), dtype=np.float32)
        matrices, all_names = extractor.extract_many(queries, candidates, records)
        X = np.concatenate(matrices) if matrices else np.zeros((0, len(all_names)), dtype=np.float32)
        col = {n: j for j, n in enumerate(all_names)}
        return X[:, [col[n] for n in names]].astype(np.float32)


# -- scores of another retriever for the same candidates ---------------------------------------------------


class RetrieverScoresProvider(FeatureProvider):
    """The candidate passage's score and rank in another retriever's run for the same query.

    The retriever is run for the batch's queries at ``depth``; candidates it did not retrieve get
    score 0 (after per-query min-shift, see ``<prefix>_score``), reciprocal rank 0 and ``found`` 0.
    """

    def __init__(self, group: str, description: str, make: Callable[[object], object], depth: int,
                 requires: Callable[[], str | None], version: int = 1):
        self.group, self.description, self.depth = group, description, depth
        self._make, self._requires, self.version = make, requires, version
        self._retrievers: dict[str, object] = {}

    def available(self) -> str | None:
        return self._requires()

    def features(self) -> dict[str, Feature]:
        p, d = self.group, self.depth
        docs = {
            f"{p}_score": f"{p} score minus the lowest {p} score of the query's top {d} (0 when not retrieved)",
            f"{p}_rr": f"1 / rank of the passage in the {p} run (0 when not in its top {d})",
            f"{p}_found": f"1 if the passage is in the {p} run's top {d}",
        }
        return {n: Feature(n, self.group, doc, self.version) for n, doc in docs.items()}

    def run(self, batch: PairBatch) -> Run:
        index = batch.resources.index
        key = str(index.path)
        if key not in self._retrievers:
            self._retrievers[key] = self._make(index)
        topics = [q.topic for q in batch.queries]
        return self._retrievers[key].search(topics, self.depth) if topics else {}

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if batch.resources is None:
            raise ValueError(f"{self.group} features need a batch built from an index")
        run = self.run(batch)
        values = np.zeros((len(batch.pairs), 3), dtype=np.float32)
        for i, q in enumerate(batch.queries):
            hits = run.get(q.topic.qid, [])
            floor = min((h.score for h in hits), default=0.0)
            where = {h.docid: (rank, h.score) for rank, h in enumerate(hits, start=1)}
            for row in range(batch.offsets[i], batch.offsets[i + 1]):
                found = where.get(batch.pairs[row].hit.docid)
                if found is not None:
                    rank, score = found
                    values[row] = (score - floor if math.isfinite(score) else 0.0, 1.0 / rank, 1.0)
        col = {f"{self.group}_score": 0, f"{self.group}_rr": 1, f"{self.group}_found": 2}
        return values[:, [col[n] for n in names]]


def _bm25f(index):
    from hybrid.retrieval.bm25f import BM25F

    return BM25F(index)


def _bm25f_missing() -> str | None:
    return _module_missing("hybrid.retrieval.bm25f") or _module_missing("hybrid.java") or _jar_missing()


def external_providers() -> list[FeatureProvider]:
    return [
        SparseFieldsProvider(),
        RetrieverScoresProvider("bm25f", "BM25F (mention, coref, ner, context) score and rank of the candidate",
                                _bm25f, depth=100, requires=_bm25f_missing),
    ]
