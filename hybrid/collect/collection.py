"""The document collection an event collection is cut from: passages grouped into documents, their
detected entities and concepts, and the document vectors the rankers compare with.

Detection uses the project's raw-text annotation pipeline (:class:`features.annotate.Annotator`'s one
spaCy parse per passage): named entities (people, organisations, places, events, works ...), noun
phrases as *concepts* (a determiner or possessive in front is dropped, pronouns are not concepts), and
the aliases of a knowledge base when one is given. A one-word person name is resolved to the longer
name of the same document that ends with it (``Reid`` -> ``Tara Reid``), the cheap within-document
coreference a reporter's "Reid said" needs.

Document vectors: TF-IDF (sub-linear tf, L2-normalised, English stop words: the "logarithmic,
L2-normalised variant" the paper ranks by cosine) reused from
:class:`hybrid.retrieval.doc_context.DocumentVectors`; BM25 (k1, b) over the same vocabulary; and
MiniLM sentence vectors averaged per document (the PyPI MiniLM stands in for the paper's GloVe).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from features.annotate import AnnotationConfig, Annotator
from hybrid.collect.kb import KnowledgeBase, entity_key
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.lines import iter_lines, parse_json_object
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.progress import progress as progress_bar
from hybrid.retrieval.doc_context import DocumentVectors, stored_passages

log = logging.getLogger(__name__)

#: spaCy entity labels that name things a knowledge base would hold (dates, numbers, money are not entities).
NAMED_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "EVENT", "WORK_OF_ART", "PRODUCT", "LAW"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
CONCEPT = "NP"
_DROP_FRONT = frozenset({"DET", "PRON", "NUM", "PUNCT", "CCONJ"})


@dataclass(frozen=True)
class Occurrence:
    """An entity or concept detected in a passage (character offsets into the passage text)."""

    key: str
    text: str
    label: str
    start: int
    end: int


@dataclass(frozen=True)
class CollectionPassage:
    id: str
    doc_id: str
    text: str


def doc_occurrences(parse) -> list[Occurrence]:
    """Named entities and noun-phrase concepts of one spaCy parse."""
    out: list[Occurrence] = []
    covered: set[int] = set()
    for ent in parse.ents:
        if ent.label_ in NAMED_LABELS and entity_key(ent.text):
            out.append(Occurrence(entity_key(ent.text), ent.text, ent.label_, ent.start_char, ent.end_char))
            covered.update(range(ent.start, ent.end))
    for chunk in getattr(parse, "noun_chunks", ()):
        if chunk.root.pos_ == "PRON" or chunk.root.i in covered:
            continue
        tokens = list(chunk)
        while tokens and (tokens[0].pos_ in _DROP_FRONT or tokens[0].tag_ == "POS" or tokens[0].dep_ == "poss"
                          or tokens[0].is_stop):
            tokens.pop(0)
        tokens = [t for t in tokens if t.i not in covered] if tokens and tokens[0].i in covered else tokens
        if not tokens or all(t.is_stop or not t.is_alpha for t in tokens):
            continue
        start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1])
        text = parse.text[start:end]
        if entity_key(text):
            out.append(Occurrence(entity_key(text), text, CONCEPT, start, end))
    return sorted(out, key=lambda o: (o.start, o.end, o.key))


def resolve_short_names(doc: list[list[Occurrence]]) -> list[list[Occurrence]]:
    """A one-word PERSON key becomes the document's longer PERSON key that ends with it, when unique."""
    longer: dict[str, set[str]] = {}
    for occurrences in doc:
        for o in occurrences:
            if o.label == "PERSON" and " " in o.key:
                longer.setdefault(o.key.rsplit(" ", 1)[1], set()).add(o.key)
    if not longer:
        return doc
    out = []
    for occurrences in doc:
        fixed = []
        for o in occurrences:
            full = longer.get(o.key) if o.label == "PERSON" and " " not in o.key else None
            fixed.append(Occurrence(next(iter(full)), o.text, o.label, o.start, o.end) if full and len(full) == 1
                         else o)
        out.append(fixed)
    return out


class Collection:
    """Passages by document (in reading order), with entity occurrences and document vectors."""

    def __init__(self, passages: Iterable[CollectionPassage]):
        by_doc: dict[str, list[CollectionPassage]] = {}
        for p in passages:
            by_doc.setdefault(p.doc_id, []).append(p)
        if not by_doc:
            raise InputError(None, None, "the collection has no passages")
        self.doc_ids: list[str] = sorted(by_doc)
        self.passages: list[CollectionPassage] = [p for d in self.doc_ids for p in by_doc[d]]
        self.row_of: dict[str, int] = {d: i for i, d in enumerate(self.doc_ids)}
        self.passage_index: dict[str, int] = {p.id: i for i, p in enumerate(self.passages)}
        self.doc_of_passage = np.array([self.row_of[p.doc_id] for p in self.passages], dtype=np.int64)
        self.doc_span: dict[str, tuple[int, int]] = {}
        at = 0
        for d in self.doc_ids:
            self.doc_span[d] = (at, at + len(by_doc[d]))
            at += len(by_doc[d])
        self.entities: list[list[Occurrence]] | None = None
        self._embeddings: np.ndarray | None = None
        self.annotation: dict[str, str] = {}

    # -- construction ---------------------------------------------------------------------------------
    @classmethod
    def from_records(cls, records: Iterable[dict]) -> Collection:
        """From passage dicts with ``id``, ``doc_id`` and ``text`` (or ``contents``, as an index stores them);
        passages of a document keep their ``sent_id`` order when given, else their input order."""
        rows = []
        for n, r in enumerate(records):
            sent = r.get("sent_id")
            rows.append((r["doc_id"], sent if sent is not None else n, n,
                         CollectionPassage(r["id"], r["doc_id"], r.get("text", r.get("contents", "")))))
        rows.sort(key=lambda row: (row[0], row[1], row[2]))
        return cls(row[3] for row in rows)

    @classmethod
    def from_corpus(cls, path: str | Path) -> Collection:
        return cls.from_records({"id": p.id, "doc_id": p.doc_id, "text": p.text, "sent_id": p.sent_id}
                                for p in read_corpus(path))

    @classmethod
    def from_index(cls, index) -> Collection:
        return cls.from_records(stored_passages(index))

    # -- structure ------------------------------------------------------------------------------------
    def passage_rows(self, doc_id: str) -> range:
        lo, hi = self.doc_span[doc_id]
        return range(lo, hi)

    def window(self, row: int, radius: int = 1) -> list[int]:
        """The passage and its ``radius`` neighbours on each side within the same document."""
        lo, hi = self.doc_span[self.passages[row].doc_id]
        return list(range(max(lo, row - radius), min(hi, row + radius + 1)))

    def doc_text(self, doc_id: str) -> str:
        return " ".join(self.passages[i].text for i in self.passage_rows(doc_id))

    # -- entities -------------------------------------------------------------------------------------
    def annotate(self, annotator=None, kb: KnowledgeBase | None = None, progress: bool = True) -> None:
        """Detect entities and concepts in every passage (module docs); ``kb`` adds its aliases."""
        if annotator is None:
            annotator = Annotator(AnnotationConfig())
        texts = [p.text for p in self.passages]
        parses = annotator.parse(texts, n_texts=len(texts))
        found = [doc_occurrences(parse) for parse in progress_bar(parses, total=len(texts), desc="detect entities",
                                                                  unit="passage", enabled=progress)]
        self.set_entities(found, kb)
        self.annotation = {"source": annotator.sources().get("ner", "spacy"), "kb": (kb.path or "") if kb else ""}

    def set_entities(self, found: list[list[Occurrence]], kb: KnowledgeBase | None = None) -> None:
        if len(found) != len(self.passages):
            raise ValueError(f"{len(found)} annotated passages for a collection of {len(self.passages)}")
        out: list[list[Occurrence]] = []
        for doc_id in self.doc_ids:
            rows = self.passage_rows(doc_id)
            out.extend(resolve_short_names([found[i] for i in rows]))
        if kb is not None:
            out = [self._with_kb(self.passages[i].text, occ, kb) for i, occ in enumerate(out)]
        self.entities = out
        self.__dict__.pop("doc_entities", None)
        self.__dict__.pop("entity_df", None)

    @staticmethod
    def _with_kb(text: str, found: list[Occurrence], kb: KnowledgeBase) -> list[Occurrence]:
        """Map detected forms that are KB aliases to their entry, and add alias matches the parse missed."""
        out = [Occurrence(kb.alias_of.get(o.key, o.key), o.text, o.label, o.start, o.end) for o in found]
        spans = {(o.start, o.end) for o in out}
        for match in kb_matcher(kb).finditer(text):
            key = kb.alias_of.get(entity_key(match.group()))
            if key and (match.start(), match.end()) not in spans:
                entry = kb.entries[key]
                out.append(Occurrence(key, match.group(), entry.type or "KB", match.start(), match.end()))
        return sorted(out, key=lambda o: (o.start, o.end, o.key))

    def require_entities(self) -> list[list[Occurrence]]:
        if self.entities is None:
            raise RuntimeError("the collection's entities are not detected yet: call annotate() or load_entities()")
        return self.entities

    @cached_property
    def doc_entities(self) -> list[dict[str, list[int]]]:
        """Per document: entity key -> the passage rows it occurs in."""
        entities = self.require_entities()
        out: list[dict[str, list[int]]] = [{} for _ in self.doc_ids]
        for row, occurrences in enumerate(entities):
            mine = out[self.doc_of_passage[row]]
            for o in occurrences:
                rows = mine.setdefault(o.key, [])
                if not rows or rows[-1] != row:
                    rows.append(row)
        return out

    @cached_property
    def entity_df(self) -> dict[str, int]:
        """Entity key -> number of documents it occurs in."""
        df: dict[str, int] = {}
        for mine in self.doc_entities:
            for key in mine:
                df[key] = df.get(key, 0) + 1
        return df

    def save_entities(self, path: str | Path) -> None:
        """The detected entities as JSONL (one line per passage), written atomically: a cache for later runs."""
        entities = self.require_entities()
        with atomic_write(path) as out:
            out.write(json.dumps({"annotation": self.annotation, "passages": len(self.passages)}) + "\n")
            for p, occurrences in zip(self.passages, entities, strict=True):
                out.write(json.dumps({"id": p.id, "entities": [[o.key, o.text, o.label, o.start, o.end]
                                                               for o in occurrences]}, ensure_ascii=False) + "\n")

    def load_entities(self, path: str | Path) -> None:
        """Read a cache written by :meth:`save_entities`; it must describe exactly this collection's passages."""
        found: list[list[Occurrence]] = []
        header = None
        for number, line in iter_lines(path):
            obj = parse_json_object(path, number, line)
            if header is None:
                header = obj
                continue
            row = len(found)
            if row >= len(self.passages) or obj.get("id") != self.passages[row].id:
                raise InputError(path, number, "entity cache does not match the collection's passages (rebuild it)")
            found.append(_occurrences(path, number, obj.get("entities"), len(self.passages[row].text)))
        if len(found) != len(self.passages):
            raise InputError(path, None, f"entity cache holds {len(found)} passages, the collection "
                                         f"{len(self.passages)} (rebuild it)")
        if not isinstance((header or {}).get("annotation", {}), dict):
            raise InputError(path, 1, "entity cache header: 'annotation' is not an object (delete the cache to "
                                      "rebuild it)")
        self.entities = found
        self.annotation = dict((header or {}).get("annotation", {}))
        self.__dict__.pop("doc_entities", None)
        self.__dict__.pop("entity_df", None)

    # -- document vectors ----------------------------------------------------------------------------
    @cached_property
    def tfidf(self) -> DocumentVectors:
        rows = [{"id": p.id, "doc_id": p.doc_id, "contents": p.text, "sent_id": i}
                for i, p in enumerate(self.passages)]
        return DocumentVectors.from_passages(rows)

    def tfidf_scores(self, text: str) -> np.ndarray:
        """Cosine of the TF-IDF vector of ``text`` with every document (rows in :attr:`doc_ids` order)."""
        vectors = self.tfidf
        assert vectors.doc_ids == self.doc_ids
        if not text.strip():
            return np.zeros(len(self.doc_ids), dtype=np.float64)
        return vectors.similarities(vectors.vectorizer.transform([text])).astype(np.float64)

    def terms(self, text: str) -> list[str]:
        """The TF-IDF analyser's terms of ``text`` (lower case, stop words removed), in order, no repeats."""
        return list(dict.fromkeys(self.tfidf.vectorizer.build_analyzer()(text)))

    def docs_with_all(self, terms: list[str]) -> np.ndarray:
        """Boolean mask of the documents that contain every term (False everywhere for an unknown term)."""
        vocabulary = self.tfidf.vectorizer.vocabulary_
        mask = np.ones(len(self.doc_ids), dtype=bool)
        for term in terms:
            column = vocabulary.get(term)
            if column is None:
                return np.zeros(len(self.doc_ids), dtype=bool)
            mask &= np.asarray(self.tfidf.matrix[:, column].todense()).ravel() > 0
        return mask

    @cached_property
    def _bm25(self):
        from sklearn.feature_extraction.text import CountVectorizer

        counts = CountVectorizer(vocabulary=self.tfidf.vectorizer.vocabulary_, stop_words="english")
        tf = counts.transform([self.doc_text(d) for d in self.doc_ids]).tocsr().astype(np.float64)
        return counts, tf

    def bm25_scores(self, text: str, k1: float = BM25_K1, b: float = BM25_B) -> np.ndarray:
        """BM25 (Lucene's idf) of ``text``'s terms against every whole document."""
        counts, tf = self._bm25
        query = counts.transform([text]).tocsr()
        n_docs = tf.shape[0]
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        scores = np.zeros(n_docs, dtype=np.float64)
        columns = tf.tocsc()
        for term, qtf in zip(query.indices, query.data, strict=True):
            col = columns[:, term]
            df = col.nnz
            if not df:
                continue
            idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
            rows, values = col.indices, col.data
            scores[rows] += qtf * idf * values * (k1 + 1) / (values + norm[rows])
        return scores

    # -- embeddings ----------------------------------------------------------------------------------
    def embeddings(self, encoder, cache: str | Path | None = None, progress: bool = True) -> np.ndarray:
        """Unit-length document vectors: the mean of the MiniLM vectors of the document's passages."""
        if self._embeddings is not None:
            return self._embeddings
        cache = Path(cache) if cache else None
        if cache is not None and cache.is_file():
            try:
                vectors = np.load(cache, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:  # truncated, garbage, a pickle: a cache, made again
                log.warning("%s is not a readable array of document vectors (%s): re-encoding", cache,
                            type(exc).__name__)
                vectors = np.zeros((0, 0), dtype=np.float32)
            usable = (vectors.ndim == 2 and vectors.dtype.kind == "f" and vectors.shape[0] == len(self.doc_ids)
                      and bool(np.isfinite(vectors).all()))
            if usable:
                self._embeddings = vectors
                return vectors
            log.warning("%s holds %s document vectors, the collection %d documents: re-encoding", cache,
                        "x".join(map(str, vectors.shape)), len(self.doc_ids))
        passages = encoder.encode_texts([p.text for p in self.passages], side="passage", progress=progress)
        sums = np.zeros((len(self.doc_ids), passages.shape[1]), dtype=np.float64)
        np.add.at(sums, self.doc_of_passage, passages)
        vectors = (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).astype(np.float32)
        if cache is not None:
            with atomic_write(cache, mode="wb") as out:
                np.save(out, vectors)
        self._embeddings = vectors
        return vectors


def _occurrences(path: str | Path, number: int, rows: Any, length: int) -> list[Occurrence]:
    """One passage's entities from a cache line, each ``[key, text, label, start, end]`` inside the passage; a
    tampered line is an InputError naming it (not a TypeError, nor entities at offsets the passage lacks)."""
    if not isinstance(rows, list):
        raise InputError(path, number, "entity cache line has no 'entities' list (delete the cache to rebuild it)")
    out = []
    for row in rows:
        ok = (isinstance(row, list) and len(row) == 5 and all(isinstance(v, str) for v in row[:3])
              and all(isinstance(v, int) and not isinstance(v, bool) for v in row[3:])
              and 0 <= row[3] <= row[4] <= length)
        if not ok:
            raise InputError(path, number, f"entity cache entry {row!r:.80} is not [key, text, label, start, end] "
                                           "inside the passage (delete the cache to rebuild it)")
        out.append(Occurrence(*row))
    return out


_MATCHERS: dict[int, object] = {}


def kb_matcher(kb: KnowledgeBase):
    """One case-insensitive, word-bounded regular expression over every surface form of the KB (cached)."""
    import re

    if id(kb) not in _MATCHERS:
        forms = sorted({f for e in kb.entries.values() for f in e.surface_forms if len(f) >= 2}, key=len, reverse=True)
        _MATCHERS[id(kb)] = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(f) for f in forms) + r")(?!\w)",
                                       re.IGNORECASE)
    return _MATCHERS[id(kb)]
