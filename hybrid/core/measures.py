"""TREC-style evaluation with ir_measures (pytrec_eval underneath), overall and by query group."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping

import ir_measures
from ir_measures import parse_measure

from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import Qrels
from hybrid.core.records import Rankings

DEFAULT_MEASURES = ("RR@10", "AP@10", "AP@50", "AP@100", "R@10", "R@50", "R@100", "R@500", "nDCG@10", "infAP",
                    "Judged@10")


MEASURE_HELP = ("give an ir_measures name (RR@10, AP@100, nDCG@10, P@10, R@100, infAP, Judged@10, ...) or a "
                "trec_eval name (map, recip_rank, ndcg_cut_10, P_10, recall_100, map_cut_100, ...)")


def measure_objects(name: str, option: str = "--measures") -> list:
    """The ir_measures measures a name stands for: ir_measures syntax first, then trec_eval's names."""
    try:
        return [parse_measure(name)]
    except Exception:  # ir_measures raises NameError, ValueError, SyntaxError ... for names it does not know
        pass
    try:
        with contextlib.redirect_stdout(sys.stderr):  # parse_trec_measure prints the names it skips
            measures = ir_measures.parse_trec_measure(name)
    except Exception:
        measures = []
    if not measures:
        raise InputError(None, None, f"{option}: unknown measure {name!r}; {MEASURE_HELP}")
    return measures


def parse_measures(names: Iterable[str], option: str = "--measures") -> tuple[str, ...]:
    """ir_measures or trec_eval names -> canonical ir_measures names (``map`` -> ``AP``), in order, no repeats."""
    out: list[str] = []
    for name in names:
        for measure in measure_objects(name, option):
            if str(measure) not in out:
                out.append(str(measure))
    return tuple(out)


def _single(name: str):
    measures = measure_objects(name)
    if len(measures) != 1:
        raise InputError(None, None, f"--measures: {name!r} stands for {len(measures)} measures; name them one by "
                                     "one")
    return measures[0]


def _run_dict(run: Rankings) -> dict[str, dict[str, float]]:
    return {qid: {h.docid: float(h.score) for h in hits} for qid, hits in run.items() if hits}


def per_query(qrels: Qrels, run: Rankings, measures: tuple[str, ...] = DEFAULT_MEASURES) -> dict[str, dict[str, float]]:
    """measure -> qid -> value, for every judged query (a query with no hits scores 0, Judged@k included).

    ``measures`` are ir_measures names or trec_eval names that stand for one measure (``map``, ``P_10``).
    """
    parsed = [_single(m) for m in measures]
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    names: dict[str, list[str]] = {}
    for p, m in zip(parsed, measures, strict=True):
        names.setdefault(str(p), []).append(m)
    # Queries without hits are left out of the run handed to ir_measures (its Judged@k divides by the number
    # of hits) and score 0 below, as trec_eval -c scores them.
    run_d = {qid: hits for qid, hits in _run_dict(run).items() if qid in qrels}
    if run_d:
        for metric in ir_measures.iter_calc(list({str(p): p for p in parsed}.values()), qrels, run_d):
            for m in names[str(metric.measure)]:
                if metric.query_id in qrels:
                    out[m][metric.query_id] = float(metric.value)
    for m in measures:  # judged queries missing from the run get no row from pytrec_eval
        for qid in qrels:
            out[m].setdefault(qid, 0.0)
    return out


def aggregate(values: Mapping[str, float], qids: list[str] | None = None) -> float:
    keys = list(values) if qids is None else [q for q in qids if q in values]
    return sum(values[q] for q in keys) / len(keys) if keys else 0.0


def group_qids(qids: Iterable[str], groups: Mapping[str, str], missing: str | None = None,
               names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """The queries of each group, for means by group (a query's kind): ``"all"`` (every query of ``qids``), then
    each group in sorted order, its queries in the order of ``qids``. ``groups`` maps qid -> group; a query it does
    not name is in group ``missing`` (in none when None). ``names``: the groups listed (default: those of ``qids``;
    a group named here is listed even with no query). The one grouping of ``hybrid.eval``'s tables, LTR's
    means by kind, ``hybrid.compare`` and ``hybrid.report``."""
    qids = list(qids)
    group_of = {q: groups.get(q, missing) for q in qids}
    listed = {g for g in group_of.values() if g is not None} if names is None else set(names)
    out = {"all": qids}
    for group in sorted(listed):
        out[group] = [q for q in qids if group_of[q] == group]
    return out


def group_means(values: Mapping[str, float], qids: Iterable[str], groups: Mapping[str, str],
                missing: str | None = None, names: Iterable[str] | None = None) -> dict[str, float]:
    """The mean of ``values`` (qid -> value) over each group of :func:`group_qids`, ``"all"`` first."""
    return {group: aggregate(values, members) for group, members in group_qids(qids, groups, missing, names).items()}


def evaluate(qrels: Qrels, run: Rankings, measures: tuple[str, ...] = DEFAULT_MEASURES,
             groups: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
    """group -> measure -> mean, with the group's number of queries under ``"#q"``. ``groups`` maps qid -> group
    name; "all" is always present.

    Only judged queries count; run queries missing from the qrels are reported by the caller.
    """
    pq = per_query(qrels, run, measures)
    groups = groups or {}
    return {group: {**{m: aggregate(pq[m], qids) for m in measures}, "#q": len(qids)}
            for group, qids in group_qids(sorted(qrels), groups, names=groups.values()).items()}
