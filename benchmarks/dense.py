"""Dense and fused retrieval vs sparse on ECB+ dev: quality by kind and throughput, from ONE run.

Rows: plain BM25 (PassageBM25, whole sentence - the baseline), MultiFieldBM25 (best sparse, its default
clauses), dense with the untrained MiniLM, dense fine-tuned (``python -m hybrid.train_dense``), and fusions
of MultiFieldBM25 + fine-tuned dense. Every component run is computed once, at ``--depth`` hits; the
component rows are evaluated on their top ``--k``; fused runs fuse the ``--depth`` lists and are cut to ``--k``.

Fusion weights are tuned for ``--metric`` per query kind (the topic's own ``kind``). Two numbers per
method: *tuned on dev* (weights chosen on the very queries they are scored on: optimistic) and *2-fold CV*
(dev queries split by ECB+ topic into odd/even topics; each half is scored with weights tuned on the other
half: the honest number). RRF and CombSUM/CombMNZ with equal weights need no tuning at all.

Throughput: each retriever is timed end to end over all topics (queries/s, one process, k = depth); the
dense time is split into query encoding and FAISS search; fused = sum of its components + the fusion itself.
Passage encoding throughput comes from the dense indexes' build metadata (same machine).

Usage::

    python benchmarks/dense.py --index /tmp/ecb-index --topics ../shared/data/ecbplus/queries.dev.jsonl \\
        --qrels ../shared/data/ecbplus/qrels.dev.txt --dense-untrained /tmp/dense-minilm --dense-ft /tmp/dense-ft \\
        --output benchmarks/results/dense.json --runs /tmp/dense-runs
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

MEASURES = ("AP@100", "RR@10", "R@100")


def cut(run: dict, k: int) -> dict:
    return {q: hits[:k] for q, hits in run.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--dense-untrained", required=True, help="dense index built with the untrained encoder")
    p.add_argument("--dense-ft", required=True, help="dense index built with the fine-tuned encoder")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--depth", type=int, default=200, help="hits per component run (fusion pool)")
    p.add_argument("--metric", default="AP@100", help="fusion weights are tuned for this measure")
    p.add_argument("--step", type=float, default=0.1, help="weight grid spacing")
    p.add_argument("--methods", default="rrf,combsum,combmnz")
    p.add_argument("--norms", default="minmax,zscore,rank", help="normalisations tried for CombSUM")
    p.add_argument("--limit", type=int, default=0, help="first N topics only (smoke runs)")
    p.add_argument("--threads", type=int, default=1, help="torch and FAISS threads")
    p.add_argument("--output", help="JSON with every number")
    p.add_argument("--runs", help="folder to write each run (TREC + spans)")
    args = p.parse_args()

    import faiss
    import torch

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    from hybrid.core.jvm import start_jvm

    start_jvm()
    from hybrid.core.formats.qrels import read_qrels
    from hybrid.core.formats.runs import write_run
    from hybrid.core.formats.topics import read_topics
    from hybrid.core.measures import evaluate
    from hybrid.fusion import fuse_runs, tune_weights
    from hybrid.retrieval.dense import DenseRetriever
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
    from indexes.sparse_index import SparseIndex

    index = SparseIndex(args.index)
    topics = read_topics(args.topics, resolve=index.passage_text)
    if args.limit:
        topics = topics[: args.limit]
    qrels_all = read_qrels(args.qrels)
    qrels = {t.qid: qrels_all[t.qid] for t in topics if t.qid in qrels_all}
    kinds = {t.qid: t.kind or "unknown" for t in topics}
    folds = {t.qid: int(t.meta.get("topic", 0)) % 2 for t in topics}  # ECB+ topic parity: no topic in both halves
    n = len(topics)
    out: dict = {"queries": n, "judged": len(qrels), "k": args.k, "depth": args.depth, "metric": args.metric,
                 "by_kind": {k: sum(1 for q in qrels if kinds[q] == k) for k in ("event", "entity")},
                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def quality(run: dict) -> dict:
        table = evaluate(qrels, cut(run, args.k), MEASURES, kinds)
        return {g: {m: round(v, 4) for m, v in table[g].items()} for g in ("all", "event", "entity") if g in table}

    runs, seconds, extra_timing = {}, {}, {}
    retrievers = {
        "bm25 (sentence)": PassageBM25(index, "sentence", k=args.depth),
        "multifield": MultiFieldBM25(index, k=args.depth),
        "dense untrained": DenseRetriever(args.dense_untrained, k=args.depth, batch_size=64),
        "dense fine-tuned": DenseRetriever(args.dense_ft, k=args.depth, batch_size=64),
    }
    for t in topics[:50]:  # warm-up: JVM, caches, model
        index.query_record(t)
    for name, retriever in retrievers.items():
        retriever.search(topics[:20], args.depth)
        started = time.perf_counter()
        runs[name] = retriever.search(topics, args.depth)
        seconds[name] = time.perf_counter() - started
        if isinstance(retriever, DenseRetriever):
            extra_timing[name] = {k: round(v, 2) for k, v in retriever.last_timing.items()}
        print(f"{name}: {n / seconds[name]:.1f} q/s", flush=True)

    rows = {name: quality(run) for name, run in runs.items()}
    components = ["multifield", "dense fine-tuned"]
    comp_runs = [runs[c] for c in components]
    fusion: dict = {}

    def fused_run(method: str, norm: str, weights_by_kind: dict[str, list[float] | None]) -> dict:
        fused = {}
        for kind in ("event", "entity", "unknown"):
            qids = [t.qid for t in topics if kinds[t.qid] == kind]
            if qids:
                part = [{q: r.get(q, []) for q in qids} for r in comp_runs]
                fused.update(fuse_runs(part, method, weights_by_kind.get(kind), norm, args.k))
        return fused

    def tuned(method: str, norm: str, qids: list[str]) -> dict[str, list[float]]:
        weights = {}
        for kind in ("event", "entity"):
            sub = [q for q in qids if kinds[q] == kind and q in qrels]
            if sub:
                weights[kind] = tune_weights(comp_runs, qrels, method, norm, args.metric, args.step, refine=1,
                                             qids=sub, k=args.k).weights
        return weights

    configs = [(m, "minmax") for m in args.methods.split(",") if m != "combsum"]
    configs += [("combsum", norm) for norm in args.norms.split(",")] if "combsum" in args.methods else []
    all_qids = [t.qid for t in topics]
    for method, norm in configs:
        label = method if method == "rrf" else f"{method}-{norm}"
        t0 = time.perf_counter()
        equal = fused_run(method, norm, {})
        fuse_seconds = time.perf_counter() - t0
        on_dev = tuned(method, norm, all_qids)
        cv_run, cv_weights = {}, {}
        for fold in (0, 1):
            train_q = [q for q in all_qids if folds[q] != fold]
            weights = tuned(method, norm, train_q)
            cv_weights[f"scored fold {fold}"] = weights
            part = fused_run(method, norm, weights)
            cv_run.update({q: part[q] for q in all_qids if folds[q] == fold and q in part})
        fusion[label] = {
            "equal weights": quality(equal), "tuned on dev": quality(fused_run(method, norm, on_dev)),
            "2-fold CV": quality(cv_run), "weights tuned on dev": on_dev, "CV weights": cv_weights,
            "fuse_seconds": round(fuse_seconds, 2),
        }
        runs[f"fused {label} (2-fold CV)"] = cv_run
        print(label, json.dumps(fusion[label]["2-fold CV"]), flush=True)

    component_seconds = seconds["multifield"] + seconds["dense fine-tuned"]
    throughput = {name: round(n / s, 1) for name, s in seconds.items()}
    throughput["fused (multifield + dense fine-tuned + fusion)"] = round(
        n / (component_seconds + min(f["fuse_seconds"] for f in fusion.values())), 1) if fusion else None
    encoding = {}
    for name in ("dense untrained", "dense fine-tuned"):
        meta = retrievers[name].index.metadata
        encoding[name] = {"passages_per_second": meta["passages_per_second"], "vectors": meta["counts"]["vectors"],
                          "passages": meta["counts"]["passages"], "encode_seconds": meta["encode_seconds"],
                          "encoder": meta["encoder"]["path"], "built_at": meta["built_at"]}
    out.update(rows=rows, fusion=fusion, throughput_qps=throughput, dense_timing_seconds=extra_timing,
               seconds={k: round(v, 2) for k, v in seconds.items()}, encoding=encoding,
               finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if args.runs:
        folder = Path(args.runs)
        folder.mkdir(parents=True, exist_ok=True)
        for name, run in runs.items():
            slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
            write_run(cut(run, args.k), folder / f"{slug}.trec", tag=slug[:40],
                      spans_path=folder / f"{slug}.spans.jsonl")
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
