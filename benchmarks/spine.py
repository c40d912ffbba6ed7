"""Spine benchmark: multi-field mention retrieval vs plain Pyserini BM25 on the same hybrid index, one run.

    python benchmarks/spine.py --index IDX --topics queries.dev.jsonl --qrels qrels.dev.txt \
        --config "multifield=<clauses>" [--config "name=<clauses>" ...] [--repeat 2]

Plain BM25 is ``PassageBM25(formulation="sentence")``: Pyserini's ``LuceneSearcher.batch_search`` over the
``passages/`` index (one thread, default k1/b), own document removed. Throughput is measured for both in
the same process, interleaved ``--repeat`` times, after a warm-up, and reported as queries/s and the cost
ratio (multi-field seconds / BM25 seconds).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from hybrid.core.formats import read_qrels, read_topics
from hybrid.core.measures import evaluate
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
from indexes.sparse_index import SparseIndex

MEASURES = ("RR@10", "AP@100", "R@100")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--config", action="append", default=[], help="name=clauses for a MultiFieldBM25 run")
    p.add_argument("--hits", type=int, default=100)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--json", help="write results here too")
    args = p.parse_args()

    index = SparseIndex(args.index)
    topics = read_topics(args.topics, resolve=index.passage_text)
    qrels = read_qrels(args.qrels)
    groups = {t.qid: t.kind for t in topics}
    for t in topics:  # warm the query-record cache so timing measures search, not first lookups
        index.query_record(t)
    systems = {"bm25 (plain Pyserini, sentence)": PassageBM25(index, "sentence")}
    systems["bm25 (mention+args)"] = PassageBM25(index, "mention+args")
    for spec in args.config:
        name, clauses = spec.split("=", 1)
        systems[name] = MultiFieldBM25(index, clauses)
    warm = topics[:50]
    for system in systems.values():
        system.search(warm, args.hits)
    seconds: dict[str, list[float]] = {name: [] for name in systems}
    runs = {}
    for _ in range(args.repeat):
        for name, system in systems.items():
            started = time.perf_counter()
            runs[name] = system.search(topics, args.hits)
            seconds[name].append(time.perf_counter() - started)
    base = min(seconds["bm25 (plain Pyserini, sentence)"])
    results = {}
    print(f"{len(topics)} topics, k={args.hits}, python {platform.python_version()}, one search thread")
    print(f"{'system':40s} {'kind':7s} " + " ".join(f"{m:>7s}" for m in MEASURES) + "   q/s   cost")
    for name in systems:
        table = evaluate(qrels, runs[name], MEASURES, groups)
        best = min(seconds[name])
        results[name] = {"table": table, "seconds": best, "qps": len(topics) / best, "cost_vs_bm25": best / base}
        for kind in ("event", "entity"):
            row = " ".join(f"{table[kind][m]:7.3f}" for m in MEASURES)
            print(f"{name:40s} {kind:7s} {row} {len(topics) / best:6.1f} {best / base:5.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
