"""Contrastive fine-tuning of the bi-encoder (DPR loss with in-batch and BM25 hard negatives).

One step takes ``batch_size`` training queries; each brings one sampled positive mention and one
sampled hard negative mention. Every passage of the batch is encoded once and EVERY candidate mention
in it is pooled (exactly as at indexing time), so the candidate set of a query is: its positive, all
other mentions of all passages in the batch (in-batch and hard negatives). The loss is the DPR
negative log-likelihood of the positive under ``softmax(scale * q . c)`` (vectors are unit length, so
``scale`` is an inverse temperature). Candidates of the query's own cluster other than the sampled
positive are masked (they are not negatives), as are candidates of the other kind (retrieval filters
them out too, so they would only teach the easy event/entity distinction).

Optimiser: AdamW, linear warm-up then linear decay. The word embeddings are frozen by default
(``freeze_embeddings``): the marker tokens keep their ``[``/``]`` initialisation, and a step costs ~30%
less on a CPU. Deterministic given the seed: the data order,
the positive/negative choice and the dropout masks of step ``s`` depend only on (seed, s), so a
resumed run makes the same steps as an uninterrupted one. Checkpoints (weights as safetensors,
optimiser moments as safetensors, counters as JSON) go to ``<output>-checkpoint/``, atomically.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from features.encoder import BiEncoder, EncoderConfig, Unit
from hybrid.core.atomic import atomic_directory
from hybrid.core.outputs import Kind
from hybrid.core.progress import progress as progress_bar
from hybrid.dense.data import TrainingSet, iter_batches

log = logging.getLogger(__name__)
CHECKPOINT_STATE = "trainer-state.json"
OPTIMIZER_TENSORS = "optimizer.safetensors"


@dataclass(frozen=True)
class TrainConfig:
    base: str = "minilm"  # checkpoint to start from (path, cached name, or "minilm")
    steps: int = 1000
    batch_size: int = 8
    lr: float = 2e-5
    weight_decay: float = 0.01
    warmup: float = 0.1  # fraction of steps
    scale: float = 20.0  # inverse temperature of the softmax over cosine scores
    grad_clip: float = 1.0
    seed: int = 13
    max_minutes: float | None = None  # stop (and save) when the wall-clock budget is spent
    checkpoint_every: int = 200
    log_every: int = 10
    same_kind: bool = True  # mask candidates of the other kind
    freeze_embeddings: bool = True  # on CPU the dense 30k-row embedding gradient + AdamW costs ~30% of a step


def _lr_lambda(total: int, warmup_steps: int):
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        return max(0.0, (total - step) / max(1, total - warmup_steps))

    return factor


def _batch(data: TrainingSet, indices: list[int], rng: random.Random, same_kind: bool):
    """Units to encode and, per query, its target row and the rows to mask."""
    queries = [data.queries[i] for i in indices]
    picks = []
    for q in queries:
        pos = rng.choice(q.positives)
        neg = rng.choice(q.negatives) if q.negatives else None
        picks.append((pos, neg))
    order: list[str] = []
    for pos, neg in picks:
        for pid, _ in filter(None, (pos, neg)):
            if pid not in order:
                order.append(pid)
    passages = [data.passages[pid] for pid in order]
    offsets, row = {}, 0
    for p in passages:
        offsets[p.id] = row
        row += len(p.spans)
    clusters = [c for p in passages for c in p.clusters]
    kinds = [k for p in passages for k in p.kinds]
    targets, masks = [], []
    for q, (pos, _) in zip(queries, picks, strict=True):
        target = offsets[pos[0]] + pos[1]
        # a query or candidate without a kind is of any kind (kind is optional in topics): never masked for it
        mask = [bool(r != target and (clusters[r] == q.cluster
                                      or (same_kind and q.kind and kinds[r] and kinds[r] != q.kind)))
                for r in range(row)]
        targets.append(target)
        masks.append(mask)
    query_units = [Unit(q.text, [(q.start, q.end)]) for q in queries]
    passage_units = [Unit(p.text, list(p.spans)) for p in passages]
    return query_units, passage_units, targets, masks


def contrastive_loss(encoder: BiEncoder, query_units: list[Unit], passage_units: list[Unit], targets: list[int],
                     masks: list[list[bool]], scale: float) -> torch.Tensor:
    q = encoder.forward_units(query_units, "query")
    c = encoder.forward_units(passage_units, "passage")
    scores = scale * q @ c.T
    mask = torch.tensor(masks, dtype=torch.bool, device=scores.device)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(scores, torch.tensor(targets, device=scores.device))


def _save_optimizer(optimizer: torch.optim.Optimizer, folder: Path) -> None:
    from safetensors.torch import save_file

    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, entry in state["state"].items():
        for key, value in entry.items():
            if torch.is_tensor(value):
                tensors[f"{pid}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{pid}.{key}"] = value
    save_file(tensors, str(folder / OPTIMIZER_TENSORS))
    (folder / "optimizer.json").write_text(json.dumps({"param_groups": state["param_groups"], "scalars": scalars}))


def _load_optimizer(optimizer: torch.optim.Optimizer, folder: Path) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / OPTIMIZER_TENSORS))
    meta = json.loads((folder / "optimizer.json").read_text())
    state: dict[int, dict[str, Any]] = {}
    for name, value in list(tensors.items()) + list(meta["scalars"].items()):
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def _comparable(config: dict) -> dict:
    """The settings a resumed run must share with the interrupted one (the time budget may change)."""
    return {k: v for k, v in config.items() if k not in ("max_minutes", "checkpoint_every", "log_every")}


def checkpoint_dir(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(f"{output.name}-checkpoint")


#: The training checkpoint beside the output, for the output policy: replaced by the run that resumes it.
CHECKPOINT = Kind("bi-encoder training checkpoint", manifests=(CHECKPOINT_STATE,))


def resumes(output: str | Path, resume: bool = True) -> bool:
    """Whether training into ``output`` continues an interrupted run (its checkpoint is there)."""
    return resume and (checkpoint_dir(output) / CHECKPOINT_STATE).is_file()


def train(data: TrainingSet, output: str | Path, config: TrainConfig, encoder_config: EncoderConfig | None = None,
          resume: bool = True, progress: bool = True, keep_checkpoint: bool = False,
          extra: dict | None = None, on_step: Callable[[int, float], None] | None = None,
          overwrite: bool = False) -> dict:
    """Fine-tune and save the encoder to ``output``; returns the training summary (also saved).

    ``on_step(step, loss)`` is called after every optimiser step (1-based step). A run stopped by
    ``max_minutes`` keeps its checkpoint, so starting it again with a larger budget continues it (and replaces
    the encoder it saved). An existing ``output`` is otherwise replaced only with ``overwrite``.
    """
    if not data.queries:
        raise ValueError("no training queries")
    output = Path(output)
    ckpt = checkpoint_dir(output)
    overwrite = overwrite or resumes(output, resume)
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} already exists (pass --overwrite to replace it)")
    start_step, history, spent = 0, [], 0.0
    if resume and (ckpt / CHECKPOINT_STATE).is_file():
        state = json.loads((ckpt / CHECKPOINT_STATE).read_text())
        if _comparable(state["config"]) != _comparable(json.loads(json.dumps(asdict(config)))):
            raise ValueError(f"{ckpt} was written with a different training config; remove it or use the same one")
        encoder = BiEncoder.load(ckpt, device="cpu" if not torch.cuda.is_available() else None)
        start_step, history, spent = state["step"], state["history"], state["seconds"]
        log.info("resuming from %s at step %d", ckpt, start_step)
    else:
        encoder = BiEncoder.load(config.base, encoder_config)
    base_source = encoder.source if start_step == 0 else state.get("base_source", config.base)
    torch.manual_seed(config.seed)
    if config.freeze_embeddings:
        for model in {id(m): m for m in (encoder.query_model, encoder.passage_model)}.values():
            model.get_input_embeddings().requires_grad_(False)
    params = [p for p in encoder.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim > 1]
    no_decay = [p for p in params if p.ndim <= 1]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    warmup_steps = math.ceil(config.warmup * config.steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(config.steps, warmup_steps))
    if start_step:
        _load_optimizer(optimizer, ckpt)
        with warnings.catch_warnings():  # replaying the schedule before any optimiser step is intended here
            warnings.simplefilter("ignore", UserWarning)
            for _ in range(start_step):
                scheduler.step()
    encoder.train()
    started = time.time() - spent
    bar = progress_bar(desc="train dense", unit="step", total=config.steps, initial=start_step, enabled=progress)
    window: list[float] = []
    step = start_step
    stopped_early = False
    for step, indices in iter_batches(len(data.queries), config.batch_size, config.seed, start_step):
        if step >= config.steps:
            break
        if config.max_minutes is not None and time.time() - started > 60 * config.max_minutes:
            stopped_early = True
            break
        rng = random.Random(config.seed * 1_000_003 + step)
        torch.manual_seed(config.seed * 1_000_003 + step)
        batch = _batch(data, indices, rng, config.same_kind)
        loss = contrastive_loss(encoder, *batch, scale=config.scale)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        scheduler.step()
        window.append(float(loss.detach()))
        bar.update(1)
        if on_step is not None:
            on_step(step + 1, window[-1])
        if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
            mean = sum(window) / len(window)
            history.append({"step": step + 1, "loss": round(mean, 5), "lr": scheduler.get_last_lr()[0],
                            "seconds": round(time.time() - started, 1)})
            bar.set_postfix(loss=f"{mean:.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
            window = []
        if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 and step + 1 < config.steps:
            _checkpoint(encoder, optimizer, ckpt, config, step + 1, history, time.time() - started, base_source)
    done = step  # the loop always leaves through a break: ``step`` is the first step not taken
    bar.close()
    encoder.eval()
    summary = {
        "training": {"config": asdict(config), "steps_done": done, "stopped_early": stopped_early,
                     "seconds": round(time.time() - started, 1), "history": history, "base": base_source,
                     "data": data.info, **(extra or {})},
    }
    encoder.save(output, extra=summary, overwrite=overwrite)
    if stopped_early:
        _checkpoint(encoder, optimizer, ckpt, config, done, history, time.time() - started, base_source)
    elif not keep_checkpoint:
        shutil.rmtree(ckpt, ignore_errors=True)
    return summary["training"]


def _checkpoint(encoder: BiEncoder, optimizer, folder: Path, config: TrainConfig, step: int, history: list,
                seconds: float, base_source: str) -> None:
    with atomic_directory(folder, overwrite=True) as tmp:
        encoder.write_to(tmp)
        _save_optimizer(optimizer, tmp)
        state = {"step": step, "history": history, "seconds": seconds, "config": asdict(config),
                 "base_source": base_source}
        (tmp / CHECKPOINT_STATE).write_text(json.dumps(state, indent=2))
