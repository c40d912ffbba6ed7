"""``python -m hybrid.index``: annotate a corpus and build a hybrid index (sparse part).

Example::

    python -m hybrid.index --corpus corpus.jsonl --index indexes/ecbplus --threads 2
"""

from __future__ import annotations

import argparse
import json
import sys

from features.annotate import AnnotationConfig
from hybrid.cli_common import run_cli


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hybrid.index", description=__doc__.split("\n")[0])
    p.add_argument("--corpus", required=True, help="corpus JSONL (see README: formats)")
    p.add_argument("--index", required=True, help="output directory (built in a temporary sibling, then moved)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--ner", default="heuristic",
                   help="entity source for unannotated passages: heuristic or a spaCy model name/path")
    p.add_argument("--detect", default="heuristic",
                   help="mention detector for unannotated passages: heuristic or a spaCy model name/path")
    p.add_argument("--context-window", type=int, default=0, help="+-N sentences in the context field")
    p.add_argument("--no-gold-ner", action="store_true", help="ignore annotated entities; use --ner everywhere")
    p.add_argument("--no-gold-chains", action="store_true", help="ignore annotated chain ids; use the heuristic")
    p.add_argument("--keep-empty-annotations", action="store_true",
                   help='treat "mentions": [] as annotated-with-no-mentions (default: detect candidates)')
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing index (only once the new one is complete)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed corpus lines (reported) instead of failing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--shards", type=int, help="split the corpus by document into N shards, each a complete index")
    p.add_argument("--engine", choices=("auto", "ray", "local"), default="auto",
                   help="with --shards: annotate and build on Ray, or in-process (auto: Ray if a cluster is named)")
    p.add_argument("--ray-address", help="Ray cluster to run on (default: RAY_ADDRESS, else Ray on this machine)")
    p.add_argument("--dense-encoder", help="with --shards: also encode every shard into <shard>/dense with this "
                                           "encoder (minilm, a saved encoder or a HF checkpoint)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from indexes.lucene import IndexConfig, build_index

    annotation = AnnotationConfig(
        ner=args.ner, detect=args.detect, context_window=args.context_window, gold_ner=not args.no_gold_ner,
        gold_chains=not args.no_gold_chains, empty_means_unannotated=not args.keep_empty_annotations,
    )
    config = IndexConfig(corpus=args.corpus, annotation=annotation, threads=args.threads)
    if args.dense_encoder and not args.shards:
        from hybrid.errors import InputError

        raise InputError(None, None, "--dense-encoder needs --shards (one index: python -m hybrid.index_dense)")
    if args.shards:
        from hybrid.scale.ray_engine import get_engine
        from indexes.shards import build_sharded_index

        with get_engine(args.engine, address=args.ray_address) as engine:
            meta = build_sharded_index(config, args.index, args.shards, engine=engine, overwrite=args.overwrite,
                                       skip_bad=args.skip_bad, progress=not args.quiet)
            if args.dense_encoder:
                from indexes.shards import build_dense_shards

                build_dense_shards(args.index, args.dense_encoder, engine=engine, progress=not args.quiet)
    else:
        meta = build_index(config, args.index, overwrite=args.overwrite, skip_bad=args.skip_bad,
                           progress=not args.quiet)
    print(json.dumps({"index": args.index, **meta["counts"], "seconds": meta["build_seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
