"""``python -m hybrid.compare``: runs already on disk, one table, paired tests against a baseline.

Examples::

    python -m hybrid.compare --qrels qrels.dev.txt --topics queries.dev.jsonl runs/bm25.trec runs/net.trec
    # names for the table, a baseline other than the first, the condensed-list comparison, files written
    python -m hybrid.compare --qrels qrels.dev.txt --topics queries.dev.jsonl --baseline net \\
        bm25=runs/bm25.trec net=runs/net.trec reader=runs/reader.trec --judged judged.txt --output-dir OUT

What ``hybrid.experiment`` reports for the recipes it runs, for runs made elsewhere (another tool, an
earlier session, a reranker run by hand): each measure's mean overall and by kind, the difference from
the baseline, paired t-test / Wilcoxon / Fisher randomization p-values Holm-corrected over the runs compared with it
(``--correction bonferroni`` or ``none`` instead). Only
queries of the qrels count; a judged query missing from a run scores 0. With ``--judged FILE`` (passages
judged for every query, as ``hybrid.eval --judged``) the same comparison follows on condensed lists
(unjudged passages removed, as ``trec_eval -J``). ``--output-dir`` writes ``results.md``,
``results.json`` and ``per_query.tsv``; with ``--judged``, ``results.md`` holds both tables (as printed),
``results.json`` a ``condensed`` key and ``per_query.condensed.tsv`` the condensed scores.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.api import sample_path
from hybrid.cli.common import add_significance, make_parser, run_cli
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.consistency import compare_query_ids
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run
from hybrid.core.judged import read_judged
from hybrid.core.measures import parse_measures
from hybrid.core.outputs import Input, Output, Writes, run_input
from hybrid.core.provenance import produced_by
from hybrid.evaluation.comparison import (
    COMPARISON_MEASURES,
    compare,
    compare_condensed,
    condensed_heading,
    format_markdown,
    write_per_query,
)
from hybrid.evaluation.groups import kinds_from_topics, no_kinds_reason


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.compare", __doc__, epilog=True)
    p.add_argument("runs", nargs="+", metavar="[NAME=]RUN", help="TREC runs; NAME= names one in the table (default: "
                                                                "the file name without .trec)")
    p.add_argument("--qrels", required=True, help="qrels, or 'sample' for the bundled sample's")
    p.add_argument("--topics", help="JSONL topics giving each query's kind (their 'kind' field), for per-kind tables "
                                    "(without: the 'all' table only); 'sample' for the bundled sample's")
    p.add_argument("--baseline", help="the run every other is compared with (a NAME; default: the first)")
    p.add_argument("--measures", nargs="+", default=list(COMPARISON_MEASURES), help="ir_measures or trec_eval names")
    p.add_argument("--judged", metavar="FILE", help="passage ids judged for every query, one per line ('sample': the "
                                                    "bundled sample's curated sentences); adds the comparison on "
                                                    "condensed lists")
    p.add_argument("--output-dir", help="write results.md, results.json and per_query.tsv here")
    add_significance(p)
    return p


def named_runs(specs: list[str]) -> dict[str, str]:
    """``NAME=PATH`` or ``PATH`` -> {name: path}, names unique."""
    named: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or Path(spec).exists():  # a path that holds '=' is a path
            name, path = Path(spec).name.removesuffix(".trec"), spec
        if name in named:
            raise InputError(None, None, f"two runs are named {name!r}; name them: NAME=RUN")
        named[name] = path
    return named


def writes(args: argparse.Namespace, paths: dict[str, str]) -> Writes:
    """The tables this command writes into --output-dir and the files it reads, for the output policy
    (hybrid.core.outputs): earlier tables there are replaced, inputs never."""
    out = Path(args.output_dir) if args.output_dir else None
    names = ["per_query.tsv", "results.md", "results.json"] + (["per_query.condensed.tsv"] if args.judged else [])
    outputs = [Output(f"--output-dir {name}", out / name, replace=True) for name in names] if out else []
    reads = [*(run_input(f"run {name}", path) for name, path in paths.items()),
             *(Input(f"--{what}", sample_path(what, getattr(args, what))) for what in ("qrels", "topics", "judged"))]
    return Writes("hybrid.compare", outputs, reads)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    paths = named_runs(args.runs)
    writes(args, paths).check()
    baseline = args.baseline or next(iter(paths))
    if baseline not in paths:
        raise InputError(None, None, f"--baseline {baseline!r} is not one of the runs {list(paths)}")
    measures = parse_measures(args.measures)
    qrels_path, topics_path = sample_path("qrels", args.qrels), sample_path("topics", args.topics)
    qrels = read_qrels(qrels_path)
    judged = read_judged(sample_path("judged", args.judged)) if args.judged else None
    runs = {name: read_run(path) for name, path in paths.items()}
    for name, run in runs.items():
        for line in compare_query_ids(qrels, run).lines():
            print(f"warning: {name}: {line}", file=sys.stderr)
    groups = kinds_from_topics(topics_path) if topics_path else {}
    if not groups:
        print(f"note: no per-kind tables: {no_kinds_reason(topics_path)}", file=sys.stderr)

    tests = {"correction": args.correction, "permutations": args.permutations}
    compared = compare(runs, qrels, groups, baseline, measures, judged, **tests)
    table = format_markdown(compared["results"], baseline, measures, correction=args.correction)
    document: dict = {"baseline": baseline, "runs": paths, "qrels": str(qrels_path), "results": compared["results"],
                      "significance": tests, "argv": argv if argv is not None else sys.argv[1:], **produced_by()}
    condensed = None
    if judged is not None:
        condensed = compare_condensed(runs, qrels, groups, baseline, measures, judged, **tests)
        table += "\n\n" + condensed_heading(args.judged) + format_markdown(condensed["results"], baseline, measures,
                                                                           correction=args.correction)
        document["condensed"] = {"judged": str(args.judged), "results": condensed["results"]}
    if args.output_dir:
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_per_query(out / "per_query.tsv", compared["per_query"], groups)
        if condensed is not None:
            write_per_query(out / "per_query.condensed.tsv", condensed["per_query"], groups)
        with atomic_write(out / "results.md") as handle:
            handle.write(table + "\n")
        with atomic_write(out / "results.json") as handle:
            json.dump(document, handle, indent=2)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
