"""Per-pair BM25 through Lucene's ``IndexSearcher.explain`` over pyjnius: the slow reference path.

The batch feature extractor (:class:`hybrid.core.java.FeatureBatch`) must agree with this to 1e-4, and its
speed is reported against it; both the test of that agreement and ``benchmarks/java_features.py`` use
this one implementation so they measure the same thing. One JNI round trip per (query, document) pair
is exactly the cost the Java extension removes - do not use this on a hot path.
"""

from __future__ import annotations

from pathlib import Path

from hybrid.core.anserini import Analyzer
from hybrid.core.params import BM25_B, BM25_K1


class LuceneExplainer:
    """BM25 of one (query text, field, Lucene document) by ``explain``, with the index's own analyzer.

    The query is the analysed text as a boolean OR of term queries, a repeated term boosted by its count:
    the same query the batch extractor scores.
    """

    def __init__(self, mentions_dir: str | Path, k1: float = BM25_K1, b: float = BM25_B):
        from jnius import autoclass, cast

        path = autoclass("java.io.File")(str(mentions_dir)).toPath()
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
            autoclass("org.apache.lucene.store.FSDirectory").open(path))
        self.searcher = autoclass("org.apache.lucene.search.IndexSearcher")(
            cast("org.apache.lucene.index.IndexReader", reader))
        self.searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(k1, b))
        self._term = autoclass("org.apache.lucene.index.Term")
        self._term_query = autoclass("org.apache.lucene.search.TermQuery")
        self._boost_query = autoclass("org.apache.lucene.search.BoostQuery")
        self._builder = autoclass("org.apache.lucene.search.BooleanQuery$Builder")
        self._should = autoclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
        self._cast = cast
        self.analyzer = Analyzer()

    def doc(self, mention_id: str) -> int:
        """Lucene document number of a mention id (-1 when absent)."""
        found = self.searcher.search(self._term_query(self._term("id", mention_id)), 1).scoreDocs
        return found[0].doc if len(found) else -1

    def query(self, field: str, text: str):
        """The analysed query on ``field`` (``None`` when the text has no terms)."""
        tokens = list(self.analyzer.analyze(text)) if text.strip() else []
        if not tokens:
            return None
        builder = self._builder()
        for token in dict.fromkeys(tokens):
            builder.add(self._boost_query(self._term_query(self._term(field, token)), float(tokens.count(token))),
                        self._should)
        return self._cast("org.apache.lucene.search.Query", builder.build())  # picks explain(Query, int)

    def bm25(self, query, doc: int) -> float:
        """Score of a built query on one document (0 for no query or a missing document)."""
        return self.searcher.explain(query, doc).getValue().floatValue() if query is not None and doc >= 0 else 0.0

    def field_bm25(self, field: str, text: str, mention_id: str) -> float:
        """One-shot: BM25 of ``text`` on ``field`` of the mention ``mention_id``."""
        return self.bm25(self.query(field, text), self.doc(mention_id))
