"""Argument agreement (group ``arguments``): shared and conflicting times, places, people, numbers.

CoreSearch's error analysis (Eirew et al. 2022, sec. 5.5): most top-1 errors retrieve an event of
the right type with the wrong arguments - another year, another town, other participants. These
features compare the arguments around the two mentions, at two levels:

* ``args_*``: the mention's context (the record's ``ner`` entities and the context sentence);
* ``docargs_*``: the whole document of each side (every passage's entities and text).

Arguments come from the records' ``ner``/``ner_labels`` (gold ECB+ tags such as ``TIME_DATE``,
``LOC_GEO``, ``HUMAN_PART_PER``; spaCy labels; or the heuristic ``DATE``/``NUMBER``/``NAME``),
mapped to coarse classes with :func:`features.pairs.types.coarse_type`, plus the heuristic tagger
run over the context text for every record alike (times and numbers are often not annotated as
entities). Classes: ``time``, ``place``, ``person``, ``number`` and ``entities`` (every entity
argument: people, organisations, places, things, unlabelled names).

Per class, three features: ``shared`` = log(1 + number of shared keys), ``conflict`` = 1 if both
sides have arguments of the class but share none (for times: both name a year, or a month, or a
weekday, and they differ), ``jaccard``. Keys are content words (``Tara Reid`` -> {tara, reid}), so
``Reid`` matches ``Tara Reid``; time keys are canonical years, months, weekdays and day numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from features.ner import heuristic_entities
from features.pairs.base import FeatureGroup, PairBatch, PairContext, PairFunction, jaccard
from features.pairs.types import coarse_type
from features.pairs.views import DocumentView, PassageView, RecordView, memo
from features.strings import PRONOUNS, token_set, tokens


class ArgumentsGroup(FeatureGroup):
    """The group's features, computed pair by pair from the pair's four :class:`Arguments` (both mention contexts,
    both documents), each looked up once per pair instead of once per feature; the values are those of the
    features' own functions (:func:`value`). The document-level values are a function of the two documents'
    Arguments alone, and a query's candidates come from a few documents: they are computed once per pair of
    documents in the batch."""

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        specs = [_SPECS[n] for n in names]
        columns = {level: [j for j, spec in enumerate(specs) if spec[0] == level] for level in ("args", "docargs")}
        context = [specs[j][1:] for j in columns["args"]]
        document = [specs[j][1:] for j in columns["docargs"]]
        context_rows, document_rows = [], []
        by_documents: dict[tuple[int, int], list[float]] = {}  # the Arguments are memoised on the batch's views
        for ctx in batch.pairs:
            if context:
                # Arguments.get written out (the dicts' own get): 15 features x 2 sides a pair
                q, c = record_arguments(ctx.query.record).keys, record_arguments(ctx.candidate).keys
                context_rows.append([value(cls, how, q.get(cls, NONE), c.get(cls, NONE)) for cls, how in context])
            if document:
                q, c = document_arguments(ctx.query.doc), document_arguments(ctx.doc)
                key = (id(q), id(c))
                row = by_documents.get(key)
                if row is None:
                    row = by_documents[key] = [value(cls, how, q.get(cls), c.get(cls)) for cls, how in document]
                document_rows.append(row)
        out = np.empty((len(batch.pairs), len(names)), dtype=np.float32)
        for level, rows in (("args", context_rows), ("docargs", document_rows)):
            if columns[level]:
                out[:, columns[level]] = np.array(rows, dtype=np.float32).reshape(len(batch.pairs), -1)
        return out


GROUP = ArgumentsGroup("arguments",
                       "shared/conflicting times, places, people, numbers in the two contexts and documents")

CLASSES = ("time", "place", "person", "number", "entities")
ENTITY_TYPES = frozenset({"person", "org", "place", "thing", "name", "other"})
MONTHS = {
    "january": "jan", "february": "feb", "march": "mar", "april": "apr", "may": "may", "june": "jun",
    "july": "jul", "august": "aug", "september": "sep", "october": "oct", "november": "nov", "december": "dec",
    "jan": "jan", "feb": "feb", "mar": "mar", "apr": "apr", "jun": "jun", "jul": "jul", "aug": "aug",
    "sep": "sep", "sept": "sep", "oct": "oct", "nov": "nov", "dec": "dec",
}
WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
YEAR_RE = re.compile(r"^(1[5-9]|20)\d\d$")
#: Time key sorts whose disagreement is a conflict (day numbers alone are too ambiguous).
CONFLICT_SORTS = ("y", "m", "d")


def time_keys(phrase: str) -> set[str]:
    """``Tuesday, May 5 2009`` -> {``d:tuesday``, ``m:may``, ``n:5``, ``y:2009``}; relative words give none."""
    keys = set()
    for tok in tokens(phrase.lower()):
        tok = tok.rstrip(".")
        if YEAR_RE.match(tok):
            keys.add(f"y:{tok}")
        elif tok in MONTHS:
            keys.add(f"m:{MONTHS[tok]}")
        elif tok in WEEKDAYS:
            keys.add(f"d:{tok}")
        elif tok.isdigit() and 1 <= int(tok) <= 31:
            keys.add(f"n:{int(tok)}")
    return keys


def number_keys(phrase: str) -> set[str]:
    """Numbers with separators removed: ``1,500`` -> {``1500``}; years are times, not numbers."""
    out = set()
    for match in re.finditer(r"\d+(?:[.,]\d+)*", phrase):
        if not YEAR_RE.match(match.group()):  # "2009" is a year, "1,500" a number
            out.add(match.group().replace(",", ""))
    return out


def word_keys(phrase: str) -> set[str]:
    return {w for w in token_set(phrase) if w not in PRONOUNS and not w.isdigit()}


@dataclass(frozen=True)
class Arguments:
    """Class -> keys of one side's arguments."""

    keys: dict[str, frozenset[str]]

    def get(self, cls: str) -> frozenset[str]:
        return self.keys.get(cls, NONE)


#: No keys.
NONE: frozenset[str] = frozenset()


def collect(labelled: Iterable[tuple[str, str]]) -> Arguments:
    """Keys per class from (phrase, label) pairs (labels of any vocabulary)."""
    keys: dict[str, set[str]] = {c: set() for c in CLASSES}
    for phrase, label in labelled:
        for cls, found in phrase_keys(phrase, label):
            keys[cls] |= found
    return Arguments({c: frozenset(v) for c, v in keys.items()})


@lru_cache(maxsize=65_536)
def phrase_keys(phrase: str, label: str | None) -> tuple[tuple[str, frozenset[str]], ...]:
    """The (class, keys) one labelled phrase adds to :func:`collect`'s classes: its times, its numbers, or its words
    for its own class and for ``entities``. Cached: a document's names and dates recur in every passage, and the same
    phrases in every document of a topic."""
    coarse = coarse_type(None, label)
    if coarse == "time":
        return (("time", frozenset(time_keys(phrase))),)
    if coarse == "number":
        return (("number", frozenset(number_keys(phrase))),)
    words = frozenset(word_keys(phrase))
    found = []
    if coarse in ("place", "person"):
        found.append((coarse, words))
    if coarse in ENTITY_TYPES:
        found.append(("entities", words))
    return tuple(found)


def _heuristic(text: str, skip_words: set[str]) -> list[tuple[str, str]]:
    """Heuristic NER over raw text; spans that overlap the mention's own words are dropped."""
    return [(phrase, label) for phrase, label, words in heuristic_spans(text)
            if not (skip_words and words & skip_words)]


@lru_cache(maxsize=16_384)
def heuristic_spans(text: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(phrase, label, word set) of every span the heuristic tagger finds in ``text``, in its order. Cached: every
    mention record of a sentence has that sentence as its context."""
    return tuple((span.text, span.label, frozenset(token_set(span.text))) for span in heuristic_entities(text))


def record_arguments(view: RecordView) -> Arguments:
    """The arguments in a mention's context: its ``ner`` entities plus heuristic times/numbers/names."""

    def compute() -> Arguments:
        rec = view.record
        labelled = list(zip(rec.ner, rec.ner_labels, strict=False))
        labelled += _heuristic(rec.context, token_set(rec.mention))
        return collect(labelled)

    return memo(view, "arguments", compute)


def passage_arguments(passage: PassageView) -> list[tuple[str, str]]:
    """The passage's labelled phrases (heuristic spans, entity mentions, the records' entities), each once, in
    first-seen order: every record of a sentence lists that sentence's entities, and :func:`collect` only takes the
    union of the keys, so a repeat adds nothing."""

    def compute() -> list[tuple[str, str]]:
        labelled = _heuristic(passage.text, set())
        for r in passage.records:
            if r.kind == "entity" and r.tag:
                labelled.append((r.mention, r.tag))
            labelled.extend(zip(r.record.ner, r.record.ner_labels, strict=False))
        return list(dict.fromkeys(labelled))

    return memo(passage, "arguments", compute)


def document_arguments(doc: DocumentView) -> Arguments:
    """The arguments of a whole document: every passage's entities, entity mentions and heuristic spans. The phrases
    are collected once each (a document names its people and places in passage after passage)."""
    return memo(doc, "arguments",
                lambda: collect(dict.fromkeys(x for p in doc.passages for x in passage_arguments(p))))


def shared(a: frozenset[str], b: frozenset[str]) -> float:
    return math.log1p(len(a & b))


def conflict(cls: str, a: frozenset[str], b: frozenset[str]) -> float:
    if cls != "time":
        return float(bool(a) and bool(b) and not (a & b))
    for sort in CONFLICT_SORTS:
        sa = {k for k in a if k[0] == sort}
        sb = {k for k in b if k[0] == sort}
        if sa and sb and not (sa & sb):
            return 1.0
    return 0.0


def value(cls: str, how: str, a: frozenset[str], b: frozenset[str]) -> float:
    """The ``how`` (shared, conflict or jaccard) of one class's keys on the two sides: 0 when a side has none (no key
    shared, no conflict, no overlap), as most candidates lack most classes."""
    if not a or not b:
        return 0.0
    if how == "shared":
        return shared(a, b)
    if how == "conflict":
        return conflict(cls, a, b)
    return jaccard(a, b)


def _context_feature(cls: str, how: str) -> PairFunction:
    def fn(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        return value(cls, how, record_arguments(q).get(cls), record_arguments(c).get(cls))

    return fn


def _document_feature(cls: str, how: str) -> PairFunction:
    def fn(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        return value(cls, how, document_arguments(ctx.query.doc).get(cls), document_arguments(ctx.doc).get(cls))

    return fn


_DOCS = {
    "shared": "log(1 + number of {cls} keys shared by the two {level}s)",
    "conflict": "1 if both {level}s have {cls} arguments and none agree (times: a year/month/weekday differs)",
    "jaccard": "Jaccard overlap of the {cls} keys of the two {level}s",
}
#: feature name -> (level: args or docargs, class, how)
_SPECS: dict[str, tuple[str, str, str]] = {}
for _cls in CLASSES:
    for _how, _doc in _DOCS.items():
        GROUP.add(f"args_{_cls}_{_how}", _context_feature(_cls, _how), _doc.format(cls=_cls, level="mention context"))
        GROUP.add(f"docargs_{_cls}_{_how}", _document_feature(_cls, _how), _doc.format(cls=_cls, level="document"))
        _SPECS[f"args_{_cls}_{_how}"] = ("args", _cls, _how)
        _SPECS[f"docargs_{_cls}_{_how}"] = ("docargs", _cls, _how)
