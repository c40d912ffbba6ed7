"""Document context for the reader: the lead sentences of the query's and the candidate's documents.

Why: a reader that sees one sentence per side cannot tell two similar events apart (two earthquakes,
two rehab check-ins, two product launches). On ECB+ dev the sentence-only reader put a passage of the
*other* subtopic or of another topic first for 243 of 1,477 event queries, the multi-field first stage
(which sees the document's chain and arguments) for 64. News documents state who, where and when in
their first sentences (headline, dateline), so the lead of each document is the cheapest context that
separates such events. It is given to the model as extra text on the query side of the input, so span
prediction (over the passage only) is unchanged; see :mod:`ltr.reader.encoding`.

A :class:`LeadContext` maps a passage (or a query) to the lead of its document. It is built from a
hybrid index (inference) or from a corpus JSONL (training, where no index is needed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.records import Topic

if TYPE_CHECKING:
    from ltr.reader.store import Reader


class LeadContext:
    """The first ``sentences`` passages of a passage's document (by ``sent_id``), joined by spaces.

    ``doc_of(passage_id)`` gives a passage's document (None: unknown passage) and ``doc_passages(doc_id)``
    the document's ``(sent_id, text)`` pairs. Leads are cached per document.
    """

    def __init__(self, doc_of: Callable[[str], str | None],
                 doc_passages: Callable[[str], Iterable[tuple[int, str]]], sentences: int = 2):
        if sentences < 1:
            raise ValueError(f"context sentences must be >= 1, got {sentences}")
        self._doc_of, self._doc_passages, self.sentences = doc_of, doc_passages, sentences
        self._leads: dict[str, str] = {}

    def lead(self, doc_id: str) -> str:
        if doc_id not in self._leads:
            ordered = sorted(self._doc_passages(doc_id), key=lambda p: p[0])
            self._leads[doc_id] = " ".join(text for _, text in ordered[: self.sentences])
        return self._leads[doc_id]

    def of_passage(self, passage_id: str) -> str:
        doc = self._doc_of(passage_id)
        if doc is None:
            raise InputError(None, None, f"passage {passage_id!r} is not in the collection; no document context")
        return self.lead(doc)

    def of_topic(self, topic: Topic) -> str:
        """The lead of the query's document; empty for a query from outside the collection."""
        doc = self._doc_of(topic.passage_id) if topic.passage_id else None
        doc = doc or topic.doc_id
        return self.lead(doc) if doc else ""

    def pair(self, topic: Topic, passage_id: str) -> tuple[str, str]:
        """What one (query, candidate) input carries: the leads of the query's and of the candidate's documents."""
        return self.of_topic(topic), self.of_passage(passage_id)

    @classmethod
    def for_reader(cls, reader: Reader, index) -> LeadContext | None:
        """The leads ``reader`` needs, from ``index`` (a SparseIndex); None for a reader without document context."""
        if not reader.encoding.uses_context:
            return None
        if not hasattr(index, "document_passage_ids"):
            raise ValueError("this reader was trained with document context: its leads come from a SparseIndex")
        return cls.from_index(index, reader.encoding.context_sentences)

    @classmethod
    def from_index(cls, index, sentences: int = 2) -> LeadContext:
        """Leads from a :class:`~indexes.sparse_index.SparseIndex` (its ``docref`` term lookup)."""

        def doc_of(passage_id: str) -> str | None:
            found = index.passage(passage_id)
            return None if found is None else found.doc_id

        def doc_passages(doc_id: str) -> list[tuple[int, str]]:
            passages = [index.passage(pid) for pid in index.document_passage_ids(doc_id)]
            return [(p.sent_id if p.sent_id is not None else order, p.text) for order, p in enumerate(passages)]

        return cls(doc_of, doc_passages, sentences)

    @classmethod
    def from_corpus(cls, path: str | Path, sentences: int = 2) -> LeadContext:
        """Leads from a corpus JSONL, read as the index reads it (``sent_id`` order; file order without one)."""
        doc_of: dict[str, str] = {}
        passages: dict[str, list[tuple[int, str]]] = {}
        for passage in read_corpus(path):
            doc_of[passage.id] = passage.doc_id
            same_doc = passages.setdefault(passage.doc_id, [])
            same_doc.append((passage.sent_id if passage.sent_id is not None else len(same_doc), passage.text))
        if not doc_of:
            raise InputError(path, None, "empty corpus")
        return cls(doc_of.get, lambda doc: passages.get(doc, []), sentences)
