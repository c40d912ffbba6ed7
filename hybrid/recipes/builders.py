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
  ``{type = "reader", model = "reader/minilm", depth = 20}`` or a feature union,
  ``{type = "union", recipes = ["bm25", "dense"]}``: those retrievers' scores of each hit become the
  ``union_score_<i>`` / ``union_found_<i>`` features of the LTR reranker after it (the run's order untouched).

Artifacts (trained models, dense indexes) are named by path in the recipe, relative to (and never leading
outside: no ``..``, no absolute path elsewhere) the experiment's ``--artifacts DIR``
(:attr:`hybrid.recipes.Context.artifacts`) or, failing that, the ``HYBRID_ARTIFACTS`` environment
variable, or, failing both, the model set the index was prepared with (``python -m hybrid.prepare``, see
:mod:`hybrid.store.models`). A dense index the folder does not hold itself but its model set declares
index-bound (``dense_indexes`` in its manifest) is the one of *this* index made by *that* encoder, found
through the index (``<index>/dense-by-encoder/<fingerprint>``). A missing artifact is a ConfigError naming the
recipe file and line *and the command that builds it*, raised when the recipe is built (before any
retrieval starts), never a silent fallback. LTR models of a pipeline are trained with
``python -m hybrid.recipe_train <recipe>`` (see :mod:`hybrid.recipe_train`), on the output of exactly
the stages that precede them in the recipe.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hybrid.core.backend import backend_device
from hybrid.core.errors import ConfigError
from hybrid.core.params import (
    DENSE_BATCH_SIZE,
    DENSE_COMBINE,
    DENSE_COMBINES,
    DENSE_OVERFETCH,
    DENSE_PASSAGE_WEIGHT,
    DENSE_SAME_KIND,
    K1,
    SAME_KIND,
    B,
    Param,
)
from hybrid.core.registry import Component, ErrorFactory, Registry
from hybrid.core.stage import FeatureUnion, Retriever, Stage
from hybrid.fusion.fuse import Fuse, parse_fusion_weights
from hybrid.fusion.registry import METHOD, NORM, RRF_K_PARAM
from hybrid.recipes.registry import Context, RecipeSource, build_system, load_recipe, register
from hybrid.retrieval.bm25f import BM25F, DEFAULT_BM25F_FIELDS, DEFAULT_BM25F_QUERY
from hybrid.retrieval.doc_context import DEPTH, DOC_WEIGHT, EXPAND_DOCS, SafetyNet
from hybrid.retrieval.doc_context import PASSAGE_WEIGHT as SAFETY_PASSAGE_WEIGHT
from hybrid.retrieval.rocchio import (
    DEFAULT_FB_FIELDS,
    EXPANSION_WEIGHT,
    FB_DOCS,
    FB_TERMS,
    ORIGINAL_WEIGHT,
    RocchioBM25,
)
from hybrid.retrieval.sparse import BATCH_SIZE as SPARSE_BATCH_SIZE
from hybrid.retrieval.sparse import (
    DEFAULT_CLAUSES,
    DEFAULT_FORMULATION,
    QUERY_FORMULATIONS,
    MultiFieldBM25,
    PassageBM25,
)
from hybrid.scale.sharded_search import ShardedDense, shard_retriever
from hybrid.store.models import ARTIFACTS_ENV, ModelSet, artifact_in, bound_dense_dir, linked_set
from indexes.faiss_index import check_bound
from indexes.sharded_index import ShardedIndex
from ltr.featureset import load_featureset
from ltr.learners import LEARNERS
from ltr.model import TrainedModel
from ltr.pipeline import DEPTH as LTR_DEPTH
from ltr.pipeline import LtrReranker
from ltr.reader import settings as reader_settings

FEATURESET_DIR = Path(__file__).resolve().parent.parent.parent / "ltr" / "configs"

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
    """``--artifacts``, else ``$HYBRID_ARTIFACTS``, else the model set the context's index was prepared with."""
    base = getattr(context, "artifacts", None) or os.environ.get(ARTIFACTS_ENV)
    if base:
        return Path(base)
    linked = linked_set(getattr(context.index, "path", None))
    return linked.path if linked is not None else None


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
    if context.plain_paths:  # a path typed on the command line: taken as given
        path = Path(value)
        if must_exist and not path.exists():
            raise source.error(key, f"{kind} artifact {path} does not exist")
        return path
    base = artifacts_dir(context)
    if base is None:
        raise source.error(key, f"{key} = {value!r} is relative to the artifacts directory: pass --artifacts DIR "
                                f"or set {ARTIFACTS_ENV}, or prepare the index with `python -m hybrid.prepare "
                                f"RECIPE --index IDX`")
    path = inside(base, value)
    if path is None:
        raise source.error(key, f"{key} = {value!r} leads outside the artifacts directory {base}; an artifact path "
                                "is relative to it, without '..'")
    if not path.exists():  # an artifacts folder or model set made before its artifacts were renamed
        older = artifact_in(base, value)
        path = Path(os.path.abspath(older)) if older.exists() else path
    if must_exist and not path.exists():
        recipe = source.path.stem if source.path else "<recipe>"
        raise source.error(key, f"{kind} artifact {path} does not exist; "
                                + HOW_TO_BUILD[kind].format(value=value, recipe=recipe)
                                + f" (or everything the recipe needs at once: `python -m hybrid.prepare {recipe} "
                                  "--index IDX`)")
    return path


def featureset_path(name: str, source: RecipeSource, key: str = "rerankers") -> Path:
    """A feature set by path, or by name from ltr/configs/ (the one folder of feature sets)."""
    path = Path(name)
    if path.suffix == ".toml":
        if path.is_file():
            return path
        raise source.error(key, f"feature set {name} does not exist")
    if (FEATURESET_DIR / f"{name}.toml").is_file():
        return FEATURESET_DIR / f"{name}.toml"
    raise source.error(key, f"no feature set named {name!r} in {FEATURESET_DIR}")


_building = threading.local()


def describe(system: Any) -> str:
    """A component in an error message: the recipe's name, or an inline table's type."""
    return repr(system) if not isinstance(system, dict) else f"{{type = {system.get('type')!r}, ...}}"


def build_named(name: Any, context: Context, source: RecipeSource, key: str) -> Stage:
    """The stage of another recipe, by name or path (built once per context; cycles are errors), or of an
    inline ``[system]`` table (errors point at ``key``'s line)."""
    if isinstance(name, dict):
        return build_system(name, context, source)
    if not isinstance(name, str) or not name:
        raise source.error(key, f"'{key}' must name recipes (strings) or give inline tables")
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


def on_index(retriever: Retriever, context: Context) -> Retriever:
    """The retriever adapted to the context's index: itself on one index, its sharded counterpart on a sharded
    index (a ConfigError when it has none), so a recipe runs wherever an index is opened."""
    return shard_retriever(retriever, context.index)


WEIGHTS = Param("weights", str, DEFAULT_CLAUSES,
                "multi-field clauses source[:field]=weight, comma separated (sources: mention chain ner context "
                "sentence trigrams acronym type; fields: mention ner context coref trigrams acronym type)")
BATCH_SIZE = Param("batch_size", int, SPARSE_BATCH_SIZE, "topics handed to the Java searcher at once", minimum=1)


@register("bm25", [Param("formulation", str, DEFAULT_FORMULATION,
                         "query formulation: which text of the topic is the query", choices=QUERY_FORMULATIONS), K1, B])
def _bm25(system: dict, context: Context, source: RecipeSource) -> Stage:
    """Plain Pyserini BM25 over passages (the baseline)."""
    return on_index(PassageBM25(context.index, system["formulation"], k1=system["k1"], b=system["b"],
                                threads=context.threads, k=context.hits, progress=context.progress), context)


def same_kind(system: dict, context: Context) -> bool:
    """The system's ``same_kind``, or when unset the index's default: only the query's kind on an index whose kinds
    come from the corpus's annotation, any kind on one whose kinds were detected (``SparseIndex.kinds_detected``)."""
    return system["same_kind"] if system["same_kind"] is not None else not context.index.kinds_detected


@register("multifield", [WEIGHTS, SAME_KIND, K1, B, BATCH_SIZE])
def _multifield(system: dict, context: Context, source: RecipeSource) -> Stage:
    """Boosted per-field BM25 over mention documents, best mention per passage."""
    with _config_errors(source, "weights"):
        retriever = MultiFieldBM25(context.index, system["weights"], same_kind=same_kind(system, context),
                                   k1=system["k1"], b=system["b"], k=context.hits, threads=context.threads,
                                   batch_size=system["batch_size"], progress=context.progress)
    return on_index(retriever, context)


@register("rocchio", [WEIGHTS, SAME_KIND, K1, B,
                      Param("fb_docs", int, FB_DOCS, "feedback passages", minimum=1),
                      Param("fb_terms", int, FB_TERMS, "expansion terms", minimum=0),
                      Param("fb_fields", list, list(DEFAULT_FB_FIELDS), "index fields the expansion terms come from",
                            what="a list of index field names"),
                      Param("original_weight", float, ORIGINAL_WEIGHT, "weight of the original query"),
                      Param("expansion_weight", float, EXPANSION_WEIGHT, "weight of the expansion terms")])
def _rocchio(system: dict, context: Context, source: RecipeSource) -> Stage:
    """Multi-field BM25 with Rocchio pseudo-relevance feedback (the CMR ``qe`` system)."""
    fields = system["fb_fields"]
    if not all(isinstance(f, str) for f in fields):
        raise source.error("fb_fields", "'fb_fields' must be a list of index field names")
    with _config_errors(source, "type"):
        retriever = RocchioBM25(context.index, system["weights"], same_kind=same_kind(system, context), k1=system["k1"],
                                b=system["b"], fb_docs=system["fb_docs"], fb_terms=system["fb_terms"],
                                fb_fields=fields, original_weight=system["original_weight"],
                                expansion_weight=system["expansion_weight"], k=context.hits,
                                threads=context.threads, progress=context.progress)
    return on_index(retriever, context)


@register("bm25f", [Param("fields", str, DEFAULT_BM25F_FIELDS, "index field=weight, comma separated"),
                    Param("query", str, DEFAULT_BM25F_QUERY,
                          "a query formulation, or query sources joined by '+' (mention+chain+ner)"),
                    SAME_KIND, K1, B])
def _bm25f(system: dict, context: Context, source: RecipeSource) -> Stage:
    """BM25F: one saturation over pooled, weighted fields (needs the project's jar)."""
    with _config_errors(source, "type"):
        retriever = BM25F(context.index, system["fields"], same_kind=same_kind(system, context), k=context.hits,
                          query=system["query"], k1=system["k1"], b=system["b"], threads=context.threads,
                          progress=context.progress)
    return on_index(retriever, context)


@register("dense", [Param("index", str, None, "dense index directory (an artifact; built by hybrid.index_dense); "
                                              "required unless the index is sharded"),
                    Param("encoder", str, None, "query encoder (default: the one the dense index records)"),
                    DENSE_SAME_KIND,
                    Param("overfetch", int, DENSE_OVERFETCH, "nearest mentions fetched per wanted passage", minimum=1),
                    Param("batch_size", int, DENSE_BATCH_SIZE, "queries encoded at once", minimum=1),
                    Param("passage_weight", float, DENSE_PASSAGE_WEIGHT,
                          "a passage scores best mention + W * cosine of the unmarked query sentence and its passage "
                          "vector (or the max of the two, combine = max), where the dense index has passage "
                          "vectors; 0 = mention vectors only", minimum=0.0),
                    Param("combine", str, DENSE_COMBINE, "how the mention and passage-vector scores combine",
                          choices=DENSE_COMBINES)])
def _dense(system: dict, context: Context, source: RecipeSource) -> Stage:
    """The mention-aware bi-encoder over a FAISS dense index (mention and passage vectors)."""
    from hybrid.retrieval.dense import DenseRetriever  # deferred: it loads torch, which the other types do not need

    encoder = system["encoder"]  # on a command line: a folder or a model name, as typed (BiEncoder.load resolves it)
    if encoder is not None and not context.plain_paths:
        encoder = artifact_path(encoder, "encoder", "encoder", context, source)
    options = {"same_kind": system["same_kind"], "k": context.hits, "progress": context.progress,
               "device": backend_device(context.backend, context.precision, context.device),
               "precision": context.precision, "backend": context.backend,
               "overfetch": system["overfetch"],
               "batch_size": system["batch_size"]}
    if system["index"] is None and isinstance(context.index, ShardedIndex):  # the shards' own dense parts
        if system["passage_weight"] != DENSE_PASSAGE_WEIGHT or system["combine"] != DENSE_COMBINE:
            raise source.error("passage_weight", "a sharded index's dense parts are searched by mention vectors "
                                                 "alone: 'passage_weight' and 'combine' do not apply")
        with _config_errors(source, "type"):
            return ShardedDense(context.index, encoder=encoder, **options)
    if system["index"] is None:
        raise source.error("type", "a dense system needs 'index' (a dense index directory, an artifact)")
    index, bound_encoder = dense_index_of(system["index"], context, source)
    if encoder is None and bound_encoder is not None:  # an index-bound dense index: queries by the set's encoder
        encoder = bound_encoder
    with _config_errors(source, "index"):
        retriever = DenseRetriever(index, encoder, passage_weight=system["passage_weight"],
                                   combine=system["combine"], **options)
    check_bound(retriever.index, context.index)  # its rows must name the passages of the index searched
    return retriever


def dense_index_of(value: Any, context: Context, source: RecipeSource) -> tuple[Path, Path | None]:
    """The dense index a recipe's ``index = ...`` names, and the encoder its queries must use when it is the
    index-bound one of a model set (None: the encoder the dense index records).

    The artifacts folder's own copy wins (the older layout, ``ARTIFACTS/dense/index``); otherwise a model set
    that declares ``value`` index-bound resolves it to the dense index of the context's index made by the set's
    encoder. Neither: the missing-artifact error of :func:`artifact_path`."""
    path = artifact_path(value, "index", "dense", context, source, must_exist=False)
    if path.exists() or context.plain_paths:
        return artifact_path(value, "index", "dense", context, source), None
    model_set = ModelSet.open(artifacts_dir(context)) if artifacts_dir(context) is not None else None
    encoder = model_set.dense_encoder(value) if model_set is not None else None
    index_path = getattr(context.index, "path", None)
    if encoder is not None and index_path is not None:
        fingerprint = model_set.encoder_fingerprint(encoder)
        if fingerprint is None:
            raise source.error("index", f"the encoder {model_set.path / encoder} of model set {model_set.path} does "
                                        f"not exist; make it with `python -m hybrid.prepare RECIPE --index "
                                        f"{index_path}`")
        bound = bound_dense_dir(index_path, fingerprint)
        if not bound.exists():
            raise source.error("index", f"dense artifact {bound} does not exist: the index {index_path} has no dense "
                                        f"index made by the encoder {model_set.path / encoder} (fingerprint "
                                        f"{fingerprint[:12]}); build it with `python -m hybrid.prepare RECIPE --index "
                                        f"{index_path} --artifacts {model_set.path}`")
        return bound, model_set.path / encoder
    return artifact_path(value, "index", "dense", context, source), None


@register("fuse", [Param("recipes", list, None, "the systems to fuse: recipe names or inline tables",
                         what="a list of recipe names or inline tables", required=True),
                   METHOD,
                   Param("weights", str, None, "one weight per component, e.g. \"0.5,0.3,0.2\", optionally per kind: "
                                               "\"event=0.3,0.7;entity=0.5,0.5\" (default: equal weights)",
                         what='a string such as "0.5,0.3,0.2" or "event=0.3,0.7;entity=0.5,0.5"'),
                   replace(NORM, name="normalisation",
                           desc="per-query score normalisation of the score-based methods (rank-based ones ignore it)"),
                   Param("depth", int, None, "hits each component fetches (default: the run's depth)", minimum=1),
                   RRF_K_PARAM])
def _fuse(system: dict, context: Context, source: RecipeSource) -> Stage:
    """Fusion of other systems' runs (RRF, CombSUM, CombMNZ)."""
    names = system["recipes"]
    if len(names) < 2:
        raise source.error("recipes", "'recipes' must list at least two recipe names to fuse")
    components = []
    for name in names:
        stage = build_named(name, context, source, "recipes")
        if not isinstance(stage, Retriever):
            raise source.error("recipes", f"recipe {describe(name)} is a {type(stage).__name__}, not a retriever: "
                                          "only retrievers can be fused")
        components.append(stage)
    with _config_errors(source, "weights"):
        default, by_kind = parse_fusion_weights(system["weights"], len(components))
    depth = system["depth"] if system["depth"] is not None else context.hits
    with _config_errors(source, "method"):
        return Fuse(components, method=system["method"], weights=default, normalisation=system["normalisation"],
                    k=context.hits, depth=depth, rrf_k=system["rrf_k"], weights_by_kind=by_kind)


# -- rerank chains -------------------------------------------------------------------------------------------

_MODEL = Param("model", str, None, "the trained model (an artifact path)", required=True)
#: The reranker types of a pipeline's ``rerankers`` (inline tables ``{type = ..., ...}``), each with its declared
#: parameters: :func:`reranker_specs` checks a recipe's tables against them and fills in the defaults.
@dataclass(frozen=True)
class RerankerType(Component):
    """A reranker type: ``target(spec, context, source)`` builds its stage from the resolved table; ``check(spec,
    error)``, where given, refuses a table whose values do not fit together before anything is built."""

    check: Callable[[dict, ErrorFactory], None] | None = None


RERANKERS: Registry[RerankerType] = Registry("reranker type", RerankerType, fixed=["type"],
                                          describe="An inline table of a pipeline recipe's rerankers list: "
                                                   "{type = NAME, ...}.")


def reranker_specs(system: dict, source: RecipeSource) -> list[dict]:
    """The ``rerankers`` tables of a pipeline system, each checked against its type's declared parameters, with
    every default filled in (an error names the ``rerankers`` line)."""
    specs = system.get("rerankers") or []
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise source.error("rerankers", "'rerankers' must be a list of inline tables "
                                        "{type = \"ltr\" | \"reader\" | \"union\", ...}")

    def error(key: str | None, reason: str) -> ConfigError:
        return source.error("rerankers", reason)

    resolved = []
    for spec in specs:
        kind = RERANKERS.lookup(spec.get("type"), error).name
        values = RERANKERS.resolve(kind, spec, error, what=f"a {kind} reranker", prefix=f"a {kind}'s ")
        if RERANKERS[kind].check is not None:
            RERANKERS[kind].check(values, error)
        resolved.append(values)
    return resolved


def build_reranker(spec: dict, context: Context, source: RecipeSource) -> Stage:
    """The stage of one resolved reranker table (from :func:`reranker_specs`)."""
    return RERANKERS[spec["type"]].target(spec, context, source)


@RERANKERS.register("union", [
    Param("recipes", list, None, "the retrievers whose scores of each hit become the union_score_<i> / "
                                 "union_found_<i> LTR features, in order: recipe names or inline tables",
          what="a list of recipe names or inline tables", required=True),
    Param("depth", int, None, "hits each retriever fetches (default: the incoming run's length)", minimum=1)])
def _union(spec: dict, context: Context, source: RecipeSource) -> Stage:
    """A feature union: the retrievers' scores of each hit become LTR features (the run's order untouched)."""
    members = [build_named(name, context, source, "rerankers") for name in spec["recipes"]]
    try:
        return FeatureUnion(*members, depth=spec["depth"])
    except TypeError as exc:
        raise source.error("rerankers", f"a union reranker: {exc}") from None


@RERANKERS.register("ltr", [
    _MODEL,
    Param("featureset", str, None, "the feature set the model must have been trained with (name or path)"),
    Param("learner", str, None, "training: the learner (see hybrid.recipe_train)", choices=tuple(LEARNERS)),
    Param("params", dict, None, "training: the learner's hyper-parameters (the learner's declared defaults for "
                                "those it does not give)"),
    LTR_DEPTH,
    Param("train_queries", int, None, "training: queries sampled from the training topics", minimum=1)],
    check=lambda spec, error: _check_learner(spec, error))
def _ltr(spec: dict, context: Context, source: RecipeSource) -> Stage:
    """A learning-to-rank model over a feature set (trained with python -m hybrid.recipe_train)."""
    path = artifact_path(spec["model"], "rerankers", "ltr", context, source)
    model = TrainedModel.load(path)
    if spec["featureset"] is not None:
        model.check_featureset(load_featureset(featureset_path(spec["featureset"], source)))
    return LtrReranker(model, context.index, depth=spec["depth"])


def _check_learner(spec: dict, error: ErrorFactory) -> None:
    """An ltr reranker's ``params`` are checked against its learner's declared parameters (when it names one)."""
    if spec["learner"] is not None:
        LEARNERS.resolve(spec["learner"], spec["params"] or {}, error,
                         what=f"learner {spec['learner']!r} (an ltr reranker's params)", prefix="an ltr's params: ")


@RERANKERS.register("reader", [
    _MODEL,
    reader_settings.DEPTH,
    reader_settings.SPAN_SOURCE,
    reader_settings.BATCH_SIZE,
    Param("interpolate", (int, float, dict), None, "interpolate with the input run's scores: a weight, or a "
                                                   "table by kind {event = W, entity = W}",
          what="a number or a table {event = W, entity = W}")])
def _reader(spec: dict, context: Context, source: RecipeSource) -> Stage:
    """The coreference reader (a cross-encoder with span heads) rescoring the head of the run."""
    # deferred: the reader loads torch and ir_measures, which a recipe without a reader does not need
    from ltr.reader.interpolate import KindWeights
    from ltr.reader.stage import ReaderReranker

    path = artifact_path(spec["model"], "rerankers", "reader", context, source)
    weight = None
    if spec["interpolate"] is not None:  # a number, or a table by kind: {event = 0.35, entity = 0.65[, default = W]}
        value = spec["interpolate"]
        if isinstance(value, bool):
            raise source.error("rerankers", f"a reader's 'interpolate' must be a number or a table "
                                            f"{{event = W, entity = W}}, got {value!r}")
        with _config_errors(source, "rerankers", "a reader's 'interpolate': "):
            weight = KindWeights.of(value)
    return ReaderReranker(str(path), context.index, depth=spec["depth"], batch_size=spec["batch_size"],
                          span_source=spec["span_source"], interpolate=weight, precision=context.precision,
                          backend=context.backend)


@register("safety-net", [Param("base", (str, dict), None, "the mention-level system it wraps: a recipe name or an "
                                                            "inline table", what="a recipe name or an inline table",
                               required=True),
                         Param("passage_weight", float, SAFETY_PASSAGE_WEIGHT,
                               "weight of plain passage BM25 fused with the mention-level run (the recall safety net "
                               "for passages whose mention was not detected; 0 = off)", minimum=0.0, maximum=1.0),
                         Param("doc_weight", float, DOC_WEIGHT, "weight of the TF-IDF cosine between the query's and "
                                                                "the candidate's documents (0 = off)", minimum=0.0),
                         Param("expand_docs", int, EXPAND_DOCS, "also consider every passage of the N documents most "
                                                                "similar to the query's document", minimum=0),
                         Param("depth", int, DEPTH, "hits the mention-level run and passage BM25 each fetch before "
                                                    "the safety net combines them", minimum=1),
                         K1, B])
def _safety_net(system: dict, context: Context, source: RecipeSource) -> Stage:
    """A mention-level system made safe for raw text: passage BM25 and document context (the recall net)."""
    base = build_named(system["base"], context, source, "base")
    if not isinstance(base, Retriever):
        raise source.error("base", f"recipe {describe(system['base'])} is a {type(base).__name__}, not a retriever")
    return SafetyNet(base, context.index, passage_weight=system["passage_weight"], doc_weight=system["doc_weight"],
                     expand_docs=system["expand_docs"], depth=system["depth"], k=context.hits, k1=system["k1"],
                     b=system["b"], threads=context.threads)


@register("pipeline", [Param("first", (str, dict), None, "the system whose run the rerankers reorder: a recipe name "
                                                         "or an inline table", what="a recipe name or an inline table",
                             required=True),
                       Param("rerankers", list, [], "rerankers, in order, each an inline table "
                                                    "{type = \"ltr\" | \"reader\" | \"union\", ...} (the reranker "
                                                    "types)",
                             what='a list of inline tables {type = "ltr" | "reader" | "union", ...}')])
def _pipeline(system: dict, context: Context, source: RecipeSource) -> Stage:
    """A system followed by rerankers (LTR, the coreference reader)."""
    specs = reranker_specs(system, source)
    for spec in specs:  # a missing model fails before the first stage is built
        if spec.get("model") is not None:
            artifact_path(spec["model"], "rerankers", spec["type"], context, source)
    stage = build_named(system["first"], context, source, "first")
    for spec in specs:
        stage = stage >> build_reranker(spec, context, source)
    return stage
