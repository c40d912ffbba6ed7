"""Mention candidates for passages that carry no annotation.

With a spaCy pipeline that has a tagger: verbs (not auxiliaries) and event nominals are event
candidates, named entities are entity candidates. Offline (no spaCy model on these machines) a
heuristic stands in: entity candidates are the heuristic NER spans (names, dates, numbers); event
candidates are words that look like event triggers (a small built-in lexicon of news events plus
English inflection and nominalisation suffixes). Recall matters more than precision here: a spurious
candidate costs an index entry, a missed one makes a passage unreachable by the mention fields.
"""

from __future__ import annotations

import re

from features.ner import EntitySpan
from features.strings import FUNCTION_WORDS, PRONOUNS
from hybrid.records import ENTITY, EVENT, Mention

EVENT_LEXICON = frozenset(
    """attack attacks attacked bomb bombing bombed blast explosion exploded shooting shot shoot kill
    kills killed killing murder murdered die died death deaths dead injure injured wound wounded arrest
    arrested arrests charge charged convict convicted sentence sentenced jail jailed trial fire fired
    sack sacked resign resigned quit hire hired appoint appointed name named elect elected election
    vote voted win won lose lost defeat defeated beat play played score scored match game final
    earthquake quake tsunami storm hurricane flood floods crash crashed collision accident sink sank
    hit hits struck strike strikes rescue rescued evacuate evacuated launch launched release released
    announce announced unveil unveiled acquire acquired acquisition buy bought purchase sell sold
    merger deal agreement sign signed meet met meeting summit visit visited talk talks said say says
    told tell report reported reports claim claimed deny denied confirm confirmed host hosted hosting
    award awarded ceremony nominate nominated nomination marry married wedding divorce born birth
    rehab enter entered check checked leave left return returned escape escaped flee fled raid raided
    seize seized protest protests riot war invasion invade invaded capture captured surrender
    test tests tested fail failed crisis collapse collapsed outbreak spread spill leak recall
    recalled ban banned suspend suspended investigate investigation probe injury surgery""".split()
)
EVENT_SUFFIXES = ("ed", "ing", "tion", "sion", "ment", "ure", "al")
WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*")


def _looks_like_event(word: str) -> bool:
    low = word.lower()
    if low in EVENT_LEXICON:
        return True
    if word[:1].isupper() or low in FUNCTION_WORDS or low in PRONOUNS or len(low) < 5 or not low.isalpha():
        return False
    return low.endswith(EVENT_SUFFIXES)


def _event(start: int, end: int, text: str) -> Mention:
    return Mention(start, end, text, kind=EVENT, tag="AUTO_EVENT", source="auto")


def heuristic_mentions(text: str, entities: list[EntitySpan]) -> list[Mention]:
    found: list[Mention] = []
    for ent in entities:
        found.append(Mention(ent.start, ent.end, ent.text, kind=ENTITY, tag=f"AUTO_{ent.label}", source="auto"))
    taken = [(e.start, e.end) for e in entities]
    for match in WORD_RE.finditer(text):
        if any(s <= match.start() < e for s, e in taken):
            continue
        if _looks_like_event(match.group()):
            found.append(_event(match.start(), match.end(), match.group()))
    return sorted(found, key=lambda m: (m.start, m.end))


def spacy_mentions(doc) -> list[Mention]:
    """Candidates from a parsed spaCy ``Doc`` (needs a tagger; uses NER when present)."""
    found = [
        Mention(e.start_char, e.end_char, e.text, kind=ENTITY, tag=f"AUTO_{e.label_}", source="auto") for e in doc.ents
    ]
    taken = [(m.start, m.end) for m in found]
    for tok in doc:
        if any(s <= tok.idx < e for s, e in taken):
            continue
        is_event = tok.pos_ == "VERB" or (tok.pos_ == "NOUN" and _looks_like_event(tok.text))
        if is_event:
            found.append(_event(tok.idx, tok.idx + len(tok.text), tok.text))
    return sorted(found, key=lambda m: (m.start, m.end))
