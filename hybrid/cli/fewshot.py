"""``python -m hybrid.fewshot``: few-shot mention retrieval over an index, MAP for k = 2..10 per variant.

Its ``--help`` is the method as :mod:`hybrid.retrieval.fewshot` describes it (the variants, the k-shot queries).
"""

from __future__ import annotations

import argparse
import json
import sys

from hybrid.cli.common import make_parser, positive_int, run_cli
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.core.outputs import JSON, Output, Writes, inputs_of
from hybrid.retrieval import fewshot as method
from hybrid.retrieval.fewshot import VARIANTS, DenseTable, build_kshot_queries, mean_ap, run_variants
from hybrid.sample import index_location
from indexes.shards import open_one_index


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.fewshot", method.__doc__, epilog=True)
    p.add_argument("--index", required=True, help="hybrid index (for the sparse variants and passage lookups);"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--dense", help="dense index directory (for the dense variants)")
    p.add_argument("--topics", required=True, help="labelled topics JSONL with a 'cluster' per query (e.g. dev)")
    p.add_argument("--qrels", required=True)
    p.add_argument("--k", type=positive_int, nargs="+", default=list(range(2, 11)))
    p.add_argument("--queries-per-k", type=positive_int, default=100, help="k-shot queries per k (seeded sample)")
    p.add_argument("--kinds", nargs="+", default=["event", "entity"], help="query kinds to build k-shot queries of")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--depth", type=positive_int, default=1000, help="ranking depth; MAP = AP@depth")
    p.add_argument("--pool", type=positive_int, default=500, help="dense-tuned reranks this many ad-hoc passages")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", help="write the results (JSON) here")
    return p


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes (the results JSON, replacing an earlier one) and reads, for the output policy."""
    return Writes("hybrid.fewshot", [Output("--output", args.output, JSON, replace=True)],
                  inputs_of(args, ("index", "dense", "topics", "qrels")))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    import torch

    torch.set_num_threads(1)  # tiny per-query models: one thread is several times faster on a shared CPU
    if any(v.startswith("dense") for v in args.variants) and not args.dense:
        raise ConfigError(None, None, "the dense variants need --dense DIR (or leave them out with --variants)")
    index = open_one_index(index_location(args.index), "python -m hybrid.fewshot")
    topics = [t for t in read_topics(args.topics, resolve=index.passage_text) if t.kind in args.kinds]
    if not any("cluster" in t.meta for t in topics):
        raise ConfigError(args.topics, None, "few-shot queries need a 'cluster' label per topic")
    qrels = read_qrels(args.qrels)
    table = DenseTable.load(args.dense, index) if args.dense else None

    def doc_of(pid: str) -> str | None:
        found = index.passage_json(pid)
        return found["doc_id"] if found else None

    results: dict = {"k": {}, "config": {k: v for k, v in vars(args).items()}}
    cache: dict = {}
    header = "| k | #q | " + " | ".join(args.variants) + " |"
    lines = [header, "|---|---|" + "---|" * len(args.variants)]
    for k in args.k:
        queries = build_kshot_queries(topics, qrels, k, args.queries_per_k, args.seed, doc_of)
        runs = run_variants(queries, args.variants, index, table, args.depth, args.pool, args.seed, cache=cache)
        row = {v: mean_ap(queries, runs[v], args.depth) for v in args.variants}
        results["k"][k] = {"queries": len(queries), "by_kind": {kd: sum(q.kind == kd for q in queries)
                                                                 for kd in args.kinds}, "map": row}
        lines.append(f"| {k} | {len(queries)} | " + " | ".join(f"{row[v]['all']:.4f}" for v in args.variants) + " |")
        print(lines[-1], file=sys.stderr)
    table_md = "\n".join(lines)
    print(table_md)
    if args.output:
        with atomic_write(args.output) as out:
            json.dump({**results, "table": table_md}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
