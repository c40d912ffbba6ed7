"""Passages -> mention-level records (the unit the sparse index stores and the rankers compare).

Each record carries the fields of Sankepally et al.'s multi-field mention index and CoreSearch's
"mention + context entities" query:

=========  ================================================================================
field      content
=========  ================================================================================
mention    the mention string
ner        entities/arguments in the context (gold entity mentions, else spaCy/heuristic NER)
context    the sentence, optionally with +-N neighbouring sentences of the same document
coref      the other mentions of the mention's within-document chain (gold ids, else heuristic)
trigrams   character trigrams of the mention (encoded, see :mod:`features.strings`)
acronym    acronym keys of the mention
type       ``kind_<event|entity|unknown>`` and ``tag_<fine type>`` tokens
=========  ================================================================================

Annotation is a pure function over a batch of whole documents (a document's passages must be in
one batch because chains and context windows cross sentences), so it runs the same in-process or
as a Ray batch job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from features.coref import _linked, _UnionFind
from features.detect import heuristic_mentions, spacy_mentions
from features.ner import EntitySpan, _load_spacy, entity_tagger
from features.strings import acronyms, char_trigrams, is_pronoun
from hybrid.records import ENTITY, Mention, Passage, Topic

FIELDS = ("mention", "ner", "context", "coref", "trigrams", "acronym", "type")


@dataclass(frozen=True)
class AnnotationConfig:
    """How passages are annotated; recorded in every index built with it."""

    ner: str = "heuristic"  # entity source for passages without gold entities: heuristic | spaCy model
    detect: str = "heuristic"  # mention detector for unannotated passages: heuristic | spaCy model (tagger)
    context_window: int = 0  # +-N sentences around the mention's sentence
    gold_ner: bool = True  # use annotated entity mentions as the ner field when present
    gold_chains: bool = True  # use annotated chain ids when present
    empty_means_unannotated: bool = True  # treat "mentions": [] as "not annotated" (ECB+)


@dataclass
class MentionRecord:
    """One mention with its retrieval fields; ``id`` is ``<passage_id>#<n>``."""

    id: str
    passage_id: str
    doc_id: str
    start: int
    end: int
    mention: str
    kind: str | None
    tag: str | None
    source: str
    chain: str | None
    ner: list[str] = field(default_factory=list)
    ner_labels: list[str] = field(default_factory=list)
    context: str = ""
    coref: list[str] = field(default_factory=list)

    @property
    def trigrams(self) -> list[str]:
        return char_trigrams(self.mention)

    @property
    def acronym(self) -> list[str]:
        return acronyms(self.mention)

    @property
    def type_tokens(self) -> list[str]:
        return type_tokens(self.kind, self.tag)

    def field_text(self, name: str) -> str:
        if name == "mention":
            return self.mention
        if name == "ner":
            return " ; ".join(self.ner)
        if name == "context":
            return self.context
        if name == "coref":
            return " ; ".join(self.coref)
        if name == "trigrams":
            return " ".join(self.trigrams)
        if name == "acronym":
            return " ".join(self.acronym)
        if name == "type":
            return " ".join(self.type_tokens)
        raise KeyError(f"unknown field {name!r}; fields are {FIELDS}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict) -> MentionRecord:
        return cls(**obj)


def _tag_token(tag: str) -> str:
    return "tag_" + re.sub(r"\W+", "_", tag.lower()).strip("_")


def type_tokens(kind: str | None, tag: str | None) -> list[str]:
    out = [f"kind_{kind or 'unknown'}"]
    if tag:
        out.append(_tag_token(tag))
    return out


def group_documents(passages: Iterable[Passage]) -> Iterator[list[Passage]]:
    """Group passages by document, keeping first-seen document order and sentence order."""
    docs: dict[str, list[Passage]] = {}
    for passage in passages:
        docs.setdefault(passage.doc_id, []).append(passage)
    for doc in docs.values():
        if all(p.sent_id is not None for p in doc):
            doc.sort(key=lambda p: p.sent_id)
        yield doc


class Annotator:
    """Turns batches of whole documents into mention records; see module docs for the fields."""

    def __init__(self, config: AnnotationConfig | None = None):
        self.config = config or AnnotationConfig()
        self.entities = entity_tagger(self.config.ner)
        self.detector = None if self.config.detect == "heuristic" else _load_spacy(self.config.detect)
        if self.detector is not None and "tagger" not in self.detector.pipe_names and "morphologizer" not in (
            self.detector.pipe_names
        ):
            raise ValueError(f"spaCy pipeline {self.config.detect!r} has no tagger; cannot detect event mentions")

    # -- per passage -------------------------------------------------------------------------
    def _entities_and_mentions(self, doc: list[Passage]) -> tuple[list[list[EntitySpan]], list[list[Mention]]]:
        cfg = self.config
        need_tagger = [i for i, p in enumerate(doc) if p.mentions is None or not cfg.gold_ner]
        tagged = dict(zip(need_tagger, self.entities([doc[i].text for i in need_tagger]), strict=True))
        parsed = {}
        if self.detector is not None:
            unannotated = [i for i, p in enumerate(doc) if p.mentions is None]
            parsed = dict(zip(unannotated, self.detector.pipe([doc[i].text for i in unannotated]), strict=True))
        entities, mentions = [], []
        for i, passage in enumerate(doc):
            if passage.mentions is not None and cfg.gold_ner:
                ents = [
                    EntitySpan(m.start, m.end, m.text, m.tag or "ENTITY")
                    for m in passage.mentions
                    if m.kind == ENTITY and not is_pronoun(m.text)
                ]
            else:
                ents = tagged[i]
            if passage.mentions is not None:
                found = list(passage.mentions)
            elif i in parsed:
                found = spacy_mentions(parsed[i])
            else:
                found = heuristic_mentions(passage.text, tagged.get(i) or self.entities([passage.text])[0])
            entities.append(ents)
            mentions.append(found)
        return entities, mentions

    def _chains(self, doc: list[Passage], mentions: list[list[Mention]]) -> list[list[str]]:
        flat = [(i, j, m) for i, ms in enumerate(mentions) for j, m in enumerate(ms)]
        uf = _UnionFind(len(flat))
        first_of_chain: dict[str, int] = {}
        for n, (_, _, m) in enumerate(flat):
            if m.chain and self.config.gold_chains:
                if m.chain in first_of_chain:
                    uf.union(first_of_chain[m.chain], n)
                else:
                    first_of_chain[m.chain] = n
        gold = [bool(m.chain) and self.config.gold_chains for _, _, m in flat]
        for a in range(len(flat)):
            for b in range(a + 1, len(flat)):
                if (not gold[a] or not gold[b]) and _linked(flat[a][2], flat[b][2]):
                    uf.union(a, b)
        doc_id = doc[0].doc_id
        chains: list[list[str]] = [[""] * len(ms) for ms in mentions]
        for n, (i, j, _) in enumerate(flat):
            root = flat[uf.find(n)][2]
            chains[i][j] = root.chain if gold[uf.find(n)] and root.chain else f"{doc_id}#auto{uf.find(n)}"
        return chains

    def annotate_document(self, doc: list[Passage]) -> list[list[MentionRecord]]:
        """Records for every passage of one document (a list per passage, in passage order)."""
        if len({p.doc_id for p in doc}) != 1:
            raise ValueError("annotate_document needs the passages of exactly one document")
        entities, mentions = self._entities_and_mentions(doc)
        chains = self._chains(doc, mentions)
        members: dict[str, list[tuple[int, int]]] = {}
        for i, ms in enumerate(mentions):
            for j, _ in enumerate(ms):
                members.setdefault(chains[i][j], []).append((i, j))
        window = self.config.context_window
        out: list[list[MentionRecord]] = []
        for i, passage in enumerate(doc):
            lo, hi = max(0, i - window), min(len(doc), i + window + 1)
            context = " ".join(doc[k].text for k in range(lo, hi))
            records = []
            for j, m in enumerate(mentions[i]):
                ner, labels = [], []
                for k in range(lo, hi):
                    for ent in entities[k]:
                        if k == i and ent.start < m.end and m.start < ent.end:
                            continue  # the mention itself
                        ner.append(ent.text)
                        labels.append(ent.label)
                coref_texts, seen = [], {m.text.lower()}
                for ci, cj in members[chains[i][j]]:
                    other = mentions[ci][cj].text
                    if (ci, cj) != (i, j) and other.lower() not in seen:
                        seen.add(other.lower())
                        coref_texts.append(other)
                records.append(
                    MentionRecord(
                        id=f"{passage.id}#{j}", passage_id=passage.id, doc_id=passage.doc_id, start=m.start,
                        end=m.end, mention=m.text, kind=m.kind, tag=m.tag, source=m.source, chain=chains[i][j],
                        ner=ner, ner_labels=labels, context=context, coref=coref_texts,
                    )
                )
            out.append(records)
        return out

    def annotate(self, passages: Iterable[Passage]) -> Iterator[tuple[Passage, list[MentionRecord]]]:
        """Annotate a batch of passages (grouped into documents internally)."""
        for doc in group_documents(passages):
            yield from zip(doc, self.annotate_document(doc), strict=True)

    def annotate_topic(self, topic: Topic) -> MentionRecord:
        """A record for a query that is not in the index: its text is a one-passage document."""
        query_mention = Mention(topic.start, topic.end, topic.mention, kind=topic.kind, tag=topic.tag, source="query")
        others = [
            m
            for m in heuristic_mentions(topic.text, self.entities([topic.text])[0])
            if m.end <= topic.start or m.start >= topic.end
        ]
        passage = Passage(
            id=f"query:{topic.qid}", doc_id=f"query:{topic.qid}", text=topic.text,
            mentions=sorted([query_mention, *others], key=lambda m: (m.start, m.end)),
        )
        # The detected entity mentions stand in for gold ones (ner field); chains are heuristic.
        records = self.annotate_document([passage])[0]
        for record in records:
            if record.start == topic.start and record.end == topic.end:
                record.source = "query"
                return record
        raise AssertionError("query mention lost during annotation")
