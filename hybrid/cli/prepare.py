"""``python -m hybrid.prepare``: make everything a recipe needs on an index, in order, after showing the plan.

Examples::

    # what hybrid-dense-net needs on my index, what exists, the steps and their time here; nothing is built
    python -m hybrid.prepare hybrid-dense-net --index my-index --dry-run
    # build it all, trained on the bundled default training set (ECB+ train topics); resumable after an
    # interruption; then search without --artifacts
    python -m hybrid.prepare hybrid-dense-net --index my-index
    python -m hybrid.search --recipe hybrid-dense-net --index my-index --topics my-topics.jsonl
    # trained on labels of your own (docs/labelled-collections.md)
    python -m hybrid.prepare hybrid-dense-net --index my-index --train my-labelled.jsonl
    # a model set trained elsewhere (python -m hybrid.artifacts import): only this index's dense index is built
    python -m hybrid.prepare hybrid-dense-net --index my-index --models 3f2a
    # ECB+ dev as BENCHMARKS.md's command chain: the gold corpus of the indexed collection, trained in place
    python -m hybrid.prepare hybrid-dense-net --index RAW --train $E/corpus.jsonl \\
        --train-topics $E/queries.train.jsonl --train-qrels $E/qrels.train.txt
    # make every step again (after a code change), each replacing only an artifact of its own kind
    python -m hybrid.prepare hybrid-dense-net --index my-index --overwrite

The plan walks the recipe (:mod:`hybrid.recipes.plan`): the encoder, the dense index of *this* index made by
it, the LTR models trained on the stages before them, the reader. Models go to a model set in the store
(``$HYBRID_CACHE/models``, keyed by the training data, the settings and the code version) or to ``--artifacts
DIR``; the dense index goes into the index (``dense-by-encoder/<fingerprint>``), and the index records which
set it was prepared with, so ``hybrid.search --recipe`` finds both without ``--artifacts``. When the labelled
corpus is the target collection itself (ECB+'s ``corpus.jsonl`` for an index of ``corpus.raw.jsonl``) the
models are trained in place, exactly as the documented command chain does; otherwise on a raw index of the
labelled collection built in the store.

What it writes (the model set, each artifact, the index's dense index and link) is checked against what it
reads (the index, its corpus, the recipe, the training files, a local --dense-base) before any work, by the
output policy (:func:`hybrid.recipes.prepare_steps.plan_writes`): e.g. ``--artifacts`` may not be the index,
lie inside it or contain it. Without ``--overwrite`` an existing artifact is kept (prepare resumes); with it,
every step is made again and replaces only an artifact of its own kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hybrid.cli.common import add_backend, add_precision, add_quiet, make_parser, positive_int, run_cli
from hybrid.core.errors import IndexMissingError, InputError
from hybrid.core.outputs import Input, Writes, inputs_of
from hybrid.recipes import load_recipe
from hybrid.recipes.plan import TrainingConfig, TrainingData, explicit_artifacts, make_plan, models_folder
from hybrid.recipes.prepare_steps import open_model_set, plan_writes, run_plan, set_output
from hybrid.recipes.training_data import labelled_files, training_set
from hybrid.sample import index_location
from hybrid.store.models import BOUND_DIR, INDEX_LINK, ModelSet, find_set, linked_set, write_link
from indexes.lucene import METADATA


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.prepare", __doc__, epilog=True)
    p.add_argument("recipe", help="bundled recipe name or recipe TOML path")
    p.add_argument("--index", required=True, help="the hybrid index the recipe will search; 'sample': the bundled "
                                                  "sample's, built on first use")
    p.add_argument("--artifacts", help="model-set folder to use or fill (default: the store's set for the training "
                                       "data, or the set the index was prepared with; $HYBRID_ARTIFACTS)")
    p.add_argument("--models", help="a model set of the store by key (python -m hybrid.artifacts list), e.g. an "
                                    "imported one: it is used instead of training")
    p.add_argument("--train", help="the labelled collection the models learn from (docs/labelled-collections.md: "
                                   "labelled passages JSONL or a queries-form folder; default: the bundled ECB+ "
                                   "train topics)")
    p.add_argument("--train-topics", help="with --train: its training queries JSONL ('cluster' per query), instead "
                                          "of the queries derived from its labels")
    p.add_argument("--train-qrels", help="with --train-topics: their qrels")
    p.add_argument("--train-name", help="name of the training set in the store (default: the corpus's folder)")
    p.add_argument("--dry-run", action="store_true", help="print the plan only")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--threads", type=positive_int, default=2)
    p.add_argument("--device", help="torch device (default: the GPU when present)")
    add_precision(p, "the encoder where it encodes (dense indexes; training is fp32)")
    add_backend(p, "the encoder where it encodes (dense indexes; training runs in torch)")
    p.add_argument("--dense-base", default=TrainingConfig.dense_base,
                   help="checkpoint the bi-encoder is fine-tuned from (local folder, cached HF name, or minilm)")
    p.add_argument("--dense-steps", type=positive_int, default=TrainingConfig.dense_steps)
    p.add_argument("--ltr-queries", type=positive_int,
                   help="training queries of the LTR models (default: the recipe's)")
    p.add_argument("--reader-steps", type=positive_int, default=TrainingConfig.reader_steps)
    p.add_argument("--overwrite", action="store_true",
                   help="make every step again, even those that exist; each replaces only an artifact of its own "
                        "kind (an encoder over an encoder, a dense index over a dense index, ...)")
    add_quiet(p)
    return p


def has_gpu() -> bool:
    try:
        import torch  # deferred: importing it is slow, and only the estimates' device depends on it
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def indexed_corpus(index: Path) -> str | None:
    """The corpus a hybrid index records it was built from (None when it records none)."""
    try:
        config = json.loads((index / METADATA).read_text(encoding="utf-8")).get("config", {})
        return str(config["corpus"]) if isinstance(config, dict) and config.get("corpus") else None
    except (OSError, ValueError, AttributeError):
        return None


def reads(args: argparse.Namespace, recipe, index: Path, training: TrainingData | None = None) -> list[Input]:
    """What this command reads, for the output policy (hybrid.core.outputs): the index (whose own places for a
    dense index and the model-set link are written), its corpus, the recipe, the training files (as given and
    as materialised in the store) and a local --dense-base."""
    found = [Input("--index", index, keeps=(BOUND_DIR, INDEX_LINK)), Input("the recipe", recipe.source.path),
             Input("the index's corpus", indexed_corpus(index)),
             *inputs_of(args, ("train", "train_topics", "train_qrels"))]
    if Path(args.dense_base).exists():
        found.append(Input("--dense-base", args.dense_base))
    if training is not None:
        found += [Input("the training corpus", training.corpus), Input("the training topics", training.topics),
                  Input("the training qrels", training.qrels)]
    return found


def set_option(args: argparse.Namespace) -> str:
    """How the model set was named, for the policy's refusals."""
    return "--models" if args.models else "--artifacts" if args.artifacts else \
        "$HYBRID_ARTIFACTS" if explicit_artifacts(None) else "the model set"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    recipe = load_recipe(args.recipe)
    index = index_location(args.index, progress=not args.quiet)
    if not (index / METADATA).is_file():
        raise IndexMissingError(f"{index} is not a hybrid index (no {METADATA}); build it with "
                                f"`python -m hybrid.index --corpus CORPUS --index {index}`")
    named = find_set(args.models).path if args.models else explicit_artifacts(args.artifacts)
    if named is not None:  # refused before the training files are read or materialised
        Writes("hybrid.prepare", [set_output(named, recipe, set_option(args))], reads(args, recipe, index)).check()
    config = TrainingConfig(dense_base=args.dense_base, dense_steps=args.dense_steps, ltr_queries=args.ltr_queries,
                            reader_steps=args.reader_steps)
    training, models = None, None
    if (args.train_topics or args.train_qrels) and not (args.train and args.train_topics and args.train_qrels):
        raise InputError(None, None, "--train-topics and --train-qrels go with --train and each other (a labelled "
                                     "corpus, its training queries and their qrels); or give --train alone")
    if args.train_topics:
        training = labelled_files(args.train, args.train_topics, args.train_qrels, index, args.train_name)
    elif args.train:
        training = training_set(args.train, index, args.train_name)
    if args.models:
        models = named
    elif training is None and (explicit_artifacts(args.artifacts) or linked_set(index)) is None:
        training = training_set(None, index, args.train_name)  # the bundled default training set
    models = models or models_folder(index, args.artifacts, training, config)
    plan = make_plan(recipe, index, models, training, config, gpu=has_gpu(), rebuild=args.overwrite)
    for writes in plan_writes(plan, recipe, reads(args, recipe, index, training), args.overwrite, set_option(args)):
        writes.check()
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
    else:
        print(plan.format(), file=sys.stderr)
    if args.dry_run:
        return 0
    started = time.time()
    made = run_plan(plan, config, threads=args.threads, device=args.device, precision=args.precision,
                    backend=args.backend, progress=not args.quiet, say=lambda line: print(line, file=sys.stderr),
                    overwrite=args.overwrite)
    if training is not None or ModelSet.open(models) is not None:  # searches of this index find the set
        write_link(index, open_model_set(plan, config))
    print(json.dumps({"recipe": recipe.name, "index": str(index), "models": str(models),
                      "made": [s.kind for s in made], "seconds": round(time.time() - started, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
