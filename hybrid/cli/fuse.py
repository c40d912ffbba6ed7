"""``python -m hybrid.fuse``: fuse TREC run files (RRF, CombSUM, CombMNZ, ranx's and Pyserini's methods).

Examples::

    # reciprocal rank fusion of two runs (k = 60)
    python -m hybrid.fuse --runs bm25.trec mf.trec --method rrf --output fused.trec
    # weighted CombSUM over min-max normalised scores, keeping each hit's mention span
    python -m hybrid.fuse --runs mf.trec dense.trec --spans mf.spans.jsonl dense.spans.jsonl \\
        --method combsum --norm minmax --weights 0.6,0.4 --output fused.trec
    # weights tuned on qrels for one measure (grid over weights summing to 1, then finer steps around the best)
    python -m hybrid.fuse --runs mf.trec dense.trec --method combsum --tune --qrels qrels.dev.txt \\
        --measure AP@100 --output fused.trec

The fusion is :mod:`hybrid.fusion`'s (the same functions ``hybrid.search --model fused`` uses): RRF sums
``w / (rrf_k + rank)``; CombSUM sums weighted normalised scores (a run that did not return a passage gives it
the run's floor); CombMNZ multiplies that by the number of runs that returned it. With ``--spans`` (one
spans JSONL per run, ``-`` for a run without one) a fused hit keeps the mention span of the run that contributed
most to its fused score (among the runs that give it a span; the earlier run on a tie), the rule of every fusion
in the library (:mod:`hybrid.fusion.common`), and the fused spans go to ``--output-spans``. The fused run is written
with its ``.meta.json``: the input runs and spans with their sha256, the method and the options that applied,
the tuned weights, the code version.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.api import attach_spans
from hybrid.cli.common import (
    add_quiet,
    format_table,
    make_parser,
    non_negative_int,
    output_file,
    positive_int,
    run_cli,
    run_tag,
)
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, parse_json_object, require
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, read_run_meta, sha256_file, write_run_set
from hybrid.core.outputs import Input, Output, Writes, run_input, run_output
from hybrid.core.provenance import produced_by
from hybrid.core.records import Rankings
from hybrid.fusion.fuse import fuse_runs, parse_weights
from hybrid.fusion.registry import FUSIONS, METHOD, NORM, RRF_K_PARAM, fusion_method, uses

NO_SPANS = "-"


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.fuse", __doc__, epilog=True)
    p.add_argument("--runs", nargs="+", required=True, metavar="RUN", help="two or more TREC run files")
    p.add_argument("--spans", nargs="+", metavar="SPANS",
                   help=f"one spans JSONL per run, in the same order ('{NO_SPANS}' for a run without one)")
    p.add_argument("--method", choices=METHOD.choices, default=METHOD.default,
                   help="fusion method: " + "; ".join(f"{m.name}: {m.desc}" for m in FUSIONS.values()))
    p.add_argument("--norm", choices=NORM.choices, default=NORM.default,
                   help="per-query score normalisation of the score-based methods (rank-based ones ignore it)")
    p.add_argument("--weights", help="one weight per run, comma separated, e.g. 0.6,0.4 (default: equal weights)")
    p.add_argument("--rrf-k", type=positive_int, default=RRF_K_PARAM.default, help=f"rrf: {RRF_K_PARAM.desc}")
    p.add_argument("--depth", type=positive_int, help="use only each run's top N hits per query (default: all)")
    p.add_argument("--hits", type=positive_int, default=1000, help="fused hits kept per query")
    p.add_argument("--output", required=True, type=output_file, help="fused TREC run to write")
    p.add_argument("--output-spans", type=output_file,
                   help="fused spans JSONL (default with --spans: the --output name with .spans.jsonl for .trec)")
    p.add_argument("--tag", type=run_tag, help="run tag (default: the method)")
    p.add_argument("--tune", action="store_true", help="choose the weights that maximise --measure on --qrels")
    p.add_argument("--qrels", help="qrels for --tune (the fused run is also evaluated on them)")
    p.add_argument("--measure", default="AP@100", help="--tune: the measure to maximise (ir_measures or trec_eval "
                                                      "name)")
    p.add_argument("--step", type=float, default=0.1, help="--tune: grid spacing of the weights (must divide 1)")
    p.add_argument("--refine", type=non_negative_int, default=2,
                   help="--tune: rounds of finer moves around the best grid point")
    add_quiet(p, "print nothing but errors")
    return p


def default_spans_output(output: str) -> str:
    """``fused.trec`` -> ``fused.spans.jsonl`` (other names get ``.spans.jsonl`` appended)."""
    return output[: -len(".trec")] + ".spans.jsonl" if output.endswith(".trec") else output + ".spans.jsonl"


def check_arguments(args: argparse.Namespace) -> list[str | None]:
    """The spans file of each run (None for none); every problem of the arguments as an InputError."""
    if len(args.runs) < 2:
        raise InputError(None, None, f"--runs needs two or more run files, got {len(args.runs)}")
    seen: dict[str, str] = {}
    for path in args.runs:
        key = str(Path(path).resolve())
        if key in seen:
            raise InputError(path, None, f"--runs names this run twice (as {seen[key]} and {path})")
        seen[key] = path
    spans = [None] * len(args.runs)
    if args.spans:
        if len(args.spans) != len(args.runs):
            raise InputError(None, None, f"--spans: {len(args.spans)} spans file(s) for {len(args.runs)} run(s); give "
                                         f"one per run in the order of --runs ('{NO_SPANS}' for a run without one)")
        spans = [None if s == NO_SPANS else s for s in args.spans]
    if args.tune:
        if not args.qrels:
            raise InputError(None, None, "--tune needs --qrels (the judgments the weights are tuned on)")
        if args.weights:
            raise InputError(None, None, "--tune chooses the weights; give --weights or --tune, not both")
    if args.tune and not fusion_method(args.method).weighted:
        raise InputError(None, None, f"--tune chooses weights, and --method {args.method} takes none")
    if not uses(args.method, "norm") and args.norm != NORM.default and not args.quiet:
        print(f"note: --norm {args.norm} is ignored by {args.method}", file=sys.stderr)

    if args.output_spans is None and any(spans):
        args.output_spans = default_spans_output(args.output)
    writes(args, spans).check()
    return spans


def writes(args: argparse.Namespace, spans: list[str | None]) -> Writes:
    """What the fusion writes (run, spans, meta) and reads (runs with their meta, spans, qrels), for the output
    policy (hybrid.core.outputs)."""
    reads = [run_input(f"--runs {path}", path) for path in args.runs]
    reads += [Input(f"--spans {path}", path) for path in spans if path]
    reads.append(Input("--qrels", args.qrels))
    return Writes("hybrid.fuse", [run_output("--output", args.output),
                                  Output("--output-spans", args.output_spans, replace=True)], reads)


def read_inputs(runs: list[str], spans: list[str | None], depth: int | None) -> list[Rankings]:
    """Each run (cut to ``depth``), its hits given the spans of its spans file (checked against the run's meta)."""
    out = []
    for path, spans_path in zip(runs, spans, strict=True):
        run = read_run(path)
        if spans_path is not None:
            read_run_meta(path, spans_path)  # a spans file the run's meta does not record is refused
            check_spans_belong(run, path, spans_path)
            attach_spans(run, spans_path)
        if depth is not None:
            run = {qid: hits[:depth] for qid, hits in run.items()}
        out.append(run)
    return out


def check_spans_belong(run: Rankings, run_path: str, spans_path: str) -> None:
    """A spans row for a (qid, docid) the run does not have means the files were mixed up."""
    hits = {(qid, h.docid) for qid, found in run.items() for h in found}
    for number, line in iter_lines(spans_path):
        row = parse_json_object(spans_path, number, line)
        qid, docid = require(spans_path, number, row, "qid", str), require(spans_path, number, row, "docid", str)
        if (qid, docid) not in hits:
            raise InputError(spans_path, number, f"({qid}, {docid}) is not a hit of {run_path}: is this the spans "
                                                 "file of another run? (give the spans in the order of --runs)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # deferred: importing them loads ir_measures, which hybrid.fuse --help does not need
    from hybrid.core.measures import evaluate, parse_measures
    from hybrid.fusion.tune import simplex_grid, tune_weights

    spans = check_arguments(args)
    weights = parse_weights(args.weights, len(args.runs), "--weights", "run", "--runs")
    measure = parse_measures([args.measure], "--measure")
    if len(measure) != 1:
        raise InputError(None, None, f"--measure: {args.measure!r} stands for {len(measure)} measures; name one")
    if args.tune:
        try:
            simplex_grid(len(args.runs), args.step)
        except ValueError as error:
            raise InputError(None, None, f"--step: {error}") from None
    runs = read_inputs(args.runs, spans, args.depth)
    qrels = read_qrels(args.qrels) if args.qrels else None
    tuning = None
    if args.tune:
        result = tune_weights(runs, qrels, method=args.method, norm=args.norm, metric=measure[0], step=args.step,
                              refine=args.refine, k=args.hits, rrf_k=args.rrf_k)
        weights = result.weights
        tuning = {"measure": measure[0], "score": result.score, "weights": result.weights,
                  "tried": len(result.tried), "step": args.step, "refine": args.refine, "qrels": args.qrels,
                  "qrels_sha256": sha256_file(args.qrels)}
        if not args.quiet:
            print(f"tuned weights {','.join(f'{w:g}' for w in weights)}: {measure[0]} {result.score:.4f} "
                  f"({len(result.tried)} weightings tried)", file=sys.stderr)
    fused = fuse_runs(runs, args.method, weights, args.norm, args.hits, args.rrf_k)
    options = {"method": args.method, "weights": weights or [1.0] * len(runs), "hits": args.hits}
    options.update({name: getattr(args, name) for name in ("rrf_k", "norm") if uses(args.method, name)})
    if args.depth:
        options["depth"] = args.depth
    meta = {
        "model": f"fused-{args.method}", "queries": len(fused), "fusion": options, "tuning": tuning,
        "inputs": [{"run": path, "run_sha256": sha256_file(path), "spans": s,
                    "spans_sha256": sha256_file(s) if s else None} for path, s in zip(args.runs, spans, strict=True)],
        "argv": sys.argv[1:] if argv is None else argv, **produced_by(),
    }
    if tuning is None:
        del meta["tuning"]
    write_run_set(fused, args.output, tag=args.tag or args.method, meta=meta, spans_path=args.output_spans)
    if not args.quiet:
        print(json.dumps({"run": args.output, "spans": args.output_spans, **options}), file=sys.stderr)
        if qrels is not None:
            shown = tuple(dict.fromkeys(("RR@10", "AP@100", "R@100", "nDCG@10", measure[0])))
            print(format_table(evaluate(qrels, fused, shown), shown))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
