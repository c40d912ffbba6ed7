"""Batch per-field features (Java extension) vs per-pair Lucene ``explain`` through pyjnius.

For every dev query the candidates are its top-``k`` passages from MultiFieldBM25 (their best mention
ids). The batch extractor computes all channels x 9 features for all queries in one call per batch of
queries; the per-pair path computes ONE feature (BM25) per (candidate, channel) with
``IndexSearcher.explain`` on a sample of queries, and its time for the full dev set is extrapolated.
Both BM25 values are compared on the sample. Plain Pyserini BM25 (PassageBM25, sentence) is timed in the
same run as the reference for what one retrieval pass costs.

Usage::

    python benchmarks/java_features.py --index /tmp/ecb-index \\
        --topics ../shared/data/ecbplus/queries.dev.jsonl --explain-queries 20 --threads 2
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--k", type=int, default=100, help="candidates per query")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--explain-queries", type=int, default=20, help="queries timed with per-pair explain")
    p.add_argument("--limit", type=int, default=0, help="use only the first N topics (0: all)")
    p.add_argument("--output", help="write the measurements as JSON here")
    args = p.parse_args()

    from hybrid.core.java import FEATURES
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
    from indexes.java_explain import LuceneExplainer
    from indexes.lucene import MENTIONS
    from indexes.sparse_index import open_for_timing
    from ltr.sparse_features import SparseFeatureExtractor

    index, topics = open_for_timing(args.index, args.topics, args.limit)

    started = time.perf_counter()
    PassageBM25(index, "sentence").search(topics, args.k)
    bm25_seconds = time.perf_counter() - started
    retriever = MultiFieldBM25(index)
    retriever.threads = args.threads
    started = time.perf_counter()
    run = retriever.search(topics, args.k)
    candidates_seconds = time.perf_counter() - started
    n_pairs = sum(len(h) for h in run.values())

    extractor = SparseFeatureExtractor(index, threads=args.threads)
    n_channels = len(extractor.channels)
    timings = {}
    for label, threads in (("cold", args.threads), ("warm", args.threads), ("warm-1-thread", 1)):
        extractor.threads = threads
        started = time.perf_counter()
        features, names = extractor.extract_run(topics, run)
        timings[label] = time.perf_counter() - started
    assert len(names) == n_channels * len(FEATURES)

    explainer = LuceneExplainer(index.path / MENTIONS, extractor.k1, extractor.b)
    sample = [t for t in topics if run.get(t.qid)][: args.explain_queries]
    docs = {t.qid: [explainer.doc(h.mention_id or h.docid) for h in run[t.qid]] for t in sample}
    explain_pairs, max_diff = 0, 0.0
    started = time.perf_counter()
    values = {}
    for topic in sample:
        texts = extractor.query_texts(topic)
        for c, channel in enumerate(extractor.channels):
            query = explainer.query(channel.field, texts[c])
            values[topic.qid, c] = [explainer.bm25(query, d) for d in docs[topic.qid]]
            explain_pairs += len(docs[topic.qid])
    explain_seconds = time.perf_counter() - started
    for topic in sample:
        for c in range(n_channels):
            batch = features[topic.qid][:, c * len(FEATURES)]
            max_diff = max(max_diff, float(np.max(np.abs(batch - np.array(values[topic.qid, c])))))
    explain_rate = explain_pairs / explain_seconds
    full_explain = n_pairs * n_channels / explain_rate
    result = {
        "queries": len(topics), "candidates_per_query": args.k, "pairs": n_pairs, "channels": n_channels,
        "features_per_pair": n_channels * len(FEATURES), "threads": args.threads,
        "batch_seconds": {k: round(v, 2) for k, v in timings.items()},
        "batch_pair_channels_per_second": {k: round(n_pairs * n_channels / v) for k, v in timings.items()},
        "explain_sample_queries": len(sample), "explain_calls": explain_pairs,
        "explain_seconds": round(explain_seconds, 2), "explain_calls_per_second": round(explain_rate),
        "explain_full_dev_seconds_extrapolated": round(full_explain, 1),
        "speedup_cold": round(full_explain / timings["cold"], 1),
        "speedup_warm": round(full_explain / timings["warm"], 1),
        "speedup_warm_1_thread": round(full_explain / timings["warm-1-thread"], 1),
        "max_abs_bm25_difference": max_diff,
        "candidate_generation_seconds_multifield": round(candidates_seconds, 2),
        "plain_pyserini_bm25_seconds": round(bm25_seconds, 2),
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    print(json.dumps(result, indent=2))
    if args.output:
        from hybrid.core.atomic import atomic_write

        with atomic_write(args.output) as out:
            out.write(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
