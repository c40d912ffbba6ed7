"""Recipe builders, one per stage the engine has (``system.type``).

Imported by :mod:`hybrid.recipes`, so every ``system.type`` below is registered whenever recipes are.
The system types:

* ``bm25`` - :class:`~hybrid.retrieval.sparse.PassageBM25` (plain Pyserini BM25 over passages);
* ``multifield`` - :class:`~hybrid.retrieval.sparse.MultiFieldBM25` (boosted per-field BM25 of mentions);
* ``rocchio`` - :class:`~hybrid.retrieval.rocchio.RocchioBM25` (the CMR ``qe`` system);
* ``bm25f`` - :class:`~hybrid.retrieval.bm25f.BM25F` (needs the project's jar);
* ``dense`` - :class:`~hybrid.retrieval.dense.DenseRetriever` over a dense index (an *artifact*);
* ``fuse`` - :class:`~hybrid.fusion.Fuse` of other recipes, named: ``recipes = ["multifield", "bm25f"]``;
* ``pipeline`` - a recipe's stage followed by rerankers, each an inline table:
  ``{type = "ltr", model = "ltr/cmr-disck", featureset = "disck", learner = "logistic", depth = 100}`` or
  ``{type = "reader", model = "reader/minilm", depth = 20}``.

Artifacts (trained models, dense indexes) are named by path in the recipe, relative to (and never leading
outside: no ``..``, no absolute path elsewhere) the experiment's ``--artifacts DIR``
(:attr:`hybrid.recipes.Context.artifacts`) or, failing that, the ``HYBRID_ARTIFACTS`` environment
variable; a missing artifact is a ConfigError naming the
recipe file and line *and the command that builds it*, raised when the recipe is built (before any
retrieval starts), never a silent fallback. LTR models of a pipeline are trained with
``python -m hybrid.recipe_train <recipe>`` (see :mod:`hybrid.recipe_train`), on the output of exactly
the stages that precede them in the recipe.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.recipes.registry import Context, RecipeSource, load_recipe, register
from hybrid.retrieval.base import Retriever, Stage
from hybrid.retrieval.bm25f import BM25F, DEFAULT_BM25F_FIELDS, DEFAULT_BM25F_QUERY
from hybrid.retrieval.doc_context import DEPTH, DOC_WEIGHT, EXPAND_DOCS, PASSAGE_WEIGHT, SafetyNet
from hybrid.retrieval.rocchio import DEFAULT_FB_FIELDS, RocchioBM25
from hybrid.retrieval.sparse import DEFAULT_CLAUSES, MultiFieldBM25, PassageBM25
from ltr.featureset import load_featureset
from ltr.model import TrainedModel
from ltr.pipeline import LtrReranker

ARTIFACTS_ENV = "HYBRID_ARTIFACTS"
FEATURESET_DIRS = (Path(__file__).resolve().parent.parent / "configs" / "ltr",
                   Path(__file__).resolve().parent.parent.parent / "ltr" / "configs")

#: How each kind of artifact is made; shown when one is missing.
HOW_TO_BUILD = {
    "dense": ("build it with `python -m hybrid.train_dense --index IDX --corpus corpus.jsonl --topics "
              "queries.train.jsonl --output ARTIFACTS/dense/encoder` and then `python -m hybrid.index_dense --index "
              "IDX --encoder ARTIFACTS/dense/encoder --output ARTIFACTS/{value}`"),
    "encoder": "train it with `python -m hybrid.train_dense ... --output ARTIFACTS/{value}`",
    "ltr": ("train it with `python -m hybrid.recipe_train {recipe} --index IDX --topics queries.train.jsonl "
            "--qrels qrels.train.txt --artifacts ARTIFACTS`"),
    "eventcoll": ("train it with `python -m hybrid.collect train --index IDX --events events.train.jsonl --qrels "
                  "qrels.events.train.txt --output ARTIFACTS/{value}`"),
    "reader": ("train it with `python -m hybrid.reader train --index IDX --corpus corpus.jsonl --queries "
               "queries.train.jsonl --pool reader-pool.jsonl --output ARTIFACTS/{value}`"),
}


def artifacts_dir(context: Context) -> Path | None:
    base = getattr(context, "artifacts", None) or os.environ.get(ARTIFACTS_ENV)
    return Path(base) if base else None


def inside(root: str | Path, value: str) -> Path | None:
    """``root / value`` when it stays inside ``root`` (after normalising ``..``; an absolute ``value`` must lie
    inside ``root`` already), else None. Symbolic links inside ``root`` are the owner's and are followed."""
    root = Path(os.path.normpath(os.path.abspath(Path(root).expanduser())))
    path = Path(os.path.normpath(root / value))  # an absolute value replaces root here
    return path if path.is_relative_to(root) and path != root else None


def artifact_path(value: Any, key: str, kind: str, context: Context, source: RecipeSource,
                  must_exist: bool = True) -> Path:
    """Resolve an artifact named in a recipe; ConfigError (recipe file:line + how to build it) when absent."""
    if not isinstance(value, str) or not value:
        raise source.error(key, f"'{key}' must be a path relative to --artifacts / ${ARTIFACTS_ENV}")
    base = artifacts_dir(context)
    if base is None:
        raise source.error(key, f"{key} = {value!r} is relative to the artifacts directory: pass --artifacts DIR "
                                f"or set {ARTIFACTS_ENV}")
    path = inside(base, value)
    if path is None:
        raise source.error(key, f"{key} = {value!r} leads outside the artifacts directory {base}; an artifact path "
                                "is relative to it, without '..'")
    if must_exist and not path.exists():
        recipe = source.path.stem if source.path else "<recipe>"
        raise source.error(key, f"{kind} artifact {path} does not exist; "
                                + HOW_TO_BUILD[kind].format(value=value, recipe=recipe))
    return path


def featureset_path(name: str, source: RecipeSource, key: str = "rerankers") -> Path:
    """A feature set by path, or by name from hybrid/configs/ltr/ then ltr/configs/."""
    path = Path(name)
    if path.suffix == ".toml":
        if path.is_file():
            return path
        raise source.error(key, f"feature set {name} does not exist")
    for folder in FEATURESET_DIRS:
        if (folder / f"{name}.toml").is_file():
            return folder / f"{name}.toml"
    raise source.error(key, f"no feature set named {name!r} in {[str(d) for d in FEATURESET_DIRS]}")


_building = threading.local()


def build_named(name: Any, context: Context, source: RecipeSource, key: str) -> Stage:
    """The stage of another recipe, by name or path (built once per context; cycles are errors)."""
    if not isinstance(name, str) or not name:
        raise source.error(key, f"'{key}' must name recipes (strings)")
    stack: list[str] = getattr(_building, "stack", [])
    if name in stack:
        raise source.error(key, f"recipe cycle: {' -> '.join([*stack, name])}")
    try:
        recipe = load_recipe(name)
    except ConfigError as exc:
        raise source.error(key, f"component recipe {name!r}: {exc.reason}") from None
    _building.stack = [*stack, name]
    try:
        return recipe.build(context)
    finally:
        _building.stack = stack


def _number(system: dict, key: str, default: float, source: RecipeSource) -> float:
    value = system.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise source.error(key, f"'{key}' must be a number, got {value!r}")
    return float(value)


def _integer(system: dict, key: str, default: int, source: RecipeSource, minimum: int = 0) -> int:
    value = system.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise source.error(key, f"'{key}' must be an integer >= {minimum}, got {value!r}")
    return value


def _config_errors(source: RecipeSource, key: str, prefix: str = ""):
    """Re-raise a ConfigError without a file (raised by a stage's constructor) at the recipe's line, its reason
    after ``prefix`` (which names the setting when the key's line holds several)."""
    from contextlib import contextmanager

    @contextmanager
    def wrap():
        try:
            yield
        except ConfigError as exc:
            if exc.path is None:
                raise source.error(key, prefix + exc.reason) from None
            raise

    return wrap()


# -- retrievers --------------------------------------------------------------------------------------------


# -- plain BM25 and multi-field BM25 ---------------------------------------------------------------


@register("bm25", {"formulation", "k1", "b"})
def _bm25(system: dict, context: Context, source: RecipeSource) -> Stage:
    return PassageBM25(context.index, system.get("formulation", "sentence"), k1=system.get("k1", BM25_K1),
                       b=system.get("b", BM25_B), threads=context.threads, k=context.hits)


@register("multifield", {"weights", "same_kind", "k1", "b"})
def _multifield(system: dict, context: Context, source: RecipeSource) -> Stage:
    weights = system.get("weights", DEFAULT_CLAUSES)
    return MultiFieldBM25(context.index, weights, same_kind=system.get("same_kind", True), k1=system.get("k1", BM25_K1),
                          b=system.get("b", BM25_B), k=context.hits, threads=context.threads)


@register("rocchio", {"weights", "same_kind", "k1", "b", "fb_docs", "fb_terms", "fb_fields", "original_weight",
                      "expansion_weight"})
def _rocchio(system: dict, context: Context, source: RecipeSource) -> Stage:
    fields = system.get("fb_fields", list(DEFAULT_FB_FIELDS))
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise source.error("fb_fields", "'fb_fields' must be a list of index field names")
    with _config_errors(source, "type"):
        return RocchioBM25(context.index, system.get("weights", DEFAULT_CLAUSES),
                           same_kind=bool(system.get("same_kind", True)), k1=_number(system, "k1", BM25_K1, source),
                           b=_number(system, "b", BM25_B, source), fb_docs=_integer(system, "fb_docs", 10, source, 1),
                           fb_terms=_integer(system, "fb_terms", 20, source), fb_fields=fields,
                           original_weight=_number(system, "original_weight", 0.9, source),
                           expansion_weight=_number(system, "expansion_weight", 0.1, source), k=context.hits,
                           threads=context.threads)


@register("bm25f", {"fields", "query", "same_kind", "k1", "b"})
def _bm25f(system: dict, context: Context, source: RecipeSource) -> Stage:
    with _config_errors(source, "type"):
        return BM25F(context.index, system.get("fields", DEFAULT_BM25F_FIELDS),
                     same_kind=bool(system.get("same_kind", True)), k=context.hits,
                     query=system.get("query", DEFAULT_BM25F_QUERY), k1=_number(system, "k1", BM25_K1, source),
                     b=_number(system, "b", BM25_B, source), threads=context.threads)


@register("dense", {"index", "encoder", "same_kind", "overfetch", "batch_size"})
def _dense(system: dict, context: Context, source: RecipeSource) -> Stage:
    from hybrid.retrieval.dense import DenseRetriever  # deferred: importing it loads numpy, torch

    if "index" not in system:
        raise source.error("type", "a dense system needs 'index' (a dense index directory, an artifact)")
    index = artifact_path(system["index"], "index", "dense", context, source)
    encoder = artifact_path(system["encoder"], "encoder", "encoder", context, source) if "encoder" in system else None
    with _config_errors(source, "index"):
        return DenseRetriever(index, encoder, k=context.hits, same_kind=bool(system.get("same_kind", True)),
                              overfetch=_integer(system, "overfetch", 8, source, 1),
                              batch_size=_integer(system, "batch_size", 64, source, 1))


@register("fuse", {"recipes", "method", "weights", "normalisation", "depth", "rrf_k"})
def _fuse(system: dict, context: Context, source: RecipeSource) -> Stage:
    from hybrid.fusion import Fuse, parse_fusion_weights  # deferred: importing it loads ir_measures

    names = system.get("recipes")
    if not isinstance(names, list) or len(names) < 2:
        raise source.error("recipes", "'recipes' must list at least two recipe names to fuse")
    components = []
    for name in names:
        stage = build_named(name, context, source, "recipes")
        if not isinstance(stage, Retriever):
            raise source.error("recipes", f"recipe {name!r} is a {type(stage).__name__}, not a retriever: only "
                                          "retrievers can be fused")
        components.append(stage)
    weights = system.get("weights")
    if weights is not None and not isinstance(weights, str):
        raise source.error("weights", "'weights' must be a string such as \"0.5,0.3,0.2\" or "
                                      "\"event=0.3,0.7;entity=0.5,0.5\"")
    with _config_errors(source, "weights"):
        default, by_kind = parse_fusion_weights(weights, len(components))
    depth = _integer(system, "depth", context.hits, source, 1)
    with _config_errors(source, "method"):
        return Fuse(components, method=system.get("method", "rrf"), weights=default,
                    normalisation=system.get("normalisation", "minmax"), k=context.hits, depth=depth,
                    rrf_k=_integer(system, "rrf_k", 60, source, 1), weights_by_kind=by_kind)


# -- rerank chains -------------------------------------------------------------------------------------------

RERANKER_KEYS = {
    "ltr": {"type", "model", "featureset", "learner", "params", "depth", "train_queries"},
    "reader": {"type", "model", "depth", "span_source", "batch_size", "interpolate"},
}


def reranker_specs(system: dict, source: RecipeSource) -> list[dict]:
    """The validated ``rerankers`` tables of a pipeline system."""
    specs = system.get("rerankers", [])
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise source.error("rerankers", "'rerankers' must be a list of inline tables "
                                        "{type = \"ltr\" | \"reader\", ...}")
    for spec in specs:
        kind = spec.get("type")
        if kind not in RERANKER_KEYS:
            raise source.error("rerankers", f"unknown reranker type {kind!r}; known: {sorted(RERANKER_KEYS)}")
        unknown = sorted(set(spec) - RERANKER_KEYS[kind])
        if unknown:
            raise source.error("rerankers", f"unknown key {unknown[0]!r} for a {kind} reranker; allowed: "
                                            f"{sorted(RERANKER_KEYS[kind])}")
        if "model" not in spec:
            raise source.error("rerankers", f"a {kind} reranker needs 'model' (an artifact path)")
    return specs


def build_reranker(spec: dict, context: Context, source: RecipeSource) -> Stage:
    if spec["type"] == "ltr":
        path = artifact_path(spec["model"], "rerankers", "ltr", context, source)
        model = TrainedModel.load(path)
        if "featureset" in spec:
            model.check_featureset(load_featureset(featureset_path(spec["featureset"], source)))
        return LtrReranker(model, context.index, depth=_integer(spec, "depth", 100, source, 1))
    from ltr.reader.interpolate import KindWeights  # deferred: importing it loads ir_measures, numpy
    from ltr.reader.stage import ReaderReranker  # deferred: importing it loads ir_measures, numpy, torch

    path = artifact_path(spec["model"], "rerankers", "reader", context, source)
    weight = None
    if "interpolate" in spec:  # a number, or a table by kind: {event = 0.35, entity = 0.65[, default = W]}
        value = spec["interpolate"]
        if isinstance(value, bool) or not isinstance(value, int | float | dict):
            raise source.error("rerankers", f"a reader's 'interpolate' must be a number or a table "
                                            f"{{event = W, entity = W}}, got {value!r}")
        with _config_errors(source, "rerankers", "a reader's 'interpolate': "):
            weight = KindWeights.of(value)
    return ReaderReranker(str(path), context.index, depth=_integer(spec, "depth", 50, source, 1),
                          batch_size=_integer(spec, "batch_size", 64, source, 1),
                          span_source=spec.get("span_source", "predicted"), interpolate=weight)


@register("safety-net", {"base", "passage_weight", "doc_weight", "expand_docs", "depth", "k1", "b"})
def _safety_net(system: dict, context: Context, source: RecipeSource) -> Stage:
    """A mention-level recipe made safe for raw text (:class:`~hybrid.retrieval.doc_context.SafetyNet`)."""
    # deferred: importing it loads numpy
    # deferred: importing it loads numpy

    if "base" not in system:
        raise source.error("type", "a safety-net needs 'base': the mention-level recipe it wraps")
    base = build_named(system["base"], context, source, "base")
    if not isinstance(base, Retriever):
        raise source.error("base", f"recipe {system['base']!r} is a {type(base).__name__}, not a retriever")
    return SafetyNet(base, context.index, passage_weight=system.get("passage_weight", PASSAGE_WEIGHT),
                     doc_weight=system.get("doc_weight", DOC_WEIGHT),
                     expand_docs=system.get("expand_docs", EXPAND_DOCS),
                     depth=system.get("depth", DEPTH), k=context.hits, k1=system.get("k1", BM25_K1),
                     b=system.get("b", BM25_B), threads=context.threads)


@register("pipeline", {"first", "rerankers"})
def _pipeline(system: dict, context: Context, source: RecipeSource) -> Stage:
    if "first" not in system:
        raise source.error("type", "a pipeline needs 'first': the recipe whose run the rerankers reorder")
    specs = reranker_specs(system, source)
    for spec in specs:  # a missing model fails before the first stage is built
        artifact_path(spec["model"], "rerankers", spec["type"], context, source)
    stage = build_named(system["first"], context, source, "first")
    for spec in specs:
        stage = stage >> build_reranker(spec, context, source)
    return stage
