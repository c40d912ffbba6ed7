"""Coreference-chain overlap (group ``chain``): do the two mentions' within-document chains share names?

A pronoun or a vague nominal (``the quake``, ``the actress``) says little by itself, but its
within-document chain often holds the name (``Yushu earthquake``, ``Tara Reid``). Sankepally et
al. index the chain as a field; here the two chains are compared directly. A chain's members are
the mention itself plus ``record.coref`` (the other strings of its chain); pronouns are dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from features.pairs.base import FeatureGroup, PairContext, dice, jaccard
from features.pairs.strings import mention_strings
from features.pairs.views import RecordView, normalise_phrase
from features.strings import char_trigrams, head_word, is_pronoun, token_set

GROUP = FeatureGroup("chain", "overlap between the query's and the candidate's within-document coreference chains")


@dataclass(frozen=True)
class Chain:
    phrases: frozenset[str]  # normalised member strings (no pronouns)
    words: frozenset[str]
    trigrams: frozenset[str]
    heads: frozenset[str]  # head-word stems
    size: int  # distinct members incl. pronouns


def chain_of(view: RecordView) -> Chain:
    try:  # memo(view, "chain", ...) written out: a few hundred thousand calls a run
        return view.memo["chain"]
    except KeyError:
        value = view.memo["chain"] = chain_of_members(frozenset((view.mention, *view.record.coref)))
        return value


@lru_cache(maxsize=65_536)
def chain_of_members(members: frozenset[str]) -> Chain:
    """The :class:`Chain` of a mention and its chain's other strings. A function of the set of strings (every part is a
    set, or the number of distinct lower-cased strings), so the records of one chain, whose member lists hold the
    same strings in different orders, share it; cached, since it is immutable."""
    named = [m for m in members if m.strip() and not is_pronoun(m)]
    phrases = {normalise_phrase(m) for m in named} - {""}
    words: set[str] = set()
    trigrams: set[str] = set()
    heads: set[str] = set()
    for m in named:
        words |= token_set(m)
        trigrams.update(char_trigrams(m))
        head = head_word(m)
        if head:
            heads.add(head[:5] if len(head) >= 4 else head)
    return Chain(frozenset(phrases), frozenset(words), frozenset(trigrams), frozenset(heads),
                 len({m.lower() for m in members if m.strip()}))


@GROUP.feature
def chain_size_query(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """log(1 + distinct strings in the query mention's chain): long chains are central, well-described mentions."""
    return math.log1p(chain_of(q).size)


@GROUP.feature
def chain_size_candidate(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """log(1 + distinct strings in the candidate mention's chain)."""
    return math.log1p(chain_of(c).size)


@GROUP.feature
def chain_phrase_jaccard(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Jaccard overlap of the two chains' normalised member strings (pronouns dropped)."""
    return jaccard(chain_of(q).phrases, chain_of(c).phrases)


@GROUP.feature
def chain_shared_phrase(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the chains share at least one normalised member string."""
    return float(bool(chain_of(q).phrases & chain_of(c).phrases))


@GROUP.feature
def chain_mention_cross(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if either mention's string is a member of the other mention's chain."""
    qp, cp = mention_strings(q).phrase, mention_strings(c).phrase
    return float((bool(qp) and qp in chain_of(c).phrases) or (bool(cp) and cp in chain_of(q).phrases))


@GROUP.feature
def chain_word_jaccard(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Jaccard overlap of all content words in the two chains."""
    return jaccard(chain_of(q).words, chain_of(c).words)


@GROUP.feature
def chain_char3_dice(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Dice overlap of the character trigrams of all chain members."""
    return dice(chain_of(q).trigrams, chain_of(c).trigrams)


@GROUP.feature
def chain_head_jaccard(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Jaccard overlap of the chains' head-word stems (``bombing``/``blast`` chains vs ``bombing``/``attack``)."""
    return jaccard(chain_of(q).heads, chain_of(c).heads)
