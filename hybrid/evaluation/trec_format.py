"""trec_eval's output: ``measure<TAB>qid<TAB>value`` rows with trec_eval's names, queries and averages.

Scripts written around trec_eval (and Pyserini's ``trec_eval``, which prints the same) split these rows
(``map                   \\tall\\t0.5992``), so :func:`trec_eval_lines` follows trec_eval where it matters to them:

* names: ``map``, ``P_10``, ``recip_rank``, ``ndcg_cut_10``, ``num_q`` ... (:func:`trec_name`; a measure
  trec_eval does not have, such as ``RR@10`` or ``Judged@10``, keeps its ir_measures name);
* values: ``%-22s\\t%s\\t%6.4f`` as trec_eval prints them, counts (``num_q``, ``num_ret``, ``num_rel``,
  ``num_rel_ret``) as integers, summed over queries in the ``all`` row;
* queries: without ``complete``, the queries that both the run and the qrels have (trec_eval's default);
  with ``complete`` (``-c``), every query of the qrels, a query missing from the run scoring 0; per-query
  rows (``-q``) in query-id order, then the ``all`` rows.

The values themselves come from ir_measures (pytrec_eval underneath for every trec_eval measure), so they
are trec_eval's. One difference: rows follow the order the measures were asked for, where trec_eval uses
its own fixed order.
"""

from __future__ import annotations

import contextlib
import functools
import io

import ir_measures
from ir_measures import parse_measure

from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import Qrels
from hybrid.core.measures import per_query
from hybrid.core.records import Rankings

#: Measures trec_eval counts rather than averages (printed as integers; ``all`` is the sum, or the number
#: of queries for ``num_q``).
COUNTS = frozenset({"NumQ", "NumRet", "NumRel", "NumRelRet"})
NAME_WIDTH = 22  # trec_eval pads measure names to 22 characters


@functools.lru_cache(maxsize=256)
def trec_name(name: str) -> str:
    """trec_eval's name of an ir_measures measure (``AP`` -> ``map``, ``P@10`` -> ``P_10``, ``nDCG@10`` ->
    ``ndcg_cut_10``), or ``name`` itself when trec_eval has none (``RR@10``, ``Judged@10``, ``AP(rel=2)``).

    Found, not tabulated: among pytrec_eval's measure names (alone, or with the measure's one parameter
    appended), the name that ir_measures' own trec_eval parser reads back as exactly this measure."""
    import pytrec_eval  # ir_measures' pytrec_eval provider needs it too

    measure = parse_measure(name)
    params = list(measure.params.values())
    suffixes = [""] + ([f"_{params[0]}"] if len(params) == 1 else [])  # num_rel_ret is NumRet(rel=1): no suffix
    for candidate in (base + suffix for suffix in suffixes for base in sorted(pytrec_eval.supported_measures)):
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # parse_trec_measure prints the names it skips
                parsed = ir_measures.parse_trec_measure(candidate)
        except Exception:  # ValueError, or anything ir_measures raises for a name it cannot read
            continue
        if parsed == [measure]:
            return candidate
    return name


def _without_results(name: str, labels: dict[str, int]) -> float:
    """What a judged query missing from the run scores under ``-c``: trec_eval evaluates it with an empty ranking,
    so everything is 0 but ``num_rel``, which counts its relevant passages all the same."""
    measure = parse_measure(name)
    if measure.NAME != "NumRel":
        return 0.0
    level = measure.params.get("rel", 1)
    return float(sum(relevance >= level for relevance in labels.values()))


def _format(value: float, counted: bool) -> str:
    return str(int(round(value))) if counted else f"{value:6.4f}"


def trec_eval_lines(qrels: Qrels, run: Rankings, measures: tuple[str, ...], queries: bool = False,
                    complete: bool = False) -> list[str]:
    """The lines trec_eval prints for ``measures`` (ir_measures names, as :func:`parse_measures` returns them).

    ``queries``: per-query rows first (``trec_eval -q``); ``complete``: average over every judged query
    (``trec_eval -c``). A run and qrels with no query in common is an error, as in trec_eval."""
    in_both = sorted(q for q in qrels if run.get(q) is not None)
    if not in_both and not complete:
        raise InputError(None, None, "no query has both results in the run and judgments in the qrels (trec_eval "
                                     "stops here too; -c scores every judged query, missing ones as 0)")
    averaged = sorted(qrels) if complete else in_both
    scores = per_query(qrels, run, measures)
    names = {m: trec_name(m) for m in measures}
    counted = {m: parse_measure(m).NAME in COUNTS for m in measures}
    lines = []
    if queries:
        for qid in in_both:
            for m in measures:
                if parse_measure(m).NAME != "NumQ":  # trec_eval prints num_q in the summary only
                    lines.append(f"{names[m]:<{NAME_WIDTH}}\t{qid}\t{_format(scores[m][qid], counted[m])}")
    for m in measures:
        values = [scores[m][qid] if qid in run else _without_results(m, qrels[qid]) for qid in averaged]
        if parse_measure(m).NAME == "NumQ":
            summary = float(len(averaged))
        elif counted[m]:
            summary = sum(values)
        else:
            summary = sum(values) / len(values) if values else 0.0
        lines.append(f"{names[m]:<{NAME_WIDTH}}\tall\t{_format(summary, counted[m])}")
    return lines


def is_trec_name(name: str) -> bool:
    """Whether ``name`` is written the trec_eval way (``map``, ``P_10``, ``P.10``), not the ir_measures way."""
    try:
        parse_measure(name)
        return False
    except Exception:  # not an ir_measures name
        pass
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return bool(ir_measures.parse_trec_measure(name))
    except Exception:
        return False
