"""Per-field sparse features for (query, candidate) pairs, for learning to rank, in one Java call per batch.

A *channel* sends one text of the query (a query source, see
:data:`~features.annotate.QUERY_SOURCES`) to one field of the mention index, like the clauses of
:class:`~hybrid.retrieval.sparse.MultiFieldBM25` without a weight: ``"chain:mention"`` matches the
query's coreference chain against candidates' mention strings; a bare ``"ner"`` means source = field
(``"sentence"`` alone goes to ``context``).

Feature names are stable: ``"<source>:<field>:<feature>"`` for each channel, in channel order, with the
features of :data:`hybrid.core.java.FEATURES` in this order (definitions in ``FeatureExtractor.java``):

==========  ===================================================================================
bm25        sum over distinct query terms of BM25(t, d) x qtf(t): Lucene's scorer, same k1/b as search
ql          Dirichlet query log-likelihood over all query terms (mu, Lucene's collection model)
tfidf       sum of qtf(t) sqrt(tf) idf(t)^2, classic idf, no length norm
matched     distinct query terms found in the field
coverage    matched / distinct query terms
tf          occurrences of query terms in the field
length      field length in tokens (exact)
min_span    smallest window of positions holding every matched term (0: no match)
proximity   matched / min_span (0: no match)
==========  ===================================================================================

Candidates are mention ids (``<passage>#<start>-<end>``, e.g. ``Hit.mention_id``) or passage ids; a
passage id is represented by its mention with the highest summed BM25 over the channels. Unknown ids get
a zero row. Nothing here reads gold labels: query texts come from the query's own mention record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from features.annotate import FIELDS, QUERY_SOURCES, MentionRecord, query_source_text
from hybrid.core.errors import ConfigError
from hybrid.core.java import FEATURES, FeatureBatch, require
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.records import Rankings, Topic
from indexes.lucene import MENTIONS
from indexes.sparse_index import SparseIndex

DEFAULT_CHANNELS = ("mention", "chain:mention", "mention:coref", "chain:coref", "ner", "context", "trigrams",
                    "acronym")


@dataclass(frozen=True)
class Channel:
    """Query source ``source`` scored against index field ``field``."""

    source: str
    field: str

    def __post_init__(self) -> None:
        if self.source not in QUERY_SOURCES:
            raise ConfigError(None, None, f"unknown query source {self.source!r}; sources are {QUERY_SOURCES}")
        if self.field not in FIELDS:
            raise ConfigError(None, None, f"unknown index field {self.field!r}; fields are {FIELDS}")

    @property
    def name(self) -> str:
        return f"{self.source}:{self.field}"


def parse_channels(spec: str | Sequence[str]) -> list[Channel]:
    """``"mention,chain:mention,ner"`` or a list of such items -> channels (``source[:field]``)."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    channels = []
    for part in filter(None, (p.strip() for p in parts)):
        match = re.fullmatch(r"([a-z+]+)(?::([a-z]+))?", part)
        if not match:
            raise ConfigError(None, None, f"bad feature channel {part!r}; expected source[:field]")
        source = match.group(1)
        field = match.group(2) or ("context" if source == "sentence" else source)
        channels.append(Channel(source, field))
    if not channels:
        raise ConfigError(None, None, "no feature channels given")
    if len({c.name for c in channels}) != len(channels):
        raise ConfigError(None, None, f"duplicate feature channels in {spec!r}")
    return channels


def feature_names(channels: Sequence[Channel]) -> list[str]:
    return [f"{c.name}:{f}" for c in channels for f in FEATURES]


class SparseFeatureExtractor:
    """Batch per-field features over a hybrid index's ``mentions/`` (needs the project's jar)."""

    def __init__(self, index: SparseIndex, channels: str | Sequence[str] = DEFAULT_CHANNELS, k1: float = BM25_K1,
                 b: float = BM25_B, mu: float = 1000.0, threads: int = 1):
        self.index, self.channels, self.threads = index, parse_channels(channels), threads
        self.k1, self.b, self.mu = k1, b, mu
        require()

    @cached_property
    def batch(self) -> FeatureBatch:
        """The Java extractor, opened on first use (by the worker thread, when extraction runs in one)."""
        return FeatureBatch.open(self.index.path / MENTIONS, self.k1, self.b, self.mu)

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.channels)

    def _topic_for(self, record: MentionRecord) -> Topic:
        text = self.index.passage_text(record.passage_id) or record.context
        return Topic(qid=record.id, text=text, start=record.start, end=record.end, doc_id=record.doc_id,
                     passage_id=record.passage_id, kind=record.kind, tag=record.tag)

    def query_texts(self, query: Topic | MentionRecord, record: MentionRecord | None = None,
                    channels: Sequence[Channel] | None = None) -> list[str]:
        """The text each channel sends, taken from the query's mention record."""
        if isinstance(query, MentionRecord):
            record, topic = query, self._topic_for(query)
        else:
            topic = query
            record = record or self.index.query_record(topic)
        return [query_source_text(c.source, topic, record) for c in (channels or self.channels)]

    def extract(self, query: Topic | MentionRecord, candidates: Sequence[str],
                channels: str | Sequence[str] | None = None,
                record: MentionRecord | None = None) -> tuple[np.ndarray, list[str]]:
        """Features of one query's candidates: float32 ``[len(candidates), n_features]`` and the names."""
        chans = self.channels if channels is None else parse_channels(channels)
        matrix, _ = self.batch.extract([c.field for c in chans], [self.query_texts(query, record, chans)],
                                       [list(candidates)], self.threads)
        return matrix, feature_names(chans)

    def extract_many(self, queries: Sequence[Topic | MentionRecord], candidates: Sequence[Sequence[str]],
                     records: Sequence[MentionRecord | None] | None = None) -> tuple[list[np.ndarray], list[str]]:
        """Features of many queries in one Java call (parallel over ``threads``): one matrix per query."""
        if len(queries) != len(candidates):
            raise ValueError("one candidate list per query")
        if not queries:
            return [], self.feature_names
        return self.extract_texts(self.texts_many(queries, records), candidates)

    def texts_many(self, queries: Sequence[Topic | MentionRecord],
                   records: Sequence[MentionRecord | None] | None = None) -> list[list[str]]:
        """The first half of :meth:`extract_many` (Python): every query's channel texts."""
        records = records or [None] * len(queries)
        return [self.query_texts(q, r) for q, r in zip(queries, records, strict=True)]

    def extract_texts(self, texts: list[list[str]],
                      candidates: Sequence[Sequence[str]]) -> tuple[list[np.ndarray], list[str]]:
        """The second half of :meth:`extract_many` (Java): features of the queries with these channel texts."""
        matrix, _ = self.batch.extract([c.field for c in self.channels], texts, [list(c) for c in candidates],
                                       self.threads)
        splits = np.cumsum([len(c) for c in candidates])[:-1]
        return np.split(matrix, splits), self.feature_names

    def extract_run(self, topics: Sequence[Topic], run: Rankings) -> tuple[dict[str, np.ndarray], list[str]]:
        """Features for every hit of a run (rows in hit order); a hit's mention id is used when it has one."""
        present = [t for t in topics if t.qid in run]
        candidates = [[h.mention_id or h.docid for h in run[t.qid]] for t in present]
        matrices, names = self.extract_many(present, candidates)
        return {t.qid: m for t, m in zip(present, matrices, strict=True)}, names
