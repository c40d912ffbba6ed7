"""Throughput of the raw-text pipeline: passages/s of annotation alone and of annotation + index build.

On the first ``--limit`` passages of ``corpus.raw.jsonl`` (ids, document ids and text only: nothing
to reuse), with the default annotation (``--annotation auto``: one spaCy parse per passage, rules
detection, arguments, heuristic chains), for each ``--processes`` value of spaCy's ``n_process``.
Issue 25's target: >= 300 passages/s on 2 cores. The spaCy parse alone is timed in the same run, so
the pipeline's own overhead reads apart from the load other jobs put on a shared machine (``uptime``'s
load average before the run is recorded), and so is the CPU time of the annotation (this process and
spaCy's workers): passages per CPU-second x 2 is what two otherwise idle cores would give.

    python benchmarks/annotate_throughput.py --corpus ../shared/data/ecbplus/corpus.raw.jsonl --limit 4000 \
        --processes 1 2 --output benchmarks/results/annotate_throughput
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

from features.annotate import AnnotationConfig, Annotator
from hybrid.core.formats.corpus import read_corpus
from indexes.lucene import IndexConfig, build_index


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (spaCy's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="../shared/data/ecbplus/corpus.raw.jsonl")
    p.add_argument("--limit", type=int, default=4000, help="first N passages (0: all)")
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--output", default="benchmarks/results/annotate_throughput")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="throughput-"))
    corpus = tmp / "corpus.jsonl"
    with open(args.corpus, encoding="utf-8") as src, open(corpus, "w", encoding="utf-8") as dst:
        for n, line in enumerate(src):
            if args.limit and n >= args.limit:
                break
            dst.write(line)
    n_passages = sum(1 for _ in open(corpus, encoding="utf-8"))
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows = []
    for n_process in args.processes:
        config = AnnotationConfig(n_process=n_process)
        annotator = Annotator(config)  # model load outside the timing
        started = time.time()
        for _ in annotator.parse((x.text for x in read_corpus(str(corpus))), n_passages):
            pass
        parse_s = time.time() - started
        started, cpu = time.time(), cpu_seconds()
        mentions = sum(len(records) for _, records in annotator.annotate(read_corpus(str(corpus))))
        annotate_s, annotate_cpu = time.time() - started, cpu_seconds() - cpu
        started = time.time()
        meta = build_index(IndexConfig(corpus=str(corpus), annotation=config, threads=2), tmp / f"idx{n_process}",
                           progress=False)
        build_s = time.time() - started
        rows.append({
            "n_process": n_process, "passages": n_passages, "mentions": mentions,
            "parse_passages_per_s": round(n_passages / parse_s, 1),
            "annotate_seconds": round(annotate_s, 1), "annotate_passages_per_s": round(n_passages / annotate_s, 1),
            "annotate_cpu_seconds": round(annotate_cpu, 1),
            "annotate_passages_per_cpu_s": round(n_passages / annotate_cpu, 1),
            "annotate_index_seconds": round(build_s, 1),
            "annotate_index_passages_per_s": round(n_passages / build_s, 1),
            "index_counts": meta["counts"],
        })
        print(rows[-1])
    result = {
        "command": f"python benchmarks/annotate_throughput.py --corpus {args.corpus} --limit {args.limit} "
                   f"--processes {' '.join(map(str, args.processes))} --output {args.output}",
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_before": load_before,
        "annotation_sources": Annotator(AnnotationConfig()).sources(),
        "target_passages_per_s": 300,
        "rows": rows,
    }
    Path(args.output + ".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Raw-text annotation throughput", "",
        f"Command: `{result['command']}`  ",
        f"Machine: {result['machine']}; {result['date']}; load average before the run "
        f"{result['load_average_before']}  ",
        f"Pipeline: {result['annotation_sources']}", "",
        "| spaCy n_process | passages | mentions | spaCy parse only, passages/s | annotate s | annotate passages/s | "
        "annotate passages per CPU-s | annotate + index s | annotate + index passages/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n_process']} | {r['passages']} | {r['mentions']} | {r['parse_passages_per_s']} | "
                     f"{r['annotate_seconds']} | {r['annotate_passages_per_s']} | {r['annotate_passages_per_cpu_s']} | "
                     f"{r['annotate_index_seconds']} | "
                     f"{r['annotate_index_passages_per_s']} |")
    Path(args.output + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
