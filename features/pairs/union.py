"""Scores of a feature union (group ``union``): other retrievers' opinion of each candidate as LTR features.

A pipeline ``first >> (a ** b) >> ltr`` (:class:`hybrid.core.stage.FeatureUnion`) leaves ``first``'s
candidates in place and attaches, per hit, the score each union member gives the passage (``Hit.extra["union"]``,
None where the member did not retrieve it). The features are positional, as in PyTerrier: ``union_score_1``
is the first member's score (0 where it did not retrieve the passage) and ``union_found_1`` says whether it
did. A candidate list without a union gives 0 for all of them.
"""

from __future__ import annotations

from features.pairs.base import FeatureGroup, PairContext
from features.pairs.views import RecordView
from hybrid.core.records import UNION_KEY

#: Members of a union that get features (a union may have more; the rest are not features).
SLOTS = 4

GROUP = FeatureGroup("union", "the scores a feature union's retrievers (a ** b) give the candidate passage")


def _member(ctx: PairContext, slot: int) -> float | None:
    scores = ctx.hit.extra.get(UNION_KEY) or []
    return scores[slot] if slot < len(scores) else None


def _score(slot: int):
    def score(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        value = _member(ctx, slot)
        return float(value) if value is not None else 0.0

    return score


def _found(slot: int):
    def found(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        return 1.0 if _member(ctx, slot) is not None else 0.0

    return found


for _slot in range(SLOTS):
    GROUP.add(f"union_score_{_slot + 1}", _score(_slot),
              f"score union member {_slot + 1} gives the passage (0 where it did not retrieve it)")
    GROUP.add(f"union_found_{_slot + 1}", _found(_slot),
              f"1 when union member {_slot + 1} retrieved the passage in its top depth, else 0")
