"""A sharded hybrid index read as if it were one index (the index side of sharded search).

:class:`ShardedIndex` is a :class:`~indexes.sparse_index.SparseIndex` whose ``passages`` and
``mentions`` searchers are :class:`ShardedLuceneSearcher` objects: they answer pyserini's ``search`` /
``batch_search`` / ``doc`` / ``set_bm25`` by fanning every query batch out to all shards and merging per
query. The retrievers (:class:`~hybrid.retrieval.sparse.PassageBM25`, ``MultiFieldBM25``) therefore run
unchanged, in the driver, and return exactly the run of one index over the whole corpus:

* **Scores**: the "dfs" protocol. For a query batch the driver extracts the scoring terms, every shard
  reports its local document and term frequencies, the driver sums them, and every shard scores with the
  totals (``io.hybrid.lucene.GlobalStatsSearcher``; collection statistics are summed once at open). Lucene
  stores length norms per document, so a document's score is bit-identical to the single-index score.
* **Order**: each shard returns its top k by (score desc, passage id asc) - Anserini's order - and the lists
  are merged by the same key. Then Anserini's ``ScoreTiesAdjusterReranker`` (round to 1e-4, nudge ties
  by 1e-6) is applied to the merged list, as pyserini does on one index.
* **Own-document exclusion, best-mention collapse**: done by the retrievers on the merged list exactly as
  on one index; sharding by document keeps all passages and mentions of a document in one shard.

Engines: ``local`` keeps all shards in this process and fans a batch out over Java threads (one call
per batch); ``ray`` gives every shard a Ray actor (its own process and JVM; on a cluster, its own machine)
and ships queries as text (``io.hybrid.lucene.QueryCodec``). The retrievers that cannot go through
``passages`` / ``mentions`` have sharded counterparts in :mod:`hybrid.scale.sharded_search`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from features.annotate import MentionRecord
from hybrid.core.anserini import anserini_tie_adjust
from hybrid.core.jvm import JAR_BUILD_COMMAND, start_jvm
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.ray_engine import Engine, get_engine
from hybrid.core.records import Hit
from indexes.faiss_index import DENSE_DIR, DenseIndex, best_mention_per_passage, check_bound
from indexes.lucene import MENTIONS, PASSAGES, parse_mention_doc_id
from indexes.shards import is_sharded, read_manifest_and_digest
from indexes.sparse_index import SparseIndex

SEARCHER_CLASS = "io.hybrid.lucene.GlobalStatsSearcher"
CODEC_CLASS = "io.hybrid.lucene.QueryCodec"
#: SimpleSearcher's defaults (Anserini ``SearchCollection.Args``), used until ``set_bm25`` is called.
DEFAULT_BM25 = (BM25_K1, BM25_B)


def _java(name: str):
    start_jvm()
    from jnius import autoclass

    try:
        return autoclass(name)
    except Exception as error:  # noqa: BLE001 - jnius raises JavaException / generic errors
        raise RuntimeError(
            f"sharded search needs {name} from the project's Java extension (target/hybrid-lucene-*.jar); "
            f"build it with: {JAR_BUILD_COMMAND}"
        ) from error


#: What this module calls; a jar built before they existed is reported as missing, not as a JavaException.
REQUIRED_METHODS = ("topHits", "topPassages", "searchShards", "setTermStatistics", "localTermStatistics")


def has_global_stats_searcher() -> bool:
    """True when the running JVM has an up-to-date ``GlobalStatsSearcher`` (the project jar is built)."""
    try:
        _java(SEARCHER_CLASS)
    except RuntimeError:
        return False
    from jnius import autoclass

    methods = {m.getName() for m in autoclass("java.lang.Class").forName(SEARCHER_CLASS).getMethods()}
    return set(REQUIRED_METHODS) <= methods


def merge_top(lists: Sequence[Sequence[Sequence]], k: int) -> list[tuple]:
    """Merge hit lists sorted by (score desc, id asc) into the top ``k`` ``(id, score, mention)`` tuples.

    Each list is ``(ids, scores)`` or ``(ids, scores, mention ids)``; str order equals Lucene's UTF-8 byte order.
    """
    streams = []
    for columns in lists:
        ids, scores = columns[0], columns[1]
        mentions = columns[2] if len(columns) > 2 and columns[2] is not None else [None] * len(ids)
        streams.append(zip((-s for s in scores), ids, mentions, strict=True))
    out = []
    for neg, docid, mention in heapq.merge(*streams, key=lambda row: (row[0], row[1])):
        if len(out) >= k:
            break
        out.append((docid, -neg, mention))
    return out


# -- one process's shards --------------------------------------------------------------------------------------


class ShardGroup:
    """The shards served by one process: all of them (local engine) or one (a Ray actor).

    Every method takes plain Python values (and, in-process only, Java queries), so the same class runs
    in-process or as a Ray actor.
    """

    def __init__(self, shard_dirs: list[str], threads: int = 1):
        if not has_global_stats_searcher():
            raise RuntimeError(f"the project jar's {SEARCHER_CLASS} is missing or outdated; rebuild it: "
                               f"{JAR_BUILD_COMMAND}")
        searcher = _java(SEARCHER_CLASS)
        self.dirs = [Path(d) for d in shard_dirs]
        self.codec = _java(CODEC_CLASS)
        self.searcher_class = searcher
        self.threads = max(1, threads)
        self.shards = {part: [searcher.open(str(Path(d) / part)) for d in shard_dirs] for part in (PASSAGES, MENTIONS)}
        for part in self.shards:
            self.set_bm25(part, *DEFAULT_BM25)

    def set_bm25(self, part: str, k1: float, b: float) -> None:
        for shard in self.shards[part]:
            shard.setBM25(float(k1), float(b))

    def collection_statistics(self, part: str) -> dict[str, list[int]]:
        """{field: [maxDoc, docCount, sumTotalTermFreq, sumDocFreq]} summed over this group's shards."""
        totals: dict[str, list[int]] = {}
        fields = sorted({f for shard in self.shards[part] for f in shard.fieldNames()})
        for shard in self.shards[part]:
            for field in fields:
                stats = shard.localCollectionStatistics(field)
                totals[field] = [a + b for a, b in zip(totals.get(field, [0, 0, 0, 0]), stats, strict=True)]
        return totals

    def set_collection_statistics(self, part: str, totals: dict[str, list[int]]) -> None:
        for shard in self.shards[part]:
            for field, (max_doc, doc_count, sum_ttf, sum_df) in totals.items():
                shard.setCollectionStatistics(field, max_doc, doc_count, sum_ttf, sum_df)

    def term_statistics(self, part: str, fields: list[str], terms: list[str]) -> list[int]:
        """[docFreq, totalTermFreq] per (field, term), flattened, summed over this group's shards."""
        total = np.zeros(2 * len(fields), dtype=np.int64)
        if fields:
            for shard in self.shards[part]:
                total += np.asarray(shard.localTermStatistics(fields, terms), dtype=np.int64)
        return total.tolist()

    def search(self, part: str, queries: list[Any], k: int, fields: list[str], terms: list[str], stats: list[int],
               collapse: bool = False) -> list[tuple[list[str], list[float], list[str] | None]]:
        """Top ``k`` per query over this group's shards, scored with the given collection-wide term statistics:
        ``(ids, scores, None)``, or with ``collapse`` (mention documents) ``(passage ids, scores, mention ids)``.

        ``queries`` are Java ``Query`` objects in-process or ``QueryCodec`` strings from another process.
        """
        if not queries:
            return []
        if isinstance(queries[0], str):
            queries = list(self.codec.decodeAll(queries))
        shards = self.shards[part]
        if fields:
            for shard in shards:
                shard.setTermStatistics(fields, terms, stats)
        threads = min(self.threads, len(shards) * len(queries))
        found = self.searcher_class.searchShards(shards, queries, int(k), threads, bool(collapse))
        return [(list(h.ids), list(h.scores), list(h.mentions) if collapse else None) for h in found]

    @cached_property
    def dense(self) -> list:
        """The shards' dense indexes (``<shard>/dense``), opened on first use, each checked to be its shard's."""
        found = [DenseIndex(d / DENSE_DIR) for d in self.dirs]
        for index, shard in zip(found, self.dirs, strict=True):
            check_bound(index, shard)
        return found

    def dense_info(self) -> list[dict[str, Any]]:
        return [ix.encoder_info for ix in self.dense]

    def dense_lookup(self, passage_id: str, start: int, end: int) -> tuple[str | None, str | None]:
        """(document, indexed kind of the span) of a passage in these shards, or (None, None)."""
        for ix in self.dense:
            doc = ix.doc_of_passage(passage_id)
            if doc is not None:
                return doc, ix.kind_of(passage_id, start, end)
        return None, None

    def dense_search(self, vectors: np.ndarray, owns: list[str | None], kinds: list[int | None], k: int,
                     overfetch: int) -> list[list[tuple]]:
        """Top ``k`` passages per query vector over these shards: ``(id, score, start, end)``, merged by
        (score desc, id asc). Per shard exactly DenseRetriever's search: nearest ``k * overfetch`` mentions,
        own document and other kinds dropped, best mention per passage, fourfold refetch while short."""
        per_shard = [dense_top(ix, vectors, owns, kinds, k, overfetch) for ix in self.dense]
        return [merge_top([_columns(found[q]) for found in per_shard], k) for q in range(len(vectors))]

    def stored(self, part: str, docid: str, field: str) -> str | None:
        for shard in self.shards[part]:
            value = shard.stored(docid, field)
            if value is not None:
                return value
        return None

    def close(self) -> None:
        for shards in self.shards.values():
            for shard in shards:
                shard.close()


def _columns(hits: list[tuple]) -> tuple[list, list, list]:
    """(id, score, start, end) hits -> (ids, scores, (start, end) spans) columns for :func:`merge_top`."""
    return [h[0] for h in hits], [h[1] for h in hits], [(h[2], h[3]) for h in hits]


def dense_top(index, vectors: np.ndarray, owns: list[str | None], kinds: list[int | None], k: int,
              overfetch: int) -> list[list[tuple]]:
    """One dense shard: DenseRetriever's search loop on precomputed query vectors (see ``dense_search``)."""
    own_numbers = [index.doc_number.get(own, -1) if own else -1 for own in owns]
    out: list[list[tuple]] = [[] for _ in range(len(vectors))]
    pending = list(range(len(vectors)))
    fetch = k * max(1, overfetch)
    while pending:
        fetch = min(fetch, index.size)
        _, rows = index.search(vectors[pending], fetch)
        still = []
        for j, qi in enumerate(pending):
            hits = best_mention_per_passage(index, vectors[qi], rows[j], own_numbers[qi], kinds[qi], k)
            if len(hits) < k and fetch < index.size:
                still.append(qi)
                continue
            out[qi] = hits
        pending, fetch = still, fetch * 4
    return out


# -- pyserini's LuceneSearcher, sharded -------------------------------------------------------------------


@dataclass
class ShardHit:
    """What the retrievers read from a pyserini hit."""

    docid: str
    score: float


class StoredDocument:
    """What :class:`SparseIndex` reads from a pyserini ``Document``."""

    def __init__(self, docid: str, raw: str | None):
        self._docid, self._raw = docid, raw

    def docid(self) -> str:
        return self._docid

    def raw(self) -> str | None:
        return self._raw

    def contents(self) -> str | None:
        return None  # not stored by the index build (only ``raw`` is)


class ShardedLuceneSearcher:
    """pyserini's ``LuceneSearcher`` interface over the shards of one part (``passages`` or ``mentions``)."""

    def __init__(self, engine: Engine, groups: list, part: str):
        self.engine, self.groups, self.part = engine, groups, part
        self.searcher_class = _java(SEARCHER_CLASS)
        self.codec = _java(CODEC_CLASS)
        totals: dict[str, list[int]] = {}
        for stats in self._all("collection_statistics", part):
            for field, values in stats.items():
                totals[field] = [a + b for a, b in zip(totals.get(field, [0, 0, 0, 0]), values, strict=True)]
        self.collection_statistics = totals
        self._all("set_collection_statistics", part, totals)

    def _all(self, method: str, *args: Any) -> list:
        return self.engine.gather([group.call(method, *args) for group in self.groups])

    @cached_property
    def _bag_of_words(self):
        from jnius import autoclass

        generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        analyzer = autoclass("io.anserini.index.IndexCollection").DEFAULT_ANALYZER
        return lambda text: generator.buildQuery("contents", analyzer, text)

    def set_bm25(self, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self._all("set_bm25", self.part, float(k1), float(b))

    def search_many(self, queries: Sequence[Any], k: int) -> list[list[ShardHit]]:
        """Top ``k`` for each query (a string, analysed like ``LuceneSearcher.search``, or a Java ``Query``),
        with Anserini's tie adjustment applied to the merged list, as pyserini does on one index."""
        out = []
        for rows in self._fan_out(queries, k, collapse=False):
            scores = anserini_tie_adjust([score for _, score, _ in rows])
            out.append([ShardHit(docid, score) for (docid, _, _), score in zip(rows, scores, strict=True)])
        return out

    def search_passages(self, queries: Sequence[Any], k: int) -> list[list[Hit]]:
        """Top ``k`` passages per query over mention documents: best mention per passage (ties: smaller mention
        id), passages by (raw score desc, id asc) - the exact top k of one index, collapsed inside each shard."""
        out = []
        for rows in self._fan_out(queries, k, collapse=True):
            hits = []
            for passage_id, score, mention_id in rows:
                _, start, end = parse_mention_doc_id(mention_id)
                hits.append(Hit(docid=passage_id, score=score, mention_start=start, mention_end=end,
                                mention_id=mention_id))
            out.append(hits)
        return out

    def _fan_out(self, queries: Sequence[Any], k: int, collapse: bool) -> list[list[tuple]]:
        """The dfs round trip: query terms -> summed shard statistics -> search every shard -> merge per query."""
        if not queries:
            return []
        jqueries = [self._bag_of_words(q) if isinstance(q, str) else q for q in queries]
        pairs: dict[tuple[str, str], None] = {}
        for query in jqueries:
            flat = list(self.searcher_class.queryTerms(query))
            pairs.update(dict.fromkeys(zip(flat[0::2], flat[1::2], strict=True)))
        fields = [f for f, _ in pairs]
        terms = [t for _, t in pairs]
        stats = np.zeros(2 * len(fields), dtype=np.int64)
        for local in self._all("term_statistics", self.part, fields, terms):
            stats += np.asarray(local, dtype=np.int64)
        payload = list(self.codec.encodeAll(jqueries)) if self.engine.parallel else jqueries
        per_group = self._all("search", self.part, payload, int(k), fields, terms, stats.tolist(), collapse)
        return [merge_top([found[q] for found in per_group], k) for q in range(len(jqueries))]

    def search(self, q: Any, k: int = 10, **_: Any) -> list[ShardHit]:
        return self.search_many([q], k)[0]

    def batch_search(self, queries: list[str], qids: list[str], k: int = 10, threads: int = 1,
                     **_: Any) -> dict[str, list[ShardHit]]:
        return dict(zip(qids, self.search_many(queries, k), strict=True))

    def doc(self, docid: str) -> StoredDocument | None:
        for raw in self._all("stored", self.part, str(docid), "raw"):
            if raw is not None:
                return StoredDocument(str(docid), raw)
        return None


# -- the sharded index -----------------------------------------------------------------------------------------


class ShardedIndex(SparseIndex):
    """A sharded hybrid index (see :mod:`indexes.shards`) behind the :class:`SparseIndex` interface.

    ``SparseIndex.__init__`` is not called: it opens one pair of pyserini searchers, where this opens the
    shards on ``engine``. Every other method is inherited and reaches the shards through ``passages``
    and ``mentions``.
    """

    def __init__(self, path: str | Path, engine: str | Engine = "local", threads: int | None = None):
        self.path = Path(path)
        self.metadata, self.manifest_sha256 = read_manifest_and_digest(self.path)
        self.engine = get_engine(engine)
        dirs = [str((self.path / shard["name"]).resolve()) for shard in self.metadata["shards"]]
        if self.engine.parallel:
            self.groups = [self.engine.actor(ShardGroup, [d], 1) for d in dirs]
        else:
            self.groups = [self.engine.actor(ShardGroup, dirs, threads or len(dirs))]
        self.passages = ShardedLuceneSearcher(self.engine, self.groups, PASSAGES)
        self.mentions = ShardedLuceneSearcher(self.engine, self.groups, MENTIONS)
        self._passage_cache = lru_cache(maxsize=65536)(self._load_passage)
        self._doc_passages = lru_cache(maxsize=8192)(self._load_document_passage_ids)
        self._topic_records: dict[tuple, MentionRecord] = {}

    def _document_stored(self, doc_id: str) -> None:
        """None: the shards' stored fields are read through :meth:`document_passage_ids` and :meth:`passage_json`."""
        return None

    def _all_groups(self, method: str, *args: Any) -> list:
        return self.engine.gather([group.call(method, *args) for group in self.groups])

    @property
    def n_shards(self) -> int:
        return len(self.metadata["shards"])

    def close(self) -> None:
        self.engine.gather([group.call("close") for group in self.groups])


def open_index(path: str | Path, engine: str | Engine = "local", threads: int | None = None) -> SparseIndex:
    """A :class:`ShardedIndex` when ``path`` holds a shard manifest, else a plain :class:`SparseIndex`."""
    if is_sharded(path):
        return ShardedIndex(path, engine=engine, threads=threads)
    return SparseIndex(path)
