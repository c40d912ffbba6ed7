"""Phases 1-4 of the paper for one event: its evidence passages, the related entities ranked, their
contextual passages, and the event's place.

* **Evidence (Phase 1).** Seed mentions give their own sentences; a name gives the sentences of the
  documents that mention every word of it (the ``event-name`` filter, the best ``initial_docs`` of them)
  that contain most of its words. Each evidence sentence is widened to a three-sentence window.
* **Candidates (Phase 2).** Entities and concepts detected in the windows (the paper's context
  entities), plus the event entry's out-links when a knowledge base names the event (Cont+Out).
* **Ranking (Phase 3).** ``ContFreq``: raw frequency in the windows. ``CheapEntRel``: the rank-based
  aggregation ``sum_r 1/rank_r(e)`` of the paper's cheap relatedness, its four rankings mapped onto what
  is available: (i) out-link TF-IDF -> the entity's log-tf x idf in the windows (idf over the
  collection's documents), or the KB out-links when the event has an entry; (ii) back-links -> the share
  of the entity's documents that are evidence documents (how much the entity "points back" at the
  event), plus KB back-links; (iii) their ratio is carried by (ii) being normalised by document
  frequency; (iv) ContFreq itself.
* **Contextual passages (Phase 4).** The first three-sentence window of the event's KB description
  that names the entity, else the first evidence window that contains it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from features.annotate import AnnotationConfig, Annotator
from hybrid.collect.collection import CONCEPT, PLACE_LABELS, Collection, Occurrence, doc_occurrences
from hybrid.collect.events import EventQuery
from hybrid.collect.kb import KBEntry, KnowledgeBase, entity_key

TOP_ENTITIES = 10
INITIAL_DOCS = 5
WINDOW = 1  # sentences on each side of an evidence sentence (three-sentence windows)


@dataclass
class RelatedEntity:
    """An entity or concept related to the event, with the scores that ranked it."""

    key: str
    text: str
    label: str
    contfreq: int
    specificity: float
    concentration: float
    score: float = 0.0  # CheapEntRel
    passage: str = ""
    in_kb: bool = False

    def to_json(self) -> dict:
        return {"entity": self.text, "key": self.key, "label": self.label, "contfreq": self.contfreq,
                "specificity": round(self.specificity, 6), "concentration": round(self.concentration, 6),
                "cheap_ent_rel": round(self.score, 6), "passage": self.passage, "in_kb": self.in_kb}


@dataclass
class EventEvidence:
    """What the rankers of one event query read."""

    event: EventQuery
    evidence_rows: list[int]  # passage rows of the evidence sentences (seed sentences, name matches)
    window_rows: list[int]  # the three-sentence windows around them
    evidence_docs: list[str]
    related: list[RelatedEntity]  # all candidates, best first
    place: str | None
    name_query: str
    extra_occurrences: list[Occurrence] = field(default_factory=list)  # from seeds outside the collection

    @property
    def top(self) -> list[RelatedEntity]:
        return self.related[:TOP_ENTITIES]


def name_documents(collection: Collection, name: str, excluded: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """(mask of documents that contain every word of the name, their TF-IDF cosine with the name)."""
    scores = collection.tfidf_scores(name)
    mask = collection.docs_with_all(collection.terms(name))
    for doc in excluded:
        if doc in collection.row_of:
            mask[collection.row_of[doc]] = False
    return mask, scores


def _evidence(collection: Collection, event: EventQuery, annotator=None) -> tuple[list[int], list[str],
                                                                                 list[Occurrence], str]:
    rows: list[int] = []
    docs: list[str] = []
    extra: list[Occurrence] = []
    texts: list[str] = []
    for seed in event.seeds:
        texts.append(seed.text)
        row = collection.passage_index.get(seed.passage_id) if seed.passage_id else None
        if row is None:  # a seed typed by the user: find its sentence in its document, else parse it
            row = _find_sentence(collection, seed.doc_id, seed.text)
        if row is not None:
            rows.append(row)
            docs.append(collection.passages[row].doc_id)
        else:
            extra.extend(_parse_occurrences(seed.text, annotator))
    if event.name:
        texts.insert(0, event.name)
        mask, scores = name_documents(collection, event.name, event.excluded)
        order = [i for i in np.lexsort((np.arange(len(scores)), -scores)) if mask[i]][:INITIAL_DOCS]
        terms = set(collection.terms(event.name))
        analyse = collection.tfidf.vectorizer.build_analyzer()
        for i in order:
            doc_id = collection.doc_ids[i]
            docs.append(doc_id)
            in_doc = [(len(terms & set(analyse(collection.passages[r].text))), r)
                      for r in collection.passage_rows(doc_id)]
            best = max(n for n, _ in in_doc)
            if best * 2 >= len(terms) and best > 0:
                rows.extend(r for n, r in in_doc if n == best)
    return sorted(set(rows)), list(dict.fromkeys(docs)), extra, " ".join(texts)


def _find_sentence(collection: Collection, doc_id: str | None, text: str) -> int | None:
    if doc_id is None or doc_id not in collection.doc_span:
        return None
    for row in collection.passage_rows(doc_id):
        if collection.passages[row].text == text:
            return row
    return None


def _parse_occurrences(text: str, annotator=None) -> list[Occurrence]:
    if annotator is None:
        annotator = Annotator(AnnotationConfig())
    return [o for parse in annotator.parse([text]) for o in doc_occurrences(parse)]


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """1-based ranks of the positive values (ties share the better rank), keys in a fixed order."""
    ordered = sorted((k for k, v in values.items() if v > 0), key=lambda k: (-values[k], k))
    ranks, previous, rank = {}, None, 0
    for n, key in enumerate(ordered, start=1):
        if values[key] != previous:
            rank, previous = n, values[key]
        ranks[key] = rank
    return ranks


def _kb_event(kb: KnowledgeBase | None, event: EventQuery) -> KBEntry | None:
    if kb is None:
        return None
    names = [event.name] if event.name else []
    names += [s.mention for s in event.seeds]
    for name in names:
        entry = kb.lookup(name) if name else None
        if entry is not None:
            return entry
    return None


def _sentences(text: str) -> list[str]:
    import re

    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _kb_passage(entry: KBEntry | None, forms: list[str]) -> str:
    """The first three-sentence window of the event's description that names one of ``forms``."""
    if entry is None or not entry.description:
        return ""
    sentences = _sentences(entry.description)
    lowered = [s.lower() for s in sentences]
    for i, s in enumerate(lowered):
        if any(f.lower() in s for f in forms if f):
            return " ".join(sentences[max(0, i - WINDOW): i + WINDOW + 1])
    return ""


def rank_entities(collection: Collection, event: EventQuery, kb: KnowledgeBase | None = None,
                  annotator=None) -> EventEvidence:
    """Evidence, ranked related entities (CheapEntRel, then ContFreq) and the place of one event."""
    entities = collection.require_entities()
    evidence, docs, extra, name_query = _evidence(collection, event, annotator)
    windows = sorted({w for r in evidence for w in collection.window(r, WINDOW)})
    counts: dict[str, int] = {}
    surface: dict[str, dict[str, int]] = {}
    labels: dict[str, dict[str, int]] = {}
    first_window: dict[str, int] = {}
    for row in windows:
        for o in entities[row]:
            counts[o.key] = counts.get(o.key, 0) + 1
            surface.setdefault(o.key, {}).setdefault(o.text, 0)
            surface[o.key][o.text] += 1
            labels.setdefault(o.key, {}).setdefault(o.label, 0)
            labels[o.key][o.label] += 1
            first_window.setdefault(o.key, row)
    for o in extra:
        counts[o.key] = counts.get(o.key, 0) + 1
        surface.setdefault(o.key, {}).setdefault(o.text, 0)
        labels.setdefault(o.key, {}).setdefault(o.label, 0)
    kb_event = _kb_event(kb, event)
    outlinks: dict[str, float] = {}
    backlinks: dict[str, float] = {}
    if kb_event is not None and kb is not None:
        for n, link in enumerate(kb_event.links):
            key = kb.alias_of.get(entity_key(link), entity_key(link))
            outlinks.setdefault(key, 1.0 / (n + 1))
            if key not in counts:  # Cont+Out: an out-link is a candidate even when the windows miss it
                counts[key] = 0
                entry = kb.entries.get(key)
                surface[key] = {entry.entity if entry else link: 1}
                labels[key] = {(entry.type if entry and entry.type else "KB"): 1}
        for key in kb.backlinks.get(kb_event.key, []):
            backlinks[key] = 1.0
        counts.pop(kb_event.key, None)  # the event is not related to itself
    n_docs = len(collection.doc_ids)
    df = collection.entity_df
    event_docs = {collection.row_of[d] for d in docs if d in collection.row_of}
    specificity: dict[str, float] = {}
    concentration: dict[str, float] = {}
    for key, tf in counts.items():
        specificity[key] = (1 + math.log(tf)) * math.log(1 + n_docs / max(df.get(key, 0), 1)) if tf else 0.0
        with_key = [i for i in event_docs if key in collection.doc_entities[i]]
        concentration[key] = len(with_key) / (df.get(key, 0) + 1) if tf else 0.0
    rankings = [_ranks({k: float(v) for k, v in counts.items()}), _ranks(specificity), _ranks(concentration)]
    if outlinks:
        rankings.append(_ranks(outlinks))
    if backlinks:
        rankings.append(_ranks(backlinks))
    related = []
    for key in counts:
        text = max(surface[key].items(), key=lambda kv: (kv[1], -len(kv[0]), kv[0]))[0]
        label = max(labels[key].items(), key=lambda kv: (kv[1], kv[0]))[0]
        score = sum(1.0 / r[key] for r in rankings if key in r)
        related.append(RelatedEntity(key, text, label, counts[key], specificity[key], concentration[key], score,
                                     in_kb=kb is not None and key in kb.entries))
    related.sort(key=lambda e: (-e.score, -e.contfreq, e.key))
    for entity in related[:TOP_ENTITIES]:
        forms = [entity.text] + (list(kb.entries[entity.key].surface_forms) if kb and entity.key in kb.entries else [])
        entity.passage = _kb_passage(kb_event, forms)
        if not entity.passage and entity.key in first_window:
            rows = collection.window(first_window[entity.key], WINDOW)
            entity.passage = " ".join(collection.passages[r].text for r in rows)
        if not entity.passage:
            entity.passage = entity.text
    return EventEvidence(event, evidence, windows, docs, related, _place(event, related, kb), name_query, extra)


def _place(event: EventQuery, related: list[RelatedEntity], kb: KnowledgeBase | None) -> str | None:
    if event.place:
        return event.place
    for entity in related:
        if entity.label in PLACE_LABELS or (kb is not None and entity.key in kb.entries
                                            and kb.entries[entity.key].is_place):
            return entity.text
    return None


def contfreq_ranking(collection: Collection, event: EventQuery) -> list[tuple[str, int]]:
    """ContFreq alone: (entity key, frequency in the evidence windows), most frequent first (ties by key);
    concepts included."""
    evidence = rank_entities(collection, event)
    return sorted(((e.key, e.contfreq) for e in evidence.related if e.contfreq > 0), key=lambda kv: (-kv[1], kv[0]))


__all__ = ["CONCEPT", "EventEvidence", "RelatedEntity", "contfreq_ranking", "rank_entities"]
