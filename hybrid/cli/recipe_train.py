"""``python -m hybrid.recipe_train``: train the LTR model(s) a pipeline recipe names, on training topics.

Example (the CMR DiscK recipe; ~10 minutes on 2 CPU cores)::

    python -m hybrid.recipe_train cmr-disck --index /tmp/ecb-index \\
        --topics data/ecbplus/queries.train.jsonl --qrels data/ecbplus/qrels.train.txt --artifacts artifacts

A ``pipeline`` recipe lists its rerankers; for every ``{type = "ltr", model = ..., featureset = ...,
learner = ...}`` among them, this command runs exactly the stages that precede that reranker in the
recipe (so the model is trained on the candidates it will rerank), extracts the feature set's
features for the top ``depth`` hits, labels them with the qrels and fits the learner through the LTR
module's API (:func:`ltr.model.train_model`). The model is written atomically to the recipe's
``model`` path (relative paths under ``--artifacts`` / ``$HYBRID_ARTIFACTS``), with the recipe, the
topics and the versions recorded in it. ``train_queries`` (or ``--max-queries``) trains on a seeded
sample of the topics. Only training topics belong here: the recipe is evaluated on dev/test.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from hybrid.cli.common import make_parser, positive_int, run_cli
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.core.outputs import Input, Output, Writes, inputs_of
from hybrid.recipes import Context, load_recipe
from hybrid.recipes.builders import artifact_path, reranker_specs
from hybrid.recipes.training import train_recipe
from hybrid.sample import index_location
from indexes.shards import open_one_index
from ltr.model import LTR_MODEL

log = logging.getLogger("hybrid.recipe_train")


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.recipe_train", __doc__, epilog=True)
    p.add_argument("recipe", help="bundled recipe name or recipe TOML path (a pipeline with an ltr reranker)")
    p.add_argument("--index", required=True, help="hybrid index directory;"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--topics", required=True, help="TRAINING topics")
    p.add_argument("--qrels", required=True, help="their relevance judgments")
    p.add_argument("--artifacts", help="artifacts directory (default: $HYBRID_ARTIFACTS)")
    p.add_argument("--max-queries", type=positive_int, help="override the recipe's train_queries (seeded sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hits", type=positive_int, default=100)
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--overwrite", action="store_true", help="replace an existing model")
    return p


def ltr_specs(recipe) -> list[dict]:
    """The ltr reranker entries of a pipeline recipe, in order (none for another system type)."""
    specs = reranker_specs(recipe.system, recipe.source) if recipe.system.get("type") == "pipeline" else []
    return [spec for spec in specs if spec["type"] == "ltr"]


def writes(args: argparse.Namespace, recipe) -> Writes:
    """What this command writes (the model folder of every ltr reranker of the recipe: only an LTR model is
    ever replaced) and reads, for the output policy (hybrid.core.outputs)."""
    context = Context(index=None, artifacts=args.artifacts)
    outputs = [Output(f"the model of reranker {number} ({spec['model']})",
                      artifact_path(spec["model"], "rerankers", "ltr", context, recipe.source, must_exist=False),
                      LTR_MODEL) for number, spec in enumerate(ltr_specs(recipe), start=1)]
    reads = [Input("the recipe", recipe.source.path), *inputs_of(args, ("index", "topics", "qrels"))]
    return Writes("hybrid.recipe_train", outputs, reads, args.overwrite)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    recipe = load_recipe(args.recipe)
    writes(args, recipe).check()
    index = open_one_index(index_location(args.index), "python -m hybrid.recipe_train")
    topics = read_topics(args.topics, resolve=index.passage_text)
    qrels = read_qrels(args.qrels)
    context = Context(index=index, hits=args.hits, threads=args.threads, artifacts=args.artifacts)
    written = train_recipe(recipe, context, topics, qrels, args.seed, args.max_queries, args.overwrite)
    print(json.dumps({"recipe": recipe.name, "models": [str(p) for p in written]}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
