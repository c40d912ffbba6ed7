"""Feature groups that wrap retrievers (see :class:`~features.pairs.base.FeatureProvider`): registered here,
in the layer of what they wrap, into the feature registry of ``features.pairs``.

* ``bm25f`` - :class:`hybrid.retrieval.bm25f.BM25F` (Lucene ``CombinedFieldQuery``): the candidate
  passage's BM25F score and rank in a BM25F search of the same query (absent below its depth).
* ``dense`` - :mod:`indexes.faiss_index` / :mod:`hybrid.retrieval.dense`: the bi-encoder similarity
  of the query to the candidate mention and to the passage's best mention, and the passage's rank in
  the dense run. Options (``[providers.dense]``): ``index`` (dense index folder; default the hybrid
  index's ``dense/``), ``encoder`` (default: the one recorded in the dense index), ``depth``.
* ``fusion`` - :class:`hybrid.fusion.fuse.Fuse` of MultiFieldBM25 and the dense retriever: fused
  score and rank. Options: ``index``, ``encoder``, ``method`` (rrf|combsum|combmnz), ``depth``.

The groups that wrap what lies in ``ltr/`` or below (per-field sparse scores, dense neighbours, the reader) are
:mod:`ltr.providers`. Importing this module registers these; the systems layer (:mod:`hybrid.recipes`) and
``python -m hybrid.ltr`` import it, so a feature set naming their features finds them.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from features.pairs.base import Feature, FeatureProvider, PairBatch
from features.pairs.registry import register_external
from hybrid.core.params import DENSE_BATCH_SIZE, Param
from hybrid.core.records import Rankings, Topic
from hybrid.fusion.fuse import Fuse
from hybrid.fusion.registry import METHOD
from hybrid.retrieval.bm25f import BM25F
from hybrid.retrieval.sparse import MultiFieldBM25
from indexes.faiss_index import check_bound
from ltr.providers import (
    DENSE_INDEX,
    DenseIndexProvider,
    _dense_missing,
    _jar_missing,
    _module_missing,
    dense_index_identity,
)

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

    def retriever(self, batch: PairBatch):
        return self.retriever_of(batch.resources.index)

    def retriever_of(self, index):
        """The retriever over ``index``, made once per index path."""
        key = str(index.path)
        if key not in self._retrievers:
            self._retrievers[key] = self._make(index)
        return self._retrievers[key]

    def run(self, batch: PairBatch) -> Rankings:
        topics = [q.topic for q in batch.queries]
        return self.retriever(batch).search(topics, self.depth) if topics else {}

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        if batch.resources is None:
            raise ValueError(f"{self.group} features need a batch built from an index")
        return self.values(batch, names, self.run(batch))

    def start_early(self, resources, topics: Sequence[Topic],
                    names: Sequence[str]) -> Callable[[PairBatch], Callable[[], np.ndarray]] | None:
        """With a retriever that searches in a worker thread (``search_later``, as BM25F does): its search of the
        topics starts before the pairs are built (it needs the queries alone); the values come from the batch later."""
        if resources is None or not topics:
            return None
        retriever = self.retriever_of(resources.index)
        if not hasattr(retriever, "search_later"):
            return None
        wait = retriever.search_later(list(topics), self.depth)
        return lambda batch: lambda: self.values(batch, names, wait())

    def start(self, batch: PairBatch, names: Sequence[str]) -> Callable[[], np.ndarray] | None:
        """With a retriever that searches in a worker thread (``search_later``, as BM25F does): its Java search
        runs while the other groups compute."""
        if batch.resources is None or not batch.queries:
            return None
        retriever = self.retriever(batch)
        if not hasattr(retriever, "search_later"):
            return None
        wait = retriever.search_later([q.topic for q in batch.queries], self.depth)
        return lambda: self.values(batch, names, wait())

    def values(self, batch: PairBatch, names: Sequence[str], run: Rankings) -> np.ndarray:
        """The named features of every pair from the retriever's ``run`` of the batch's queries."""
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


# -- dense similarity ------------------------------------------------------------------------------------


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

    def encode_queries(self, topics: Sequence[Any], batch_size: int = DENSE_BATCH_SIZE,
                       progress: bool = False) -> np.ndarray:
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


def shared_dense_retriever(index: str | Path, encoder: str | None, k: int, batch_size: int = DENSE_BATCH_SIZE):
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


DENSE_ENCODER = Param("encoder", str, None, "query encoder (default: the one the dense index records)")
DENSE_DEPTH = Param("depth", int, 100, "depth of its run: a passage below it is not found", minimum=1)


class DenseProvider(DenseIndexProvider):
    """Bi-encoder similarities of the query to the candidate mention / the passage's mentions, and dense rank."""

    group = "dense"
    description = "dense (bi-encoder) similarity to the candidate mention and the passage's best mention, dense rank"
    OPTIONS = (DENSE_INDEX, DENSE_ENCODER, DENSE_DEPTH,
               Param("batch_size", int, DENSE_BATCH_SIZE, "queries encoded at once", minimum=1))

    def __init__(self, index: str | None = None, encoder: str | None = None, depth: int = DENSE_DEPTH.default,
                 batch_size: int = DENSE_BATCH_SIZE):
        self.index_path, self.encoder_path, self.depth, self.batch_size = index, encoder, depth, batch_size
        self._state: dict[str, Any] = {}

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


# -- BM25F and fusion -----------------------------------------------------------------------------------------


def _bm25f(index):
    return BM25F(index)


def _bm25f_missing() -> str | None:
    return _module_missing("hybrid.retrieval.bm25f") or _module_missing("hybrid.core.java") or _jar_missing()


class FusionProvider(RetrieverScoresProvider):
    """Score and rank of the candidate in the fusion of MultiFieldBM25 and the dense retriever."""

    OPTIONS = (DENSE_INDEX, DENSE_ENCODER, METHOD, DENSE_DEPTH)

    def __init__(self, index: str | None = None, encoder: str | None = None, method: str = METHOD.default,
                 depth: int = DENSE_DEPTH.default):
        super().__init__("fusion", f"{method} fusion of MultiFieldBM25 and dense retrieval: score and rank",
                         self._make, depth, _dense_missing)
        self.index_path, self.encoder_path, self.method = index, encoder, method

    def identity(self) -> dict[str, Any]:
        return dense_index_identity(self.index_path)

    def _make(self, index):
        dense = shared_dense_retriever(self.index_path or index.path, self.encoder_path, self.depth)
        check_bound(dense.index, index)
        return Fuse([MultiFieldBM25(index, k=self.depth), dense], method=self.method, k=self.depth)


def retriever_providers() -> list[FeatureProvider]:
    return [
        RetrieverScoresProvider("bm25f", "BM25F (mention, coref, ner, context) score and rank of the candidate",
                                _bm25f, depth=100, requires=_bm25f_missing),
        DenseProvider(),
        FusionProvider(),
    ]


register_external(retriever_providers)
