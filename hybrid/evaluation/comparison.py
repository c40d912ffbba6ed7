"""Several runs on the same queries: means overall and by group, deltas and paired tests against a baseline."""

from __future__ import annotations

from pathlib import Path

from hybrid.core.atomic import atomic_write
from hybrid.core.judged import judged_only, with_judged
from hybrid.core.measures import aggregate, group_qids, per_query
from hybrid.core.records import Rankings
from hybrid.evaluation.significance import PERMUTATIONS, correct, paired_test

COMPARISON_MEASURES = ("RR@10", "AP@100", "R@100", "nDCG@10")

def compare(runs: dict[str, Rankings], qrels, groups: dict[str, str], baseline: str,
            measures: tuple[str, ...], judged: frozenset[str] | None = None, correction: str = "holm",
            permutations: int = PERMUTATIONS) -> dict:
    """results[group][system][measure] = {mean, delta, t_p, w_p, r_p}: paired t-test, Wilcoxon and Fisher's
    randomization test p-values, each corrected over the systems compared with the baseline (``correction``:
    holm, bonferroni or none; see :mod:`hybrid.evaluation.significance`).

    ``judged``: passages judged for every query (judged non-relevant where the qrels are silent)."""
    def labels(run: Rankings):
        return qrels if judged is None else with_judged(qrels, judged, run)

    scores = {name: per_query(labels(run), run, measures) for name, run in runs.items()}
    results: dict = {}
    for group, qids in group_qids(sorted(qrels), groups, names=groups.values()).items():
        results[group] = {name: {"#q": len(qids)} for name in runs}
        for measure in measures:
            others = [name for name in runs if name != baseline]
            tests = {}
            for name in others:
                sys_scores = {q: scores[name][measure][q] for q in qids}
                base_scores = {q: scores[baseline][measure][q] for q in qids}
                tests[name] = paired_test(sys_scores, base_scores, permutations)
            t_adj = correct([tests[n].t_p for n in others], correction)
            w_adj = correct([tests[n].wilcoxon_p for n in others], correction)
            r_adj = correct([tests[n].randomization_p for n in others], correction)
            for name in runs:
                cell = {"mean": aggregate(scores[name][measure], qids)}
                if name in tests:
                    i = others.index(name)
                    cell.update(delta=tests[name].mean_delta, t_p=t_adj[i], w_p=w_adj[i], r_p=r_adj[i])
                results[group][name][measure] = cell
    return {"results": results, "per_query": scores, "correction": correction, "permutations": permutations}


def compare_condensed(runs: dict[str, Rankings], qrels, groups: dict[str, str], baseline: str,
                      measures: tuple[str, ...], judged: frozenset[str], correction: str = "holm",
                      permutations: int = PERMUTATIONS) -> dict:
    """:func:`compare` on condensed lists: each run with its queries' unjudged passages removed (trec_eval -J)."""
    condensed = {name: judged_only(run, with_judged(qrels, judged, run)) for name, run in runs.items()}
    return compare(condensed, qrels, groups, baseline, measures, judged, correction, permutations)


def condensed_heading(judged_source: object) -> str:
    """The line that introduces a condensed-list table, naming where the judged list came from."""
    return ("Condensed lists: each query's unjudged passages removed before scoring (trec_eval -J; judged: the qrels "
            f"and {judged_source}). A diagnostic beside the table above.\n")


CORRECTED = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected", "none": "uncorrected"}


def format_markdown(results: dict, baseline: str, measures: tuple[str, ...], seconds: dict[str, float] | None = None,
                    n_topics: int = 0, correction: str = "holm") -> str:
    """Markdown tables, one per group; a q/s column when ``seconds`` (per system) are given."""
    timed = seconds is not None
    corrected = CORRECTED[correction]
    lines = []
    for group, systems in results.items():
        lines.append(f"\n**{group}** ({next(iter(systems.values()))['#q']} queries; p = paired t-test / Wilcoxon / "
                     f"randomization, {corrected}, vs `{baseline}`)\n")
        lines.append("| system | " + " | ".join(measures) + (" | q/s |" if timed else " |"))
        lines.append("|---|" + "---|" * (len(measures) + timed))
        for name, cells in systems.items():
            row = []
            for m in measures:
                c = cells[m]
                if name == baseline:
                    row.append(f"{c['mean']:.3f}")
                else:
                    mark = "*" if c["t_p"] < 0.05 and c["w_p"] < 0.05 else ""
                    row.append(f"{c['mean']:.3f} ({c['delta']:+.3f}{mark}; "
                               f"p={c['t_p']:.1e}/{c['w_p']:.1e}/{c['r_p']:.1e})")
            if timed:
                qps = n_topics / seconds[name] if seconds.get(name) else float("nan")
                row.append(f"{qps:.1f}")
            lines.append(f"| {name} | " + " | ".join(row) + " |")
    after = "without correction" if correction == "none" else f"after {correction.capitalize()} correction"
    lines.append(f"\n`*`: the t-test and Wilcoxon both significant at 0.05 {after}.")
    return "\n".join(lines)


def write_per_query(path: Path, per_query_scores: dict, groups: dict[str, str]) -> None:
    with atomic_write(path) as handle:
        handle.write("system\tqid\tkind\tmeasure\tvalue\n")
        for name, by_measure in per_query_scores.items():
            for measure, values in by_measure.items():
                for qid in sorted(values):
                    handle.write(f"{name}\t{qid}\t{groups.get(qid, '')}\t{measure}\t{values[qid]:.6f}\n")
