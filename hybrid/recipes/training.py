"""Training the LTR models a pipeline recipe names, on the output of exactly the stages that precede them.

The library side of ``python -m hybrid.recipe_train`` (and of ``python -m hybrid.prepare``, which trains the
same way): for every ``{type = "ltr", model = ..., featureset = ..., learner = ...}`` reranker of a pipeline
recipe, run the stages before it on the training topics, extract the feature set's features for the top
``depth`` hits, label them with the qrels and fit the learner (:func:`ltr.model.train_model`).
"""

from __future__ import annotations

import logging
import random
import sys
import time
from pathlib import Path

from hybrid.core.errors import ConfigError
from hybrid.recipes.builders import artifact_path, build_named, build_reranker, featureset_path, reranker_specs
from ltr.featureset import load_featureset
from ltr.model import ltr_versions, train_model
from ltr.pipeline import extract_matrix
from ltr.resources import IndexResources

log = logging.getLogger("hybrid.recipe_train")


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
            if spec[key] is None:
                raise source.error("rerankers", f"an ltr reranker to train needs '{key}'")
        path = artifact_path(spec["model"], "rerankers", "ltr", context, source, must_exist=False)
        if path.exists() and not overwrite:
            raise ConfigError(path, None, "model exists; pass --overwrite to replace it")
        featureset = load_featureset(featureset_path(spec["featureset"], source))
        limit = max_queries if max_queries is not None else spec["train_queries"]
        chosen = sample_topics(topics, limit, seed)
        depth = spec["depth"]
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
        model = train_model(spec["learner"], spec["params"] or {}, featureset, matrix, seed, config)
        model.versions = ltr_versions()
        model.save(path, overwrite=overwrite)
        log.info("%s: trained %s on %d pairs -> %s", recipe.name, spec["learner"], len(matrix), path)
        written.append(path)
        stage = stage >> build_reranker(spec, context, source)
    return written
