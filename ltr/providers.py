"""Adapters that plug other parts of the project in as feature groups (see :class:`FeatureProvider`).

Each adapter wraps a module owned by another part of the project. It is *available* when that
module imports and what it needs exists (the project's jar, a dense index, a reader checkpoint);
otherwise ``available()`` says why, and a feature set naming its features fails with that reason.

* ``sparse_fields`` - :mod:`ltr.sparse_features` (Java batch extractor): BM25 / query
  likelihood / TF-IDF / matched terms / coverage / tf / length / minimal span / proximity for each
  (query source, index field) channel, for the pair's candidate mention, one Java call per batch.
* ``dense_neighbours`` - :mod:`indexes.faiss_index`: the inner products of the candidate's mention vector (and
  passage vector) with those of the other top candidates of its list (the ``neighbours`` group's idea over
  bi-encoder vectors). Option: ``index`` (default: the hybrid index's ``dense/``).
* ``reader`` - :mod:`ltr.reader` (cross-encoder with span heads + pair scorer): the reader's pair
  score, its span confidence and the span heads' own score. Options: ``checkpoint`` (required),
  ``batch_size``, ``device``.

The groups that wrap retrievers (``bm25f``, ``dense``, ``fusion``) sit in the layer of what they wrap,
:mod:`hybrid.retrieval.providers`, and register themselves from there. Heavy models (dense encoder, reader) are
loaded once per provider instance and reused across batches.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from features.pairs.base import Feature, FeatureProvider, PairBatch
from features.pairs.neighbours import PASSAGE_FAR, PASSAGE_NEAR, support
from features.pairs.registry import register_external
from hybrid.core.background import in_background
from hybrid.core.errors import ConfigError
from hybrid.core.java import FEATURES
from hybrid.core.jvm import JAR_BUILD_COMMAND, project_jar
from hybrid.core.params import Param
from indexes.faiss_index import DENSE_METADATA, DenseIndex, check_bound, resolve_dense_dir
from indexes.lucene import mention_doc_id
from ltr.reader.context import LeadContext
from ltr.reader.settings import BATCH_SIZE
from ltr.sparse_features import DEFAULT_CHANNELS, SparseFeatureExtractor, parse_channels


def _module_missing(name: str) -> str | None:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    return None if found is not None else f"module {name} is not installed"


def _jar_missing() -> str | None:
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
    """Per-field sparse features of the candidate mention (:class:`ltr.sparse_features.SparseFeatureExtractor`)."""

    group = "sparse_fields"
    description = "per-field BM25/LM/TF-IDF/coverage/proximity of (query source, index field) channels (Java)"

    def __init__(self, channels: Sequence[str] | None = None, version: int = 1):
        self._channels = channels
        self.version = version
        self._extractors: dict[str, object] = {}

    def available(self) -> str | None:
        return _module_missing("ltr.sparse_features") or _module_missing("hybrid.core.java") or _jar_missing()

    def _channel_specs(self) -> list:
        return parse_channels(list(self._channels or DEFAULT_CHANNELS))

    def features(self) -> dict[str, Feature]:
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
            self._extractors[key] = SparseFeatureExtractor(index, [c.name for c in self._channel_specs()])
        return self._extractors[key]

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if batch.resources is None:
            raise ValueError("sparse_fields features need a batch built from an index")
        extractor = self.extractor(batch.resources.index)
        queries, records, candidates = self._inputs(batch)
        if not queries:
            return np.zeros((0, len(names)), dtype=np.float32)
        return self._columns(extractor.extract_many(queries, candidates, records), names)

    def start(self, batch: PairBatch, names: Sequence[str]) -> Callable[[], np.ndarray] | None:
        """The channel texts now, the Java extraction in a worker thread while the other groups compute."""
        if batch.resources is None:
            return None
        extractor = self.extractor(batch.resources.index)
        queries, records, candidates = self._inputs(batch)
        if not queries:
            return None
        extracted = in_background(extractor.extract_texts, extractor.texts_many(queries, records), candidates,
                                  name=self.group)
        return lambda: self._columns(extracted(), names)

    @staticmethod
    def _inputs(batch: PairBatch) -> tuple[list, list, list[list[str]]]:
        """The batch's query topics, their mention records and each query's candidate mention ids."""
        queries, records, candidates = [], [], []
        for i, q in enumerate(batch.queries):
            pairs = batch.pairs[batch.offsets[i] : batch.offsets[i + 1]]
            queries.append(q.topic)
            records.append(q.record.record)
            candidates.append([mention_doc_id(p.candidate.record) if p.candidate.record.end > p.candidate.record.start
                               else p.hit.docid for p in pairs])
        return queries, records, candidates

    @staticmethod
    def _columns(extracted: tuple[list[np.ndarray], list[str]], names: Sequence[str]) -> np.ndarray:
        matrices, all_names = extracted
        X = np.concatenate(matrices) if matrices else np.zeros((0, len(all_names)), dtype=np.float32)
        col = {n: j for j, n in enumerate(all_names)}
        return X[:, [col[n] for n in names]].astype(np.float32)


#: The dense groups' option naming their dense index (dense, dense_neighbours, fusion).
DENSE_INDEX = Param("index", str, None, "dense index folder (default: the hybrid index's dense/)")


def check_dense_index(options: dict[str, Any]) -> None:
    """An ``index`` option must name a dense index (a ConfigError saying why not)."""
    if options.get("index") is not None:
        try:
            resolve_dense_dir(options["index"])
        except FileNotFoundError as exc:
            raise ConfigError(None, None, str(exc)) from None


def folder_digest(path: str | Path) -> str:
    """sha256 over the names and contents of the files of a model folder (what fixes its outputs)."""
    digest = hashlib.sha256()
    for f in sorted(p for p in Path(path).rglob("*") if p.is_file()):
        digest.update(str(f.relative_to(path)).encode())
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


# -- dense similarity ------------------------------------------------------------------------------------


def dense_index_identity(index: str | Path | None) -> dict[str, Any]:
    """What fixes a dense provider's values beyond its options: the sha256 of its dense index's metadata (nothing
    when it reads the hybrid index's own ``dense/``)."""
    if not index:
        return {}
    meta = resolve_dense_dir(index) / DENSE_METADATA
    return {"dense_index": hashlib.sha256(meta.read_bytes()).hexdigest()}


def _dense_missing() -> str | None:
    return (_module_missing("indexes.faiss_index") or _module_missing("hybrid.retrieval.dense")
            or _module_missing("faiss"))


class DenseIndexProvider(FeatureProvider):
    """A feature group that reads a dense index (``index_path``; ``None``: the hybrid index's own): available when
    FAISS and the dense modules are, its ``index`` option checked when configured, and the index's metadata part
    of its identity (so cached values of another dense index are never reused)."""

    index_path: str | None = None

    def available(self) -> str | None:
        return _dense_missing()

    def configure(self, options: dict[str, Any]) -> FeatureProvider:
        values = self.option_values(options)
        check_dense_index(values)
        return super().configure(values)

    def identity(self) -> dict[str, Any]:
        return dense_index_identity(self.index_path)


class DenseNeighboursProvider(DenseIndexProvider):
    """The ``neighbours`` group's passage features over bi-encoder vectors: how close the candidate's mention
    (and passage) vector lies to those of the other top candidates of its list. The fine-tuned span vectors
    are trained to tell two similar events apart, which TF-IDF over passages cannot. No query encoding:
    the vectors are read from the dense index."""

    group = "dense_neighbours"
    description = "bi-encoder similarity of the candidate to the other top candidates of its list (cluster hypothesis)"
    OPTIONS = (DENSE_INDEX,)
    NEAR, FAR = PASSAGE_NEAR, PASSAGE_FAR

    def __init__(self, index: str | None = None):
        self.index_path = index
        self._indexes: dict[str, Any] = {}
        self._bound: set[tuple[str, str]] = set()  # (dense index, hybrid index) pairs already checked

    def features(self) -> dict[str, Feature]:
        docs = {
            f"dnb_mention_top{self.NEAR}": f"mean inner product of the candidate mention's vector with the {self.NEAR} "
                                           "best other candidates' mention vectors",
            f"dnb_mention_top{self.FAR}": f"the same over the {self.FAR} best other candidates",
            f"dnb_passage_top{self.NEAR}": f"mean inner product of the candidate's passage vector with the {self.NEAR} "
                                           "best other candidates' (NaN: the index has no passage vectors)",
            f"dnb_passage_top{self.FAR}": f"the same over the {self.FAR} best other candidates",
        }
        return {n: Feature(n, self.group, doc) for n, doc in docs.items()}

    def _open(self, hybrid_index_path: Path) -> DenseIndex:
        key = str(self.index_path or hybrid_index_path)
        if key not in self._indexes:
            self._indexes[key] = DenseIndex(key)
        if (key, str(hybrid_index_path)) not in self._bound:
            check_bound(self._indexes[key], hybrid_index_path)
            self._bound.add((key, str(hybrid_index_path)))
        return self._indexes[key]

    @staticmethod
    def _mention_vector(index: Any, number: int | None, start: int, end: int) -> np.ndarray | None:
        """The vector of the candidate's span, else the normalised mean of its passage's mention vectors."""
        if number is None:
            return None
        rows = index.rows_of_passage(number)
        if len(rows) == 0:
            return None
        spans = np.asarray(index.rows[rows, 1:3])
        exact = np.nonzero((spans[:, 0] == start) & (spans[:, 1] == end))[0]
        vectors = index.faiss.reconstruct_batch(np.ascontiguousarray(rows[exact[:1]] if len(exact) else rows,
                                                                      dtype=np.int64))
        mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
        norm = np.linalg.norm(mean)
        return mean / norm if norm > 0 else mean

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if batch.resources is None:
            raise ValueError("dense neighbour features need a batch built from an index")
        index = self._open(batch.resources.index.path)
        columns = list(self.features())
        values = np.full((len(batch.pairs), 4), np.nan, dtype=np.float32)
        for q in range(len(batch.queries)):
            lo, hi = batch.offsets[q], batch.offsets[q + 1]
            pairs = batch.pairs[lo:hi]
            numbers = [index.passage_number.get(p.hit.docid) for p in pairs]
            found = [i for i, n in enumerate(numbers) if n is not None]
            mentions = [self._mention_vector(index, numbers[i], pairs[i].candidate.record.start,
                                             pairs[i].candidate.record.end) for i in found]
            keep = [i for i, v in zip(found, mentions, strict=True) if v is not None]
            if keep:
                vectors = np.stack([v for v in mentions if v is not None])
                values[[lo + i for i in keep], 0] = support(vectors, self.NEAR)
                values[[lo + i for i in keep], 1] = support(vectors, self.FAR)
            if found and index.has_passage_vectors:
                passages = index.passage_vectors.reconstruct_batch(
                    np.ascontiguousarray([numbers[i] for i in found], dtype=np.int64))
                values[[lo + i for i in found], 2] = support(passages, self.NEAR)
                values[[lo + i for i in found], 3] = support(passages, self.FAR)
        return values[:, [columns.index(n) for n in names]]


# -- the neural reader ----------------------------------------------------------------------------------------


class ReaderProvider(FeatureProvider):
    """The coreference reader's score for the pair (best over the passage's same-kind mentions) and confidence."""

    group = "reader"
    description = "neural reader (cross-encoder + span heads + pair scorer): pair score and span confidence"
    OPTIONS = (Param("checkpoint", str, None, "the trained reader folder (python -m hybrid.reader train); needed"),
               BATCH_SIZE,
               Param("device", str, None, "torch device (default: the reader's choice)"))

    def __init__(self, checkpoint: str | None = None, batch_size: int = BATCH_SIZE.default, device: str | None = None):
        self.checkpoint, self.batch_size, self.device = checkpoint, batch_size, device
        self._reader = None
        self._context = None

    def available(self) -> str | None:
        return _module_missing("ltr.reader.infer") or _module_missing("torch")

    def configure(self, options: dict[str, Any]) -> FeatureProvider:
        checkpoint = self.option_values(options)["checkpoint"]
        if checkpoint is None or not Path(checkpoint).is_dir():
            raise ConfigError(None, None, f"[providers.reader] needs checkpoint = <a trained reader folder>; "
                                          f"got {checkpoint!r}")
        return super().configure(options)

    def identity(self) -> dict[str, Any]:
        return {"checkpoint": folder_digest(self.checkpoint)} if self.checkpoint else {}

    def features(self) -> dict[str, Feature]:
        docs = {
            "reader_score": "reader pair score s(query, candidate): best over the passage's same-kind mentions",
            "reader_span_confidence": "span-head probability of the best-scoring candidate span",
            "reader_predicted_score": "pair score of the span the span heads predict by themselves",
        }
        return {n: Feature(n, self.group, doc) for n, doc in docs.items()}

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if self.checkpoint is None:
            raise ConfigError(None, None, "reader features need the feature set option [providers.reader] "
                                          "checkpoint = <a trained reader folder> (python -m hybrid.reader train)")
        # deferred: both load torch, which only the reader's features need
        from ltr.reader.infer import score_pairs
        from ltr.reader.store import load_reader

        if self._reader is None:
            self._reader = load_reader(self.checkpoint, device=self.device)
            self._context = LeadContext.for_reader(self._reader, batch.resources.index)
        topics = [p.query.topic for p in batch.pairs]
        passages = [p.passage.text for p in batch.pairs]
        candidates = []
        for p in batch.pairs:
            kind = p.query.topic.kind or p.query.record.kind
            spans = [(r.record.start, r.record.end) for r in p.passage.records
                     if r.record.end > r.record.start and (kind is None or r.kind in (kind, None))]
            candidates.append(spans or [(p.candidate.record.start, p.candidate.record.end)])
        if not batch.pairs:
            return np.zeros((0, len(names)), dtype=np.float32)
        contexts = None  # a reader trained with document context gets the leads from the index
        if self._context is not None:
            contexts = [self._context.pair(p.query.topic, p.hit.docid) for p in batch.pairs]
        out = score_pairs(self._reader, topics, passages, batch_size=self.batch_size, candidates=candidates,
                          contexts=contexts)
        values = np.stack([out.scores, out.span_confidences, out.predicted_scores], axis=1).astype(np.float32)
        values[~np.isfinite(values)] = np.nan
        col = {"reader_score": 0, "reader_span_confidence": 1, "reader_predicted_score": 2}
        return values[:, [col[n] for n in names]]


def external_providers() -> list[FeatureProvider]:
    return [SparseFieldsProvider(), DenseNeighboursProvider(), ReaderProvider()]


register_external(external_providers)
