"""Adapters that plug other parts of the project in as feature groups (see :class:`FeatureProvider`).

Each adapter wraps a module owned by another part of the project. It is *available* when that
module imports and what it needs exists (the project's jar, a dense index, a reader checkpoint);
otherwise ``available()`` says why, and a feature set naming its features fails with that reason.

* ``sparse_fields`` - :mod:`ltr.sparse_features` (Java batch extractor): BM25 / query
  likelihood / TF-IDF / matched terms / coverage / tf / length / minimal span / proximity for each
  (query source, index field) channel, for the pair's candidate mention, one Java call per batch.
* ``bm25f`` - :class:`hybrid.retrieval.bm25f.BM25F` (Lucene ``CombinedFieldQuery``): the candidate
  passage's BM25F score and rank in a BM25F search of the same query (absent below its depth).
* ``dense`` - :mod:`indexes.faiss_index` / :mod:`hybrid.retrieval.dense`: the bi-encoder similarity
  of the query to the candidate mention and to the passage's best mention, and the passage's rank in
  the dense run. Options (``[providers.dense]``): ``index`` (dense index folder; default the hybrid
  index's ``dense/``), ``encoder`` (default: the one recorded in the dense index), ``depth``.
* ``dense_neighbours`` - :mod:`indexes.faiss_index`: the inner products of the candidate's mention vector (and
  passage vector) with those of the other top candidates of its list (the ``neighbours`` group's idea over
  bi-encoder vectors). Option: ``index`` (default: the hybrid index's ``dense/``).
* ``fusion`` - :class:`hybrid.fusion.fuse.Fuse` of MultiFieldBM25 and the dense retriever: fused
  score and rank. Options: ``index``, ``encoder``, ``method`` (rrf|combsum|combmnz), ``depth``.
* ``reader`` - :mod:`ltr.reader` (cross-encoder with span heads + pair scorer): the reader's pair
  score, its span confidence and the span heads' own score. Options: ``checkpoint`` (required),
  ``batch_size``, ``device``.

Heavy models (dense encoder, reader) are loaded once per provider instance and reused across batches.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from features.pairs.base import Feature, FeatureProvider, PairBatch
from features.pairs.neighbours import PASSAGE_FAR, PASSAGE_NEAR, support
from features.pairs.registry import register_external
from hybrid.core.errors import ConfigError
from hybrid.core.java import FEATURES
from hybrid.core.jvm import JAR_BUILD_COMMAND, project_jar
from hybrid.core.records import Run
from hybrid.fusion.fuse import METHODS, Fuse
from hybrid.retrieval.bm25f import BM25F
from hybrid.retrieval.sparse import MultiFieldBM25
from indexes.faiss_index import DENSE_METADATA, DenseIndex, check_bound, resolve_dense_dir
from indexes.lucene import mention_doc_id
from ltr.reader.context import LeadContext
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


def _check_options(group: str, options: dict[str, Any], allowed: dict[str, type | tuple]) -> None:
    for key, value in options.items():
        if key not in allowed:
            raise ConfigError(None, None, f"unknown option {key!r} for [providers.{group}]; allowed: {sorted(allowed)}")
        if not isinstance(value, allowed[key]):
            raise ConfigError(None, None, f"[providers.{group}] {key} has the wrong type ({type(value).__name__})")


def _check_dense_options(group: str, options: dict[str, Any], allowed: dict[str, type | tuple]) -> None:
    """:func:`_check_options`, and an ``index`` option must name a dense index."""
    _check_options(group, options, allowed)
    if "index" in options:
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


class QueryVectorMemo:
    """A query encoder that remembers the vectors of the last ``capacity`` queries it encoded.

    The dense and fusion providers (and the retriever inside each) encode the same batch's queries;
    sharing one memo per (dense index, encoder) makes that one encoder pass per query instead of up to
    three. Anything else is delegated to the wrapped encoder.
    """

    def __init__(self, encoder: Any, capacity: int = 4096):
        self.encoder, self.capacity = encoder, capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.encoded = 0  # queries actually sent to the encoder

    @staticmethod
    def key(topic: Any) -> str:
        return repr(topic)

    def encode_queries(self, topics: Sequence[Any], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        keys = [self.key(t) for t in topics]
        missing, wanted = [], set()
        for i, k in enumerate(keys):
            if k not in self._vectors and k not in wanted:
                wanted.add(k)
                missing.append(i)
        if missing:
            fresh = self.encoder.encode_queries([topics[i] for i in missing], batch_size=batch_size,
                                                progress=progress)
            self.encoded += len(missing)
            for i, vector in zip(missing, fresh, strict=True):
                self._vectors[keys[i]] = np.asarray(vector)
        out = []
        for k in keys:
            self._vectors.move_to_end(k)
            out.append(self._vectors[k])
        while len(self._vectors) > max(self.capacity, len(set(keys))):
            self._vectors.popitem(last=False)
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(out)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.encoder, name)


_QUERY_MEMOS: dict[tuple[str, str | None], QueryVectorMemo] = {}


def clear_query_memos() -> None:
    """Forget every remembered query vector (e.g. before timing a cold run)."""
    for memo in _QUERY_MEMOS.values():
        memo._vectors.clear()


def shared_dense_retriever(index: str | Path, encoder: str | None, k: int, batch_size: int = 64):
    """A :class:`~hybrid.retrieval.dense.DenseRetriever` whose query encoder (and its memo) is shared by
    every retriever of the same dense index and encoder in this process."""
    from hybrid.retrieval.dense import DenseRetriever  # deferred: importing it loads torch

    key = (str(Path(index).resolve()), None if encoder is None else str(Path(encoder).resolve()))
    memo = _QUERY_MEMOS.get(key)
    retriever = DenseRetriever(index, memo.encoder if memo is not None else encoder, k=k, batch_size=batch_size)
    if memo is None:
        memo = _QUERY_MEMOS[key] = QueryVectorMemo(retriever.encoder)
    retriever.encoder = memo
    return retriever


class DenseProvider(FeatureProvider):
    """Bi-encoder similarities of the query to the candidate mention / the passage's mentions, and dense rank."""

    group = "dense"
    description = "dense (bi-encoder) similarity to the candidate mention and the passage's best mention, dense rank"
    OPTIONS = {"index": str, "encoder": str, "depth": int, "batch_size": int}

    def __init__(self, index: str | None = None, encoder: str | None = None, depth: int = 100, batch_size: int = 64):
        self.index_path, self.encoder_path, self.depth, self.batch_size = index, encoder, depth, batch_size
        self._state: dict[str, Any] = {}

    def available(self) -> str | None:
        return _dense_missing()

    def configure(self, options: dict[str, Any]) -> DenseProvider:
        _check_dense_options(self.group, options, self.OPTIONS)
        return DenseProvider(**options)

    def identity(self) -> dict[str, Any]:
        return dense_index_identity(self.index_path)

    def features(self) -> dict[str, Feature]:
        d = self.depth
        docs = {
            "dense_score": "inner product of the query and candidate-mention vectors (bi-encoder)",
            "dense_passage_max": "best inner product of the query with any mention vector of the candidate passage",
            "dense_rr": f"1 / rank of the passage in the dense run (0 when not in its top {d})",
            "dense_found": f"1 if the passage is in the dense run's top {d}",
        }
        return {n: Feature(n, self.group, doc) for n, doc in docs.items()}

    def _open(self, hybrid_index_path: Path):
        key = str(hybrid_index_path)
        if key not in self._state:
            retriever = shared_dense_retriever(self.index_path or hybrid_index_path, self.encoder_path, self.depth,
                                               self.batch_size)
            index = retriever.index
            check_bound(index, hybrid_index_path)
            rows_of: dict[int, list[int]] = {}
            for row, number in enumerate(index.row_passage.tolist()):
                rows_of.setdefault(int(number), []).append(row)
            self._state[key] = (index, retriever, rows_of)
        return self._state[key]

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if batch.resources is None:
            raise ValueError("dense features need a batch built from an index")
        index, retriever, rows_of = self._open(batch.resources.index.path)
        topics = [q.topic for q in batch.queries]
        values = np.full((len(batch.pairs), 4), np.nan, dtype=np.float32)
        if not topics:
            return values[:, : len(names)]
        qvecs = retriever.encoder.encode_queries(topics, batch_size=self.batch_size)
        run = retriever.search(topics, self.depth)
        spans = index.rows
        for i, q in enumerate(batch.queries):
            where = {h.docid: rank for rank, h in enumerate(run.get(q.topic.qid, []), start=1)}
            for row in range(batch.offsets[i], batch.offsets[i + 1]):
                pair = batch.pairs[row]
                number = index.passage_number.get(pair.hit.docid)
                rows = rows_of.get(number, []) if number is not None else []
                if rows:
                    vecs = np.vstack([index.faiss.reconstruct(r) for r in rows])
                    sims = vecs @ qvecs[i]
                    values[row, 1] = float(sims.max())
                    cand = pair.candidate.record
                    for r, sim in zip(rows, sims.tolist(), strict=True):
                        if int(spans[r, 1]) == cand.start and int(spans[r, 2]) == cand.end:
                            values[row, 0] = sim
                    if np.isnan(values[row, 0]):
                        values[row, 0] = values[row, 1]
                rank = where.get(pair.hit.docid)
                values[row, 2], values[row, 3] = (1.0 / rank, 1.0) if rank else (0.0, 0.0)
        col = {"dense_score": 0, "dense_passage_max": 1, "dense_rr": 2, "dense_found": 3}
        return values[:, [col[n] for n in names]]


class DenseNeighboursProvider(FeatureProvider):
    """The ``neighbours`` group's passage features over bi-encoder vectors: how close the candidate's mention
    (and passage) vector lies to those of the other top candidates of its list. The fine-tuned span vectors
    are trained to tell two similar events apart, which TF-IDF over passages cannot. No query encoding:
    the vectors are read from the dense index."""

    group = "dense_neighbours"
    description = "bi-encoder similarity of the candidate to the other top candidates of its list (cluster hypothesis)"
    OPTIONS = {"index": str}
    NEAR, FAR = PASSAGE_NEAR, PASSAGE_FAR

    def __init__(self, index: str | None = None):
        self.index_path = index
        self._indexes: dict[str, Any] = {}
        self._bound: set[tuple[str, str]] = set()  # (dense index, hybrid index) pairs already checked

    def available(self) -> str | None:
        return _dense_missing()

    def configure(self, options: dict[str, Any]) -> DenseNeighboursProvider:
        _check_dense_options(self.group, options, self.OPTIONS)
        return DenseNeighboursProvider(**options)

    def identity(self) -> dict[str, Any]:
        return dense_index_identity(self.index_path)

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
    OPTIONS = {"checkpoint": str, "batch_size": int, "device": str}

    def __init__(self, checkpoint: str | None = None, batch_size: int = 64, device: str | None = None):
        self.checkpoint, self.batch_size, self.device = checkpoint, batch_size, device
        self._reader = None
        self._context = None

    def available(self) -> str | None:
        return _module_missing("ltr.reader.infer") or _module_missing("torch")

    def configure(self, options: dict[str, Any]) -> ReaderProvider:
        _check_options(self.group, options, self.OPTIONS)
        checkpoint = options.get("checkpoint")
        if checkpoint is None or not Path(checkpoint).is_dir():
            raise ConfigError(None, None, f"[providers.reader] needs checkpoint = <a trained reader folder>; "
                                          f"got {checkpoint!r}")
        return ReaderProvider(**options)

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


def _bm25f(index):
    return BM25F(index)


def _bm25f_missing() -> str | None:
    return _module_missing("hybrid.retrieval.bm25f") or _module_missing("hybrid.core.java") or _jar_missing()


class FusionProvider(RetrieverScoresProvider):
    """Score and rank of the candidate in the fusion of MultiFieldBM25 and the dense retriever."""

    OPTIONS = {"index": str, "encoder": str, "method": str, "depth": int}

    def __init__(self, index: str | None = None, encoder: str | None = None, method: str = "rrf", depth: int = 100):
        super().__init__("fusion", f"{method} fusion of MultiFieldBM25 and dense retrieval: score and rank",
                         self._make, depth, _dense_missing)
        self.index_path, self.encoder_path, self.method = index, encoder, method

    def configure(self, options: dict[str, Any]) -> FusionProvider:
        _check_options(self.group, options, self.OPTIONS)
        if options.get("method", "rrf") not in METHODS:
            raise ConfigError(None, None, f"[providers.fusion] method must be one of {METHODS}")
        return FusionProvider(**options)

    def identity(self) -> dict[str, Any]:
        return dense_index_identity(self.index_path)

    def _make(self, index):
        dense = shared_dense_retriever(self.index_path or index.path, self.encoder_path, self.depth)
        check_bound(dense.index, index)
        return Fuse([MultiFieldBM25(index, k=self.depth), dense], method=self.method, k=self.depth)


def external_providers() -> list[FeatureProvider]:
    return [
        SparseFieldsProvider(),
        RetrieverScoresProvider("bm25f", "BM25F (mention, coref, ner, context) score and rank of the candidate",
                                _bm25f, depth=100, requires=_bm25f_missing),
        DenseProvider(),
        DenseNeighboursProvider(),
        FusionProvider(),
        ReaderProvider(),
    ]


register_external(external_providers)
