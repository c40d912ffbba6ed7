"""How fast a dense build reads a hybrid index's passages (issue 39): the project jar's ``PassageSpans`` (the stored
JSON parsed in Java, only ids, texts and mention spans crossing into Python) against decoding every stored JSON in
Python (the path of a JVM without the class), interleaved in ``--rounds`` rounds in one process, the two results
checked equal.

    PYTHONPATH=. python benchmarks/index_read.py --index DEV_RAW --rounds 3

Prints one JSON line per reader and round (passages/s, seconds) and a summary line (medians).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import indexes.faiss_index as faiss_index
from indexes.faiss_index import index_passage_chunks
from indexes.sparse_index import SparseIndex


def read_all(index: SparseIndex, java: bool, chunk: int) -> tuple[float, list]:
    """Seconds to read every passage in chunks of ``chunk`` (through Java or Python), and the passages."""
    found = faiss_index.passage_span_reader
    if not java:
        faiss_index.passage_span_reader = lambda directory: None
    try:
        started = time.perf_counter()
        passages = [p for part in index_passage_chunks(index, chunk) for p in part]
        return time.perf_counter() - started, passages
    finally:
        faiss_index.passage_span_reader = found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", required=True, help="a hybrid index directory")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--chunk", type=int, default=faiss_index.READ_CHUNK)
    args = p.parse_args(argv)
    index = SparseIndex(args.index)
    reader = faiss_index.passage_span_reader(index.path / "passages")
    if reader is None:
        print("the project jar lacks io.hybrid.lucene.PassageSpans: rebuild it (mvn package)", file=sys.stderr)
        return 2
    reader.close()
    seconds: dict[str, list[float]] = {"java": [], "python": []}
    for round_ in range(1, args.rounds + 1):
        results = {}
        for reader in ("java", "python"):
            took, results[reader] = read_all(index, reader == "java", args.chunk)
            seconds[reader].append(took)
            print(json.dumps({"round": round_, "reader": reader, "passages": len(results[reader]),
                              "seconds": round(took, 3), "passages_per_second": round(len(results[reader]) / took)}))
        if results["java"] != results["python"]:
            print("the two readers disagree", file=sys.stderr)
            return 1
    mentions = sum(len(x.mentions) for x in results["java"])
    print(json.dumps({"index": str(index.path), "passages": index.passages.num_docs, "mentions": mentions,
                      **{f"{r}_median_seconds": round(statistics.median(s), 3) for r, s in seconds.items()},
                      "speedup": round(statistics.median(seconds["python"]) / statistics.median(seconds["java"]), 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
