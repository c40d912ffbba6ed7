"""Mention-string features (group ``string``): do the two mention strings look like the same name?

The fields of Sankepally et al.'s CMR collection (mention string, trigrams, acronym) as pair
features, plus head-word agreement (``attack`` ~ ``attacked``) and passage-level maxima, which let
the ranker recover when the first stage matched the wrong mention of a relevant passage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from features.annotate import MentionRecord
from features.pairs.base import FeatureGroup, PairContext, dice, jaccard, overlap_coefficient
from features.pairs.views import PassageView, RecordView, memo, normalise_phrase
from features.strings import acronyms, char_trigrams, head_word, is_pronoun, token_set, tokens

GROUP = FeatureGroup("string", "mention-string similarity: exact, tokens, trigrams, acronym, head word")


@dataclass(frozen=True)
class MentionStrings:
    """What the string features need of one mention, computed once per record."""

    phrase: str
    words: frozenset[str]
    n_words: int
    trigrams: frozenset[str]
    acronyms: frozenset[str]
    head: str
    pronoun: bool

    @property
    def head_stem(self) -> str:
        return self.head[:5] if len(self.head) >= 4 else self.head


def mention_strings(view: RecordView) -> MentionStrings:
    # memo(view, "strings", ...) written out: called a few million times a run, and the lambda cost more than the
    # lookup
    try:
        return view.memo["strings"]
    except KeyError:
        value = view.memo["strings"] = strings_of(view.mention)
        return value


@lru_cache(maxsize=65_536)
def strings_of(text: str) -> MentionStrings:
    """The :class:`MentionStrings` of a mention text. Cached (it is immutable, and a function of the text alone):
    the same mention strings (``it``, ``the company``, a name) recur across the records of every passage."""
    return MentionStrings(
        phrase=normalise_phrase(text), words=frozenset(token_set(text)), n_words=len(tokens(text)),
        trigrams=frozenset(char_trigrams(text)), acronyms=frozenset(acronyms(text)), head=head_word(text),
        pronoun=is_pronoun(text),
    )


def _passage_strings(passage: PassageView) -> tuple[tuple[MentionRecord, frozenset[str], str], ...]:
    """Each mention record of the passage with its trigrams and head-word stem, memoised on the passage (the records'
    kinds are read when used: the query's own record may get its kind after the passage was viewed)."""
    try:
        return passage.memo["record_strings"]
    except KeyError:
        strings = [(r.record, mention_strings(r)) for r in passage.records]
        value = passage.memo["record_strings"] = tuple((record, s.trigrams, s.head_stem) for record, s in strings)
        return value


@GROUP.feature
def mention_exact(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the case-folded content words of both mentions are identical (``the Oscars`` = ``Oscars``)."""
    a, b = mention_strings(q), mention_strings(c)
    return float(bool(a.phrase) and a.phrase == b.phrase)


@GROUP.feature
def mention_token_jaccard(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Jaccard overlap of the two mentions' content-word sets."""
    return jaccard(mention_strings(q).words, mention_strings(c).words)


@GROUP.feature
def mention_token_containment(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Share of the shorter mention's content words found in the other (``Reid`` in ``Tara Reid`` = 1)."""
    return overlap_coefficient(mention_strings(q).words, mention_strings(c).words)


@GROUP.feature
def mention_char3_dice(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Dice overlap of character trigrams (robust to inflection and spelling: ``Qinghai``/``Quinghai``)."""
    return dice(mention_strings(q).trigrams, mention_strings(c).trigrams)


@GROUP.feature
def mention_acronym(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the mentions share an acronym key (``WHO`` ~ ``World Health Organization``)."""
    return float(bool(mention_strings(q).acronyms & mention_strings(c).acronyms))


@GROUP.feature
def mention_head(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the head words (last content word) are identical."""
    a, b = mention_strings(q).head, mention_strings(c).head
    return float(bool(a) and a == b)


@GROUP.feature
def mention_head_stem(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the head words share their first five letters (``attacked`` ~ ``attack``, ``quake`` != ``earthquake``)."""
    a, b = mention_strings(q).head_stem, mention_strings(c).head_stem
    return float(bool(a) and a == b)


@GROUP.feature
def mention_length_ratio(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Shorter / longer mention length in words (1 = same length)."""
    a, b = mention_strings(q).n_words, mention_strings(c).n_words
    return min(a, b) / max(a, b) if a and b else 0.0


@GROUP.feature
def mention_query_pronoun(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the query mention is a pronoun (string features then say little; context must decide)."""
    return float(mention_strings(q).pronoun)


@GROUP.feature
def mention_candidate_pronoun(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the candidate mention is a pronoun."""
    return float(mention_strings(c).pronoun)


@GROUP.feature
def passage_best_char3(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Best trigram Dice between the query mention and any same-kind mention of the candidate passage."""
    qt, kind = mention_strings(q).trigrams, q.kind
    if not qt:  # every Dice is 0
        return 0.0
    n = len(qt)
    # The max of dice(qt, trigrams) over the same-kind records, in one loop (once per pair, over every record of the
    # passage): the same operations as dice, and the same maximum, as every Dice is at least 0 (a record without
    # trigrams has 0).
    best = 0.0
    for record, trigrams, _ in _passage_strings(ctx.passage):
        if trigrams and (kind is None or record.kind in (kind, None)):
            value = 2.0 * len(qt & trigrams) / (n + len(trigrams))
            if value > best:
                best = value
    return best


@GROUP.feature
def passage_any_head(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if any same-kind mention of the candidate passage has the query mention's head-word stem."""
    stem, kind = mention_strings(q).head_stem, q.kind
    return float(bool(stem) and any(head == stem for record, _, head in _passage_strings(ctx.passage)
                                    if kind is None or record.kind in (kind, None)))


@GROUP.feature
def passage_contains_mention(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the query mention's content words occur contiguously among the candidate passage's content words."""
    phrase = mention_strings(q).phrase
    if not phrase:
        return 0.0
    text = memo(ctx.passage, "phrase_text", lambda: f" {normalise_phrase(ctx.passage.text)} ")
    return float(f" {phrase} " in text)
