"""Mention candidates for passages that carry no annotation (or with ``--annotation auto``, every passage).

``rule_mentions`` (the default ``rules`` detector) reads one spaCy parse (tagger, parser, NER) of the
passage: named entities, noun chunks and heads and pronouns are entity candidates; verbs (not
auxiliaries), event nominals and other nouns are event candidates (see its docstring; measured in
``benchmarks/detection.py``). ``heuristic_mentions`` needs no model: entity candidates are the
heuristic NER spans (names, dates, numbers), event candidates words that look like event triggers (a
small lexicon of news events plus inflection and nominalisation suffixes). Recall matters more than
precision here: a spurious candidate costs an index entry, a missed one makes a passage unreachable
by the mention fields.
"""

from __future__ import annotations

import re

from features.ner import EntitySpan
from features.strings import FUNCTION_WORDS, PRONOUNS
from hybrid.core.records import ENTITY, EVENT, Mention

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


#: Derivational suffixes of event nominals (``explosion``, ``arrival``, ``agreement``, ``failure``...).
NOMINAL_SUFFIXES = ("tion", "sion", "ment", "ure", "al", "ance", "ence", "ing", "ery", "ade")
#: Names and nouns of (news) events that neither the parser nor the suffixes reveal.
EVENT_NAMES = frozenset(
    """oscar oscars emmy emmys grammy grammys award awards olympics playoff playoffs championship cup
    dui dwi manslaughter homicide piracy suspicion bail probation custody party show job""".split()
)
#: Entity labels whose span is an event rather than a participant (``the Oscars``, ``World War II``).
EVENT_ENTITY_LABELS = frozenset({"EVENT"})
#: Labels ECB+ annotates with their preposition (``in 2007``, ``on Friday``, ``in Queens``).
PREP_LABELS = frozenset({"DATE", "TIME", "GPE", "LOC", "FAC"})
DOC_VERB_LEMMAS = "hybrid_verb_lemmas"  # Doc.user_data key: verb lemmas of the passage's whole document


def _span(doc, start: int, end: int, kind: str, tag: str, text: str | None = None) -> Mention:
    """A mention over tokens ``[start, end)`` of ``doc`` (``text``: ``doc.text``, which spaCy rebuilds per call)."""
    first, last = doc[start], doc[end - 1]
    a, b = first.idx, last.idx + len(last.text)
    return Mention(a, b, (doc.text if text is None else text)[a:b], kind=kind, tag=tag, source="auto")


def lemma(tok) -> str:
    """The token's lemma, or a crude stem when the pipeline runs without its lemmatizer (the ``rules``
    detector excludes it: 20% of the parse time for the tags of a few nominals)."""
    found = tok.lemma_.lower()
    if found:
        return found
    word = tok.lower_
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def is_event_nominal(tok, verb_lemmas: set[str] | frozenset[str] = frozenset()) -> bool:
    """A noun that names an event: the lexicon/suffix heuristic, a derivational suffix, or a lemma that
    is also used as a verb in the same document (``the attack`` ... ``attacked``)."""
    if tok.pos_ not in ("NOUN", "PROPN") or len(tok.text) < 3:
        return False
    base, low = lemma(tok), tok.text.lower()
    if base in EVENT_LEXICON or low in EVENT_LEXICON or low in EVENT_NAMES or base in verb_lemmas:
        return True
    return tok.pos_ == "NOUN" and len(base) >= 5 and base.endswith(NOMINAL_SUFFIXES)


def _strip(doc, start: int, end: int) -> int:
    """First token of ``[start, end)`` after leading determiners and possessives (``the Navy`` -> ``Navy``)."""
    while start < end - 1 and (doc[start].pos_ == "DET" or doc[start].tag_ == "PRP$"):
        start += 1
    return start


def rule_mentions(doc, particles: bool = True, verb_preps: bool = False, nouns: bool = True) -> list[Mention]:
    """Entity and event candidates from one parsed passage (tagger + parser + NER of one spaCy parse).

    Entities: named entities (also without a leading determiner, with a following possessive ``'s``
    and, for times and places, with their governing preposition, as ECB+ marks ``in 2007``), the noun
    chunks (also without determiners) and their head token (ECB+ marks heads: ``her rep`` -> ``rep``),
    pronouns tagged ``AUTO_PRON`` (chains and queries can treat them apart). Events: verbs (not
    auxiliaries), also with their particle (``called off``; ``particles``) or adjacent preposition
    (``checked into``; ``verb_preps``), participle/predicative adjectives, event nominals
    (:func:`is_event_nominal`, tag ``AUTO_EVENT``), EVENT entities and, with ``nouns``, every other
    common noun (tag ``AUTO_EVENT_NOUN``: ECB+ marks ``health``, ``stint``, ``loss`` as events, and no
    rule tells them from participants; a noun then is both an entity and an event candidate).
    Candidates overlap on purpose: recall matters more than precision (a spurious candidate costs an
    index entry, a missed one hides a passage). The defaults are the measured best on ECB+ dev
    (``benchmarks/results/detection.md``): particles add exact matches at no precision cost, verb +
    preposition adds 1 point of exact recall for 8 points of precision.
    """
    verb_lemmas = doc.user_data.get(DOC_VERB_LEMMAS) or {lemma(t) for t in doc if t.pos_ == "VERB"}
    found: dict[tuple[int, int, str], Mention] = {}
    text = doc.text

    def add(start: int, end: int, kind: str, tag: str) -> None:
        m = _span(doc, start, end, kind, tag, text)
        found.setdefault((m.start, m.end, kind), m)

    ent_tokens = set()
    for ent in doc.ents:
        kind = EVENT if ent.label_ in EVENT_ENTITY_LABELS else ENTITY
        tag = f"AUTO_{ent.label_}"
        start = _strip(doc, ent.start, ent.end)
        add(ent.start, ent.end, kind, tag)
        add(start, ent.end, kind, tag)
        ent_tokens.update(range(ent.start, ent.end))
        if ent.end < len(doc) and doc[ent.end].tag_ == "POS":
            add(start, ent.end + 1, kind, tag)
        if ent.label_ in PREP_LABELS and ent.start > 0 and doc[ent.start - 1].dep_ == "prep":
            add(ent.start - 1, ent.end, kind, tag)
        if any(is_event_nominal(t, verb_lemmas) for t in ent if t.text.lower() in EVENT_NAMES):
            add(start, ent.end, EVENT, "AUTO_EVENT")  # the Oscars, the Academy Awards
    for chunk in doc.noun_chunks:
        head = chunk.root
        if head.pos_ == "PRON":
            add(head.i, head.i + 1, ENTITY, "AUTO_PRON")
            continue
        add(chunk.start, chunk.end, ENTITY, "AUTO_NP")
        add(_strip(doc, chunk.start, chunk.end), chunk.end, ENTITY, "AUTO_NP")
        if head.i not in ent_tokens:
            add(head.i, head.i + 1, ENTITY, "AUTO_NP")
    for tok in doc:
        if tok.pos_ == "PRON" and tok.text.lower() in PRONOUNS:
            add(tok.i, tok.i + 1, ENTITY, "AUTO_PRON")
        if tok.i in ent_tokens and tok.text.lower() not in EVENT_NAMES:
            continue
        if tok.pos_ == "VERB" or (tok.pos_ == "ADJ" and (tok.tag_ in ("VBN", "VBG") or tok.dep_ == "acomp")):
            add(tok.i, tok.i + 1, EVENT, "AUTO_EVENT")
            nxt = tok.i + 1
            if nxt < len(doc) and doc[nxt].head.i == tok.i and (
                (particles and doc[nxt].dep_ == "prt") or (verb_preps and doc[nxt].dep_ == "prep")
            ):
                add(tok.i, nxt + 1, EVENT, "AUTO_EVENT")
        elif is_event_nominal(tok, verb_lemmas):
            add(tok.i, tok.i + 1, EVENT, "AUTO_EVENT")
        elif nouns and tok.pos_ == "NOUN":
            add(tok.i, tok.i + 1, EVENT, "AUTO_EVENT_NOUN")
    return sorted(found.values(), key=lambda m: (m.start, m.end, m.kind or ""))
