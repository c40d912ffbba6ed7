"""``python -m hybrid.search``: topics in, TREC run out.

Examples::

    # the bundled ECB+ sample (index built on first use), evaluated against its qrels
    python -m hybrid.search --topics sample --output run.trec
    # a real index, plain Pyserini BM25 with the whole sentence as query (the baseline)
    python -m hybrid.search --index idx --topics topics.tsv --model bm25 --query sentence --output bm25.trec
    # multi-field mention retrieval with explicit field weights
    python -m hybrid.search --index idx --topics topics.tsv --model multifield \\
        --weights "mention=1,chain:mention=0.5,ner=0.3,context=0.3" --output mf.trec --spans mf.spans.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from hybrid.cli_common import run_cli
from hybrid.errors import InputError
from hybrid.formats.lines import SkipReport

log = logging.getLogger("hybrid.search")
MODELS = ("bm25", "multifield")


def parser() -> argparse.ArgumentParser:
    from hybrid.retrieval.sparse import DEFAULT_CLAUSES, QUERY_FORMULATIONS

    p = argparse.ArgumentParser(prog="python -m hybrid.search", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--topics", required=True,
                   help="topics TSV/JSONL, or 'sample' for the bundled ECB+ sample topics")
    p.add_argument("--index", help="hybrid index directory (default: the bundled sample, built on first use)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="sharded index: search its shards in this process (Java threads) or on Ray actors")
    p.add_argument("--output", help="TREC run to write (default: run.<model>.trec)")
    p.add_argument("--model", choices=MODELS, default="multifield")
    p.add_argument("--query", choices=QUERY_FORMULATIONS, default="sentence",
                   help="query formulation for --model bm25")
    p.add_argument("--weights", default=DEFAULT_CLAUSES,
                   help="multifield clauses source[:field]=weight, comma separated (sources: mention chain ner "
                        "context sentence trigrams acronym type; fields: mention ner context coref trigrams "
                        "acronym type)")
    p.add_argument("--any-kind", action="store_true", help="multifield: do not restrict candidates to the query's kind")
    p.add_argument("--hits", type=int, default=100, help="passages per query")
    p.add_argument("--k1", type=float, default=0.9)
    p.add_argument("--b", type=float, default=0.4)
    p.add_argument("--threads", type=int, default=1, help="search threads")
    p.add_argument("--batch-size", type=int, default=256, help="topics handed to the Java searcher at once")
    p.add_argument("--tag", help="run tag (default: the model name)")
    p.add_argument("--spans", help="also write a JSONL of the best mention span per hit")
    p.add_argument("--qrels", help="evaluate the run against these qrels after writing it")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed topics (reported) instead of failing")
    p.add_argument("--quiet", action="store_true")
    return p


def build_retriever(args: argparse.Namespace, index):
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25

    if args.model == "bm25":
        return PassageBM25(index, args.query, k1=args.k1, b=args.b, threads=args.threads, k=args.hits)
    return MultiFieldBM25(index, args.weights, same_kind=not args.any_kind, k1=args.k1, b=args.b, k=args.hits,
                          progress=not args.quiet, threads=args.threads, batch_size=args.batch_size)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.hits < 1:
        raise InputError(None, None, "--hits must be >= 1")
    from hybrid.evaluation import evaluate
    from hybrid.formats.qrels import read_qrels
    from hybrid.formats.runs import write_run
    from hybrid.formats.topics import read_topics
    from hybrid.retrieval.sparse_index import SparseIndex
    from hybrid.sample import sample_index, sample_paths
    from hybrid.scale.sharded_search import open_index, shard_retriever

    topics_path, qrels_path = args.topics, args.qrels
    if args.topics == "sample":
        paths = sample_paths()
        topics_path, qrels_path = paths.topics, qrels_path or paths.qrels
    index = open_index(args.index, args.engine) if args.index else SparseIndex(sample_index(progress=not args.quiet))
    skipped = SkipReport() if args.skip_bad else None
    topics = read_topics(topics_path, resolve=index.passage_text, skip_bad=skipped)
    if skipped:
        print(skipped.summary(), file=sys.stderr)
    retriever = shard_retriever(build_retriever(args, index), index)
    started = time.time()
    run = retriever.search(topics, args.hits)
    elapsed = time.time() - started
    output = args.output or f"run.{args.model}.trec"
    write_run(run, output, tag=args.tag or retriever.name, spans_path=args.spans and Path(args.spans))
    if args.spans:
        _fill_spans(args.spans, index)
    meta = {
        "run": output, "queries": len(topics), "seconds": round(elapsed, 2),
        "queries_per_second": round(len(topics) / elapsed, 1) if elapsed > 0 else None,
        "model": args.model, "index": str(index.path), "argv": sys.argv[1:] if argv is None else argv,
    }
    _write_provenance(output, meta, args, index)
    print(json.dumps(meta), file=sys.stderr)
    if qrels_path:
        from hybrid.eval import format_table

        groups = {t.qid: t.kind for t in topics if t.kind}
        groups.update({t.qid: (index.query_record(t).kind or "unknown") for t in topics if not t.kind})
        measures = ("RR@10", "AP@100", "R@100", "nDCG@10")
        print(format_table(evaluate(read_qrels(qrels_path), run, measures, groups), measures))
    return 0


def _fill_spans(path: str, index) -> None:
    """Add the mention text of each span (the run writer knows offsets, the index knows texts)."""
    from hybrid.atomic import atomic_write

    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    with atomic_write(path) as out:
        for row in rows:
            if row.get("start") is not None and not row.get("mention"):
                text = index.passage_text(row["docid"])
                row["mention"] = text[row["start"] : row["end"]] if text else None
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_provenance(output: str, meta: dict, args: argparse.Namespace, index) -> None:
    """``<run>.meta.json``: the exact command, config and versions behind a run file."""
    from hybrid.atomic import atomic_write
    from indexes.lucene import versions

    record = dict(meta, config=vars(args), index_metadata=index.metadata.get("config"), versions=versions())
    with atomic_write(f"{output}.meta.json") as out:
        out.write(json.dumps(record, indent=2, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(run_cli(main))
