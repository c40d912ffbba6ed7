"""Mention-string pair features on hand-made pairs."""

from __future__ import annotations

import pytest

from features.annotate import MentionRecord
from features.pairs import strings as S
from ltr.batch import standalone_pair


def rec(mention: str, context: str | None = None, kind: str = "entity", tag: str | None = None, rid: str = "p:0#0",
        **kw) -> MentionRecord:
    context = context if context is not None else mention
    start = context.find(mention)
    pid = rid.split("#")[0]
    return MentionRecord(id=rid, passage_id=pid, doc_id=pid.split(":")[0], start=max(start, 0),
                         end=max(start, 0) + len(mention), mention=mention, kind=kind, tag=tag, source="gold",
                         chain=None, context=context, **kw)


def value(name: str, q: MentionRecord, c: MentionRecord, **kw) -> float:
    ctx = standalone_pair(q, c, **kw)
    return S.GROUP.value(name, ctx.query.record, ctx.candidate, ctx)


def test_exact_match_ignores_case_and_function_words():
    assert value("mention_exact", rec("the Oscars"), rec("oscars", rid="c:0#0")) == 1.0
    assert value("mention_exact", rec("Oscars"), rec("Emmys", rid="c:0#0")) == 0.0


def test_token_jaccard_and_containment():
    q, c = rec("Tara Reid"), rec("Reid", rid="c:0#0")
    assert value("mention_token_jaccard", q, c) == pytest.approx(0.5)
    assert value("mention_token_containment", q, c) == 1.0
    assert value("mention_token_jaccard", q, rec("Lindsay Lohan", rid="c:0#0")) == 0.0


def test_char_trigrams_tolerate_spelling_variants():
    close = value("mention_char3_dice", rec("Qinghai"), rec("Quinghai", rid="c:0#0"))
    far = value("mention_char3_dice", rec("Qinghai"), rec("Utah", rid="c:0#0"))
    assert close > 0.5 > far


def test_acronym_match():
    who = rec("WHO")
    assert value("mention_acronym", who, rec("World Health Organization", rid="c:0#0")) == 1.0
    assert value("mention_acronym", who, rec("World Bank", rid="c:0#0")) == 0.0


def test_head_word_and_stem():
    assert value("mention_head", rec("the deadly earthquake", kind="event"),
                 rec("earthquake", kind="event", rid="c:0#0")) == 1.0
    assert value("mention_head", rec("attacked", kind="event"), rec("attack", kind="event", rid="c:0#0")) == 0.0
    assert value("mention_head_stem", rec("attacked", kind="event"), rec("attack", kind="event", rid="c:0#0")) == 1.0
    assert value("mention_head_stem", rec("quake", kind="event"), rec("earthquake", kind="event", rid="c:0#0")) == 0.0


def test_length_ratio_and_pronouns():
    assert value("mention_length_ratio", rec("Tara Reid"), rec("Reid", rid="c:0#0")) == pytest.approx(0.5)
    assert value("mention_query_pronoun", rec("she"), rec("Reid", rid="c:0#0")) == 1.0
    assert value("mention_candidate_pronoun", rec("she"), rec("Reid", rid="c:0#0")) == 0.0


def test_passage_level_best_match_sees_other_mentions():
    q = rec("earthquake", kind="event")
    cand = rec("struck", "A strong earthquake struck Yushu.", kind="event", rid="c:0#1")
    other = rec("earthquake", "A strong earthquake struck Yushu.", kind="event", rid="c:0#0")
    assert value("mention_char3_dice", q, cand) < 0.2
    assert value("passage_best_char3", q, cand, candidate_passage=[other]) == 1.0
    assert value("passage_any_head", q, cand, candidate_passage=[other]) == 1.0
    assert value("passage_any_head", q, cand) == 0.0


def test_passage_contains_mention_words():
    q = rec("Bank of America")
    assert value("passage_contains_mention", q, rec("it", "Shares of Bank of America fell.", rid="c:0#0")) == 1.0
    assert value("passage_contains_mention", q, rec("it", "Shares of America's bank fell.", rid="c:0#0")) == 0.0


def test_passage_maxima_read_the_records_kinds_when_asked_and_equal_the_plain_dice():
    """The passage's trigrams and head stems are memoised on it, its records' kinds are not: a record whose kind is
    filled in after a first pair (the query's own record, in query_context) counts from then on; the best trigram
    Dice is the plain dice of the same-kind records."""
    from features.pairs.base import dice

    q = rec("earthquake", kind="event")
    cand = rec("struck", "A strong earthquake struck Yushu.", kind="event", rid="c:0#1")
    quake = rec("earthquakes", "A strong earthquake struck Yushu.", kind=None, rid="c:0#0")
    yushu = rec("Yushu", "A strong earthquake struck Yushu.", kind="entity", rid="c:0#2")
    ctx = standalone_pair(q, cand, candidate_passage=[quake, yushu])
    same_kind = [r for r in ctx.passage.records if r.kind in ("event", None)]
    best = max(dice(S.mention_strings(ctx.query.record).trigrams, S.mention_strings(r).trigrams) for r in same_kind)
    assert S.GROUP.value("passage_best_char3", ctx.query.record, ctx.candidate, ctx) == best > 0.5
    assert S.GROUP.value("passage_any_head", ctx.query.record, ctx.candidate, ctx) == 1.0  # stem "earth"
    quake.kind = "entity"  # now of the other kind: no longer counted
    without = max(dice(S.mention_strings(ctx.query.record).trigrams, S.mention_strings(r).trigrams)
                  for r in ctx.passage.records if r.kind in ("event", None))
    assert S.GROUP.value("passage_best_char3", ctx.query.record, ctx.candidate, ctx) == without < best
    assert S.GROUP.value("passage_any_head", ctx.query.record, ctx.candidate, ctx) == 0.0
