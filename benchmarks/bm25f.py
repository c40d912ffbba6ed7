"""BM25F vs boosted-sum multi-field BM25 vs plain Pyserini BM25 on ECB+ dev: quality and speed.

Quality: AP@100, RR@10 and R@100 by query kind for plain BM25 (PassageBM25, whole sentence as query - the
baseline), MultiFieldBM25 (boosted sum of per-field BM25, its default clauses) and BM25F (its defaults).

Speed, in the same process and on the same topics, k=100: the raw engine call ``LuceneSearcher.batch_search``
on the sentences; the baseline retriever end to end (it also looks up each query's own document); the
multi-field search through the Java batch searcher and through the old pyjnius path (on a subset); BM25F.
Query records are computed (and cached) for all topics before any timing, and every searcher gets a
warm-up pass; each configuration is timed ``--repeat`` times, alternating, and the fastest kept (the
machine is shared, so the minimum is the least disturbed measurement). The pyjnius and Java multi-field
runs are also compared hit by hit on the subset.

Usage::

    python benchmarks/bm25f.py --index /tmp/ecb-index --topics ../shared/data/ecbplus/queries.dev.jsonl \\
        --qrels ../shared/data/ecbplus/qrels.dev.txt --pyjnius-queries 300
"""

from __future__ import annotations

import argparse
import json
import time

from hybrid.core.params import BM25_B, BM25_K1


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - started)
    return best, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--pyjnius-queries", type=int, default=300)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--output", help="write the measurements as JSON here")
    args = p.parse_args()

    from hybrid.core.formats.qrels import read_qrels
    from hybrid.core.measures import evaluate
    from hybrid.retrieval.bm25f import BM25F
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
    from indexes.sparse_index import open_for_timing

    index, topics = open_for_timing(args.index, args.topics, args.limit)
    qrels = read_qrels(args.qrels)
    qrels = {q: qrels[q] for q in (t.qid for t in topics) if q in qrels}
    groups = {t.qid: t.kind or "unknown" for t in topics}
    k, warm = args.k, topics[:100]
    sentences, qids = [t.text for t in topics], [t.qid for t in topics]

    def multifield(threads: int) -> MultiFieldBM25:
        retriever = MultiFieldBM25(index)
        retriever.threads = threads
        return retriever

    configs = {
        "pyserini batch_search (sentence), 1 thread": lambda: index.passages.batch_search(sentences, qids, k=k,
                                                                                           threads=1),
        "pyserini batch_search (sentence), 2 threads": lambda: index.passages.batch_search(sentences, qids, k=k,
                                                                                            threads=2),
        "bm25 baseline (PassageBM25 sentence), 1 thread": lambda: PassageBM25(index, "sentence").search(topics, k),
        "bm25 baseline (PassageBM25 sentence), 2 threads": lambda: PassageBM25(index, "sentence", threads=2).search(
            topics, k),
        "multifield, Java batch searcher, 1 thread": lambda: multifield(1).search(topics, k),
        "multifield, Java batch searcher, 2 threads": lambda: multifield(2).search(topics, k),
        "bm25f, 1 thread": lambda: BM25F(index, threads=1).search(topics, k),
        "bm25f, 2 threads": lambda: BM25F(index, threads=2).search(topics, k),
    }
    index.passages.set_bm25(BM25_K1, BM25_B)
    index.passages.batch_search([t.text for t in warm], [t.qid for t in warm], k=k, threads=1)
    PassageBM25(index, "sentence").search(warm, k)
    multifield(1).search(warm, k)
    BM25F(index).search(warm, k)
    seconds = {name: float("inf") for name in configs}
    evaluated = ("bm25 baseline (PassageBM25 sentence), 1 thread", "multifield, Java batch searcher, 1 thread",
                 "bm25f, 1 thread")
    runs = {}
    for _ in range(args.repeat):
        for name, fn in configs.items():
            elapsed, out = timed(fn, 1)
            seconds[name] = min(seconds[name], elapsed)
            # Only the evaluated runs are kept: pyserini's batch_search results hold a Lucene Document per hit
            # (3,421 x 100 stored passages per call), which kept alive exhausts a 6 GB JVM heap.
            if name in evaluated:
                runs[name] = out
            del out

    subset = topics[: args.pyjnius_queries]
    slow_retriever = multifield(1)
    for topic in warm[:20]:
        slow_retriever.search_one(topic, k)
    slow_seconds, slow_run = timed(lambda: {t.qid: slow_retriever.search_one(t, k) for t in subset}, 1)
    fast_subset_seconds, fast_run = timed(lambda: multifield(1).search(subset, k), args.repeat)
    same_ranking = sum(
        [(h.docid, h.mention_id) for h in slow_run[t.qid]] == [(h.docid, h.mention_id) for h in fast_run[t.qid]]
        for t in subset
    )
    max_diff = max((abs(a.score - b.score) for t in subset
                    for a, b in zip(slow_run[t.qid], fast_run[t.qid], strict=False)), default=0.0)

    measures = ("AP@100", "RR@10", "R@100")
    quality = {
        "bm25 (sentence)": evaluate(qrels, runs["bm25 baseline (PassageBM25 sentence), 1 thread"], measures, groups),
        "multifield (boosted sum)": evaluate(qrels, runs["multifield, Java batch searcher, 1 thread"], measures,
                                             groups),
        "bm25f": evaluate(qrels, runs["bm25f, 1 thread"], measures, groups),
    }
    n = len(topics)
    raw1 = seconds["pyserini batch_search (sentence), 1 thread"]
    result = {
        "queries": n, "k": k,
        "speed": {name: {"seconds": round(s, 2), "queries_per_second": round(n / s, 1),
                         "cost_vs_batch_search_1_thread": round(s / raw1, 2)} for name, s in seconds.items()},
        "pyjnius_multifield": {"queries": len(subset), "queries_per_second": round(len(subset) / slow_seconds, 1),
                               "java_queries_per_second_same_subset": round(len(subset) / fast_subset_seconds, 1),
                               "java_speedup": round(slow_seconds / fast_subset_seconds, 1),
                               "identical_rankings": same_ranking, "max_abs_score_difference": max_diff},
        "quality": quality,
        "bm25f_defaults": {"fields": BM25F(index).fields, "query": BM25F(index).query},
    }
    print(json.dumps(result, indent=2))
    print()
    print("| model | kind | #q | AP@100 | RR@10 | R@100 |")
    print("|---|---|---:|---:|---:|---:|")
    for model, table in quality.items():
        for group in ("event", "entity", "all"):
            if group in table:
                row = table[group]
                print(f"| {model} | {group} | {row['#q']} | {row['AP@100']:.4f} | {row['RR@10']:.4f} | "
                      f"{row['R@100']:.4f} |")
    print()
    print("| search (k=100) | seconds | queries/s | cost vs batch_search, 1 thread |")
    print("|---|---:|---:|---:|")
    for name, s in seconds.items():
        print(f"| {name} | {s:.2f} | {n / s:.1f} | {s / raw1:.2f}x |")
    if args.output:
        from hybrid.core.atomic import atomic_write

        with atomic_write(args.output) as out:
            out.write(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
