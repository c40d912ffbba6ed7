"""First-stage rank and score (group ``first_stage``): what the retriever that built the candidate list thought.

Scores of different queries live on different scales (BM25 grows with query length), so besides
the raw score there are query-relative views: the ratio to and the gap from the top score.
"""

from __future__ import annotations

import math

from features.pairs.base import FeatureGroup, PairContext
from features.pairs.views import RecordView

GROUP = FeatureGroup("first_stage", "first-stage rank and score, raw and relative to the query's top hit")


@GROUP.feature
def fs_score(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """The first-stage score of the candidate passage."""
    return float(ctx.hit.score)


@GROUP.feature
def fs_log_rank(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """log of the 1-based first-stage rank."""
    return math.log(ctx.rank)


@GROUP.feature
def fs_reciprocal_rank(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 / first-stage rank."""
    return 1.0 / ctx.rank


@GROUP.feature
def fs_score_ratio(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Score / the query's top score (1 for the top hit; 0 when the top score is not positive)."""
    top = ctx.query.top_score
    return float(ctx.hit.score) / top if top > 0 else 0.0


@GROUP.feature
def fs_score_gap(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """The query's top score minus this score."""
    return ctx.query.top_score - float(ctx.hit.score)
