"""TREC-style evaluation with ir_measures (pytrec_eval underneath), overall and by query group."""

from __future__ import annotations

from collections.abc import Mapping

import ir_measures
from ir_measures import parse_measure

from hybrid.formats.qrels import Qrels
from hybrid.records import Run

DEFAULT_MEASURES = ("RR@10", "AP@10", "AP@50", "AP@100", "R@10", "R@50", "R@100", "R@500", "nDCG@10", "infAP",
                    "Judged@10")


def _run_dict(run: Run) -> dict[str, dict[str, float]]:
    return {qid: {h.docid: float(h.score) for h in hits} for qid, hits in run.items()}


def per_query(qrels: Qrels, run: Run, measures: tuple[str, ...] = DEFAULT_MEASURES) -> dict[str, dict[str, float]]:
    """measure -> qid -> value, for every judged query (a query with no hits scores 0)."""
    parsed = [parse_measure(m) for m in measures]
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    names = {str(p): m for p, m in zip(parsed, measures, strict=True)}
    run_d = _run_dict(run)
    for qid in qrels:
        run_d.setdefault(qid, {})
    for metric in ir_measures.iter_calc(parsed, qrels, run_d):
        out[names[str(metric.measure)]][metric.query_id] = float(metric.value)
    for m in measures:  # queries with an empty run get no row from pytrec_eval
        for qid in qrels:
            out[m].setdefault(qid, 0.0)
    return out


def aggregate(values: Mapping[str, float], qids: list[str] | None = None) -> float:
    keys = list(values) if qids is None else [q for q in qids if q in values]
    return sum(values[q] for q in keys) / len(keys) if keys else 0.0


def evaluate(qrels: Qrels, run: Run, measures: tuple[str, ...] = DEFAULT_MEASURES,
             groups: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
    """group -> measure -> mean. ``groups`` maps qid -> group name; "all" is always present.

    Only judged queries count; run queries missing from the qrels are reported by the caller.
    """
    pq = per_query(qrels, run, measures)
    judged = sorted(qrels)
    table = {"all": {m: aggregate(pq[m], judged) for m in measures}}
    if groups:
        for group in sorted(set(groups.values())):
            qids = [q for q in judged if groups.get(q) == group]
            table[group] = {m: aggregate(pq[m], qids) for m in measures}
            table[group]["#q"] = len(qids)
    table["all"]["#q"] = len(judged)
    return table
