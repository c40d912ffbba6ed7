"""Threads and deep result lists on a real index: same run with 1 or 2 threads, cost of k = 1000.

For plain Pyserini BM25 (PassageBM25, "sentence": the project's baseline) and MultiFieldBM25, on a
sample of ECB+ dev queries: queries/s with 1 and 2 search threads, whether the two runs are identical
(docids and scores), and at k = 1000 the time and the peak Python memory (tracemalloc) per query.

Usage::

    python benchmarks/robustness_search.py --index /tmp/ecb-index \\
        --topics ../shared/data/ecbplus/queries.dev.jsonl --sample 400
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tracemalloc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--sample", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    from hybrid.core.formats.topics import read_topics
    from hybrid.core.java import available
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
    from indexes.sparse_index import SparseIndex

    index = SparseIndex(args.index)
    topics = read_topics(args.topics, resolve=index.passage_text)
    topics = random.Random(args.seed).sample(topics, min(args.sample, len(topics)))
    rows = []

    def timed(retriever, k):
        started = time.perf_counter()
        run = retriever.search(topics, k)
        return run, time.perf_counter() - started

    def as_tuples(run):
        return {q: [(h.docid, h.score) for h in hits] for q, hits in run.items()}

    systems = [("bm25 sentence (baseline)", lambda t: PassageBM25(index, "sentence", threads=t))]
    if available():
        def multifield(threads):
            retriever = MultiFieldBM25(index)
            retriever.threads = threads
            return retriever

        systems.append(("multifield (Java path)", multifield))
    for name, make in systems:
        make(1).search(topics[:20], 100)  # warm caches and the JIT
        run1, t1 = timed(make(1), 100)
        run2, t2 = timed(make(2), 100)
        tracemalloc.start()
        deep, t1000 = timed(make(2), 1000)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append({
            "system": name, "queries": len(topics),
            "qps_1_thread_k100": round(len(topics) / t1, 1), "qps_2_threads_k100": round(len(topics) / t2, 1),
            "identical_runs": as_tuples(run1) == as_tuples(run2),
            "qps_2_threads_k1000": round(len(topics) / t1000, 1),
            "mean_hits_k1000": round(sum(len(h) for h in deep.values()) / len(topics), 1),
            "peak_python_mb_per_query_k1000": round(peak / 1e6 / len(topics), 3),
        })
        print(json.dumps(rows[-1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
