"""Reciprocal rank fusion (Cormack et al. 2009): ``sum_i w_i / (k + rank_i(d))``, k = 60.

Ranks only, so no normalisation is needed; a document absent from a run gets nothing from it.
Ranks follow the run writer's order (score, then docid), so fusion is deterministic under ties.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid.core.formats.runs import sorted_hits
from hybrid.core.params import RRF_K
from hybrid.core.records import Rankings
from hybrid.fusion.common import Contributions, all_qids, assemble, check_weights

__all__ = ["RRF_K", "rrf"]


def rrf(runs: Sequence[Rankings], weights: Sequence[float] | None = None, k: int | None = None,
        rrf_k: int = RRF_K) -> Rankings:
    """Fuse ``runs`` by (weighted) reciprocal rank; ``k`` cuts the fused lists."""
    weights = check_weights(runs, weights)
    contributions: Contributions = {}
    for qid in all_qids(runs):
        docs = contributions.setdefault(qid, {})
        for n, (run, w) in enumerate(zip(runs, weights, strict=True)):
            if w == 0:
                continue
            for r, hit in enumerate(sorted_hits(run.get(qid, [])), start=1):
                docs.setdefault(hit.docid, []).append((n, w / (rrf_k + r), hit))
    return assemble(contributions, lambda q, d, parts: sum(c for _, c, _ in parts), k)
