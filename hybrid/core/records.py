"""Plain records shared by every stage: passages, mentions, topics and hits.

Stages are functions over batches of these records, so they can run in-process or on Ray workers
without change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EVENT = "event"
ENTITY = "entity"
KINDS = (EVENT, ENTITY)
#: Integer codes of the kinds where arrays store them (dense indexes, few-shot rows); 0 is "unknown".
KIND_CODES = {None: 0, EVENT: 1, ENTITY: 2}
KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}


@dataclass(frozen=True)
class Mention:
    """A marked span in a passage; ``start``/``end`` are character offsets into the passage text."""

    start: int
    end: int
    text: str
    kind: str | None = None  # "event" | "entity" | None (unknown)
    tag: str | None = None  # fine type, e.g. ACTION_OCCURRENCE, HUMAN_PART_PER
    chain: str | None = None  # within-document coreference chain id
    m_id: str | None = None
    source: str = "gold"  # "gold" | "auto"


@dataclass
class Passage:
    """One retrievable unit (a sentence in ECB+) with optional mention annotations."""

    id: str
    doc_id: str
    text: str
    mentions: list[Mention] | None = None  # None: not annotated (mentions are detected)
    sent_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Topic:
    """A query: a marked mention in its context, optionally tied to the document it comes from."""

    qid: str
    text: str  # the context without markers
    start: int  # mention offsets in ``text``
    end: int
    doc_id: str | None = None  # own document, excluded from results (query by example)
    passage_id: str | None = None
    kind: str | None = None
    tag: str | None = None
    examples: list[Topic] = field(default_factory=list)  # extra examples for k-shot queries
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def mention(self) -> str:
        return self.text[self.start : self.end]

    def marked(self, open_tag: str = "<m>", close_tag: str = "</m>") -> str:
        return f"{self.text[: self.start]}{open_tag} {self.mention} {close_tag}{self.text[self.end :]}"


@dataclass
class Hit:
    """A retrieved passage, with the mention span that matched best when known."""

    docid: str  # passage id
    score: float
    mention_start: int | None = None
    mention_end: int | None = None
    mention_text: str | None = None
    mention_id: str | None = None  # Lucene id of the matching mention record
    extra: dict[str, Any] = field(default_factory=dict)


#: What every stage takes and returns: qid -> hits sorted best first (a run, as a plain dict). The public
#: :class:`hybrid.Run` (``hybrid.api``) is this dict with a run's conversions, files and provenance added, so a
#: ``hybrid.Run`` goes wherever ``Rankings`` are taken.
Rankings = dict[str, list[Hit]]

#: The ``Hit.extra`` key under which a feature union (``a ** b``, hybrid.core.stage.FeatureUnion) leaves its
#: members' scores, and from which the ``union`` LTR feature group (features.pairs.union) reads them.
UNION_KEY = "union"
