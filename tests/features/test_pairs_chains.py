"""Coreference-chain overlap features on hand-made pairs."""

from __future__ import annotations

import math

import pytest

from features.annotate import MentionRecord
from features.pairs import chains as C
from ltr.batch import standalone_pair


def rec(mention: str, coref: list[str], rid: str = "q:0#0") -> MentionRecord:
    pid = rid.split("#")[0]
    return MentionRecord(id=rid, passage_id=pid, doc_id=pid.split(":")[0], start=0, end=len(mention),
                         mention=mention, kind="entity", tag="HUMAN_PART_PER", source="gold", chain="c0",
                         context=mention, coref=coref)


def value(name: str, q: MentionRecord, c: MentionRecord) -> float:
    ctx = standalone_pair(q, c)
    return C.GROUP.value(name, ctx.query.record, ctx.candidate, ctx)


def test_pronoun_query_matches_through_its_chain():
    she = rec("she", ["Tara Reid", "the actress", "her"])
    actress = rec("the actress", ["Tara Reid"], "c:0#0")
    lohan = rec("the actress", ["Lindsay Lohan"], "c:0#0")
    assert value("chain_shared_phrase", she, actress) == 1.0
    # {tara reid, actress} vs {actress, tara reid}: pronouns are not members
    assert value("chain_phrase_jaccard", she, actress) == 1.0
    assert value("chain_phrase_jaccard", she, lohan) == pytest.approx(1 / 3)
    assert value("chain_word_jaccard", she, actress) > value("chain_word_jaccard", she, lohan)
    assert value("chain_char3_dice", she, actress) > value("chain_char3_dice", she, lohan)


def test_mention_in_other_chain():
    q = rec("Reid", ["Tara Reid"])
    assert value("chain_mention_cross", q, rec("Tara Reid", [], "c:0#0")) == 1.0
    assert value("chain_mention_cross", q, rec("Lohan", [], "c:0#0")) == 0.0


def test_chain_sizes_and_heads():
    q = rec("bombing", ["blast", "attack", "it"])
    c = rec("attacks", ["explosion"], "c:0#0")
    assert value("chain_size_query", q, c) == pytest.approx(math.log1p(4))
    assert value("chain_size_candidate", q, c) == pytest.approx(math.log1p(2))
    # head stems {bombi, blast, attac} vs {attac, explo}
    assert value("chain_head_jaccard", q, c) == pytest.approx(1 / 4)
    assert value("chain_shared_phrase", q, c) == 0.0


def test_the_records_of_one_chain_share_its_chain_whatever_the_order_of_their_strings():
    """A chain is a function of the set of its strings (a record's coref lists the others, in its own order)."""
    she = rec("she", ["Tara Reid", "the actress", "her"])
    reid = rec("Tara Reid", ["she", "the actress", "her", "she"], "c:0#0")
    ctx = standalone_pair(she, reid)
    assert C.chain_of(ctx.query.record) is C.chain_of(ctx.candidate)
    assert C.chain_of(ctx.candidate).size == 4 and C.chain_of(ctx.candidate).phrases == {"tara reid", "actress"}
