"""``python -m hybrid.index``: annotate a corpus and build a hybrid index (sparse part).

Example::

    python -m hybrid.index --corpus corpus.jsonl --index indexes/ecbplus --threads 2
    python -m hybrid.index --corpus corpus.jsonl --index indexes/ecbplus-gold --annotation corpus
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from features.annotate import ANNOTATIONS, DEFAULT_MODEL, AnnotationConfig
from hybrid.cli.common import (
    add_backend,
    add_precision,
    add_quiet,
    make_parser,
    non_negative_int,
    positive_int,
    run_cli,
)
from hybrid.core.backend import backend_device
from hybrid.core.errors import InputError
from hybrid.core.outputs import Writes
from indexes.lucene import IndexConfig, build_index, index_writes


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.index", __doc__, epilog=True)
    p.add_argument("--corpus", required=True, help="corpus JSONL (see README: formats)")
    p.add_argument("--index", required=True, help="output directory (built in a temporary sibling, then moved)")
    p.add_argument("--threads", type=positive_int, default=1, help="annotation and Anserini indexing threads")
    p.add_argument("--annotation", choices=ANNOTATIONS, default="auto",
                   help="auto (default): annotate every passage from its text, ignoring any annotation in the "
                        "corpus (the number you measure is what raw text gets); corpus: use the corpus's mentions, "
                        "entities and chains where present (auto elsewhere)")
    p.add_argument("--spacy-model", default=DEFAULT_MODEL,
                   help="spaCy pipeline (name or path) that parses each passage once for detection, entities and "
                        "arguments (default: %(default)s, installed with the project; en_core_web_trf if you have it)")
    p.add_argument("--ner", default="spacy",
                   help="context entities: spacy (the --spacy-model parse), heuristic, or another spaCy model")
    p.add_argument("--detect", default="rules",
                   help="mention detector: rules (spaCy rules), heuristic (no model), learned or union "
                        "(when features/mention_head.py is installed); a spaCy model name sets --spacy-model")
    p.add_argument("--chains", default="heuristic",
                   help="within-document chain linker: heuristic, or learned (features/coref_model.py, when installed)")
    p.add_argument("--spacy-processes", type=int, default=min(2, os.cpu_count() or 1),
                   help="spaCy worker processes; used only from 500 passages to parse per process on (measured on 2 "
                        "cores: +30-55%% passages/s with 2, benchmarks/results/annotate_throughput.md)")
    p.add_argument("--context-window", type=non_negative_int, default=0, help="+-N sentences in the context field")
    p.add_argument("--no-gold-ner", action="store_true",
                   help="with --annotation corpus: ignore annotated entities; use --ner everywhere")
    p.add_argument("--no-gold-chains", action="store_true",
                   help="with --annotation corpus: ignore annotated chain ids; use --chains")
    p.add_argument("--keep-empty-annotations", action="store_true",
                   help='treat "mentions": [] as annotated-with-no-mentions (default: detect candidates)')
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing hybrid index (only once the new one is complete); refused when the "
                        "folder holds anything the build did not write, such as a dense index")
    p.add_argument("--overwrite-all", action="store_true",
                   help="with --overwrite: also delete what else the index folder holds (a dense index, other files)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed corpus lines (reported) instead of failing")
    add_quiet(p)
    p.add_argument("--shards", type=positive_int,
                   help="split the corpus by document into N shards, each a complete index")
    p.add_argument("--engine", choices=("auto", "ray", "local"), default="auto",
                   help="with --shards: annotate and build on Ray, or in-process (auto: Ray if a cluster is named)")
    p.add_argument("--ray-address", help="Ray cluster to run on (default: RAY_ADDRESS, else Ray on this machine)")
    p.add_argument("--dense-encoder", help="with --shards: also encode every shard into <shard>/dense with this "
                                           "encoder (minilm, a saved encoder or a HF checkpoint)")
    add_precision(p, "the --dense-encoder")
    add_backend(p, "the --dense-encoder")
    return p


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes and reads, for the output policy (hybrid.core.outputs)."""
    return index_writes(args.index, args.corpus, args.overwrite, args.overwrite_all)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.overwrite_all and not args.overwrite:
        raise InputError(None, None, "--overwrite-all goes with --overwrite")
    writes(args).check()

    annotation = AnnotationConfig(
        annotation=args.annotation, model=args.spacy_model, ner=args.ner, detect=args.detect, chains=args.chains,
        context_window=args.context_window, gold_ner=not args.no_gold_ner, gold_chains=not args.no_gold_chains,
        empty_means_unannotated=not args.keep_empty_annotations, n_process=args.spacy_processes,
    )
    config = IndexConfig(corpus=args.corpus, annotation=annotation, threads=args.threads)
    if args.dense_encoder and not args.shards:
        raise InputError(None, None, "--dense-encoder needs --shards (one index: python -m hybrid.index_dense)")
    backend_device(args.backend, args.precision, None)  # before any shard is built
    if args.shards:
        from hybrid.core.ray_engine import get_engine  # deferred: importing it loads numpy
        from indexes.shards import build_sharded_index  # deferred: importing it loads numpy

        with get_engine(args.engine, address=args.ray_address) as engine:
            meta = build_sharded_index(config, args.index, args.shards, engine=engine, overwrite=args.overwrite,
                                       skip_bad=args.skip_bad, progress=not args.quiet,
                                       overwrite_all=args.overwrite_all)
            if args.dense_encoder:
                from indexes.shards import build_dense_shards  # deferred: importing it loads numpy

                build_dense_shards(args.index, args.dense_encoder, engine=engine, progress=not args.quiet,
                                   precision=args.precision, backend=args.backend)
    else:
        meta = build_index(config, args.index, overwrite=args.overwrite, skip_bad=args.skip_bad,
                           progress=not args.quiet, overwrite_all=args.overwrite_all)
    print(json.dumps({"index": args.index, **meta["counts"], "seconds": meta["build_seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
