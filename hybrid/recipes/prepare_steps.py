"""Run a plan's missing steps in order (:mod:`hybrid.recipes.plan`), each the library call behind its command.

Every step writes its output atomically (indexes and dense indexes build in a temporary sibling, models are
saved with :mod:`hybrid.core.atomic`), so an interrupted prepare leaves finished steps finished and the next
one skips them; the encoder's training also resumes from its checkpoint, and the mined pairs and the reader's
pool are cached in the model set's ``.work/`` folder. The settings are those of the documented commands
(:class:`~hybrid.recipes.plan.TrainingConfig`), so a prepared model is the one the command chain would make.
Torch places the work on the GPU when there is one.

What a plan writes is declared to the output policy (:func:`plan_writes`, :mod:`hybrid.core.outputs`) and
checked before the first step: the model set, each missing artifact (of its own kind: an encoder only over an
encoder, an LTR model only over an LTR model, ...), the index's dense index and its model-set link; none of
them may be an input, lie inside one (except the index's own places for them) or contain one. With
``overwrite`` (``hybrid.prepare --overwrite``, a plan made with ``rebuild``) every step is made again and each
replaces only an artifact of its own kind; the caches in ``.work/`` are made again too.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from features.annotate import AnnotationConfig
from hybrid.core.backend import backend_device
from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.core.outputs import JSON, Input, Output, Writes
from hybrid.dense.data import TrainingSet, build_training_set
from hybrid.recipes.plan import Plan, Step, TrainingConfig, recipe_needs
from hybrid.recipes.registry import Context, Recipe, load_recipe
from hybrid.recipes.training import train_recipe
from hybrid.retrieval.sparse import MultiFieldBM25
from hybrid.store.models import (
    INDEX_LINK,
    MANIFEST,
    MODEL_SET,
    ModelSet,
    bound_dense_dir,
    encoder_fingerprint,
    set_key,
)
from indexes.faiss_index import DENSE_INDEX, build_dense_index
from indexes.lucene import HYBRID_INDEX, IndexConfig, build_index
from indexes.sparse_index import SparseIndex
from ltr.model import LTR_MODEL
from ltr.reader import data as pools

log = logging.getLogger("hybrid.prepare")

WORK = ".work"  # in a model set: caches of a training in progress (mined pairs, the reader's pool)


def open_model_set(plan: Plan, config: TrainingConfig) -> ModelSet:
    """The plan's model set, its manifest created (with what it is trained on) when it has none."""
    existing = ModelSet.open(plan.models) if plan.models.is_dir() else None
    if existing is not None:
        return existing
    if plan.training is None:
        raise ConfigError(plan.models, None, "is not a model set and no training set was given; pass --train")
    key = set_key(plan.training.fingerprint, config.as_key())
    return ModelSet.create(plan.models, plan.training.name, key, plan.training.describe(), config.as_key())


COMMAND = "hybrid.prepare"


def set_owned(recipe: Recipe) -> set[str]:
    """The top-level names an artifacts folder of the older layout holds for ``recipe`` (``dense``, ``ltr``,
    ``reader``, ...: the first folder of every path the recipe names), and the set's caches."""
    names = {WORK}
    for need in recipe_needs(recipe):
        names.add(Path(need.path).parts[0])
        if need.kind in ("dense", "reader"):
            names.add(Path(need.encoder).parts[0])
    return names


def set_output(models: Path, recipe: Recipe, option: str) -> Output:
    """The model set as an output: a model set is filled (never replaced), a new or empty folder becomes one,
    and an artifacts folder of the older layout (nothing in it but the recipe's model folders) gets its
    manifest; any other folder is refused by the policy (it is not a model set)."""
    if models.is_dir() and not (models / MANIFEST).exists():
        entries = {entry.name for entry in models.iterdir()}
        if entries and entries <= set_owned(recipe):
            return Output(f"{option} manifest", models / MANIFEST, JSON)
    return Output(option, models, MODEL_SET, replace=True)


def step_outputs(steps: Iterable[Step]) -> list[Output]:
    """What ``steps`` write, each as its kind: a step replaces only an artifact of its own kind."""
    # deferred: the modules that define these kinds and paths load torch
    from features.encoder import ENCODER
    from hybrid.dense.train import CHECKPOINT as ENCODER_CHECKPOINT
    from hybrid.dense.train import checkpoint_dir, resumes
    from ltr.reader.store import READER
    from ltr.reader.train import CHECKPOINT as READER_CHECKPOINT
    from ltr.reader.train import checkpoint_path

    outputs = []
    for step in steps:
        name = f"{step.kind} {step.detail.get('relpath') or step.where}"  # "ltr ltr/m": the step and its path
        if step.kind == "training-index":
            outputs.append(Output(name, step.detail["path"], HYBRID_INDEX))
        elif step.kind == "encoder":
            where = Path(step.where)
            outputs += [Output(name, where, ENCODER, replace=resumes(where)),
                        Output(f"{name} checkpoint", checkpoint_dir(where), ENCODER_CHECKPOINT, replace=True)]
        elif step.kind in ("dense-index", "training-dense-index"):
            if step.detail.get("path"):  # else named by an encoder not trained yet: checked when it is built
                outputs.append(Output(name, step.detail["path"], DENSE_INDEX))
        elif step.kind == "ltr":
            outputs.append(Output(name, step.where, LTR_MODEL))
        elif step.kind == "reader":
            outputs += [Output(name, step.where, READER),
                        Output(f"{name} checkpoint", checkpoint_path(step.where), READER_CHECKPOINT, replace=True)]
    return outputs


def plan_writes(plan: Plan, recipe: Recipe, inputs: list[Input], overwrite: bool = False,
                set_option: str = "the model set") -> list[Writes]:
    """What running ``plan`` writes, for the output policy (check each before the first step): the model set
    and the index's link to it (filled and replaced as prepare's own), the missing steps' artifacts (replaced
    only with ``overwrite`` and only when of the same kind); the training index lives in the store and
    everything in it is prepare's, so rebuilding it deletes its dense indexes too."""
    container = Writes(COMMAND, [set_output(plan.models, recipe, set_option),
                                 Output("the index's model-set link", plan.index / INDEX_LINK, JSON, replace=True)],
                       inputs)
    steps = Writes(COMMAND, step_outputs(s for s in plan.missing if s.kind != "training-index"), inputs, overwrite)
    training = Writes(COMMAND, step_outputs(s for s in plan.missing if s.kind == "training-index"), inputs,
                      overwrite, overwrite_all=True)
    return [container, steps, training]


def run_plan(plan: Plan, config: TrainingConfig | None = None, threads: int = 1, device: str | None = None,
             progress: bool = True, say: Callable[[str], None] = print, overwrite: bool = False,
             precision: str = "fp32", backend: str = "torch") -> list[Step]:
    """Make every missing step of ``plan``; returns the steps made. A step whose output appeared meanwhile (an
    earlier, interrupted run finished it) is skipped. ``overwrite``: a step replaces an existing artifact of
    its kind, and the caches in ``.work/`` are made again (a plan made with ``rebuild``). ``precision``, ``backend``:
    of the encoder where it encodes (dense indexes, and the dense first stage of LTR training); training is fp32, in
    torch."""
    config = config or TrainingConfig()
    backend_device(backend, precision, device)  # before any step runs
    if not plan.missing:
        return []
    model_set = open_model_set(plan, config)
    made = []
    for number, step in enumerate(plan.steps, start=1):
        if step.done:
            continue
        say(f"[{number}/{len(plan.steps)}] {step.makes}")
        started = time.time()
        RUNNERS[step.kind](step, plan, model_set, config, threads, device, progress, overwrite, precision, backend)
        say(f"[{number}/{len(plan.steps)}] done in {time.time() - started:.0f}s")
        made.append(step)
    return made


def _training_index(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
                    device: str | None, progress: bool, overwrite: bool = False,
                    precision: str = "fp32", backend: str = "torch") -> None:
    annotation = AnnotationConfig(n_process=min(2, os.cpu_count() or 1))
    build_index(IndexConfig(corpus=str(plan.training.corpus), annotation=annotation, threads=threads),
                step.detail["path"], progress=progress, overwrite=overwrite, overwrite_all=True)


def _encoder(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
             device: str | None, progress: bool, overwrite: bool = False,
             precision: str = "fp32", backend: str = "torch") -> None:
    # deferred: both load torch, which only the training steps need
    from features.encoder import EncoderConfig
    from hybrid.dense.train import TrainConfig, train

    training = _training(plan)
    pairs = model_set.path / WORK / "dense-pairs.jsonl"
    if pairs.is_file() and not overwrite:
        data = TrainingSet.load(pairs)
    else:
        index = SparseIndex(step.detail["index"])
        topics = read_topics(training.topics, resolve=index.passage_text)
        data = build_training_set(index, training.corpus, topics, split=training.split,
                                  negatives=config.dense_negatives, seed=config.dense_seed, progress=progress)
        pairs.parent.mkdir(parents=True, exist_ok=True)
        data.save(pairs)
    output = model_set.path / step.detail["relpath"]
    settings = TrainConfig(base=config.dense_base, steps=config.dense_steps, batch_size=config.dense_batch_size,
                           seed=config.dense_seed)
    train(data, output, settings, EncoderConfig(), resume=True, progress=progress,
          extra={"prepared_by": "python -m hybrid.prepare", "training": training.describe()}, overwrite=overwrite)
    model_set.record_model(step.detail["relpath"], "encoder", fingerprint=encoder_fingerprint(output),
                           trained_on=training.name, steps=config.dense_steps)


def _dense_index(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
                 device: str | None, progress: bool, overwrite: bool = False,
                 precision: str = "fp32", backend: str = "torch") -> None:
    from features.encoder import BiEncoder  # deferred: importing it loads torch

    encoder_path = model_set.path / step.detail["encoder"]
    fingerprint = model_set.encoder_fingerprint(step.detail["encoder"])
    if fingerprint is None:
        raise ConfigError(encoder_path, None, "the encoder this dense index is made by does not exist")
    index = SparseIndex(step.detail["index"])
    output = bound_dense_dir(index.path, fingerprint)
    # named by the encoder's fingerprint, known only now that it is trained: checked here, before encoding
    Writes(COMMAND, [Output(f"{step.kind} {step.detail['relpath']}", output, DENSE_INDEX)], [], overwrite).check()
    encoder = BiEncoder.load(encoder_path, device=backend_device(backend, precision, device))
    encoder.set_inference(precision, backend)
    build_dense_index(index, encoder, output, progress=progress, overwrite=overwrite)
    if model_set.dense_encoder(step.detail["relpath"]) != step.detail["encoder"]:
        model_set.record_dense(step.detail["relpath"], step.detail["encoder"])


def _ltr(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
         device: str | None, progress: bool, overwrite: bool = False,
         precision: str = "fp32", backend: str = "torch") -> None:
    training = _training(plan)
    index = SparseIndex(step.detail["index"])
    topics = read_topics(training.topics, resolve=index.passage_text)
    context = Context(index=index, hits=100, threads=threads, artifacts=model_set.path, device=device,
                      precision=precision, backend=backend, progress=progress)
    recipe = load_recipe(step.detail["recipe"])
    for path in train_recipe(recipe, context, topics, read_qrels(training.qrels), seed=config.ltr_seed,
                             max_queries=config.ltr_queries, overwrite=overwrite):
        model_set.record_model(str(path.relative_to(model_set.path)), "ltr", recipe=recipe.name,
                               trained_on=training.name, seed=config.ltr_seed)


def _reader(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
            device: str | None, progress: bool, overwrite: bool = False,
            precision: str = "fp32", backend: str = "torch") -> None:
    from ltr.reader.train import TrainConfig, train  # deferred: importing it loads torch

    training = _training(plan)
    pool = model_set.path / WORK / "reader-pool.jsonl"
    if overwrite or not pool.is_file():
        index = SparseIndex(step.detail["index"])
        corpus = pools.read_labelled_corpus(training.corpus, (training.split,) if training.split else None)
        queries = pools.build_training_queries(training.topics, corpus, MultiFieldBM25(index), progress=progress,
                                               mention_records=index.mention_records)
        pools.write_pool(queries, pool, {"corpus": str(training.corpus), "queries": str(training.topics),
                                         "index": str(index.path), "retriever": "multifield", "depth": 30})
    base = model_set.path / step.detail["encoder"]
    reader_config = TrainConfig(base_model=str(base), steps=config.reader_steps, lr=config.reader_lr)
    train(pools.read_pool(pool), reader_config, model_set.path / step.detail["relpath"], device=device,
          progress=progress, overwrite=overwrite)
    model_set.record_model(step.detail["relpath"], "reader", base=step.detail["encoder"], trained_on=training.name,
                           steps=config.reader_steps)


def _training(plan: Plan):
    if plan.training is None:
        raise ConfigError(plan.models, None, "a model is missing from this model set and no training set was "
                                             "given; pass --train (or import a complete set)")
    return plan.training


RUNNERS: dict[str, Callable[..., None]] = {
    "training-index": _training_index, "encoder": _encoder, "training-dense-index": _dense_index,
    "dense-index": _dense_index, "ltr": _ltr, "reader": _reader,
}


