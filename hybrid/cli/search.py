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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid.api import fill_mentions
from hybrid.cli.common import (
    add_backend,
    add_precision,
    add_quiet,
    format_table,
    make_parser,
    output_file,
    positive_int,
    run_cli,
    run_tag,
)
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import SkipReport
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run_set
from hybrid.core.formats.topics import read_topics
from hybrid.core.normalize import NORMALISATIONS
from hybrid.core.outputs import Input, Output, Writes, inputs_of, run_output
from hybrid.core.params import Param
from hybrid.core.provenance import inputs, produced_by, search_options, used_artifacts
from hybrid.core.stage import Retriever, Stage
from hybrid.fusion.fuse import METHODS as FUSION_METHODS
from hybrid.recipes import BUILDERS, Context, build_system, load_recipe
from hybrid.recipes.plan import missing_error, search_plan
from hybrid.recipes.registry import CommandLineSource
from hybrid.sample import SAMPLE, index_location, sample_paths
from indexes.sharded_index import ShardedIndex, open_index

log = logging.getLogger("hybrid.search")
MODELS = ("bm25", "multifield", "bm25f", "dense", "fused")
COMPONENTS = ("bm25", "multifield", "bm25f", "dense")  # what --fuse may combine
NET_MODELS = "multifield/bm25f/dense/fused"


@dataclass(frozen=True)
class SystemOption:
    """A command-line option that sets one parameter of a recipe system type: its type, default and help come
    from the builder's :class:`~hybrid.core.params.Param` (declared once, in :mod:`hybrid.recipes.builders`)."""

    flag: str
    system_type: str
    param: str
    models: str  # which --model values it applies to (the help text's prefix)
    default: Any = None  # the command's own default where it differs from the parameter's (said in --help)

    @property
    def spec(self) -> Param:
        return BUILDERS[self.system_type].params[self.param]

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


SYSTEM_OPTIONS = (
    SystemOption("--query", "bm25", "formulation", "bm25"),
    SystemOption("--weights", "multifield", "weights", "multifield"),
    SystemOption("--passage-weight", "safety-net", "passage_weight", NET_MODELS),
    SystemOption("--doc-weight", "safety-net", "doc_weight", NET_MODELS),
    SystemOption("--expand-docs", "safety-net", "expand_docs", NET_MODELS),
    SystemOption("--net-depth", "safety-net", "depth", NET_MODELS),
    SystemOption("--bm25f-fields", "bm25f", "fields", "bm25f"),
    SystemOption("--bm25f-query", "bm25f", "query", "bm25f"),
    SystemOption("--encoder", "dense", "encoder", "dense/fused"),
    SystemOption("--dense-passage-weight", "dense", "passage_weight", "dense/fused"),
    SystemOption("--dense-combine", "dense", "combine", "dense/fused"),
    SystemOption("--fusion", "fuse", "method", "fused", default="combsum"),
    SystemOption("--norm", "fuse", "normalisation", "fused"),
    SystemOption("--fusion-weights", "fuse", "weights", "fused"),
    SystemOption("--depth", "fuse", "depth", "fused"),
    SystemOption("--k1", "bm25", "k1", "bm25/multifield/bm25f and the safety net"),
    SystemOption("--b", "bm25", "b", "bm25/multifield/bm25f and the safety net"),
    SystemOption("--batch-size", "multifield", "batch_size", "multifield"),
)
#: Which option to name when a system parameter is refused: every system type's parameter that an option sets
#: (the same Param object, e.g. K1 in bm25, multifield, bm25f and the safety net), plus the options that
#: choose a component rather than set a value.
OPTION_OF = {(kind, param.name): option.flag for option in SYSTEM_OPTIONS for kind, builder in BUILDERS.items()
             for param in builder.params.values() if param is option.spec} | {
    (kind, "same_kind"): "--any-kind / --same-kind" for kind in ("multifield", "bm25f", "dense")} | {
    ("dense", "index"): "--dense-index", ("fuse", "recipes"): "--fuse", ("safety-net", "base"): "--model"}


def parser() -> argparse.ArgumentParser:
    choices = {"--fusion": FUSION_METHODS, "--norm": tuple(NORMALISATIONS)}
    p = make_parser("python -m hybrid.search", __doc__, epilog=True)
    p.add_argument("--topics", required=True,
                   help="topics TSV/JSONL, or 'sample' for the bundled ECB+ sample topics")
    p.add_argument("--index", help="hybrid index directory, "
                                   "or 'sample' (the default: the bundled sample's, built on first use)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="sharded index: search its shards in this process (Java threads) or on Ray actors")
    p.add_argument("--output", type=output_file,
                   help="TREC run to write (default: sample.<model>.trec with its spans in sample.<model>.spans.jsonl "
                        "for --topics sample, else run.<model>.trec)")
    p.add_argument("--model", choices=MODELS, default="multifield",
                   help="the system: a mention-level model (with the raw-text safety net unless --no-safety-net) or "
                        "plain BM25")
    p.add_argument("--recipe", help="run a recipe instead of --model: a bundled recipe's name (python -m "
                                    "hybrid.recipes lists them) or a recipe TOML file")
    p.add_argument("--artifacts", help="--recipe: where the recipe's artifact paths resolve (default: "
                                       "$HYBRID_ARTIFACTS)")
    p.add_argument("--no-safety-net", action="store_true",
                   help="the mention-level model alone: no passage BM25, no document context")
    kinds = p.add_mutually_exclusive_group()
    kinds.add_argument("--any-kind", action="store_true",
                       help="multifield/bm25f/dense: do not restrict candidates to the query's kind (the default of "
                            "multifield/bm25f on an index whose kinds were detected from raw text)")
    kinds.add_argument("--same-kind", action="store_true",
                       help="multifield/bm25f: only candidates of the query's kind (their default on an index "
                            "annotated from the corpus; dense's always)")
    p.add_argument("--dense-index", help="dense/fused: FAISS index directory (default: <index>/dense; a sharded "
                                         "index uses its shards' dense parts)")
    p.add_argument("--device", help="dense/fused: torch device (default: cuda when available, else cpu)")
    add_precision(p, "the query encoder (dense/fused) and a recipe's query encoders and readers")
    add_backend(p, "the query encoder (dense/fused) and a recipe's query encoders and readers")
    p.add_argument("--fuse", default="multifield,dense",
                   help=f"fused: the models to fuse, comma separated, from {', '.join(COMPONENTS)}")
    for option in SYSTEM_OPTIONS:
        spec = option.spec
        default = option.default if option.default is not None else spec.default
        differs = (f" (default: {option.default}; a recipe's default is {spec.default})"
                   if option.default is not None else "")
        p.add_argument(option.flag, type=spec.argparse_type(), default=default,
                       choices=choices.get(option.flag, spec.choices), help=f"{option.models}: {spec.desc}{differs}")
    p.add_argument("--hits", type=positive_int, default=100, help="passages per query")
    p.add_argument("--threads", type=positive_int, default=1, help="search threads")
    p.add_argument("--tag", type=run_tag, help="run tag (default: the model name)")
    p.add_argument("--spans", type=output_file, help="also write a JSONL of the best mention span per hit")
    p.add_argument("--qrels", help="evaluate the run against these qrels after writing it")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed topics (reported) instead of failing")
    add_quiet(p)
    return p


def model_system(args: argparse.Namespace, index, model: str | None = None) -> dict[str, Any]:
    """The recipe ``[system]`` table of ``--model`` (or of one fused component) from the command line."""
    model = model or args.model
    same_kind = False if args.any_kind else (True if args.same_kind else None)  # None: the index decides
    if model == "bm25":
        return {"type": "bm25", "formulation": args.query, "k1": args.k1, "b": args.b}
    if model == "multifield":
        return {"type": "multifield", "weights": args.weights, "same_kind": same_kind, "k1": args.k1, "b": args.b,
                "batch_size": args.batch_size}
    if model == "bm25f":
        return {"type": "bm25f", "fields": args.bm25f_fields, "query": args.bm25f_query, "same_kind": same_kind,
                "k1": args.k1, "b": args.b}
    if model == "dense":
        system = {"type": "dense", "same_kind": same_kind, "passage_weight": args.dense_passage_weight,
                  "combine": args.dense_combine}
        if args.encoder:
            system["encoder"] = args.encoder
        path = dense_index_path(args, index)
        if path is not None:
            system["index"] = str(path)
        return system
    names = fused_names(args)
    system = {"type": "fuse", "recipes": [dict(model_system(args, index, name), name=name) for name in names],
              "method": args.fusion, "normalisation": args.norm, "weights": args.fusion_weights}
    if args.depth is not None:
        system["depth"] = args.depth
    if args.fusion != "rrf":
        system["name"] = f"{args.fusion}-{args.norm}({'+'.join(names)})"
    return system


def search_system(args: argparse.Namespace, index) -> dict[str, Any]:
    """``--model``'s table, wrapped in the raw-text safety net unless the model is bm25 or the net is off."""
    system = model_system(args, index)
    if args.model == "bm25" or args.no_safety_net or (
            args.passage_weight == 0 and args.doc_weight == 0 and args.expand_docs == 0):
        return system
    return {"type": "safety-net", "base": system, "passage_weight": args.passage_weight,
            "doc_weight": args.doc_weight, "expand_docs": args.expand_docs, "depth": args.net_depth, "k1": args.k1,
            "b": args.b}


def dense_index_path(args: argparse.Namespace, index) -> Path | None:
    """--dense-index, or ``<index>/dense``; None on a sharded index without --dense-index (its shards' parts)."""

    if isinstance(index, ShardedIndex) and not args.dense_index:
        return None
    path = Path(args.dense_index) if args.dense_index else Path(index.path) / "dense"
    if not path.is_dir():
        raise InputError(path, None, "no dense index here: give --dense-index (built by python -m hybrid.index_dense)")
    return path


def fused_names(args: argparse.Namespace) -> list[str]:
    names = [n.strip() for n in args.fuse.split(",") if n.strip()]
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown or len(names) < 2:
        raise InputError(None, None, f"--fuse needs two or more of {', '.join(COMPONENTS)}, got {args.fuse!r}")
    if len(set(names)) != len(names):
        raise InputError(None, None, f"--fuse names a model twice: {args.fuse!r}")
    return names


def build_system_of(args: argparse.Namespace, index) -> Stage:
    """The stage the command runs, built through the recipe registry: ``--recipe``, or ``--model`` as a system
    table (the same builders, parameters and sharding rules as every recipe)."""
    context = Context(index=index, hits=args.hits, threads=args.threads, progress=not args.quiet, device=args.device,
                      precision=args.precision, backend=args.backend,
                      artifacts=Path(args.artifacts) if args.artifacts else None)
    if args.recipe:
        recipe = load_recipe(args.recipe)
        missing = search_plan(recipe, getattr(index, "path", ""), context.artifacts)
        if missing is not None:  # the whole chain at once, then one line (exit 2)
            print(missing.format(), file=sys.stderr)
            raise missing_error(missing)
        return recipe.build(context)
    context.plain_paths = True
    return build_system(search_system(args, index), context, CommandLineSource(None, "", OPTION_OF))


def check_recipe_options(args: argparse.Namespace, options: argparse.ArgumentParser) -> None:
    """With --recipe the recipe sets the system: a --model option given beside it would be silently ignored."""
    if not args.recipe:
        return
    given = [f"--{name.replace('_', '-')}" for name in (*[o.dest for o in SYSTEM_OPTIONS], "model", "no_safety_net",
                                                         "any_kind", "same_kind", "dense_index", "fuse")
             if getattr(args, name) != options.get_default(name)]
    if given:
        raise InputError(None, None, f"{given[0]} sets a --model option; with --recipe the recipe sets the system")


def component_path(output: str, name: str, suffix: str = ".trec") -> str:
    """``fused.trec`` + ``dense`` -> ``fused.dense.trec`` (beside the fused run)."""
    path = Path(output)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return str(path.with_name(f"{stem}.{name}{suffix}"))


def writes(args: argparse.Namespace, output: str, topics: str | Path, qrels: str | Path | None) -> Writes:
    """What the search writes (run, spans, meta, fused components) and reads, for the output policy."""
    outputs = [run_output("--output", output), Output("--spans", args.spans, replace=True)]
    if args.model == "fused":
        for name in dict.fromkeys(n.strip() for n in args.fuse.split(",") if n.strip()):  # twice: refused later
            outputs.append(run_output(f"the {name} component run", component_path(output, name)))
            if args.spans:
                outputs.append(Output(f"the {name} component spans", component_path(output, name, ".spans.jsonl"),
                                      replace=True))
    reads = [Input("--topics", topics), Input("--qrels", qrels),
             *inputs_of(args, ("encoder", "index", "dense_index", "recipe"))]
    return Writes("hybrid.search", outputs, reads)


def default_outputs(args: argparse.Namespace) -> tuple[str, str | None]:
    """The run and spans files: as given; the default job (``--topics sample``, no ``--output``) writes
    ``sample.<model>.trec`` and ``sample.<model>.spans.jsonl``; other topics default to ``run.<model>.trec``."""
    if args.output:
        return args.output, args.spans
    if args.topics == "sample":
        return f"sample.{args.model}.trec", args.spans or f"sample.{args.model}.spans.jsonl"
    return f"run.{args.model}.trec", args.spans


def main(argv: list[str] | None = None) -> int:
    options = parser()
    args = options.parse_args(argv)
    check_recipe_options(args, options)
    if args.recipe:
        args.model = args.recipe if not Path(args.recipe).suffix else Path(args.recipe).stem
    if args.depth is not None and args.depth < args.hits:
        raise InputError(None, None, "--depth must be >= --hits")
    from hybrid.core.measures import evaluate  # deferred: importing it loads ir_measures

    topics_path, qrels_path = args.topics, args.qrels
    if args.topics == "sample":
        paths = sample_paths()
        topics_path, qrels_path = paths.topics, qrels_path or paths.qrels
    output, args.spans = default_outputs(args)
    writes(args, output, topics_path, qrels_path).check()
    index = open_index(index_location(args.index or SAMPLE, progress=not args.quiet), args.engine)
    skipped = SkipReport() if args.skip_bad else None
    topics = read_topics(topics_path, resolve=index.passage_text, skip_bad=skipped)
    if skipped:
        print(skipped.summary(), file=sys.stderr)
    retriever = build_system_of(args, index)
    started = time.time()
    if isinstance(retriever, Retriever):
        run = retriever.search(topics, args.hits)
    else:  # a recipe's pipeline (first stage >> rerankers): run it, keep --hits per query
        run = {qid: hits[: args.hits] for qid, hits in retriever(topics).items()}
    elapsed = time.time() - started
    components = getattr(retriever, "component_runs", {}) if args.model == "fused" and not args.recipe else {}
    meta = {
        "run": output, "queries": len(topics), "seconds": round(elapsed, 2),
        "queries_per_second": round(len(topics) / elapsed, 1) if elapsed > 0 else None,
        "model": args.model, "index": str(index.path), "argv": sys.argv[1:] if argv is None else argv,
    }
    provenance = {"config": search_options(args), "inputs": inputs(topics_path, index.path, qrels=qrels_path,
                                                                   index=index),
                  "index_metadata": index.metadata.get("config"), "artifacts": used_artifacts(retriever),
                  **produced_by()}
    for name, component in components.items():
        spans = component_path(output, name, ".spans.jsonl") if args.spans else None
        if spans:
            fill_mentions(component, index)
        write_run_set(component, component_path(output, name), tag=name, spans_path=spans,
                      meta=dict(meta, run=component_path(output, name), model=name, component_of=output,
                                **provenance))
    if components:
        meta["components"] = {name: component_path(output, name) for name in components}
    if args.spans:
        fill_mentions(run, index)
    write_run_set(run, output, tag=args.tag or retriever.name, spans_path=args.spans, meta=dict(meta, **provenance))
    print(json.dumps(meta), file=sys.stderr)
    if qrels_path:

        groups = {t.qid: t.kind for t in topics if t.kind}
        groups.update({t.qid: (index.query_record(t).kind or "unknown") for t in topics if not t.kind})
        measures = ("RR@10", "AP@100", "R@100", "nDCG@10")
        searched = {t.qid for t in topics}  # the topics this run answers, not every query the qrels judge
        qrels = {qid: judged for qid, judged in read_qrels(qrels_path).items() if qid in searched}
        print(format_table(evaluate(qrels, run, measures, groups), measures))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
