"""``python -m hybrid.search``: topics in, TREC run out.

Examples::

    # the bundled ECB+ sample (index built on first use), evaluated against its qrels
    python -m hybrid.search --topics sample --output run.trec
    # a real index, plain Pyserini BM25 with the whole sentence as query (the baseline)
    python -m hybrid.search --index idx --topics topics.tsv --model bm25 --query sentence --output bm25.trec
    # multi-field mention retrieval with explicit field weights
    python -m hybrid.search --index idx --topics topics.tsv --model multifield \\
        --weights "mention=1,chain:mention=0.5,ner=0.3,context=0.3" --output mf.trec --spans mf.spans.jsonl
    # BM25F (one saturation over pooled fields; needs the project's jar)
    python -m hybrid.search --index idx --topics topics.tsv --model bm25f --bm25f-fields "mention=1,coref=0.5"
    # dense retrieval over a FAISS index built by python -m hybrid.index_dense (encoder recorded in it)
    python -m hybrid.search --index idx --dense-index idx-dense --topics topics.tsv --model dense
    # multi-field + dense fused in one command; each component run is written beside the fused one
    # (fused.multifield.trec, fused.dense.trec; with --spans also fused.dense.spans.jsonl, ...)
    python -m hybrid.search --index idx --dense-index idx-dense --topics topics.tsv --model fused \\
        --fuse multifield,dense --fusion combsum --norm minmax --fusion-weights "event=0.6,0.4;entity=0.6,0.4" \\
        --output fused.trec
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from hybrid.cli_common import (
    check_outputs,
    make_parser,
    non_negative_float,
    non_negative_int,
    output_file,
    positive_int,
    run_cli,
    run_tag,
    unit_float,
)
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import SkipReport
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run_set
from hybrid.core.formats.topics import read_topics
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.provenance import code_version, inputs, search_options, versions
from hybrid.retrieval.bm25f import BM25F, DEFAULT_BM25F_FIELDS, DEFAULT_BM25F_QUERY
from hybrid.retrieval.sparse import DEFAULT_CLAUSES, QUERY_FORMULATIONS, MultiFieldBM25, PassageBM25
from hybrid.sample import sample_index, sample_paths
from indexes.sparse_index import SparseIndex

log = logging.getLogger("hybrid.search")
MODELS = ("bm25", "multifield", "bm25f", "dense", "fused")
COMPONENTS = ("bm25", "multifield", "bm25f", "dense")  # what --fuse may combine


def parser() -> argparse.ArgumentParser:
    from hybrid.fusion.fuse import METHODS as FUSION_METHODS  # deferred: importing it loads ir_measures
    from hybrid.fusion.normalize import NORMALISATIONS  # deferred: importing it loads ir_measures

    # deferred: importing it loads numpy
    # deferred: importing it loads numpy
    # deferred: importing it loads numpy
    from hybrid.retrieval.doc_context import DEPTH, DOC_WEIGHT, EXPAND_DOCS, PASSAGE_WEIGHT

    p = make_parser("python -m hybrid.search", __doc__, epilog=True)
    p.add_argument("--topics", required=True,
                   help="topics TSV/JSONL, or 'sample' for the bundled ECB+ sample topics")
    p.add_argument("--index", help="hybrid index directory (default: the bundled sample, built on first use)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="sharded index: search its shards in this process (Java threads) or on Ray actors")
    p.add_argument("--output", type=output_file,
                   help="TREC run to write (default: sample.<model>.trec with its spans in sample.<model>.spans.jsonl "
                        "for --topics sample, else run.<model>.trec)")
    p.add_argument("--model", choices=MODELS, default="multifield")
    p.add_argument("--query", choices=QUERY_FORMULATIONS, default="sentence",
                   help="query formulation for --model bm25")
    p.add_argument("--weights", default=DEFAULT_CLAUSES,
                   help="multifield clauses source[:field]=weight, comma separated (sources: mention chain ner "
                        "context sentence trigrams acronym type; fields: mention ner context coref trigrams "
                        "acronym type)")
    p.add_argument("--passage-weight", type=unit_float, default=PASSAGE_WEIGHT,
                   help="multifield/bm25f/dense/fused: weight of plain passage BM25 fused with the mention-level run "
                        "(the recall safety net for passages whose mention was not detected; 0 = off)")
    p.add_argument("--doc-weight", type=non_negative_float, default=DOC_WEIGHT,
                   help="multifield/bm25f/dense/fused: weight of the TF-IDF cosine between the query's and the "
                        "candidate's documents (0 = off)")
    p.add_argument("--expand-docs", type=non_negative_int, default=EXPAND_DOCS,
                   help="multifield/bm25f/dense/fused: also consider every passage of the N documents most similar "
                        "to the query's document")
    p.add_argument("--no-safety-net", action="store_true",
                   help="the mention-level model alone: no passage BM25, no document context (the three above at 0)")
    p.add_argument("--net-depth", type=positive_int, default=DEPTH,
                   help="hits the mention-level run and passage BM25 each fetch before the safety net combines them")
    p.add_argument("--any-kind", action="store_true",
                   help="multifield/bm25f/dense: do not restrict candidates to the query's kind")
    p.add_argument("--bm25f-fields", default=DEFAULT_BM25F_FIELDS, help="bm25f: field=weight, comma separated")
    p.add_argument("--bm25f-query", default=DEFAULT_BM25F_QUERY,
                   help="bm25f: a query formulation, or query sources joined by '+' (mention+chain+ner)")
    p.add_argument("--dense-index", help="dense/fused: FAISS index directory (default: <index>/dense; a sharded "
                                         "index uses its shards' dense parts)")
    p.add_argument("--encoder", help="dense/fused: query encoder (default: the one the dense index records)")
    p.add_argument("--dense-passage-weight", type=non_negative_float, default=None,
                   help="dense/fused: a passage scores best mention + W * cosine of the unmarked query sentence "
                        "and its passage vector (or the max of the two, --dense-combine max), where the dense index "
                        "has passage vectors (default: hybrid.retrieval.dense.PASSAGE_WEIGHT; 0 = mention vectors "
                        "only)")
    p.add_argument("--dense-combine", choices=("sum", "max"), default=None,
                   help="dense/fused: how the mention and passage-vector scores combine (default: sum)")
    p.add_argument("--device", help="dense/fused: torch device (default: cuda when available, else cpu)")
    p.add_argument("--fuse", default="multifield,dense",
                   help=f"fused: the models to fuse, comma separated, from {', '.join(COMPONENTS)}")
    p.add_argument("--fusion", choices=FUSION_METHODS, default="combsum", help="fused: fusion method")
    p.add_argument("--norm", choices=NORMALISATIONS, default="minmax",
                   help="fused: score normalisation of combsum/combmnz")
    p.add_argument("--fusion-weights", default="",
                   help="fused: one weight per --fuse model, e.g. '0.6,0.4', optionally per kind: "
                        "'event=0.55,0.45;entity=0.6,0.4' (default: equal weights; see BENCHMARKS.md)")
    p.add_argument("--depth", type=positive_int, help="fused: hits each component fetches (default: --hits)")
    p.add_argument("--hits", type=positive_int, default=100, help="passages per query")
    p.add_argument("--k1", type=non_negative_float, default=BM25_K1, help="BM25 term saturation")
    p.add_argument("--b", type=unit_float, default=BM25_B, help="BM25 length normalisation")
    p.add_argument("--threads", type=positive_int, default=1, help="search threads")
    p.add_argument("--batch-size", type=positive_int, default=256, help="topics handed to the Java searcher at once")
    p.add_argument("--tag", type=run_tag, help="run tag (default: the model name)")
    p.add_argument("--spans", type=output_file, help="also write a JSONL of the best mention span per hit")
    p.add_argument("--qrels", help="evaluate the run against these qrels after writing it")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed topics (reported) instead of failing")
    p.add_argument("--quiet", action="store_true")
    return p


def build_retriever(args: argparse.Namespace, index, model: str | None = None):
    """The retriever of ``--model`` (or of one fused component), already adapted to a sharded index."""
    from hybrid.scale.sharded_search import shard_retriever  # deferred: importing it loads numpy, torch

    model = model or args.model
    if model == "fused":
        return build_fused(args, index)
    if model == "dense":
        return build_dense(args, index)
    if model == "bm25f":
        retriever = BM25F(index, args.bm25f_fields, same_kind=not args.any_kind, k=args.hits, query=args.bm25f_query,
                          k1=args.k1, b=args.b, threads=args.threads, progress=not args.quiet)
    elif model == "bm25":
        retriever = PassageBM25(index, args.query, k1=args.k1, b=args.b, threads=args.threads, k=args.hits,
                                progress=not args.quiet)
    else:
        retriever = MultiFieldBM25(index, args.weights, same_kind=not args.any_kind, k1=args.k1, b=args.b,
                                   k=args.hits, progress=not args.quiet, threads=args.threads,
                                   batch_size=args.batch_size)
    return shard_retriever(retriever, index)


def with_safety_net(args: argparse.Namespace, index, retriever):
    """Mention-level models get passage-level BM25 and document context (hybrid.retrieval.doc_context)."""
    from hybrid.retrieval.doc_context import SafetyNet  # deferred: importing it loads numpy

    if args.model == "bm25" or args.no_safety_net or (
            args.passage_weight == 0 and args.doc_weight == 0 and args.expand_docs == 0):
        return retriever
    return SafetyNet(retriever, index, passage_weight=args.passage_weight, doc_weight=args.doc_weight,
                     expand_docs=args.expand_docs, depth=args.net_depth, k=args.hits, k1=args.k1, b=args.b,
                     threads=args.threads)


def build_dense(args: argparse.Namespace, index):
    """DenseRetriever over --dense-index (or ``<index>/dense``); on a sharded index, over its shards' parts."""
    from hybrid.retrieval.dense import DenseRetriever  # deferred: importing it loads numpy, torch
    from hybrid.scale.sharded_search import ShardedDense, ShardedIndex  # deferred: importing it loads numpy, torch

    options = {"same_kind": not args.any_kind, "k": args.hits, "progress": not args.quiet, "device": args.device}
    if isinstance(index, ShardedIndex) and not args.dense_index:
        return ShardedDense(index, encoder=args.encoder, **options)
    path = Path(args.dense_index) if args.dense_index else Path(index.path) / "dense"
    if not path.is_dir():
        raise InputError(path, None, "no dense index here: give --dense-index (built by python -m hybrid.index_dense)")
    if args.dense_passage_weight is not None:
        options["passage_weight"] = args.dense_passage_weight
    if args.dense_combine is not None:
        options["combine"] = args.dense_combine
    return DenseRetriever(path, args.encoder, **options)


def build_fused(args: argparse.Namespace, index):
    """Fuse of the --fuse models with --fusion/--norm/--fusion-weights; components fetch --depth hits."""
    from hybrid.fusion import Fuse, parse_fusion_weights  # deferred: importing it loads ir_measures

    names = [n.strip() for n in args.fuse.split(",") if n.strip()]
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown or len(names) < 2:
        raise InputError(None, None, f"--fuse needs two or more of {', '.join(COMPONENTS)}, got {args.fuse!r}")
    if len(set(names)) != len(names):
        raise InputError(None, None, f"--fuse names a model twice: {args.fuse!r}")
    default, by_kind = parse_fusion_weights(args.fusion_weights, len(names))
    components = [build_retriever(args, index, name) for name in names]
    for component, name in zip(components, names, strict=True):
        component.name = name
    return Fuse(components, method=args.fusion, weights=default, normalisation=args.norm, k=args.hits,
                depth=args.depth, weights_by_kind=by_kind,
                name=f"{args.fusion}-{args.norm}({'+'.join(names)})" if args.fusion != "rrf" else None)


def component_path(output: str, name: str, suffix: str = ".trec") -> str:
    """``fused.trec`` + ``dense`` -> ``fused.dense.trec`` (beside the fused run)."""
    path = Path(output)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return str(path.with_name(f"{stem}.{name}{suffix}"))


def check_run_outputs(args: argparse.Namespace, output: str, topics: str | Path, qrels: str | Path | None) -> None:
    """Every file the search writes (run, spans, meta, fused components) is new: never an input, never twice."""
    outputs = {"--output": output, "--spans": args.spans}
    if args.model == "fused":
        for name in (n.strip() for n in args.fuse.split(",") if n.strip()):
            outputs[f"the {name} component run"] = component_path(output, name)
            if args.spans:
                outputs[f"the {name} component spans"] = component_path(output, name, ".spans.jsonl")
    outputs.update({f"{name} meta": f"{path}.meta.json" for name, path in list(outputs.items())
                    if path and not name.startswith("--spans") and not name.endswith("spans")})
    inputs = {"--topics": topics, "--qrels": qrels, "--encoder": args.encoder}
    check_outputs(outputs, inputs)


def default_outputs(args: argparse.Namespace) -> tuple[str, str | None]:
    """The run and spans files: as given; the default job (``--topics sample``, no ``--output``) writes
    ``sample.<model>.trec`` and ``sample.<model>.spans.jsonl``; other topics default to ``run.<model>.trec``."""
    if args.output:
        return args.output, args.spans
    if args.topics == "sample":
        return f"sample.{args.model}.trec", args.spans or f"sample.{args.model}.spans.jsonl"
    return f"run.{args.model}.trec", args.spans


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.depth is not None and args.depth < args.hits:
        raise InputError(None, None, "--depth must be >= --hits")
    from hybrid.evaluation.measures import evaluate  # deferred: importing it loads ir_measures
    from hybrid.scale.sharded_search import open_index  # deferred: importing it loads numpy, torch

    topics_path, qrels_path = args.topics, args.qrels
    if args.topics == "sample":
        paths = sample_paths()
        topics_path, qrels_path = paths.topics, qrels_path or paths.qrels
    output, args.spans = default_outputs(args)
    check_run_outputs(args, output, topics_path, qrels_path)
    index = open_index(args.index, args.engine) if args.index else SparseIndex(sample_index(progress=not args.quiet))
    skipped = SkipReport() if args.skip_bad else None
    topics = read_topics(topics_path, resolve=index.passage_text, skip_bad=skipped)
    if skipped:
        print(skipped.summary(), file=sys.stderr)
    retriever = with_safety_net(args, index, build_retriever(args, index))
    started = time.time()
    run = retriever.search(topics, args.hits)
    elapsed = time.time() - started
    components = getattr(retriever, "component_runs", {}) if args.model == "fused" else {}
    meta = {
        "run": output, "queries": len(topics), "seconds": round(elapsed, 2),
        "queries_per_second": round(len(topics) / elapsed, 1) if elapsed > 0 else None,
        "model": args.model, "index": str(index.path), "argv": sys.argv[1:] if argv is None else argv,
    }
    provenance = {"config": search_options(args), "inputs": inputs(topics_path, index.path, qrels=qrels_path),
                  "code": code_version(), "index_metadata": index.metadata.get("config"), "versions": versions()}
    for name, component in components.items():
        spans = component_path(output, name, ".spans.jsonl") if args.spans else None
        if spans:
            _fill_mentions(component, index)
        write_run_set(component, component_path(output, name), tag=name, spans_path=spans,
                      meta=dict(meta, run=component_path(output, name), model=name, component_of=output,
                                **provenance))
    if components:
        meta["components"] = {name: component_path(output, name) for name in components}
    if args.spans:
        _fill_mentions(run, index)
    write_run_set(run, output, tag=args.tag or retriever.name, spans_path=args.spans, meta=dict(meta, **provenance))
    print(json.dumps(meta), file=sys.stderr)
    if qrels_path:
        from hybrid.eval import format_table  # deferred: importing it loads ir_measures

        groups = {t.qid: t.kind for t in topics if t.kind}
        groups.update({t.qid: (index.query_record(t).kind or "unknown") for t in topics if not t.kind})
        measures = ("RR@10", "AP@100", "R@100", "nDCG@10")
        print(format_table(evaluate(read_qrels(qrels_path), run, measures, groups), measures))
    return 0


def _fill_mentions(run, index) -> None:
    """Add the mention text of each hit's span (the retriever knows offsets, the index knows texts)."""
    for hits in run.values():
        for hit in hits:
            if hit.mention_start is not None and not hit.mention_text:
                text = index.passage_text(hit.docid)
                hit.mention_text = text[hit.mention_start : hit.mention_end] if text else None


if __name__ == "__main__":
    sys.exit(run_cli(main))
