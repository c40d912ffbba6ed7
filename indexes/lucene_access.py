"""Lucene classes driven through pyjnius for the retrievers: query building, an exact BM25 searcher,
stored documents. Outside the JVM bridge (:mod:`hybrid.core.jvm`, :mod:`hybrid.core.anserini`,
:mod:`hybrid.core.java`) this package is the only place that touches Lucene classes; retrievers call these
functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from hybrid.core.anserini import Analyzer, java_class


class LuceneQueries:
    """Thin pyjnius layer: analysis and query building with Anserini's default English analyzer."""

    def __init__(self) -> None:
        from jnius import autoclass

        self.analyzer = Analyzer()
        self.Term = autoclass("org.apache.lucene.index.Term")
        self.TermQuery = autoclass("org.apache.lucene.search.TermQuery")
        self.BoostQuery = autoclass("org.apache.lucene.search.BoostQuery")
        self.Builder = autoclass("org.apache.lucene.search.BooleanQuery$Builder")
        occur = autoclass("org.apache.lucene.search.BooleanClause$Occur")
        self.SHOULD, self.FILTER, self.MUST_NOT = occur.SHOULD, occur.FILTER, occur.MUST_NOT

    def analyze(self, text: str) -> list[str]:
        return list(self.analyzer.analyze(text)) if text.strip() else []

    def term(self, field: str, token: str):
        return self.TermQuery(self.Term(field, token))

    def analyzed_term(self, field: str, token: str):
        """A term query for a token as the index stored it (e.g. ``kind_event`` is stemmed)."""
        (analyzed,) = self.analyze(token)
        return self.term(field, analyzed)


def exact_bm25_searcher(directory: str | Path, k1: float, b: float):
    """A plain Lucene ``IndexSearcher`` on ``directory`` with BM25(k1, b).

    Not pyserini's ``search``: Anserini rounds its scores to 1e-4 and nudges ties apart by 1e-6
    (ScoreTiesAdjusterReranker), which reorders near-ties.
    """
    from jnius import autoclass, cast

    path = autoclass("java.io.File")(str(directory)).toPath()
    reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
        autoclass("org.apache.lucene.store.FSDirectory").open(path))
    # The cast picks the IndexSearcher(IndexReader) constructor; pyjnius would try IndexReaderContext.
    searcher = autoclass("org.apache.lucene.search.IndexSearcher")(cast("org.apache.lucene.index.IndexReader", reader))
    searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(k1, b))
    return searcher


def term_documents(searcher, field: str, token: str, stored: tuple[str, ...], limit: int) -> list[tuple] | None:
    """The ``stored`` fields of every document holding ``token`` in ``field`` (a plain Lucene ``IndexSearcher``,
    e.g. :func:`exact_bm25_searcher`), in no particular order; None when more than ``limit`` documents hold it.
    One search and one stored-fields read per document: no second lookup of each document by its id."""
    from jnius import autoclass

    query = autoclass("org.apache.lucene.search.TermQuery")(autoclass("org.apache.lucene.index.Term")(field, token))
    found = searcher.search(query, limit + 1).scoreDocs
    if len(found) > limit:
        return None
    fields = searcher.storedFields()
    out = []
    for hit in found:
        document = fields.document(hit.doc)
        out.append(tuple(document.get(name) for name in stored))
    return out


def stored_raw(directory: str | Path) -> Iterator[str]:
    """The stored ``raw`` JSON text of every live document of the Lucene index at ``directory``, in Lucene order
    (undecoded: a caller that needs a few keys of each record need not decode all of it)."""
    from jnius import autoclass

    path = autoclass("java.io.File")(str(directory)).toPath()
    reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
        autoclass("org.apache.lucene.store.FSDirectory").open(path))
    try:
        stored = reader.storedFields()
        live = autoclass("org.apache.lucene.index.MultiBits").getLiveDocs(reader)
        for n in range(reader.maxDoc()):
            if live is not None and not live.get(n):
                continue
            raw = stored.document(n).get("raw")
            if raw:
                yield raw
    finally:
        reader.close()


def stored_raw_json(directory: str | Path) -> Iterator[dict]:
    """The stored ``raw`` JSON of every live document of the Lucene index at ``directory``, in Lucene order."""
    for raw in stored_raw(directory):
        yield json.loads(raw)


def stored_prefixes(directory: str | Path, field: str, cut: str) -> list[tuple[int, str, bool]] | None:
    """``(document number, text, cut)`` of every live document of the Lucene index at ``directory`` whose stored
    ``field`` is non-empty, in Lucene order (the documents :func:`stored_raw` yields): the text before the first
    match of ``cut`` (a Java regular expression; ``cut`` True), or the whole text when nothing matches. Read and cut
    by the project jar's ``StoredText`` in one call, so only the part before the cut crosses into Python; None
    when the running JVM lacks it (no project jar, or one built before it)."""
    try:
        reader = java_class("io.hybrid.lucene.StoredText")
    except Exception:  # noqa: BLE001 - jnius raises JavaException / generic errors: no such class
        return None
    found = reader.prefixes(str(directory), field, cut)
    return list(zip(found.docs, found.texts, found.cut, strict=True))


def passage_span_reader(directory: str | Path):
    """The project jar's ``PassageSpans`` on the Lucene index at ``directory`` (a hybrid index's ``passages/``):
    ``read(lo, hi)`` a chunk of its documents as id, document id, text and deduplicated mention spans,
    parsed from the stored JSON on the Java side; ``close()``. None when the running JVM lacks the class (no project
    jar, or one built before it)."""
    try:
        reader = java_class("io.hybrid.lucene.PassageSpans")
    except Exception:  # noqa: BLE001 - jnius raises JavaException / generic errors: no such class
        return None
    return reader(str(directory))


def stored_texts(directory: str | Path, field: str, docs: list[int]) -> list[str]:
    """The whole stored ``field`` of documents ``docs`` (numbers from :func:`stored_prefixes`), through the same
    class."""
    return list(java_class("io.hybrid.lucene.StoredText").texts(str(directory), field, list(docs))) if docs else []
