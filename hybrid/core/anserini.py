"""Anserini's searcher, index reader and analyzer, reached through pyjnius without importing pyserini.

Pyserini's Python wrappers are thin (an ``autoclass`` of Anserini's Java class and a few lines each), but
importing any of them runs its package's ``__init__``: ``pyserini.search.lucene`` imports the impact and
dense searchers, hence ``pyserini.encode``, transformers and torch (~5.5 s of a BM25 run's start), and
``pyserini.index.lucene`` reads its prebuilt-index tables. So the project drives the same Java classes
itself, with the same calls pyserini makes for the arguments the project passes:

* :class:`LuceneSearcher` - ``io.anserini.search.SimpleSearcher`` as pyserini's ``LuceneSearcher`` uses it:
  ``search``, ``batch_search`` (same threads), ``set_bm25``, ``doc``, ``num_docs``, ``object``;
* :func:`english_analyzer` / :class:`Analyzer` - pyserini's ``get_lucene_analyzer()`` (Anserini's default
  English analyzer: Porter stemming, stop words) and ``Analyzer.analyze``;
* :class:`IndexStats` - the two numbers :class:`ltr.resources.LuceneTermStats` read through pyserini's
  ``LuceneIndexReader``: the document count and a term's document frequency (the term not analysed).

Pyserini itself stays the source of the Anserini jar (:func:`hybrid.core.jvm.anserini_jar`) and of its own
command-line tools (``python -m hybrid.pyserini``). Everything here starts the JVM first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hybrid.core.jvm import start_jvm

SEARCHER_CLASS = "io.anserini.search.SimpleSearcher"
#: The project jar's searcher that answers ids and scores only (see LuceneSearcher.batch_search).
IDS_SEARCHER_CLASS = "io.hybrid.lucene.GlobalStatsSearcher"


@cache
def java_class(name: str):
    start_jvm()
    from jnius import autoclass

    return autoclass(name)


def english_analyzer():
    """A new Anserini default English analyzer (Porter stemmer, stop words): pyserini's ``get_lucene_analyzer()``,
    the analyzer the index was built with."""
    return java_class("io.anserini.analysis.DefaultEnglishAnalyzer").newStemmingInstance("porter")


def verbatim_analyzer():
    """Anserini's English analyzer without stemming or stop words: what pyserini's
    ``LuceneIndexReader.get_term_counts(term, analyzer=None)`` looks a term up with (it keeps an indexed term)."""
    return java_class("io.anserini.analysis.DefaultEnglishAnalyzer").newNonStemmingInstance(
        java_class("org.apache.lucene.analysis.CharArraySet").EMPTY_SET)


class Analyzer:
    """pyserini's ``Analyzer``: the tokens a Java analyzer makes of a text (``AnalyzerUtils.analyze``)."""

    def __init__(self, analyzer=None):
        self.analyzer = english_analyzer() if analyzer is None else analyzer
        self._utils = java_class("io.anserini.analysis.AnalyzerUtils")

    def analyze(self, text: str) -> list[str]:
        return list(self._utils.analyze(self.analyzer, text).toArray())


class Document:
    """A stored Lucene document, read as pyserini's ``Document`` reads it."""

    __slots__ = ("object",)

    def __init__(self, document):
        self.object = document

    def lucene_document(self):
        return self.object

    def docid(self) -> str:
        return self.object.getField("id").stringValue()

    def raw(self) -> str | None:
        return self.object.get("raw")

    def contents(self) -> str | None:
        return self.object.get("contents")


class ScoredId(NamedTuple):
    """A hit of :meth:`LuceneSearcher.batch_search`: what the project reads of Anserini's ``ScoredDoc``."""

    docid: str
    score: float


def ids_searcher_class():
    """The project jar's ``GlobalStatsSearcher`` when the running JVM has it (with ``searchShards``), else None."""
    try:
        found = java_class(IDS_SEARCHER_CLASS)
    except Exception:  # noqa: BLE001 - jnius raises JavaException / generic errors: no project jar
        return None
    methods = {m.getName() for m in java_class("java.lang.Class").forName(IDS_SEARCHER_CLASS).getMethods()}
    return found if {"searchShards", "topHits", "open"} <= methods else None


class LuceneSearcher:
    """Anserini's ``SimpleSearcher`` on one Lucene index, called as pyserini's ``LuceneSearcher`` calls it (no
    query generator, fields, RM3 or duplicate removal: the project uses none; pyserini's extra index reader,
    opened only to validate prebuilt indexes, is not opened)."""

    def __init__(self, index_dir: str | Path):
        self.index_dir = str(index_dir)
        self.object = java_class(SEARCHER_CLASS)(self.index_dir)
        self.num_docs = self.object.get_total_num_docs()
        self._ids = None  # the ids-only searcher of batch_search, opened on first use (False: none)

    def search(self, q, k: int = 10) -> list:
        """Top ``k`` hits (Anserini ``ScoredDoc``: ``docid``, ``score``, ...) of a query string or a Java ``Query``."""
        return list(self.object.search(q, k))

    def batch_search(self, queries: list[str], qids: list[str], k: int = 10, threads: int = 1
                     ) -> dict[str, list[ScoredId]]:
        """Top ``k`` hits (:class:`ScoredId`) of every query string, by query id, on ``threads`` Java threads.

        The hits and scores of ``SimpleSearcher.batch_search``: each query is its searcher's bag of words over
        ``contents`` with its analyzer and similarity, sorted by (score desc, id asc), and Anserini's tie
        adjustment is applied (:func:`anserini_tie_adjust`). But Anserini loads every hit's stored document
        (a passage's whole JSON), of which the project reads the id only: with the project jar, its
        ``GlobalStatsSearcher`` (on its own statistics, i.e. a plain Lucene searcher) reads the id field only.
        Without the jar, or when that search raises a Java exception, it is ``SimpleSearcher.batch_search``.
        """
        if not queries:
            return {}
        if self._ids is None:
            found = ids_searcher_class()
            self._ids = found.open(self.index_dir) if found is not None else False
        if self._ids:
            from jnius import JavaException  # deferred: jnius is imported once the JVM runs (hybrid.core.jvm)

            try:
                return self._batch_ids(queries, qids, k, threads)
            except JavaException:  # e.g. too many clauses: Anserini's own call decides (a Python error is raised)
                pass
        array_list = java_class("java.util.ArrayList")
        query_strings, qid_strings = array_list(), array_list()
        for query in queries:
            query_strings.add(query)
        for qid in qids:
            qid_strings.add(qid)
        results = self.object.batch_search(query_strings, qid_strings, int(k), int(threads))
        return {r.getKey(): [ScoredId(h.docid, h.score) for h in r.getValue()] for r in results.entrySet().toArray()}

    def _batch_ids(self, queries: list[str], qids: list[str], k: int, threads: int) -> dict[str, list[ScoredId]]:
        searcher = self._ids
        searcher.setSimilarity(self.object.get_similarity())
        generator = java_class("io.anserini.search.query.BagOfWordsQueryGenerator")()
        analyzer = self.object.get_analyzer()
        built = [generator.buildQuery("contents", analyzer, query) for query in queries]
        tops = java_class(IDS_SEARCHER_CLASS).searchShards([searcher], built, int(k), int(threads), False)
        out = {}
        for qid, top in zip(qids, tops, strict=True):
            out[qid] = [ScoredId(docid, score) for docid, score in zip(top.ids, anserini_tie_adjust(top.scores),
                                                                         strict=True)]
        return out

    def set_bm25(self, k1: float = 0.9, b: float = 0.4) -> None:
        self.object.set_bm25(float(k1), float(b))

    def doc(self, docid: str | int) -> Document | None:
        """The stored document of a collection id (``str``) or a Lucene document number (``int``), or None."""
        found = self.object.doc(docid)
        return None if found is None else Document(found)

    def close(self) -> None:
        self.object.close()
        if self._ids:
            self._ids.close()


class IndexStats:
    """Collection statistics of one Lucene index through Anserini's ``IndexReaderUtils`` (as pyserini's
    ``LuceneIndexReader`` reads them)."""

    def __init__(self, index_dir: str | Path):
        self.utils = java_class("io.anserini.index.IndexReaderUtils")
        self.reader = self.utils.getReader(str(index_dir))
        self._verbatim = verbatim_analyzer()

    def documents(self) -> int:
        """``LuceneIndexReader.stats()["documents"]``."""
        return int(self.utils.getIndexStats(self.reader).get("documents"))

    def document_frequency(self, term: str) -> int:
        """How many documents hold ``term`` as indexed (``get_term_counts(term, analyzer=None)[0]``)."""
        return self.utils.getTermCountsWithAnalyzer(self.reader, term, self._verbatim).get("docFreq")


# -- Anserini's tie adjustment, bit for bit -------------------------------------------------------------------

_TIE = np.float32(1e-4)
_NUDGE = np.float32(1e-6)


def _java_round(x: float) -> int:
    """``Math.round(double)``: the closest integer, ties toward positive infinity (exact, unlike floor(x+0.5))."""
    floor = math.floor(x)
    return int(floor) + (1 if x - floor >= 0.5 else 0)


def anserini_tie_adjust(scores: Sequence[float]) -> list[float]:
    """Anserini's ``ScoreTiesAdjusterReranker`` in float32 arithmetic: round each score to 4 decimals, and
    lower the n-th of a run of scores within 1e-4 of its predecessor by n * 1e-6 (so ties stay ordered)."""
    out: list[np.float32] = []
    dup = 0
    for i, score in enumerate(scores):
        value = np.float32(_java_round(float(score) * 10000.0) / 10000.0)
        if i == 0 or np.float32(out[i - 1] - value) > _TIE:
            dup = 0
        else:
            dup += 1
            value = np.float32(value - np.float32(_NUDGE * np.float32(dup)))
        out.append(value)
    return [float(v) for v in out]
