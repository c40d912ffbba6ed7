"""BM25F over the mention index: one saturation over weighted, pooled fields (Lucene ``CombinedFieldQuery``).

:class:`~hybrid.retrieval.sparse.MultiFieldBM25` adds up per-field BM25 scores, so a query term found in
a candidate's mention *and* its context *and* its chain is counted three times, each time with its own
saturation. BM25F (Robertson & Zaragoza's simple BM25F) pools the weighted term frequencies and lengths of
the chosen fields into one pseudo-field and saturates once: repeating a term across fields helps, but
less than matching another query term. Each query term becomes one Lucene ``CombinedFieldQuery``
(a single CombinedFieldQuery with several terms would treat them as synonyms); the disjunction of those
is restricted to the query's kind and stripped of its own document like the boosted sum, and hits are
collapsed to passages (best mention wins) inside Java.

Constraints (Lucene 9.9.1): every field must have norms and the same similarity (true for every text
field of a hybrid mention index); the searcher's similarity must be BM25; the query's per-field weights
must be >= 1, so weights below 1 are divided by the smallest weight and k1 by the same factor, which is
the same BM25F up to Lucene's 1-byte quantisation of the pooled length. Query term counts act as clause
boosts, as in the boosted sum. Needs the project's jar (``pom.xml``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from features.annotate import FIELDS, QUERY_SOURCES, query_source_text
from hybrid.core.background import in_background
from hybrid.core.errors import ConfigError
from hybrid.core.java import MentionSearch
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import Retriever
from hybrid.retrieval.query_plan import QueryPlan
from hybrid.retrieval.sparse import QUERY_FORMULATIONS, formulate
from indexes.lucene import MENTIONS
from indexes.sparse_index import SparseIndex

#: Tuned on an ECB+ dev sample (benchmarks/results/java.md); the default of BM25F.
DEFAULT_BM25F_FIELDS = "mention=1.0,coref=0.5,ner=0.3,context=0.3"
DEFAULT_BM25F_QUERY = "mention+mention+chain+chain+ner+sentence"


def parse_field_weights(spec: str | dict[str, float]) -> dict[str, float]:
    """``"mention=1,context=0.3"`` or a dict -> {field: weight}; fields of the mention index, weights >= 0."""
    if isinstance(spec, dict):
        weights = {str(f): float(w) for f, w in spec.items()}
    else:
        weights = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            match = re.fullmatch(r"([a-z]+)=([0-9.eE+-]+)", part)
            if not match:
                raise ConfigError(None, None, f"bad BM25F field weight {part!r}; expected field=weight")
            if match.group(1) in weights:
                raise ConfigError(None, None, f"BM25F field {match.group(1)!r} given twice")
            weights[match.group(1)] = float(match.group(2))
    for field, weight in weights.items():
        if field not in FIELDS:
            raise ConfigError(None, None, f"unknown BM25F field {field!r}; fields are {FIELDS}")
        if not weight >= 0:
            raise ConfigError(None, None, f"BM25F weight of {field} must be >= 0, got {weight}")
    if not any(w > 0 for w in weights.values()):
        raise ConfigError(None, None, "BM25F needs at least one field with a positive weight")
    return weights


def check_query(query: str) -> str:
    """A formulation (``sentence``, ``mention+args``, ...) or query sources joined by ``+`` (``mention+chain``)."""
    if query in QUERY_FORMULATIONS or all(part in QUERY_SOURCES for part in query.split("+")):
        return query
    raise ConfigError(None, None, f"unknown BM25F query {query!r}: use one of {QUERY_FORMULATIONS} or query sources "
                                  f"{QUERY_SOURCES} joined by '+'")


def query_text(query: str, topic: Topic, record) -> str:
    """The one text BM25F searches: a formulation, or the listed sources' texts concatenated."""
    if query in QUERY_FORMULATIONS:
        return formulate(query, topic, record)
    return " ; ".join(query_source_text(part, topic, record) for part in query.split("+"))


class BM25F(Retriever):
    """BM25F over the chosen mention-index fields; best mention per passage wins.

    ``fields``: {field: weight} or ``"mention=1,context=0.3"``; ``query``: which text of the query is
    searched (one of :data:`~hybrid.retrieval.sparse.QUERY_FORMULATIONS`, or query sources joined by
    ``+`` such as ``"mention+chain+ner"``); ``same_kind``: only candidates of the query's kind (or of
    unknown kind).
    """

    def __init__(self, index: SparseIndex, fields: dict[str, float] | str = DEFAULT_BM25F_FIELDS,
                 same_kind: bool = True, k: int = 100, query: str = DEFAULT_BM25F_QUERY, k1: float = BM25_K1,
                 b: float = BM25_B, threads: int = 1, progress: bool = False):
        check_query(query)
        if not (k1 > 0 and 0 <= b <= 1):
            raise ConfigError(None, None, f"BM25F needs k1 > 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.index, self.fields, self.same_kind, self.k = index, parse_field_weights(fields), same_kind, k
        self.query, self.k1, self.b, self.threads, self.progress = query, k1, b, threads, progress
        self.name = "bm25f"

    #: Queries per Java call.
    BATCH = 256

    def search(self, topics: list[Topic], k: int) -> Rankings:
        searcher = MentionSearch.open(self.index.path / MENTIONS)
        run: Rankings = {}
        with progress_bar(desc=self.name, unit="query", total=len(topics), enabled=self.progress) as bar:
            for chunk, queries in self._prepared(topics):
                run.update(self._hits(chunk, self._java(searcher, queries, k)))
                bar.update(len(chunk))
        return run

    def search_later(self, topics: list[Topic], k: int) -> Callable[[], Rankings]:
        """:meth:`search` in two halves: the Python half (query records and texts) now, in this thread, the Java
        search in a worker thread, whose run the returned function waits for. pyjnius releases the GIL during the
        Java call, so Python work done before calling it runs beside the search; the worker touches no Python
        state but the texts handed to it (no record is annotated there)."""
        searcher = MentionSearch.open(self.index.path / MENTIONS)
        prepared = self._prepared(topics)
        searched = in_background(lambda: [self._java(searcher, queries, k) for _, queries in prepared], name=self.name)

        def wait() -> Rankings:
            run: Rankings = {}
            for (chunk, _), results in zip(prepared, searched(), strict=True):
                run.update(self._hits(chunk, results))
            return run

        return wait

    def _prepared(self, topics: list[Topic]) -> list[tuple[list[Topic], tuple[list[str], list[str], list[str]]]]:
        """The topics in chunks of :attr:`BATCH`, each with its query texts, kind filters and excluded docrefs."""
        out = []
        for at in range(0, len(topics), self.BATCH):
            chunk = topics[at : at + self.BATCH]
            texts, filters, excludes = [], [], []
            for topic in chunk:
                plan = QueryPlan.of(self.index, topic)
                texts.append(query_text(self.query, topic, plan.record))
                filters.append(plan.kind_filter(self.same_kind))
                excludes.append(plan.exclude_docref)
            out.append((chunk, (texts, filters, excludes)))
        return out

    def _java(self, searcher: MentionSearch, queries: tuple[list[str], list[str], list[str]], k: int):
        fields = [f for f, w in self.fields.items() if w > 0]
        weights = [self.fields[f] for f in fields]
        texts, filters, excludes = queries
        return searcher.search_combined(fields, weights, texts, filters, excludes, self.k1, self.b, k, self.threads)

    @staticmethod
    def _hits(chunk: list[Topic], results) -> Rankings:
        return {
            topic.qid: [
                Hit(docid=pid, score=float(score), mention_start=int(start), mention_end=int(end),
                    mention_id=f"{pid}#{start}-{end}")
                for pid, score, start, end in zip(hits.passage_ids, hits.scores.tolist(), hits.starts.tolist(),
                                                  hits.ends.tolist(), strict=True)
            ]
            for topic, hits in zip(chunk, results, strict=True)
        }
