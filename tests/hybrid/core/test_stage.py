"""The stage interface's one tail rule: a reranker that rescores the head keeps the rest below it, in order,
with spans and extras."""

from __future__ import annotations

from hybrid.core.records import Hit
from hybrid.core.stage import Reranker, tail_below


def test_tail_goes_below_the_head_in_order_with_spans_and_extras():
    head = [Hit("p1", 3.0), Hit("p2", 0.5)]
    tail = [Hit("p3", 9.0, 4, 9, "quake", "p3#4-9", {"first_stage_rank": 3}), Hit("p4", 8.0)]
    out = tail_below(head, tail)
    assert [h.docid for h in out] == ["p1", "p2", "p3", "p4"]
    assert [h.score for h in out] == [3.0, 0.5, -0.5, -1.5]
    assert (out[2].mention_start, out[2].mention_end, out[2].mention_text, out[2].extra) == (
        4, 9, "quake", {"first_stage_rank": 3})
    assert tail[0].score == 9.0  # inputs untouched


def test_empty_head_puts_the_tail_below_zero():
    assert [h.score for h in Reranker.keep_tail([], [Hit("a", 5.0), Hit("b", 4.0)])] == [-1.0, -2.0]
