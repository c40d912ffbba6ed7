"""Event arguments from the dependency parse: who did what to whom, when and where.

For an event mention of a parsed passage, its syntactic root's dependents give the arguments that
CoreSearch's error analysis says decide coreference (another year, another town, other participants):

=========  =====================================================================================
label      dependents
=========  =====================================================================================
ARG0       ``nsubj``; the object of a passive's ``agent`` (``by police``); a nominal's ``poss``
ARG1       ``dobj``/``obj``/``nsubjpass``; the object of a nominal's ``of`` (``arrest of Reid``)
TIME       a DATE/TIME entity attached to the event (``npadvmod``, or a preposition's object, also
           through the event's object)
PLACE      a GPE/LOC/FAC entity attached to the event (or to its object) through a preposition
ARGM       any other object of a preposition attached to the event
=========  =====================================================================================

An argument that is a named entity carries its entity label after the role (``ARG0_PERSON``), so
type-aware features (:func:`features.pairs.types.coarse_type`) still see a person. Pronoun arguments
are dropped: ``she`` says nothing about which event this is.
"""

from __future__ import annotations

from typing import Any

TIME_LABELS = frozenset({"DATE", "TIME"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
SPANS_KEY = "hybrid_argument_spans"
SUBJECT_DEPS = {"nsubj": "ARG0", "nsubjpass": "ARG1", "dobj": "ARG1", "obj": "ARG1"}


def _spans(doc: Any) -> tuple[dict[int, Any], dict[int, Any]]:
    """Token index -> its entity, and noun-chunk root index -> its chunk (computed once per doc)."""
    cached = doc.user_data.get(SPANS_KEY)
    if cached is None:
        ents = {i: ent for ent in doc.ents for i in range(ent.start, ent.end)}
        cached = doc.user_data[SPANS_KEY] = (ents, {c.root.i: c for c in doc.noun_chunks})
    return cached


def _phrase(tok: Any) -> tuple[str, str | None]:
    """The argument's text: its named entity, else its noun chunk (compounds and modifiers), else the word."""
    ents, chunks = _spans(tok.doc)
    if tok.i in ents:
        return ents[tok.i].text, ents[tok.i].label_
    if tok.i in chunks:
        words = [t for t in chunks[tok.i] if t.pos_ not in ("DET", "PRON")]  # "the police" -> "police"
        if words:
            return tok.doc[words[0].i : words[-1].i + 1].text, None
    return tok.text, None


def _root(doc: Any, start: int, end: int) -> Any | None:
    span = doc.char_span(start, end, alignment_mode="expand")
    toks = list(span) if span is not None else []
    for tok in toks:
        if tok.head is tok or not (start <= tok.head.idx < end):
            return tok
    return toks[0] if toks else None


def event_arguments(doc: Any, start: int, end: int) -> list[tuple[str, str]]:
    """(phrase, label) arguments of the event spanning characters ``[start, end)`` of a parsed ``doc``."""
    root = _root(doc, start, end)
    if root is None or not doc.has_annotation("DEP"):
        return []
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(tok: Any, role: str) -> None:
        if tok.pos_ == "PRON" or start <= tok.idx < end:
            return
        text, label = _phrase(tok)
        if label in TIME_LABELS:
            role = "TIME"
        elif label in PLACE_LABELS and role == "ARGM":
            role = "PLACE"
        if text.lower() in seen:
            return
        seen.add(text.lower())
        out.append((text, role if label is None or role in ("TIME", "PLACE") else f"{role}_{label}"))

    nominal = root.pos_ in ("NOUN", "PROPN")
    children = list(root.children)
    if root.dep_ == "conj" and not any(c.dep_ in ("nsubj", "nsubjpass") for c in children):
        children += [c for c in root.head.children if c.dep_ in ("nsubj", "nsubjpass")]  # "arrested and charged"
    for child in children:
        dep = child.dep_
        if dep in SUBJECT_DEPS:
            add(child, SUBJECT_DEPS[dep])
            # "arrested the actress in Malibu": the parser often hangs the event's place or time on its object
            for prep in (c for c in child.children if c.dep_ == "prep" and dep in ("dobj", "obj")):
                for obj in prep.children:
                    if obj.dep_ == "pobj" and obj.ent_type_ in TIME_LABELS | PLACE_LABELS:
                        add(obj, "ARGM")
        elif dep == "agent" or (dep == "poss" and nominal):
            for obj in [child] if dep == "poss" else [c for c in child.children if c.dep_ == "pobj"]:
                add(obj, "ARG0")
        elif dep == "prep":
            role = "ARG1" if nominal and child.lower_ == "of" else "ARGM"
            for obj in child.children:
                if obj.dep_ == "pobj":
                    add(obj, role)
        elif dep in ("npadvmod", "tmod") and child.ent_type_ in TIME_LABELS:
            add(child, "TIME")
    return out
