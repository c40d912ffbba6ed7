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
import random
import sys
import time
from pathlib import Path

from hybrid.cli_common import make_parser, positive_int, run_cli
from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.recipes import Context, load_recipe
from hybrid.recipes.builders import artifact_path, build_named, build_reranker, featureset_path, reranker_specs
from hybrid.sample import index_location
from indexes.shards import open_one_index
from ltr.featureset import load_featureset
from ltr.model import ltr_versions, train_model
from ltr.pipeline import extract_matrix
from ltr.resources import IndexResources

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


def sample_topics(topics: list, limit: int | None, seed: int) -> list:
    """A seeded sample of ``limit`` topics, in their file order (all of them when limit is None)."""
    if limit is None or limit >= len(topics):
        return list(topics)
    keep = set(random.Random(seed).sample(range(len(topics)), limit))
    return [t for i, t in enumerate(topics) if i in keep]


def train_recipe(recipe, context, topics: list, qrels, seed: int = 0, max_queries: int | None = None,
                 overwrite: bool = False) -> list[Path]:
    """Train every LTR reranker of a pipeline recipe; returns the model paths written."""
    system, source = recipe.system, recipe.source
    specs = reranker_specs(system, source) if system.get("type") == "pipeline" else []
    if not any(s["type"] == "ltr" for s in specs):
        raise ConfigError(source.path, None, f"recipe {recipe.name!r} has no ltr reranker to train")
    stage = build_named(system["first"], context, source, "first")
    written = []
    resources = IndexResources(context.index)
    for spec in specs:
        if spec["type"] != "ltr":
            stage = stage >> build_reranker(spec, context, source)
            continue
        for key in ("featureset", "learner"):
            if key not in spec:
                raise source.error("rerankers", f"an ltr reranker to train needs '{key}'")
        path = artifact_path(spec["model"], "rerankers", "ltr", context, source, must_exist=False)
        if path.exists() and not overwrite:
            raise ConfigError(path, None, "model exists; pass --overwrite to replace it")
        featureset = load_featureset(featureset_path(spec["featureset"], source))
        limit = max_queries if max_queries is not None else spec.get("train_queries")
        chosen = sample_topics(topics, limit, seed)
        depth = int(spec.get("depth", 100))
        started = time.perf_counter()
        run = stage(chosen)
        first_s = time.perf_counter() - started
        log.info("%s: first stages on %d training topics in %.0fs", recipe.name, len(chosen), first_s)
        matrix = extract_matrix(resources, chosen, run, featureset.feature_names, depth, progress=True,
                                options=featureset.provider_options)
        matrix = matrix.with_labels(qrels)
        features_s = time.perf_counter() - started - first_s
        config = {"recipe": recipe.name, "recipe_file": str(source.path), "stages": stage.name,
                  "topics": len(chosen), "seed": seed, "depth": depth, "pairs": len(matrix),
                  "positives": int((matrix.labels > 0).sum()), "first_stage_s": round(first_s, 1),
                  "features_s": round(features_s, 1), "argv": sys.argv[1:]}
        model = train_model(spec["learner"], spec.get("params") or {}, featureset, matrix, seed, config)
        model.versions = ltr_versions()
        model.save(path, overwrite=overwrite)
        log.info("%s: trained %s on %d pairs -> %s", recipe.name, spec["learner"], len(matrix), path)
        written.append(path)
        stage = stage >> build_reranker(spec, context, source)
    return written


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    recipe = load_recipe(args.recipe)
    index = open_one_index(index_location(args.index), "python -m hybrid.recipe_train")
    topics = read_topics(args.topics, resolve=index.passage_text)
    qrels = read_qrels(args.qrels)
    context = Context(index=index, hits=args.hits, threads=args.threads, artifacts=args.artifacts)
    written = train_recipe(recipe, context, topics, qrels, args.seed, args.max_queries, args.overwrite)
    print(json.dumps({"recipe": recipe.name, "models": [str(p) for p in written]}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
