"""``python -m hybrid.eval``: TREC measures of a run, overall and by query kind.

Examples::

    python -m hybrid.eval --qrels qrels.dev.txt --run run.trec --topics queries.dev.jsonl --by-kind
    # as trec_eval: positional qrels and run, trec_eval measure names with -m, trec_eval's output
    # (map<TAB>all<TAB>0.5992); -q adds per-query rows, -c averages over every judged query
    python -m hybrid.eval -m map -m recip_rank -m ndcg_cut_10 qrels.dev.txt run.trec
    python -m hybrid.eval -q -c -m map -m P.5,10 qrels.dev.txt run.trec
    # a run of the bundled sample's topics
    python -m hybrid.eval sample sample.multifield.trec --topics sample --by-kind
    # incomplete judgments: passages judged for every query (ECB+: its curated sentences), then the same
    # run on condensed lists (each query's unjudged passages removed, as trec_eval -J)
    python -m hybrid.eval --qrels qrels.dev.txt --run run.trec --judged judged.txt
    python -m hybrid.eval --qrels qrels.dev.txt --run run.trec --judged judged.txt -J

ECB+'s list of completely judged passages is its curated sentences (``validated`` in ``corpus.jsonl``)::

    python -c "import json, sys; [print(p['id']) for p in map(json.loads, sys.stdin) if p.get('validated')]" \
        < corpus.jsonl > judged.txt
"""

from __future__ import annotations

import argparse
import json
import sys

from hybrid.api import sample_path
from hybrid.cli.common import format_table, make_parser, run_cli
from hybrid.core.errors import InputError
from hybrid.core.formats.consistency import compare_query_ids, topic_query_ids
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run
from hybrid.core.judged import judged_only, read_judged, unjudged_count, with_judged
from hybrid.core.measures import DEFAULT_MEASURES, evaluate, parse_measures, per_query
from hybrid.evaluation.groups import kinds_from_topics, no_kinds_reason
from hybrid.evaluation.trec_format import is_trec_name, trec_eval_lines


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.eval", __doc__, epilog=True)
    p.add_argument("qrels_file", nargs="?", metavar="QRELS", help="qrels (as trec_eval: QRELS RUN; or --qrels); "
                                                                "'sample' for the bundled sample's")
    p.add_argument("run_file", nargs="?", metavar="RUN", help="TREC run (or --run)")
    p.add_argument("--qrels", help="qrels (qid iter docid relevance)")
    p.add_argument("--run", help="TREC run (qid Q0 docid rank score tag)")
    p.add_argument("--measures", nargs="+", help="ir_measures names (RR@10, AP@100, nDCG@10, ...) or trec_eval "
                                                 "names (map, ndcg_cut_10, P_10, ...) (default: "
                                                 f"{' '.join(DEFAULT_MEASURES)})")
    p.add_argument("-m", dest="measure", action="append", metavar="MEASURE",
                   help="one measure, as trec_eval -m (repeatable: -m map -m P_10); added to --measures")
    p.add_argument("--topics", help="topics file giving each query's kind (for --by-kind); 'sample' for the bundled "
                                    "sample's")
    p.add_argument("--by-kind", action="store_true", help="split results by event/entity (the table format)")
    p.add_argument("--per-query", action="store_true", help="print one row per query (the table format)")
    p.add_argument("--format", choices=("table", "trec"),
                   help="'table': one row per group, ir_measures names (the default); 'trec': trec_eval's "
                        "'measure<TAB>qid<TAB>value' lines with trec_eval names (the default when measures come "
                        "with -m or by trec_eval names, or with -q or -c)")
    p.add_argument("-q", dest="trec_queries", action="store_true",
                   help="as trec_eval -q: a row per query and measure, then the 'all' rows (trec_eval's format)")
    p.add_argument("-c", dest="complete", action="store_true",
                   help="as trec_eval -c: average over every query of the qrels, a query missing from the run "
                        "scoring 0 (trec_eval's format; the table always averages so)")
    p.add_argument("--judged", metavar="FILE", help="passage ids judged for every query, one per line ('sample' for "
                                                    "the bundled sample's curated sentences): a listed passage that "
                                                    "a query's qrels do not list counts as judged non-relevant for "
                                                    "it (Judged@k, infAP, -J)")
    p.add_argument("-J", "--judged-only", action="store_true",
                   help="as trec_eval -J: score each query's ranking with its unjudged passages removed (condensed "
                        "lists); a diagnostic beside the standard numbers, not a replacement")
    p.add_argument("--json", action="store_true", help="machine-readable output (with --per-query: one JSON document "
                                                       "{summary, per_query})")
    return p


def output_format(args: argparse.Namespace) -> str:
    """``trec`` when the command line is written for trec_eval (-q, -c, -m, trec_eval measure names), else
    ``table``; ``--format`` decides when given. ``--json`` prints the table as JSON and refuses -q / -c."""
    trec_flags = [flag for flag, given in (("-q", args.trec_queries), ("-c", args.complete)) if given]
    if args.json:
        if trec_flags or args.format == "trec":
            given = " and ".join(trec_flags) or "--format trec"
            raise InputError(None, None, f"--json prints the table as JSON, not trec_eval's text format ({given}): "
                                         "give one or the other")
        return "table"
    if args.format == "table" and trec_flags:
        raise InputError(None, None, f"--format table does not take trec_eval's {' and '.join(trec_flags)}: drop "
                                     "--format table, or use --per-query (the table always averages over every "
                                     "judged query)")
    if args.format:
        return args.format
    trec_names = any(is_trec_name(name) for name in args.measures or [])
    return "trec" if trec_flags or args.measure or trec_names else "table"


def kind_groups(args: argparse.Namespace, qrels: dict) -> dict[str, str]:
    """qid -> kind for --by-kind, as the topics state it (never read from a query id): without kinds (no --topics,
    TSV topics) there are no per-kind groups. A judged query whose kind cannot be told is said so on stderr in one
    line (and grouped as 'unknown' when others have a kind), never dropped silently."""
    groups = kinds_from_topics(args.topics) if args.topics else {}
    unknown = sorted(q for q in qrels if q not in groups)
    if unknown:
        shown = "all" if len(unknown) == len(qrels) else "unknown"
        print(f"note: --by-kind: {len(unknown)} of {len(qrels)} judged queries have no kind (e.g. {unknown[0]}), "
              f"counted under '{shown}': {no_kinds_reason(args.topics)}", file=sys.stderr)
        if groups:
            groups.update({q: "unknown" for q in unknown})
    return groups


def _one(positional: str | None, option: str | None, name: str) -> str:
    if positional and option and positional != option:
        raise InputError(None, None, f"the {name} is given twice: {positional} and --{name} {option}")
    value = positional or option
    if not value:
        raise InputError(None, None, f"give the {name}: python -m hybrid.eval QRELS RUN (or --qrels Q --run R)")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    fmt = output_format(args)

    qrels_path = sample_path("qrels", _one(args.qrels_file, args.qrels, "qrels"))
    run_path = _one(args.run_file, args.run, "run")
    args.topics = sample_path("topics", args.topics)
    names = [*(args.measures or []), *(args.measure or [])] or list(DEFAULT_MEASURES)
    measures = parse_measures(names)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    topic_ids = topic_query_ids(args.topics) if args.topics else None
    for line in compare_query_ids(qrels, run, topic_ids).lines(missing_count=fmt == "table" or args.complete):
        print(f"warning: {line}", file=sys.stderr)
    if args.judged:
        qrels = with_judged(qrels, read_judged(sample_path("judged", args.judged)), run)
    if args.judged_only:
        unjudged, total = unjudged_count(run, qrels)
        print(f"condensed lists (-J): {unjudged} of {total} retrieved passages are unjudged and removed",
              file=sys.stderr)
        run = judged_only(run, qrels)
    if fmt == "trec":
        for flag, given in (("--by-kind", args.by_kind), ("--per-query", args.per_query)):
            if given:
                print(f"note: {flag} is for the table; trec_eval's format has only query and 'all' rows (-q for "
                      "per-query rows, --format table for the table)", file=sys.stderr)
        print("\n".join(trec_eval_lines(qrels, run, measures, queries=args.trec_queries, complete=args.complete)))
        return 0
    groups = kind_groups(args, qrels) if args.by_kind else None
    table = evaluate(qrels, run, measures, groups)
    pq = per_query(qrels, run, measures) if args.per_query else None
    if args.json:
        document: dict = table
        if pq is not None:
            rows = {qid: {m: pq[m][qid] for m in measures} for qid in sorted(qrels)}
            document = {"summary": table, "per_query": rows}
        print(json.dumps(document, indent=2))
        return 0
    if pq is not None:
        for qid in sorted(qrels):
            print(qid, " ".join(f"{m}={pq[m][qid]:.4f}" for m in measures))
    print(format_table(table, measures))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
