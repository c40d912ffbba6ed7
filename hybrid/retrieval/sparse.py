"""Sparse retrievers over a hybrid index.

* :class:`PassageBM25` - plain Pyserini BM25 over ``passages/`` (the baseline), with a choice of
  query formulation: the whole ``sentence``, the ``mention`` alone, ``mention+args`` (CoreSearch's
  best BM25 query: mention + the entities of its context) or the ``context`` window.
* :class:`MultiFieldBM25` - BM25 per field over ``mentions/``, summed with weights (a boosted
  Lucene ``BooleanQuery``). Each clause sends one *query source* (a text taken from the query's
  mention record) to one *index field*, so the query's coreference chain can be matched against
  candidates' mention strings, its context entities against their ``ner`` field, and so on. Hits
  are mention documents; a passage's score is its best mention's score ("best mention wins"), and
  the hit keeps that mention's span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from features.annotate import FIELDS, QUERY_SOURCES, MentionRecord, query_source_text
from hybrid.core.errors import ConfigError
from hybrid.core.java import MentionSearch, available
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import Retriever
from hybrid.retrieval.query_plan import QueryPlan
from indexes.lucene import MENTIONS, parse_mention_doc_id
from indexes.lucene_access import LuceneQueries, exact_bm25_searcher
from indexes.sparse_index import SparseIndex

QUERY_FORMULATIONS = ("sentence", "mention", "mention+args", "context")
DEFAULT_FORMULATION = "sentence"
#: Topics handed to the Java searcher at once.
BATCH_SIZE = 256


def formulate(formulation: str, topic: Topic, record: MentionRecord | None) -> str:
    """The query string of one of the single-field formulations (``sentence`` reads no record)."""
    if formulation == "sentence":
        return topic.text
    if formulation == "mention":
        return record.mention
    if formulation == "mention+args":
        return " ".join([record.mention, *record.ner])
    if formulation == "context":
        return record.context or topic.text
    raise ConfigError(None, None, f"unknown query formulation {formulation!r}; choose from {QUERY_FORMULATIONS}")


@dataclass(frozen=True)
class Clause:
    """Send query source ``source`` to index field ``field`` with weight ``weight``."""

    source: str
    field: str
    weight: float

    def __post_init__(self) -> None:
        if self.source not in QUERY_SOURCES:
            raise ConfigError(None, None, f"unknown query source {self.source!r}; sources are {QUERY_SOURCES}")
        if self.field not in FIELDS:
            raise ConfigError(None, None, f"unknown index field {self.field!r}; fields are {FIELDS}")
        if not 0 <= self.weight < float("inf"):  # 1e309 reads as inf: every score would be inf or NaN
            raise ConfigError(None, None, f"weight of {self.source}:{self.field} must be a finite number >= 0, got "
                                          f"{self.weight}")


def parse_clauses(spec: str) -> list[Clause]:
    """``"mention=1,chain:mention=0.5,ner=0.3"``: ``source[:field]=weight``, field defaults to source."""
    clauses = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        match = re.fullmatch(r"([a-z+]+)(?::([a-z]+))?=([0-9.eE+-]+)", part)
        if not match:
            raise ConfigError(None, None, f"bad field weight {part!r}; expected source[:field]=weight")
        source, field, weight = match.group(1), match.group(2) or match.group(1), float(match.group(3))
        if source == "sentence" and match.group(2) is None:
            field = "context"
        clauses.append(Clause(source, field, weight))
    if not clauses:
        raise ConfigError(None, None, "no field weights given")
    return clauses


#: Tuned on ECB+ dev (see docs/history/benchmarks-2026-11.md); the default of ``--model multifield``.
DEFAULT_CLAUSES = (
    "chain:mention=1.0,mention:coref=0.5,chain:coref=0.5,ner=0.6,context=0.3,trigrams=0.2,mention=0.25,acronym=0.2"
)


def count_terms(terms: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for term in terms:
        counts[term] = counts.get(term, 0) + 1
    return counts


class PassageBM25(Retriever):
    """Plain Pyserini BM25 on the passage index, own document removed."""

    def __init__(self, index: SparseIndex, formulation: str = DEFAULT_FORMULATION, k1: float = BM25_K1,
                 b: float = BM25_B, threads: int = 1, k: int = 100, batch_size: int = BATCH_SIZE,
                 progress: bool = False):
        if formulation not in QUERY_FORMULATIONS:
            raise ConfigError(None, None, f"unknown query formulation {formulation!r}; choose {QUERY_FORMULATIONS}")
        if batch_size < 1:
            raise ConfigError(None, None, f"batch_size must be >= 1, got {batch_size}")
        self.index, self.formulation, self.threads, self.k = index, formulation, threads, k
        self.k1, self.b, self.batch_size, self.progress = k1, b, batch_size, progress
        self.name = f"bm25-{formulation}"

    def search(self, topics: list[Topic], k: int) -> Rankings:
        """Search in batches of ``batch_size`` topics.

        Anserini's ``batch_search`` returns every hit with its stored Lucene document (the passage's raw
        JSON, several KB), so one call over thousands of topics at ``k + max_doc_passages`` hits each
        holds gigabytes on the Java heap at once; bounded batches keep the peak at one batch.
        """
        # The searcher is shared by every retriever on this index: set this retriever's parameters each time.
        self.index.passages.set_bm25(self.k1, self.b)
        fetch = k + self.index.max_doc_passages
        run: Rankings = {}
        bar = progress_bar(desc=self.name, unit="query", total=len(topics), enabled=self.progress)
        for lo in range(0, len(topics), self.batch_size):
            chunk = topics[lo : lo + self.batch_size]
            # The sentence formulation reads the topic's text only, and a topic naming its document is excluded by
            # it (exclude_doc): such a topic needs no mention record (whose annotation would load the parser).
            records = {t.qid: self.index.query_record(t) if self.formulation != "sentence" or not t.doc_id else None
                       for t in chunk}
            queries = [formulate(self.formulation, t, records[t.qid]) for t in chunk]
            results = self.index.passages.batch_search(queries, [t.qid for t in chunk], k=fetch,
                                                       threads=self.threads)
            for topic in chunk:
                own = self.index.exclude_doc(topic, records[topic.qid])
                banned = set(self.index.document_passage_ids(own)) if own else set()
                hits = [Hit(docid=h.docid, score=h.score) for h in results.get(topic.qid, [])
                        if h.docid not in banned]
                run[topic.qid] = hits[:k]
            del results
            bar.update(len(chunk))
        bar.close()
        return run


class MultiFieldBM25(Retriever):
    """Weighted sum of per-field BM25 over mention documents; best mention per passage wins."""

    def __init__(self, index: SparseIndex, clauses: list[Clause] | str = DEFAULT_CLAUSES, same_kind: bool = True,
                 k1: float = BM25_K1, b: float = BM25_B, overfetch: int = 4, k: int = 100, progress: bool = False,
                 threads: int = 1, batch_size: int = BATCH_SIZE):
        self.index = index
        self.threads, self.batch_size = threads, batch_size
        self.clauses = parse_clauses(clauses) if isinstance(clauses, str) else list(clauses)
        self.same_kind, self.overfetch, self.k, self.progress = same_kind, overfetch, k, progress
        self.k1, self.b = k1, b
        self.name = "multifield"

    @cached_property
    def lucene(self) -> LuceneQueries:
        return LuceneQueries()

    def build_query(self, plan: QueryPlan):
        topic, record = plan.topic, plan.record
        lucene = self.lucene
        builder = lucene.Builder()
        n_clauses = 0
        analyzed: dict[str, list[str]] = {}
        for clause in self.clauses:
            if clause.weight == 0:
                continue
            if clause.source not in analyzed:
                analyzed[clause.source] = lucene.analyze(query_source_text(clause.source, topic, record))
            for token, count in count_terms(analyzed[clause.source]).items():
                builder.add(lucene.BoostQuery(lucene.term(clause.field, token), clause.weight * count), lucene.SHOULD)
                n_clauses += 1
        kind_tokens = plan.kind_tokens(self.same_kind)
        if kind_tokens:
            # Candidates of the query's kind, plus candidates whose kind is unknown.
            kinds = lucene.Builder()
            for token in kind_tokens:
                kinds.add(lucene.analyzed_term("type", token), lucene.SHOULD)
            builder.add(kinds.build(), lucene.FILTER)
        if plan.exclude_doc:
            builder.add(lucene.analyzed_term("docref", plan.exclude_docref), lucene.MUST_NOT)
        # With a FILTER clause Lucene makes SHOULD clauses optional: require one, or every candidate of
        # the right kind would match with score 0.
        builder.setMinimumNumberShouldMatch(1)
        return builder.build() if n_clauses else None

    def search_one(self, topic: Topic, k: int) -> list[Hit]:
        """One topic through pyjnius: the fallback when the project's jar is missing.

        It scores with a plain Lucene searcher (see :meth:`_exact_searcher`) and breaks ties like the Java
        path: a passage keeps its best mention (ties: smaller mention id), passages sort by score, then id.
        """
        query = self.build_query(QueryPlan.of(self.index, topic))
        if query is None:
            return []
        searcher = self._exact_searcher()
        stored = searcher.storedFields()
        fetch = k * self.overfetch
        while True:
            top = searcher.search(query, fetch).scoreDocs
            raw = sorted(((float(sd.score), stored.document(sd.doc).get("id")) for sd in top),
                         key=lambda pair: (-pair[0], pair[1]))
            best: dict[str, Hit] = {}
            for score, mention_id in raw:
                passage_id, start, end = parse_mention_doc_id(mention_id)
                if passage_id not in best:
                    best[passage_id] = Hit(docid=passage_id, score=score, mention_start=start, mention_end=end,
                                           mention_id=mention_id)
            if len(best) >= k or len(top) < fetch:
                break
            fetch *= 4
        hits = sorted(best.values(), key=lambda h: (-h.score, h.docid))
        return hits[:k]

    def _exact_searcher(self):
        """A plain Lucene IndexSearcher on ``mentions/`` with this retriever's BM25.

        Not pyserini's ``search``: Anserini rounds its scores to 1e-4 and nudges ties apart by 1e-6
        (ScoreTiesAdjusterReranker), so near-ties would come out in mention-id order and the two search
        paths would disagree.
        """
        key = (self.k1, self.b)
        cached = self.__dict__.get("_exact")
        if cached is None or cached[0] != key:
            searcher = exact_bm25_searcher(self.index.path / MENTIONS, self.k1, self.b)
            cached = self.__dict__["_exact"] = (key, searcher)
        return cached[1]

    def _java_search(self, topics: list[Topic], k: int) -> Rankings:
        """All topics through the project's Java searcher: same query, collapse and tie order as
        :meth:`search_one`, but queries built, run and collapsed inside Java in parallel."""
        searcher = MentionSearch.open(self.index.path / MENTIONS)
        active = [c for c in self.clauses if c.weight != 0]
        fields, weights = [c.field for c in active], [c.weight for c in active]
        threads = self.threads
        run: Rankings = {}
        batch = self.batch_size
        with progress_bar(desc=self.name, unit="query", total=len(topics), enabled=self.progress) as bar:
            for at in range(0, len(topics), batch):
                chunk = topics[at : at + batch]
                texts, filters, excludes = [], [], []
                for topic in chunk:
                    plan = QueryPlan.of(self.index, topic)
                    by_source = {c.source: query_source_text(c.source, topic, plan.record) for c in active}
                    texts.append([by_source[c.source] for c in active])
                    filters.append(plan.kind_filter(self.same_kind))
                    excludes.append(plan.exclude_docref)
                results = searcher.search_boosted(fields, weights, texts, filters, excludes, self.k1, self.b, k,
                                                  threads) if active else [None] * len(chunk)
                for topic, hits in zip(chunk, results, strict=True):
                    run[topic.qid] = [] if hits is None else [
                        Hit(docid=pid, score=float(score), mention_start=int(start), mention_end=int(end),
                            mention_id=f"{pid}#{start}-{end}")
                        for pid, score, start, end in zip(hits.passage_ids, hits.scores.tolist(),
                                                          hits.starts.tolist(), hits.ends.tolist(), strict=True)
                    ]
                bar.update(len(chunk))
        return run

    def search(self, topics: list[Topic], k: int) -> Rankings:
        if available():
            return self._java_search(topics, k)
        bar = progress_bar(topics, desc=self.name, unit="query", enabled=self.progress)
        return {t.qid: self.search_one(t, k) for t in bar}
