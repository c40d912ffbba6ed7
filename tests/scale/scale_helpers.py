"""Helpers shared by the sharded build/search tests (imported by name: tests/scale is on sys.path)."""

from __future__ import annotations

import pytest


def needs_sharded_search() -> None:
    from indexes.sharded_index import has_global_stats_searcher

    if not has_global_stats_searcher():
        pytest.skip("the project jar (with io.hybrid.lucene.GlobalStatsSearcher) is not built or outdated")


def same_run(single: dict, sharded: dict, spans: bool = True) -> None:
    """Identical ids and order per query, scores within 1e-5, and (``spans``) the same best mention span."""
    assert set(single) == set(sharded)
    for qid, hits in single.items():
        got, want = [h.docid for h in sharded[qid]], [h.docid for h in hits]
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
            near = [(h.docid, h.score) for h in hits[max(0, at - 1) : at + 2]]
            seen = [(h.docid, h.score) for h in sharded[qid][max(0, at - 1) : at + 2]]
            raise AssertionError(f"{qid}: first difference at rank {at + 1} of {len(want)}/{len(got)}: "
                                 f"single {near}, sharded {seen}")
        for a, b in zip(hits, sharded[qid], strict=True):
            assert abs(a.score - b.score) <= 1e-5, (qid, a.docid, a.score, b.score)
            if spans:
                assert (a.mention_start, a.mention_end) == (b.mention_start, b.mention_end), (qid, a.docid)
