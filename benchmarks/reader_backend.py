"""Speed and agreement of the reader's inference backends on CPU: ``score_pairs`` pairs/s under torch and onnx
(ONNX Runtime), interleaved on the same pairs, and how far onnx's scores, confidences and spans are from torch's.

    python benchmarks/reader_backend.py --index IDX --topics TOPICS --run RUN [--model READER_DIR] \\
        [--limit 150] [--depth 10] [--rounds 2] [--threads 2] [--batch-size 64]

The pairs are each of the first ``--limit`` topics (in the topics file's order) with the top ``--depth`` passages of
``--run``. ``--model``: a trained reader; default: fresh (seeded) heads over the untrained MiniLM-L6, as the tests
wrap a base model (the encoder's cost is what the backend changes; the heads are the same tiny torch layers under
both). Each round scores the pairs with torch, then with onnx, each after scoring one pair alone (onnx: the export
of its session, reported as ``first_pair_seconds``, not in ``seconds``); on a shared machine compare the two
backends within a round. Prints JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

# ``python benchmarks/reader_backend.py`` puts benchmarks/ first on sys.path, not the repository root: put the root
# first (and drop benchmarks/, whose modules must not shadow a package), whatever the working directory.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from hybrid.core.formats.runs import read_run, sorted_hits  # noqa: E402
from hybrid.core.formats.topics import read_topics  # noqa: E402
from indexes.sparse_index import SparseIndex  # noqa: E402
from ltr.reader.infer import score_pairs  # noqa: E402
from ltr.reader.store import load_reader, new_reader  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--run", required=True, help="first-stage run whose top --depth passages are paired")
    p.add_argument("--model", help="trained reader directory (default: untrained MiniLM-L6 with seeded heads)")
    p.add_argument("--limit", type=int, default=150)
    p.add_argument("--depth", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    index = SparseIndex(args.index)
    run = read_run(args.run)
    topics = [t for t in read_topics(args.topics, resolve=index.passage_text) if t.qid in run][: args.limit]
    pair_topics, passages = [], []
    for topic in topics:
        for hit in sorted_hits(run[topic.qid])[: args.depth]:
            pair_topics.append(topic)
            passages.append(index.passage_text(hit.docid))
    reader = load_reader(args.model, device="cpu") if args.model else new_reader(seed=13)

    def timed(backend: str):
        reader.set_backend(backend)
        started = time.perf_counter()
        score_pairs(reader, pair_topics[:1], passages[:1])  # onnx: the export (untimed below); both: a warm-up
        warm = time.perf_counter() - started
        started = time.perf_counter()
        out = score_pairs(reader, pair_topics, passages, batch_size=args.batch_size)
        return warm, time.perf_counter() - started, out

    rounds, outputs = [], {}
    for _ in range(args.rounds):
        row = {}
        for backend in ("torch", "onnx"):
            warm, seconds, outputs[backend] = timed(backend)
            row[backend] = {"seconds": round(seconds, 2), "pairs_per_second": round(len(passages) / seconds, 1),
                            "first_pair_seconds": round(warm, 2)}
        row["speedup"] = round(row["torch"]["seconds"] / row["onnx"]["seconds"], 2)
        rounds.append(row)
        print(json.dumps(row), file=sys.stderr)
    a, b = outputs["torch"], outputs["onnx"]
    agreement = {
        "max_abs_score": float(np.abs(a.scores - b.scores).max()),
        "max_abs_confidence": float(np.abs(a.span_confidences - b.span_confidences).max()),
        "same_spans": sum(x == y for x, y in zip(a.spans, b.spans, strict=True)),
        "score_range": [float(a.scores.min()), float(a.scores.max())],
    }
    print(json.dumps({"pairs": len(passages), "topics": len(topics), "depth": args.depth, "threads": args.threads,
                      "batch_size": args.batch_size, "model": args.model or "untrained MiniLM-L6",
                      "rounds": rounds, "agreement": agreement}, indent=2))


if __name__ == "__main__":
    main()
