"""What every fusion method shares: weight checks, and assembling fused hits that keep a mention span.

A fused passage keeps the mention span of the component run that contributed most to its fused
score (among components that know a span), so a dense hit's mention and a sparse hit's mention are
never mixed up and a BM25-only passage-level run never erases a span another run found. The per-run
contributions are kept in ``Hit.extra["fusion"]`` for inspection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hybrid.core.errors import ConfigError
from hybrid.core.records import Hit, Rankings

#: qid -> docid -> [(run number, contribution, the run's hit)]
Contributions = dict[str, dict[str, list[tuple[int, float, Hit]]]]


def check_weights(runs: Sequence[Rankings], weights: Sequence[float] | None) -> list[float]:
    if not runs:
        raise ConfigError(None, None, "fusion needs at least one run")
    if weights is None:
        return [1.0] * len(runs)
    weights = [float(w) for w in weights]
    if len(weights) != len(runs):
        raise ConfigError(None, None, f"{len(weights)} fusion weight(s) for {len(runs)} run(s)")
    if any(not w >= 0 for w in weights) or not any(w > 0 for w in weights):
        raise ConfigError(None, None, f"fusion weights must be >= 0 and not all 0, got {weights}")
    return weights


def all_qids(runs: Sequence[Rankings]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        seen.update(dict.fromkeys(run))
    return list(seen)


def assemble(contributions: Contributions, score: Callable[[str, str, list[tuple[int, float, Hit]]], float],
             k: int | None) -> Rankings:
    """Fused run: ``score(qid, docid, contributions)`` per passage, best first, ties by docid, cut to k."""
    fused: Rankings = {}
    for qid, docs in contributions.items():
        hits = []
        for docid, parts in docs.items():
            spanned = [p for p in parts if p[2].mention_start is not None]
            best = max(spanned or parts, key=lambda p: (p[1], -p[0]))[2]
            hits.append(Hit(docid=docid, score=score(qid, docid, parts), mention_start=best.mention_start,
                            mention_end=best.mention_end, mention_text=best.mention_text, mention_id=best.mention_id,
                            extra={"fusion": {str(n): round(c, 6) for n, c, _ in parts}}))
        hits.sort(key=lambda h: (-h.score, h.docid))
        fused[qid] = hits if k is None else hits[:k]
    return fused
