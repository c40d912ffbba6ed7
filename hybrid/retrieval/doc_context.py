"""Recall safety net and document context for mention-level first stages.

On a collection nobody annotated, a mention-level retriever (multifield, BM25F, dense over detected
candidates) cannot reach a passage whose coreferring mention the detector missed. Two raw-text
signals close that gap without any annotation:

* **passage level** (the safety net): plain Pyserini BM25 of the query sentence over ``passages/``
  is fused with the mention-level run (CombSUM over min-max scores), so every passage BM25 finds
  stays reachable;
* **document context**: a coreferring mention usually sits in a document about the same story, so
  each candidate gets ``doc_weight * cos(query document, candidate document)`` (TF-IDF over whole
  documents, sub-linear tf, English stop words), and the passages of the ``expand_docs`` documents
  most similar to the query's document join the candidates. The query's document is its own
  document in the index when known (query by example), else the query text alone.

The final score of a candidate passage is
``(1 - passage_weight) * mm(mention run) + passage_weight * mm(passage BM25) + doc_weight * cos``,
ties broken by passage id; a passage keeps the mention span the mention-level run matched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from hybrid.core.errors import ConfigError
from hybrid.core.gcpause import paused_collector
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.ranking import top_k
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import Retriever
from hybrid.retrieval.sparse import PassageBM25
from indexes.lucene import PASSAGES
from indexes.lucene_access import stored_prefixes, stored_raw, stored_raw_json, stored_texts
from indexes.sharded_index import ShardedIndex

#: Defaults of the safety net (chosen on ECB+ dev, raw corpus, as round values; see docs/history/benchmarks-2026-11.md).
PASSAGE_WEIGHT = 0.5
DOC_WEIGHT = 1.0
EXPAND_DOCS = 10
DEPTH = 200


def passage_dirs(index) -> list[Path]:
    """The ``passages/`` Lucene directories of an index: one, or one per shard of a sharded index."""

    if isinstance(index, ShardedIndex):
        return [index.path / shard["name"] / PASSAGES for shard in index.metadata["shards"]]
    return [index.path / PASSAGES]


def stored_passages(index) -> Iterator[dict]:
    """Every stored passage of a hybrid index (its raw JSON), shard by shard, in Lucene order."""
    for directory in passage_dirs(index):
        yield from stored_raw_json(directory)


#: The keys of a stored passage that document vectors read; the indexer writes them before its ``mentions``.
HEAD_KEYS = ("id", "doc_id", "sent_id", "contents")
#: A top-level ``mentions`` key as Anserini stores the raw JSON (pretty-printed: ``,\n  "mentions" : [``) or compact.
_MENTIONS_KEY = re.compile(r',\s*"mentions"\s*:')


def passage_head(raw: str) -> dict:
    """A stored passage's JSON without decoding its ``mentions`` list (~95% of the text, and of the objects a
    whole decode makes) when :data:`HEAD_KEYS` all come before it: the keys before it, with exactly the values a
    whole decode gives them. Otherwise (another key order, no mentions) the whole record.

    The cut is exact: cut inside a string, the text before it closed by ``}`` ends in an unterminated string, and
    cut inside a nested value, its brackets do not balance; either way it fails to decode and the whole record is
    decoded instead. It decodes only when the cut falls between two members of the top-level object.
    """
    found = _MENTIONS_KEY.search(raw)
    if found is not None:
        head = _head(raw[: found.start()])
        if head is not None:
            return head
    return json.loads(raw)


def _head(before: str) -> dict | None:
    """The object of a stored passage's text before its ``mentions`` key, when it decodes to one with
    :data:`HEAD_KEYS` (see :func:`passage_head`); else None."""
    try:
        head = json.loads(before + "}")
    except ValueError:
        return None
    return head if isinstance(head, dict) and all(key in head for key in HEAD_KEYS) else None


#: :data:`_MENTIONS_KEY` for Java's regular expressions: Python's ``\s`` (str patterns) is exactly the characters
#: of ``str.isspace``, Java's is ASCII only, so the class is spelled out (tests/hybrid/test_doc_context.py).
_JAVA_SPACE = r"[\t\n\u000B\f\r\u001C-\u001F \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
JAVA_MENTIONS_KEY = f',{_JAVA_SPACE}*"mentions"{_JAVA_SPACE}*:'


def stored_passage_heads(index) -> Iterator[dict]:
    """:func:`stored_passages` with at least :data:`HEAD_KEYS` of each passage: :func:`passage_head` of each."""
    for directory in passage_dirs(index):
        yield from directory_heads(directory)


def directory_heads(directory: Path, cut: str = JAVA_MENTIONS_KEY) -> Iterator[dict]:
    """:func:`passage_head` of every stored passage of one ``passages/`` directory, in Lucene order.

    With the project jar each passage's text is cut before the first match of ``cut`` on the Java side
    (:func:`~indexes.lucene_access.stored_prefixes`; :data:`JAVA_MENTIONS_KEY`: where passage_head cuts), so only
    the ~5% before it crosses into Python (170 MB for ECB+'s raw passages, ~0.4 s); a passage whose cut does not
    decode to a head is read whole and decoded whole, as passage_head does.
    """
    cut_texts = stored_prefixes(directory, "raw", cut)
    if cut_texts is None:
        yield from map(passage_head, stored_raw(directory))
        return
    heads = [_head(text) if was_cut else None for _, text, was_cut in cut_texts]
    whole = iter(stored_texts(directory, "raw", [doc for (doc, _, was_cut), head in zip(cut_texts, heads, strict=True)
                                                 if was_cut and head is None]))
    for (_, text, was_cut), head in zip(cut_texts, heads, strict=True):
        yield head if head is not None else json.loads(next(whole) if was_cut else text)


@dataclass
class DocumentVectors:
    """L2-normalised TF-IDF vectors of the index's documents (all passages of a document joined)."""

    doc_ids: list[str]
    matrix: object  # scipy.sparse.csr_matrix, one row per document
    vectorizer: object  # the fitted sklearn TfidfVectorizer
    passages_of: dict[str, list[str]]

    @classmethod
    def from_passages(cls, passages: list[dict]) -> DocumentVectors:
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts: dict[str, list[tuple[int, str, str]]] = {}
        for n, p in enumerate(passages):
            sent = p.get("sent_id")
            texts.setdefault(p["doc_id"], []).append((sent if sent is not None else n, p["id"], p["contents"]))
        doc_ids = sorted(texts)
        for parts in texts.values():
            parts.sort()
        vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english", dtype=np.float32)
        matrix = vectorizer.fit_transform([" ".join(t for _, _, t in texts[d]) for d in doc_ids]).tocsr()
        return cls(doc_ids, matrix, vectorizer, {d: [pid for _, pid, _ in texts[d]] for d in doc_ids})

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    def query_vector(self, doc_id: str | None, text: str):
        """The query document's row when it is indexed, else the vector of ``text``."""
        if doc_id is not None and doc_id in self.row_of:
            return self.matrix[self.row_of[doc_id]]
        return self.vectorizer.transform([text])

    def similarities(self, query_vector) -> np.ndarray:
        """Cosine similarity of the query vector with every document (rows are unit length)."""
        return np.asarray((self.matrix @ query_vector.T).todense()).ravel()

    def similarities_many(self, queries: list[tuple[str | None, str]]) -> np.ndarray:
        """:meth:`similarities` of many ``(doc_id, text)`` queries at once: ``[len(queries), documents]``.

        One sparse product for the batch instead of one per query (and one ``transform`` for the texts whose
        document is not indexed). Each entry is summed exactly as in :meth:`similarities` (over the document
        row's terms, in the same order), so the values are the same bit for bit.
        """
        from scipy.sparse import vstack

        if not queries:
            return np.zeros((0, len(self.doc_ids)), dtype=np.float32)
        texts = [i for i, (doc_id, _) in enumerate(queries) if doc_id is None or doc_id not in self.row_of]
        transformed = self.vectorizer.transform([queries[i][1] for i in texts]) if texts else None
        where = {i: n for n, i in enumerate(texts)}
        parts = [transformed[where[i]] if i in where else self.matrix[self.row_of[doc_id]]
                 for i, (doc_id, _) in enumerate(queries)]
        stacked = vstack(parts, format="csr").astype(self.matrix.dtype)
        return np.asarray((self.matrix @ stacked.T).todense()).T


_VECTORS: dict[str, DocumentVectors] = {}


def document_vectors(index) -> DocumentVectors:
    """The document vectors of an index, computed once per process (a pass over the stored passages;
    a sharded index gives the same vectors as the single index of the same corpus)."""
    key = str(index.path.resolve())
    if key not in _VECTORS:
        _VECTORS[key] = DocumentVectors.from_passages(list(stored_passage_heads(index)))
    return _VECTORS[key]


def _minmax(hits: list[Hit]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [h.score for h in hits]
    lo, hi = min(scores), max(scores)
    return {h.docid: (h.score - lo) / (hi - lo) if hi > lo else 1.0 for h in hits}


class SafetyNet(Retriever):
    """A mention-level retriever made safe for raw text: passage-level BM25 + document context (module docs)."""

    def __init__(self, base: Retriever, index, passage_weight: float = PASSAGE_WEIGHT,
                 doc_weight: float = DOC_WEIGHT, expand_docs: int = EXPAND_DOCS, depth: int = DEPTH,
                 k: int = 100, k1: float = BM25_K1, b: float = BM25_B, threads: int = 1, passage_retriever=None):
        if not 0 <= passage_weight <= 1:
            raise ConfigError(None, None, f"passage weight must be in [0, 1], got {passage_weight}")
        if doc_weight < 0 or expand_docs < 0 or depth < 1:
            raise ConfigError(None, None, "doc weight and expand docs must be >= 0 and depth >= 1")
        self.base, self.index = base, index
        self.passage_weight, self.doc_weight, self.expand_docs = passage_weight, doc_weight, expand_docs
        self.depth, self.k = depth, k
        self.passage_retriever = passage_retriever
        if self.passage_retriever is None and passage_weight > 0:
            from hybrid.scale.sharded_search import shard_retriever  # deferred: it imports hybrid.retrieval

            self.passage_retriever = shard_retriever(
                PassageBM25(index, "sentence", k1=k1, b=b, threads=threads, k=depth), index)
        self.name = f"{base.name}+net"

    @property
    def component_runs(self) -> dict[str, Rankings]:
        """The component runs of a fused base (so a CLI can still write them)."""
        return getattr(self.base, "component_runs", {})

    def search(self, topics: list[Topic], k: int) -> Rankings:
        # the first stage of every raw-text recipe builds long-lived acyclic objects (hits, decoded passage heads):
        # full cyclic collections over them found nothing and cost ~1 s of dense-net's ~9 s on 300 ECB+ dev queries
        with paused_collector():
            return self._search(topics, k)

    def _search(self, topics: list[Topic], k: int) -> Rankings:
        depth = max(self.depth, k)
        mention_run = self.base.search(topics, depth)
        passage_run = self.passage_retriever.search(topics, depth) if self.passage_weight > 0 else {}
        vectors = document_vectors(self.index) if self.doc_weight > 0 or self.expand_docs > 0 else None
        owns = [self.index.exclude_doc(t) for t in topics]
        sims = vectors.similarities_many([(own, t.text) for own, t in zip(owns, topics, strict=True)]) \
            if vectors is not None else None
        return {t.qid: self._combine(t, mention_run.get(t.qid, []), passage_run.get(t.qid, []), vectors, k,
                                     owns[i], sims[i] if sims is not None else None)
                for i, t in enumerate(topics)}

    def _combine(self, topic: Topic, mention_hits: list[Hit], passage_hits: list[Hit],
                 vectors: DocumentVectors | None, k: int, own: str | None = None,
                 sims: np.ndarray | None = None) -> list[Hit]:
        pw = self.passage_weight
        mention, passage = _minmax(mention_hits), _minmax(passage_hits)
        spans = {h.docid: h for h in mention_hits}
        candidates = set(mention) | set(passage)
        doc_score = None
        if vectors is not None:
            if sims is None:
                own = self.index.exclude_doc(topic)
                sims = vectors.similarities(vectors.query_vector(own, topic.text))
            sims = np.array(sims, dtype=np.float64)  # a copy (the own document is set to -inf below), exact
            if own in vectors.row_of:
                sims[vectors.row_of[own]] = -np.inf  # the query's own document is never a candidate
            if self.expand_docs:
                order = np.lexsort((np.arange(len(sims)), -sims))[: self.expand_docs]
                for row in order:
                    if np.isfinite(sims[row]) and sims[row] > 0:
                        candidates.update(vectors.passages_of[vectors.doc_ids[row]])
        pids = sorted(candidates)
        if vectors is not None:
            passage_row = self._passage_row
            rows = np.fromiter((passage_row.get(pid, -1) for pid in pids), dtype=np.int64, count=len(pids))
            doc_score = np.where(rows >= 0, sims[rows], 0.0)  # a passage of no known document scores 0
            doc_score[~np.isfinite(doc_score)] = 0.0
        scores = (1 - pw) * np.fromiter((mention.get(pid, 0.0) for pid in pids), dtype=np.float64, count=len(pids))
        scores += pw * np.fromiter((passage.get(pid, 0.0) for pid in pids), dtype=np.float64, count=len(pids))
        scores += self.doc_weight * (doc_score if doc_score is not None else np.zeros(len(pids)))
        top = top_k(scores, pids.__getitem__, k)
        hits = []
        for i, score in zip(top, scores[top].tolist(), strict=True):
            pid = pids[i]
            matched = spans.get(pid)
            hits.append(Hit(docid=pid, score=score, mention_start=matched.mention_start if matched else None,
                            mention_end=matched.mention_end if matched else None,
                            mention_text=matched.mention_text if matched else None,
                            mention_id=matched.mention_id if matched else None))
        return hits

    @cached_property
    def _passage_row(self) -> dict[str, int]:
        """Each passage's document row in the document vectors."""
        row_of = document_vectors(self.index).row_of
        return {pid: row_of[doc] for pid, doc in self._passage_doc.items() if doc in row_of}

    @cached_property
    def _passage_doc(self) -> dict[str, str]:
        vectors = document_vectors(self.index)
        return {pid: doc for doc, pids in vectors.passages_of.items() for pid in pids}
