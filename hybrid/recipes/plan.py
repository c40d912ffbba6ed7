"""What a recipe needs on one index, what exists, and the chain of steps that makes the rest: one plan.

The plan is derived from the recipe itself, by walking its ``[system]`` table and the recipes it names: a
``dense`` system needs a dense index, which needs an encoder; an ``ltr`` reranker needs its model, trained on
the stages before it; a ``reader`` reranker needs a reader (warm-started from the encoder). Each step says
what it makes, where, whether it exists, how long it should take here (CPU and GPU, from the measured rates
below scaled by the collection's size) and the command it corresponds to. ``python -m hybrid.prepare`` runs
the missing steps (:mod:`hybrid.recipes.prepare_steps`); ``--dry-run`` and ``hybrid.search`` /
``hybrid.experiment`` print the same plan when something is missing.

Collection-independent models (encoder, LTR models, reader) live in a model set (:mod:`hybrid.store.models`);
the dense index lives with the sparse index it was built from, found through it by the encoder's fingerprint.
Models are trained on a labelled collection: when it is the target collection itself (same passage ids and
texts), in place, as the documented ECB+ chain does; otherwise on a raw index of the training collection built
inside the store, after which only the target's dense index is built on the target.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.recipes.builders import reranker_specs
from hybrid.recipes.registry import RECIPE_DIR, Recipe, RecipeSource, load_recipe
from hybrid.store.models import (
    ARTIFACTS_ENV,
    ModelSet,
    artifact_in,
    bound_dense_dir,
    encoder_fingerprint,
    linked_set,
    set_folder,
    set_key,
    store_root,
)
from indexes.faiss_index import DENSE_METADATA
from indexes.lucene import METADATA

# -- measured rates (2 idle CPU cores; BENCHMARKS.md) and the assumed GPU speed-ups --------------------------
#: ``hybrid.index`` on raw ECB+: 15,812 passages in 72 s with 2 threads and 2 spaCy processes (219 passages/s).
INDEX_PASSAGES_PER_S = 219.0
#: ``hybrid.index_dense`` in torch fp32: 15,812 ECB+ dev raw passages (288K mention + passage vectors) in 64 s wall
#: on 2 idle cores, index reading and writing included (247 passages/s; BENCHMARKS.md, dense index row: 35.7 before
#: issue 39). ``--backend onnx`` takes ~40 s, ``--precision bf16`` on a CPU with AVX512-BF16 ~35 s; the estimate is
#: torch fp32's.
ENCODE_PASSAGES_PER_S = 247.0
#: ``hybrid.train_dense --steps 330 --batch-size 8``: 6 minutes on 2 idle cores, mining ECB+ train included.
DENSE_STEP_S = 6 * 60 / 330
#: ``hybrid.recipe_train hybrid-dense-net`` (2,000 queries): the dense-net first stage plus ~0.2 s/query of
#: features on 2 cores (BENCHMARKS.md: 22 of 28 minutes extracting features for 15,384 queries).
LTR_QUERY_S = 0.25
#: ``hybrid.reader train``: pool 64 s for ECB+ train, 2,800 steps in 36 minutes on 2 idle cores.
READER_POOL_QUERY_S = 64 / 9963
READER_STEP_S = 36 * 60 / 2800
#: No GPU was lent to this project: these speed-ups are assumptions (MiniLM-sized models on any recent GPU),
#: stated so, not measurements. Annotation (spaCy) and BM25 stay on the CPU either way.
GPU_ENCODE_SPEEDUP = 25.0
GPU_TRAIN_SPEEDUP = 15.0
GPU_LTR_SPEEDUP = 1.5  # features are sparse lookups on the CPU; only the dense first stage gains

#: The model-set path of the encoder a recipe's dense index is made by, when the recipe does not name one.
DEFAULT_ENCODER = "dense/encoder"
#: Where training indexes (raw indexes of labelled collections other than the target) live in the store.
TRAINING_INDEXES = "training-indexes"


@dataclass(frozen=True)
class TrainingConfig:
    """How the models are trained: the documented ECB+ chain's settings (BENCHMARKS.md, raw text first)."""

    dense_base: str = "minilm"  # the checkpoint the bi-encoder is fine-tuned from
    dense_steps: int = 330
    dense_batch_size: int = 8
    dense_negatives: str = "multifield"
    dense_seed: int = 13
    ltr_seed: int = 0
    ltr_queries: int | None = None  # None: the recipe's train_queries
    reader_steps: int = 2800
    reader_lr: float = 5e-5

    def as_key(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainingData:
    """The labelled collection the models learn from: files, size, fingerprint, and whether it is the target."""

    name: str
    fingerprint: str
    corpus: Path
    topics: Path
    qrels: Path
    passages: int
    queries: int
    in_place: bool = False  # the labelled corpus is the target collection: train on the target index
    split: str | None = None  # corpus lines of this split only give labels ("train" for ECB+'s corpus.jsonl)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "fingerprint": self.fingerprint, "corpus": str(self.corpus),
                "topics": str(self.topics), "qrels": str(self.qrels), "passages": self.passages,
                "queries": self.queries, "split": self.split}


@dataclass
class Step:
    """One thing to make."""

    kind: str  # training-index, encoder, training-dense-index, ltr, reader, dense-index
    makes: str
    where: str
    done: bool
    cpu_minutes: float
    gpu_minutes: float
    command: str
    detail: dict[str, Any] = field(default_factory=dict)
    replace: bool = False  # it exists and is made again (``hybrid.prepare --overwrite``): counted as missing


@dataclass
class Plan:
    """Every artifact a recipe needs on an index, in the order they are made."""

    recipe: str
    index: Path
    models: Path
    training: TrainingData | None
    steps: list[Step]
    gpu: bool = False

    @property
    def missing(self) -> list[Step]:
        return [s for s in self.steps if not s.done]

    def minutes(self, gpu: bool | None = None) -> float:
        use_gpu = self.gpu if gpu is None else gpu
        return sum(s.gpu_minutes if use_gpu else s.cpu_minutes for s in self.missing)

    def format(self) -> str:
        """The plan as text: one block per step, then the total."""
        lines = [f"recipe {self.recipe} on index {self.index}", f"  models: {self.models}"]
        if self.training is not None:
            where = "the target collection itself (trained in place)" if self.training.in_place else \
                f"{self.training.corpus} ({self.training.passages:,} passages, {self.training.queries:,} queries)"
            lines.append(f"  trained on: {self.training.name}: {where}")
        if not self.steps:
            lines.append("  needs no trained artifact")
            return "\n".join(lines)
        device = "GPU" if self.gpu else "CPU"
        lines.append(f"  {len(self.steps)} steps, {len(self.missing)} missing; estimates on this machine's {device}"
                     " (CPU: rates measured on 2 cores; GPU: assumed speed-ups, not measured)")
        for number, step in enumerate(self.steps, start=1):
            state = "exists " if step.done else "REBUILD" if step.replace else "MISSING"
            lines.append(f"  [{number}] {state} {step.makes}")
            lines.append(f"      at {step.where}")
            if not step.done:
                lines.append(f"      ~{step.cpu_minutes:.1f} min CPU / ~{step.gpu_minutes:.1f} min GPU: {step.command}")
        if self.missing:
            lines.append(f"  total to build: ~{self.minutes(False):.0f} min CPU / ~{self.minutes(True):.0f} min GPU")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "index": str(self.index), "models": str(self.models),
                "training": self.training.describe() if self.training else None, "gpu": self.gpu,
                "steps": [asdict(s) for s in self.steps]}


# -- what a recipe needs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    kind: str  # dense, ltr, reader
    path: str  # as the recipe names it (relative to the model set)
    recipe: str = ""  # ltr: the recipe whose pipeline trains it
    encoder: str = DEFAULT_ENCODER  # dense: the encoder that makes it; reader: its warm start


def recipe_needs(recipe: Recipe) -> list[Need]:
    """The artifacts a recipe needs, components first, each once (the order they must be made in)."""
    found: list[Need] = []
    reference = recipe.name  # how the LTR step loads the recipe again: a bundled name, else the file
    if recipe.source.path is not None and recipe.source.path.resolve().parent != RECIPE_DIR.resolve():
        reference = str(recipe.source.path)
    _walk(recipe.system, recipe.source, reference, found, [recipe.name])
    unique: list[Need] = []
    for need in found:
        if need not in unique:
            unique.append(need)
    return unique


def _named(value: Any, source: RecipeSource, owner: str, stack: list[str]) -> tuple[dict, RecipeSource, str, list]:
    if isinstance(value, dict):
        return value, source, owner, stack
    if not isinstance(value, str) or value in stack:
        raise source.error(None, f"cannot plan component {value!r}")
    component = load_recipe(value)
    return component.system, component.source, value, [*stack, value]


def _walk(system: dict, source: RecipeSource, owner: str, found: list[Need], stack: list[str]) -> None:
    kind = system.get("type")
    if kind == "dense":
        if system.get("index"):
            found.append(Need("dense", system["index"], encoder=system.get("encoder") or DEFAULT_ENCODER))
    elif kind == "safety-net" and system.get("base") is not None:
        inner, src, who, st = _named(system["base"], source, owner, stack)
        _walk(inner, src, who, found, st)
    elif kind == "fuse":
        for name in system.get("recipes") or []:
            inner, src, who, st = _named(name, source, owner, stack)
            _walk(inner, src, who, found, st)
    elif kind == "pipeline":
        if system.get("first") is not None:
            inner, src, who, st = _named(system["first"], source, owner, stack)
            _walk(inner, src, who, found, st)
        for spec in reranker_specs(system, source):
            if spec["type"] == "union":
                for name in spec["recipes"]:
                    inner, src, who, st = _named(name, source, owner, stack)
                    _walk(inner, src, who, found, st)
            elif spec["type"] == "ltr":
                found.append(Need("ltr", spec["model"], recipe=owner))
            elif spec["type"] == "reader":
                found.append(Need("reader", spec["model"]))
    elif kind == "eventcoll":
        raise source.error("type", "hybrid.prepare does not plan event-collection recipes; train them with "
                                   "python -m hybrid.collect train")


# -- where the models are --------------------------------------------------------------------------------------


def explicit_artifacts(artifacts: str | Path | None) -> Path | None:
    """``--artifacts`` or ``$HYBRID_ARTIFACTS``: a model set, or an artifacts folder of the older layout."""
    base = artifacts or os.environ.get(ARTIFACTS_ENV)
    return Path(base) if base else None


def models_folder(index: Path, artifacts: str | Path | None, training: TrainingData | None,
                  config: TrainingConfig) -> Path:
    """Where a plan's models are or will be: the explicit folder, else the set the index was prepared with,
    else the store's set for this training data and config."""
    explicit = explicit_artifacts(artifacts)
    if explicit is not None:
        return explicit
    if training is None:
        linked = linked_set(index)
        if linked is not None:
            return linked.path
        raise ConfigError(None, None, "no model set: give --artifacts DIR, --models KEY or a training set (--train)")
    return set_folder(store_root(), training.name, set_key(training.fingerprint, config.as_key()))


def training_index_path(training: TrainingData) -> Path:
    return store_root() / TRAINING_INDEXES / f"{training.name}-{training.fingerprint[:16]}"


def index_passages(index: Path) -> int:
    """Passages of a hybrid index (its metadata's counts); 0 when unknown."""
    try:
        return int(json.loads((Path(index) / METADATA).read_text(encoding="utf-8"))["counts"]["passages"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def dense_index_dir(index: Path, models: Path, need: Need) -> tuple[Path | None, bool]:
    """Where the dense index ``need`` of ``index`` is (or will be), and whether it is complete: the models folder's
    own copy in the older layout, else the index-bound one made by the set's encoder (None while that encoder
    does not exist: its fingerprint names the folder)."""
    legacy = artifact_in(models, need.path)
    if (legacy / DENSE_METADATA).is_file():
        return legacy, True
    fingerprint = encoder_fingerprint(models / need.encoder)
    if fingerprint is None:
        return None, False
    where = bound_dense_dir(index, fingerprint)
    return where, (where / DENSE_METADATA).is_file()


# -- the plan ---------------------------------------------------------------------------------------------------


def make_plan(recipe: Recipe, index: str | Path, models: Path, training: TrainingData | None,
              config: TrainingConfig = TrainingConfig(), gpu: bool = False, rebuild: bool = False) -> Plan:
    """The steps that make everything ``recipe`` needs on ``index``, with ``models`` as the model set.

    A step is listed only when something needs it: an encoder when a dense index or a reader it makes is
    missing (an artifacts folder holding its dense index already needs no encoder), a training index when a
    model has to be trained away from the target collection. ``rebuild``: every artifact counts as missing,
    and those that exist are marked ``replace`` (``hybrid.prepare --overwrite`` makes the whole chain again)."""
    index = Path(index)
    mark = _rebuild if rebuild else _keep
    needs = recipe_needs(recipe)
    target_passages = index_passages(index)
    in_place = training is None or training.in_place
    train_index = index if in_place else training_index_path(training)
    topics = str(training.topics) if training else "TRAIN_TOPICS"
    qrels = str(training.qrels) if training else "TRAIN_QRELS"
    corpus = str(training.corpus) if training else "LABELLED_CORPUS"
    split = f" --split {training.split}" if training and training.split else " --split ''"
    dense_needs = [n for n in needs if n.kind == "dense"]
    targets = [_dense_step(index, models, n, target_passages, "dense-index", "of this index", mark)
               for n in dense_needs]
    ltrs, readers = [], []
    for need in (n for n in needs if n.kind == "ltr"):
        where = artifact_in(models, need.path)
        limit = config.ltr_queries or _train_queries(load_recipe(need.recipe)) or 2000
        queries = min(limit, training.queries) if training else limit
        minutes = queries * LTR_QUERY_S / 60
        ltrs.append(mark(Step("ltr", f"LTR model {need.path} (recipe {load_recipe(need.recipe).name}, on its earlier "
                         "stages' candidates)",
                         str(where), where.exists(), minutes, minutes / GPU_LTR_SPEEDUP,
                         f"python -m hybrid.recipe_train {need.recipe} --index {train_index} --topics {topics} "
                         f"--qrels {qrels} --artifacts {models}",
                         {"relpath": need.path, "recipe": need.recipe, "index": str(train_index)})))
    for need in (n for n in needs if n.kind == "reader"):
        where = artifact_in(models, need.path)
        queries = training.queries if training else 10000
        minutes = (queries * READER_POOL_QUERY_S + config.reader_steps * READER_STEP_S) / 60
        readers.append(mark(Step("reader", f"reader {need.path} (warm-started from {need.encoder})", str(where),
                            where.exists(), minutes, minutes / GPU_TRAIN_SPEEDUP,
                            f"python -m hybrid.reader train --index {train_index} --corpus {corpus} --queries "
                            f"{topics} --pool {models / '.work' / 'reader-pool.jsonl'} --base-model "
                            f"{models / need.encoder} --steps {config.reader_steps} --lr {config.reader_lr} "
                            f"--output {where}",
                            {"relpath": need.path, "encoder": need.encoder, "index": str(train_index)})))
    training_dense = []
    if not in_place and any(not s.done for s in ltrs):  # the LTR model learns from the training index's candidates
        training_dense = [_dense_step(train_index, models, n, training.passages, "training-dense-index",
                                      "of the training index", mark) for n in dense_needs]
    wanted = [n.encoder for n, s in zip(dense_needs, targets, strict=True) if not s.done]
    wanted += [n.encoder for n, s in zip([n for n in needs if n.kind == "reader"], readers, strict=True) if not s.done]
    if training_dense:
        wanted += [n.encoder for n, s in zip(dense_needs, training_dense, strict=True) if not s.done]
    encoders = []
    for encoder in dict.fromkeys(wanted):
        where = models / encoder
        minutes = config.dense_steps * DENSE_STEP_S / 60
        encoders.append(mark(Step("encoder", f"bi-encoder {encoder} fine-tuned on the training labels", str(where),
                             (where / "hybrid-encoder.json").is_file(), minutes, minutes / GPU_TRAIN_SPEEDUP,
                             f"python -m hybrid.train_dense --index {train_index} --corpus {corpus} --topics {topics}"
                             f"{split} --negatives {config.dense_negatives} --steps {config.dense_steps} "
                             f"--batch-size {config.dense_batch_size}"
                             + (f" --base {config.dense_base}" if config.dense_base != "minilm" else "")
                             + f" --output {where}",
                             {"relpath": encoder, "index": str(train_index)})))
    steps: list[Step] = []
    trains = [s for s in [*encoders, *ltrs, *readers] if not s.done]
    if trains and not in_place:
        minutes = training.passages / INDEX_PASSAGES_PER_S / 60
        steps.append(mark(Step("training-index",
                          f"raw index of the training collection {training.name} (auto annotation)", str(train_index),
                          (train_index / METADATA).is_file(), minutes, minutes,
                          f"python -m hybrid.index --corpus {corpus} --index {train_index}",
                          {"path": str(train_index)})))
    steps += encoders
    steps += targets if in_place else training_dense
    steps += ltrs + readers
    if not in_place:
        steps += targets
    return Plan(recipe.name, index, models, training, steps, gpu)


def _keep(step: Step) -> Step:
    """A step as it is on disk: an existing artifact is kept."""
    return step


def _rebuild(step: Step) -> Step:
    """A step when the whole chain is made again: never done; one that exists is replaced."""
    step.replace, step.done = step.done, False
    return step


def _dense_step(index: Path, models: Path, need: Need, passages: int, kind: str, whose: str,
                mark=_keep) -> Step:
    where, exists = dense_index_dir(index, models, need)
    minutes = passages / ENCODE_PASSAGES_PER_S / 60
    shown = str(where) if where is not None else f"{index}/dense-by-encoder/<fingerprint of {need.encoder}>"
    step = Step(kind, f"dense index {need.path} {whose}, made by {need.encoder}", shown, exists, minutes,
                minutes / GPU_ENCODE_SPEEDUP,
                f"python -m hybrid.index_dense --index {index} --encoder {models / need.encoder} --output {shown}",
                {"relpath": need.path, "encoder": need.encoder, "index": str(index),
                 "path": str(where) if where is not None else None})
    return step if where == artifact_in(models, need.path) else mark(step)  # the older layout's is not prepare's


def _train_queries(recipe: Recipe) -> int | None:
    system = recipe.system
    specs = reranker_specs(system, recipe.source) if system.get("type") == "pipeline" else []
    counts = [s["train_queries"] for s in specs if s["type"] == "ltr" and s["train_queries"]]
    return int(counts[0]) if counts else None


def corpus_fingerprint(*paths: Path) -> str:
    """sha256 over the files a training set is made of (in the order given)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def model_set_of(models: Path) -> ModelSet | None:
    return ModelSet.open(models) if models.is_dir() else None


def search_plan(recipe: Recipe, index: str | Path, artifacts: str | Path | None) -> Plan | None:
    """What ``recipe`` still lacks to run on ``index`` with the models at ``--artifacts`` / ``$HYBRID_ARTIFACTS`` /
    the index's prepared set: the plan when something is missing, else None. A recipe whose needs cannot be
    planned (a broken recipe, a sharded index) gives None, and building it reports the problem itself."""
    index = Path(index)
    if not (index / METADATA).is_file():
        return None
    try:
        if not recipe_needs(recipe):
            return None
        models = explicit_artifacts(artifacts)
        if models is None:
            linked = linked_set(index)
            models = linked.path if linked is not None else store_root() / "<the set hybrid.prepare makes>"
        plan = make_plan(recipe, index, models, None)
    except ConfigError:
        return None
    return plan if plan.missing else None


def missing_error(plan: Plan) -> ConfigError:
    """The one line a command ends with after printing ``plan``."""
    first = plan.missing[0]
    return ConfigError(None, None, f"recipe {plan.recipe} lacks {len(plan.missing)} artifact(s) on {plan.index} "
                                   f"(the plan above; first: {first.where}); make them all with `python -m "
                                   f"hybrid.prepare {plan.recipe} --index {plan.index}`")
