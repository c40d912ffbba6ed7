"""Run a plan's missing steps in order (:mod:`hybrid.recipes.plan`), each the library call behind its command.

Every step writes its output atomically (indexes and dense indexes build in a temporary sibling, models are
saved with :mod:`hybrid.core.atomic`), so an interrupted prepare leaves finished steps finished and the next
one skips them; the encoder's training also resumes from its checkpoint, and the mined pairs and the reader's
pool are cached in the model set's ``.work/`` folder. The settings are those of the documented commands
(:class:`~hybrid.recipes.plan.TrainingConfig`), so a prepared model is the one the command chain would make.
Torch places the work on the GPU when there is one.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.recipes.plan import Plan, Step, TrainingConfig
from hybrid.recipes.registry import Context, load_recipe
from hybrid.recipes.training import train_recipe
from hybrid.store.models import ModelSet, bound_dense_dir, encoder_fingerprint, set_key
from indexes.sparse_index import SparseIndex

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


def run_plan(plan: Plan, config: TrainingConfig | None = None, threads: int = 1, device: str | None = None,
             progress: bool = True, say: Callable[[str], None] = print) -> list[Step]:
    """Make every missing step of ``plan``; returns the steps made. A step whose output appeared meanwhile (an
    earlier, interrupted run finished it) is skipped."""
    config = config or TrainingConfig()
    if not plan.missing:
        return []
    model_set = open_model_set(plan, config)
    made = []
    for number, step in enumerate(plan.steps, start=1):
        if step.done:
            continue
        say(f"[{number}/{len(plan.steps)}] {step.makes}")
        started = time.time()
        RUNNERS[step.kind](step, plan, model_set, config, threads, device, progress)
        say(f"[{number}/{len(plan.steps)}] done in {time.time() - started:.0f}s")
        made.append(step)
    return made


def _training_index(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
                    device: str | None, progress: bool) -> None:
    from features.annotate import AnnotationConfig  # deferred: importing it loads spaCy
    from indexes.lucene import IndexConfig, build_index  # deferred: importing it loads spaCy and the JVM

    annotation = AnnotationConfig(n_process=min(2, os.cpu_count() or 1))
    build_index(IndexConfig(corpus=str(plan.training.corpus), annotation=annotation, threads=threads),
                step.detail["path"], progress=progress)


def _encoder(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
             device: str | None, progress: bool) -> None:
    from features.encoder import EncoderConfig  # deferred: importing it loads torch
    from hybrid.dense.data import TrainingSet, build_training_set  # deferred: importing it loads numpy
    from hybrid.dense.train import TrainConfig, train  # deferred: importing it loads torch

    training = _training(plan)
    pairs = model_set.path / WORK / "dense-pairs.jsonl"
    if pairs.is_file():
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
          extra={"prepared_by": "python -m hybrid.prepare", "training": training.describe()})
    model_set.record_model(step.detail["relpath"], "encoder", fingerprint=encoder_fingerprint(output),
                           trained_on=training.name, steps=config.dense_steps)


def _dense_index(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
                 device: str | None, progress: bool) -> None:
    from features.encoder import BiEncoder  # deferred: importing it loads torch
    from indexes.faiss_index import build_dense_index  # deferred: importing it loads faiss

    encoder_path = model_set.path / step.detail["encoder"]
    fingerprint = model_set.encoder_fingerprint(step.detail["encoder"])
    if fingerprint is None:
        raise ConfigError(encoder_path, None, "the encoder this dense index is made by does not exist")
    index = SparseIndex(step.detail["index"])
    output = bound_dense_dir(index.path, fingerprint)
    encoder = BiEncoder.load(encoder_path, device=device)
    build_dense_index(index, encoder, output, progress=progress)
    if model_set.dense_encoder(step.detail["relpath"]) != step.detail["encoder"]:
        model_set.record_dense(step.detail["relpath"], step.detail["encoder"])


def _ltr(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
         device: str | None, progress: bool) -> None:
    training = _training(plan)
    index = SparseIndex(step.detail["index"])
    topics = read_topics(training.topics, resolve=index.passage_text)
    context = Context(index=index, hits=100, threads=threads, artifacts=model_set.path, device=device,
                      progress=progress)
    recipe = load_recipe(step.detail["recipe"])
    for path in train_recipe(recipe, context, topics, read_qrels(training.qrels), seed=config.ltr_seed,
                             max_queries=config.ltr_queries):
        model_set.record_model(str(path.relative_to(model_set.path)), "ltr", recipe=recipe.name,
                               trained_on=training.name, seed=config.ltr_seed)


def _reader(step: Step, plan: Plan, model_set: ModelSet, config: TrainingConfig, threads: int,
            device: str | None, progress: bool) -> None:
    from hybrid.retrieval.sparse import MultiFieldBM25  # deferred: importing it loads the JVM bridge
    from ltr.reader import data as pools  # deferred: importing it loads numpy
    from ltr.reader.train import TrainConfig, train  # deferred: importing it loads numpy, torch

    training = _training(plan)
    pool = model_set.path / WORK / "reader-pool.jsonl"
    if not pool.is_file():
        index = SparseIndex(step.detail["index"])
        corpus = pools.read_labelled_corpus(training.corpus, (training.split,) if training.split else None)
        queries = pools.build_training_queries(training.topics, corpus, MultiFieldBM25(index), progress=progress,
                                               mention_records=index.mention_records)
        pools.write_pool(queries, pool, {"corpus": str(training.corpus), "queries": str(training.topics),
                                         "index": str(index.path), "retriever": "multifield", "depth": 30})
    base = model_set.path / step.detail["encoder"]
    reader_config = TrainConfig(base_model=str(base), steps=config.reader_steps, lr=config.reader_lr)
    train(pools.read_pool(pool), reader_config, model_set.path / step.detail["relpath"], device=device,
          progress=progress)
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


