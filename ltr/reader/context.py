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

from hybrid.errors import InputError
from hybrid.formats.lines import iter_lines, optional, parse_json_object, require
from hybrid.records import Topic


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
        if topic.passage_id and self._doc_of(topic.passage_id) is not None:
            return self.of_passage(topic.passage_id)
        if topic.doc_id:
            return self.lead(topic.doc_id)
        return ""

    @classmethod
    def from_index(cls, index, sentences: int = 2) -> LeadContext:
        """Leads from a :class:`~hybrid.retrieval.sparse_index.SparseIndex` (its ``docref`` term lookup)."""

        def doc_of(passage_id: str) -> str | None:
            found = index.passage_json(passage_id)
            return None if found is None else found["doc_id"]

        def doc_passages(doc_id: str) -> list[tuple[int, str]]:
            out = []
            for order, pid in enumerate(index.document_passage_ids(doc_id)):
                found = index.passage_json(pid)
                sent = found.get("sent_id")
                out.append((sent if isinstance(sent, int) else order, found["contents"]))
            return out

        return cls(doc_of, doc_passages, sentences)

    @classmethod
    def from_corpus(cls, path: str | Path, sentences: int = 2) -> LeadContext:
        """Leads from a corpus JSONL (``id``, ``text``, optional ``doc_id`` and ``sent_id``; file order otherwise)."""
        doc_of: dict[str, str] = {}
        passages: dict[str, list[tuple[int, str]]] = {}
        for number, line in iter_lines(path):
            obj = parse_json_object(path, number, line)
            pid = require(path, number, obj, "id", str)
            text = require(path, number, obj, "text", str)
            doc = optional(path, number, obj, "doc_id", str) or pid.rsplit(":", 1)[0]
            sent = optional(path, number, obj, "sent_id", int)
            doc_of[pid] = doc
            passages.setdefault(doc, []).append((sent if sent is not None else len(passages.get(doc, [])), text))
        if not doc_of:
            raise InputError(path, None, "empty corpus")
        return cls(doc_of.get, lambda doc: passages.get(doc, []), sentences)
