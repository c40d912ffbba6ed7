"""Retrievers for a sharded index whose search does not go through ``index.passages`` / ``index.mentions``.

The sharded index itself (:class:`~indexes.sharded_index.ShardedIndex`: dfs scoring, merging, Anserini's tie
adjustment, the local and Ray engines) lives with the other index readers in :mod:`indexes.sharded_index`.
Here are the retrievers that search it in their own way - :class:`ShardedMultiField` (the mention index's
Java collapse searcher) and :class:`ShardedDense` (the shards' dense parts) - and :func:`shard_retriever`,
which adapts a retriever to the index it runs on.
"""

from __future__ import annotations

from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.core.params import DENSE_BATCH_SIZE, DENSE_OVERFETCH
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import KIND_CODES, Hit, Rankings, Topic
from hybrid.core.stage import Retriever
from hybrid.retrieval.query_plan import QueryPlan
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
from indexes.sharded_index import ShardedIndex, merge_top
from indexes.sparse_index import SparseIndex

# -- retrievers whose search does not go through ``index.passages`` / ``index.mentions`` ---------------------


class ShardedMultiField(Retriever):
    """:class:`~hybrid.retrieval.sparse.MultiFieldBM25` on a :class:`ShardedIndex`.

    The single-index retriever opens ``<index>/mentions`` itself (a Java collapse searcher), which a sharded
    index does not have. This one builds the same queries (``base.build_query``) and sends a whole topic
    batch to every shard at once; each shard scores its mentions with collection-wide statistics and
    collapses them to its top k passages (best mention wins), and the lists merge by (score desc, passage
    id asc). A passage's mentions all live in one shard, so this is the exact top k of one index.
    """

    def __init__(self, base: MultiFieldBM25, index: ShardedIndex, batch: int | None = None):
        self.base, self.index = base, index
        self.batch = max(1, batch or int(getattr(base, "batch_size", 256)))
        self.name, self.k = base.name, base.k

    def search(self, topics: list[Topic], k: int) -> Rankings:
        base, index = self.base, self.index
        index.mentions.set_bm25(base.k1, base.b)
        run: Rankings = {t.qid: [] for t in topics}
        pending = []
        for topic in progress_bar(topics, desc=f"{self.name} queries", unit="query", enabled=base.progress):
            query = base.build_query(QueryPlan.of(index, topic))
            if query is not None:
                pending.append((topic.qid, query))
        for at in range(0, len(pending), self.batch):
            chunk = pending[at : at + self.batch]
            found = index.mentions.search_passages([q for _, q in chunk], k)
            run.update({qid: hits for (qid, _), hits in zip(chunk, found, strict=True)})
        return run


class ShardedDense(Retriever):
    """:class:`~hybrid.retrieval.dense.DenseRetriever` over the ``dense/`` parts of a sharded index.

    Queries are encoded once here; every shard group searches its FAISS shards with the same vectors
    (DenseRetriever's loop: own document and other kinds dropped, best mention per passage, refetch while
    short) and the per-shard top k merge by (score desc, passage id asc). FAISS's own inner products can
    differ in the last bits between layouts, so both sides re-score the fetched rows exactly
    (:meth:`~indexes.faiss_index.DenseIndex.exact_scores`): scores equal the single index's bit for bit,
    and exactly equal scores (duplicate passages) are ordered by passage id on both.
    """

    def __init__(self, index: ShardedIndex, encoder: Any = None, k: int = 100, same_kind: bool = True,
                 overfetch: int = DENSE_OVERFETCH, batch_size: int = DENSE_BATCH_SIZE, progress: bool = False,
                 device: str | None = None, name: str = "dense", precision: str | None = None,
                 backend: str | None = None):
        self.index, self.k, self.same_kind, self.overfetch = index, k, same_kind, max(1, overfetch)
        self.batch_size, self.progress, self.name = batch_size, progress, name
        infos = [info for found in index._all_groups("dense_info") for info in found]
        fingerprints = {info["fingerprint"] for info in infos}
        if len(fingerprints) != 1:
            raise ConfigError(index.path, None, "the shards' dense indexes were built with different encoders")
        from features.encoder import BiEncoder, EncoderConfig  # deferred: it loads torch, which only dense needs

        if isinstance(encoder, BiEncoder):
            self.encoder = encoder
        else:
            config = EncoderConfig.from_json(infos[0]["config"])
            self.encoder = BiEncoder.load(encoder or infos[0]["path"], config=config, device=device)
        if self.encoder.fingerprint not in fingerprints:
            raise ConfigError(index.path, None, f"query encoder {self.encoder.source} is not the encoder the "
                              f"dense shards were built with ({infos[0]['path']})")
        self.encoder.set_inference(precision, backend)  # None: an encoder given as an object keeps its own

    def _lookup(self, topic: Topic) -> tuple[str | None, str | None]:
        if not topic.passage_id:
            return None, None
        for doc, kind in self.index._all_groups("dense_lookup", topic.passage_id, topic.start, topic.end):
            if doc is not None:
                return doc, kind
        return None, None

    def search(self, topics: list[Topic], k: int) -> Rankings:
        if not topics:
            return {}
        vectors = self.encoder.encode_queries(topics, batch_size=self.batch_size, progress=self.progress)
        owns, kinds = [], []
        for topic in topics:
            doc, kind = (None, None) if topic.doc_id and topic.kind else self._lookup(topic)
            owns.append(topic.doc_id or doc)
            kinds.append(KIND_CODES.get(topic.kind or kind) or None if self.same_kind else None)
        per_group = self.index._all_groups("dense_search", vectors, owns, kinds, k, self.overfetch)
        run: Rankings = {}
        for q, topic in enumerate(topics):
            run[topic.qid] = [
                Hit(docid=pid, score=score, mention_start=span[0] if span[0] >= 0 else None,
                    mention_end=span[1] if span[0] >= 0 else None,
                    mention_id=f"{pid}#{span[0]}-{span[1]}" if span[0] >= 0 else None)
                for pid, score, span in merge_top([_columns_merged(found[q]) for found in per_group], k)
            ]
        return run


def _columns_merged(rows: list[tuple]) -> tuple[list, list, list]:
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def shard_retriever(retriever: Retriever, index: SparseIndex) -> Retriever:
    """The retriever to run on ``index``: itself on a plain index; on a sharded one, itself when it searches
    through ``index.passages`` / ``index.mentions`` (PassageBM25), else its sharded counterpart."""
    if not isinstance(index, ShardedIndex):
        return retriever
    # Exact types: a subclass (Rocchio's two-pass search over MultiFieldBM25) searches differently, and must not
    # be run as its parent on shards.
    if type(retriever) is MultiFieldBM25:
        return ShardedMultiField(retriever, index)
    if type(retriever) is PassageBM25:
        return retriever
    raise ConfigError(None, None, f"{retriever.name} cannot search a sharded index yet")
