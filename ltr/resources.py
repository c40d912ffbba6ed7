"""Index-backed access for pair features: passage/document views, query contexts, Lucene term statistics.

Views are cached (bounded LRU), so a passage that is a candidate for many queries has its
derived data (token sets, arguments, TF-IDF vectors) computed once per process.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from features.annotate import MentionRecord
from features.pairs.base import QueryContext
from features.pairs.views import DocumentView, PassageView, RecordView, TermStats
from hybrid.core.anserini import Analyzer, IndexStats
from hybrid.core.records import Hit, Topic
from indexes.lucene import PASSAGES
from indexes.sparse_index import SparseIndex

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A small bounded cache (views hold memoised data; an unbounded dict would grow with the corpus)."""

    def __init__(self, size: int):
        self.size = size
        self.data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, compute: Callable[[], V]) -> V:
        try:
            self.data.move_to_end(key)
            return self.data[key]
        except KeyError:
            value = self.data[key] = compute()
            if len(self.data) > self.size:
                self.data.popitem(last=False)
            return value


class LuceneTermStats:
    """Anserini's default English analyzer and BM25 IDF from the passage index's document frequencies."""

    def __init__(self, index: SparseIndex, cache_size: int = 200_000):
        self.reader = IndexStats(index.path / PASSAGES)
        self.n_docs = self.reader.documents()
        self.analyzer = Analyzer()
        self._idf: dict[str, float] = {}
        self._analyzed: LRU[str, list[str]] = LRU(cache_size)

    def analyze(self, text: str) -> list[str]:
        if not text.strip():
            return []
        return self._analyzed.get(text, lambda: list(self.analyzer.analyze(text)))

    def idf(self, term: str) -> float:
        try:
            return self._idf[term]
        except KeyError:
            df = self.reader.document_frequency(term)
            value = self._idf[term] = math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))
            return value


class IndexResources:
    """Views of an index's passages and documents, and the contexts of queries against it."""

    def __init__(self, index: SparseIndex, stats: TermStats | None = None, cache_passages: int = 100_000,
                 cache_documents: int = 20_000):
        self.index = index
        self.stats = stats if stats is not None else LuceneTermStats(index)
        self._passages: LRU[str, PassageView | None] = LRU(cache_passages)
        self._documents: LRU[str, DocumentView] = LRU(cache_documents)

    def passage(self, passage_id: str) -> PassageView | None:
        return self._passages.get(passage_id, lambda: self._load_passage(passage_id))

    def _load_passage(self, passage_id: str) -> PassageView | None:
        return self._view(self.index.passage_json(passage_id))

    @staticmethod
    def _view(found: dict | None) -> PassageView | None:
        """The view of a passage's stored JSON (None for none)."""
        if found is None:
            return None
        records = [RecordView(MentionRecord.from_json(m)) for m in found["mentions"]]
        view = PassageView(found["id"], found["doc_id"], found["contents"], records)
        view.memo["sent_id"] = found.get("sent_id")
        return view

    def document(self, doc_id: str) -> DocumentView:
        return self._documents.get(doc_id, lambda: self._load_document(doc_id))

    def _load_document(self, doc_id: str) -> DocumentView:
        # Each passage's JSON comes with the document's search; a passage already viewed keeps its view.
        views = (self._passages.get(pid, lambda found=found: self._view(found))
                 for pid, found in self.index.document_passages(doc_id))
        passages = [p for p in views if p]
        passages.sort(key=lambda p: (p.memo.get("sent_id") is None, p.memo.get("sent_id") or 0, p.id))
        return DocumentView(doc_id, passages)

    def query_context(self, topic: Topic, hits: list[Hit]) -> QueryContext:
        """The query's record (indexed when the query points into the corpus), passage and document."""
        record = self.index.query_record(topic)
        view: RecordView | None = None
        passage = None
        if not record.passage_id.startswith("query:"):
            passage = self.passage(record.passage_id)
            if passage is not None:
                view = next((r for r in passage.records if r.record.start == record.start
                             and r.record.end == record.end), None)
        if view is None:
            view = RecordView(record)
        doc_id = topic.doc_id or (None if record.doc_id.startswith("query:") else record.doc_id)
        if doc_id:
            doc = self.document(doc_id)
            if not doc.passages and passage is not None:
                doc = DocumentView(doc_id, [passage])
        else:
            own = passage or PassageView(f"query:{topic.qid}", f"query:{topic.qid}", topic.text, [view])
            doc = DocumentView(own.doc_id, [own])
        if topic.kind and not view.record.kind:
            view.record.kind = topic.kind
        return QueryContext(topic=topic, record=view, passage=passage, doc=doc, hits=hits, stats=self.stats)
