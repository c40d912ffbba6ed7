"""Dense retrieval over raw text with passage vectors (issue 25): a sweep of the passage weight.

One dense index built with passage vectors (``python -m hybrid.index_dense``) gives every row of the table
from one encoding of the queries:

* ``passage vectors only``: the untrained sentence encoder over whole passages (query sentence and passage,
  both unmarked, mean-pooled; own document excluded), i.e. what the off-the-shelf encoder gets;
* ``mention vectors only``: the mention-aware retriever as before (``passage_weight=0``);
* ``max(mention, w * passage)`` for each ``--weights`` value: :class:`hybrid.retrieval.dense.DenseRetriever`
  (and ``mention + w * passage``, its ``combine="sum"``).

Example (ECB+ dev, raw corpus)::

    python benchmarks/dense_raw.py --index /work/scratch/raw-rules --dense /work/scratch/dense-minilm-raw \
        --topics ../shared/data/ecbplus/queries.dev.jsonl --qrels ../shared/data/ecbplus/qrels.dev.txt \
        --output benchmarks/results/dense-raw.json --runs /work/scratch/runs
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

MEASURES = ("AP@100", "RR@10", "R@100")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", required=True, help="hybrid (sparse) index the dense index was built from")
    p.add_argument("--dense", required=True, help="dense index with passage vectors")
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--weights", default="0.5,0.75,0.9,1.0,1.1,1.25,1.5")
    p.add_argument("--combine", default="max,sum", help="DenseRetriever combinations to sweep")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int, help="first N topics only (smoke test)")
    p.add_argument("--output", required=True, help="JSON results")
    p.add_argument("--runs", help="also write each run here as <name>.trec")
    args = p.parse_args()

    import faiss
    import torch

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    from hybrid.core.formats.qrels import read_qrels
    from hybrid.core.formats.runs import write_run
    from hybrid.core.formats.topics import read_topics
    from hybrid.core.measures import evaluate
    from hybrid.core.records import KIND_CODES, Hit
    from hybrid.retrieval.dense import DenseRetriever
    from indexes.faiss_index import best_mention_of_passages
    from indexes.sparse_index import SparseIndex

    index = SparseIndex(args.index)
    topics = read_topics(args.topics, resolve=index.passage_text)
    if args.limit:
        topics = topics[: args.limit]
    qrels_all = read_qrels(args.qrels)
    qrels = {t.qid: qrels_all[t.qid] for t in topics if t.qid in qrels_all}
    kinds = {t.qid: t.kind or "unknown" for t in topics}
    k = args.k

    retriever = DenseRetriever(args.dense, k=k, passage_weight=0, batch_size=64)
    dense = retriever.index
    if not dense.has_passage_vectors:
        raise SystemExit(f"{args.dense} has no passage vectors: rebuild it with python -m hybrid.index_dense")
    timing = {}
    t0 = time.perf_counter()
    mention_run = retriever.search(topics, k)  # encodes the marked queries once
    timing["mention vectors only"] = dict(retriever.last_timing)
    queries = retriever.last_query_vectors  # the marked query vectors of that search, kept for the sweep
    t1 = time.perf_counter()
    sentences = retriever.encoder.encode_texts([t.text for t in topics], "query", batch_size=64)
    timing["encode query sentences"] = time.perf_counter() - t1
    owns = [dense.doc_number.get(retriever.own_doc(t) or "", -1) for t in topics]
    kind_codes = [KIND_CODES.get(retriever.query_kind(t)) or None for t in topics]

    # the off-the-shelf encoder over whole passages
    t1 = time.perf_counter()
    _, numbers = dense.search_passages(sentences, k + dense.max_doc_passages)
    passage_run = {}
    for qi, topic in enumerate(topics):
        found = numbers[qi][numbers[qi] >= 0]
        if owns[qi] >= 0:
            found = found[dense.passage_doc[found] != owns[qi]]
        scores = dense.passage_exact_scores(sentences[qi], found)
        hits = sorted(((dense.passage_ids[n], float(s)) for n, s in zip(found.tolist(), scores.tolist(), strict=True)),
                      key=lambda h: (-h[1], h[0]))[:k]
        passage_run[topic.qid] = [Hit(docid=pid, score=s) for pid, s in hits]
    timing["passage vectors only"] = time.perf_counter() - t1

    runs = {"passage vectors only (untrained MiniLM over whole passages)": passage_run,
            "mention vectors only (passage weight 0)": mention_run}
    # The candidates (top k of each side), their best eligible mention and their passage score do not depend on
    # the weight: compute them once per query, as DenseRetriever._with_passages does, and combine per weight.
    t1 = time.perf_counter()
    parts = {}
    for qi, t in enumerate(topics):
        near = [h.docid for h in passage_run[t.qid]]  # the top k passages by passage vector, own document out
        numbers = np.asarray(sorted({dense.passage_number[p] for p in near + [h.docid for h in mention_run[t.qid]]}),
                             dtype=np.int64)
        bests = best_mention_of_passages(dense, queries[qi], numbers, kind_codes[qi])
        parts[t.qid] = (numbers, dense.passage_exact_scores(sentences[qi], numbers), bests)
    timing["candidates and their scores"] = time.perf_counter() - t1

    def combined(qid: str, combine: str, w: float) -> list:
        numbers, plain, bests = parts[qid]
        scored = []
        for number, p_score, best in zip(numbers.tolist(), (w * plain).tolist(), bests, strict=True):
            if combine == "sum":
                score, span = p_score + (best[0] if best is not None else 0.0), best
            elif best is not None and best[0] >= p_score:
                score, span = best[0], best
            else:
                score, span = p_score, None
            ok = span is not None and span[1] >= 0
            scored.append(Hit(docid=dense.passage_ids[number], score=score, mention_start=span[1] if ok else None,
                              mention_end=span[2] if ok else None))
        scored.sort(key=lambda hit: (-hit.score, hit.docid))
        return scored[:k]

    for combine in args.combine.split(","):
        for w in [float(x) for x in args.weights.split(",") if x.strip()]:
            name = f"max(mention, {w:g} x passage)" if combine == "max" else f"mention + {w:g} x passage"
            runs[name] = {t.qid: combined(t.qid, combine, w) for t in topics}
    timing["total"] = time.perf_counter() - t0

    rows = {}
    for name, run in runs.items():
        table = evaluate(qrels, run, MEASURES, kinds)
        rows[name] = {g: {m: round(v, 4) for m, v in table[g].items()} for g in ("all", "event", "entity")
                      if g in table}
        print(name, json.dumps(rows[name]), flush=True)
        Path(args.output).with_suffix(".partial.json").write_text(json.dumps(rows, indent=2) + "\n")
        if args.runs:
            slug = "dense-sweep." + "".join(c if c.isalnum() or c in ".-" else "_" for c in name)[:60]
            write_run(run, Path(args.runs) / f"{slug}.trec", tag="dense-sweep")
    out = {"queries": len(topics), "judged": len(qrels), "k": k, "index": args.index, "dense": args.dense,
           "dense_metadata": {key: dense.metadata.get(key) for key in ("encoder", "counts", "passage_vectors",
                                                                          "encode_seconds", "built_at")},
           "rows": rows, "timing_seconds": {key: round(v, 2) if isinstance(v, float) else v
                                            for key, v in timing.items()},
           "machine": {"platform": platform.platform(), "cpus": __import__("os").cpu_count(),
                       "python": platform.python_version(), "torch": torch.__version__,
                       "faiss": faiss.__version__, "numpy": np.__version__},
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
