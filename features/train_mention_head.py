"""Training of the learned mention detector (:mod:`features.mention_head`): featurising curated passages,
the PyTorch model and its training loop, and the choice of thresholds on held-out passages. The command that
runs them and writes the head is :mod:`hybrid.cli.train_mention_head` (``python -m hybrid.train_mention_head``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from features.detect import rule_mentions
from features.mention_head import (
    COARSE_TYPES,
    FEATURES,
    LearnedMentionDetector,
    _softmax,
    bio_targets,
    decode,
    detection_scores,
    enumerate_spans,
    forward,
    output_layout,
    token_features,
    union,
)
from hybrid.core.records import KINDS, Mention

log = logging.getLogger("features.train_mention_head")
WORD_FEATURES = ("lower", "lemma")


@dataclass
class Example:
    passage_id: str
    topic: int
    ids: dict[str, np.ndarray]
    tensor: np.ndarray
    targets: dict[str, np.ndarray]
    gold: list[Mention]
    doc: object = None


def read_curated(corpus: str | Path, splits: set[str]) -> list[dict]:
    """Curated passages (non-empty gold mentions) of the given splits, in file order."""
    out = []
    with open(corpus) as fh:
        for line in fh:
            p = json.loads(line)
            if p.get("split") in splits and p.get("mentions"):
                out.append(p)
    return out


def _mentions(p: dict) -> list[Mention]:
    return [
        Mention(m["start"], m["end"], m["text"], kind=m.get("kind"), tag=m.get("tag"), m_id=m.get("m_id"))
        for m in p["mentions"]
    ]


def featurize(nlp, passages: list[dict], keep_docs: bool = False) -> list[Example]:
    out = []
    docs = nlp.pipe([p["text"] for p in passages], batch_size=64)
    for p, doc in zip(passages, docs, strict=True):
        gold = _mentions(p)
        ids, tensor = token_features(doc)
        out.append(
            Example(
                p["id"], int(p.get("topic", 0)), ids, tensor, bio_targets(doc, gold), gold, doc if keep_docs else None
            )
        )
    return out


def data_hash(passages: list[dict]) -> str:
    h = hashlib.sha256()
    for p in passages:
        h.update(json.dumps([p["id"], p["text"], p["mentions"]], sort_keys=True).encode())
    return h.hexdigest()


# -- the PyTorch twin of features.mention_head.forward ---------------------------------------------
def build_model(hidden: int, dropout: float, kernels: tuple[int, int] = (3, 3)):
    import torch
    from torch import nn

    n_out = sum(b - a for a, b in output_layout({"coarse_types": COARSE_TYPES}).values())
    d_in = sum(dim for _, dim in FEATURES.values()) + 96

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.ModuleDict({name: nn.Embedding(b, d) for name, (b, d) in FEATURES.items()})
            self.tensor_scale = nn.Parameter(torch.ones(96))
            self.conv1 = nn.Conv1d(d_in, hidden, kernels[0], padding=kernels[0] // 2)
            self.conv2 = nn.Conv1d(hidden, hidden, kernels[1], padding=kernels[1] // 2)
            self.out = nn.Linear(hidden, n_out)
            self.drop = nn.Dropout(dropout)
            for e in self.emb.values():
                nn.init.normal_(e.weight, std=0.1)

        def forward(self, ids: dict, tensor, mask):  # ids: [B, T] each; tensor [B, T, 96]; mask [B, T]
            parts = [self.emb[name](ids[name]) for name in FEATURES]
            parts.append(tensor * self.tensor_scale)
            x = torch.cat(parts, dim=-1) * mask[..., None]
            x = self.drop(x)
            h = torch.relu(self.conv1(x.transpose(1, 2))) * mask[:, None, :]
            h2 = torch.relu(self.conv2(self.drop(h))) * mask[:, None, :] + h
            return self.out(self.drop(h2.transpose(1, 2)))

    return Head()


def _batch(examples: list[Example]):
    import torch

    t = max(len(e.tensor) for e in examples)
    b = len(examples)
    ids = {name: torch.zeros(b, t, dtype=torch.long) for name in FEATURES}
    tensor = torch.zeros(b, t, 96)
    mask = torch.zeros(b, t)
    targets = {name: torch.full((b, t), -100, dtype=torch.long) for name in examples[0].targets}
    for i, e in enumerate(examples):
        n = len(e.tensor)
        for name in FEATURES:
            ids[name][i, :n] = torch.from_numpy(e.ids[name])
        tensor[i, :n] = torch.from_numpy(e.tensor)
        mask[i, :n] = 1
        for name, arr in e.targets.items():
            tgt = arr.copy()
            tgt[tgt < 0] = -100
            targets[name][i, :n] = torch.from_numpy(tgt)
    return ids, tensor, mask, targets


def train(
    examples: list[Example],
    epochs: int,
    seed: int = 13,
    hidden: int = 96,
    dropout: float = 0.3,
    kernels: tuple[int, int] = (3, 3),
    word_dropout: float = 0.25,
    lr: float = 2e-3,
    batch_size: int = 32,
    type_weight: float = 0.5,
    eval_fn=None,
):
    """Fit a head; returns (model, per-epoch losses, per-epoch eval_fn results)."""
    import torch

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    model = build_model(hidden, dropout, tuple(kernels))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    layout = output_layout({"coarse_types": COARSE_TYPES})
    ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
    rng = np.random.default_rng(seed)
    # length-bucketed batches (less padding), shuffled deterministically per epoch
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].tensor))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    losses, evals = [], []
    for epoch in range(epochs):
        model.train()
        total, n = 0.0, 0
        for bi in rng.permutation(len(batches)):
            ids, tensor, mask, targets = _batch([examples[i] for i in batches[bi]])
            if word_dropout:  # hide the word identity now and then: rely on syntax and context too
                for name in WORD_FEATURES:
                    drop = torch.from_numpy(rng.random(tuple(ids[name].shape)) < word_dropout)
                    ids[name] = ids[name].masked_fill(drop, 0)
            logits = model(ids, tensor, mask)
            loss = 0.0
            for name, (a, b) in layout.items():
                w = type_weight if name.startswith("type_") else 1.0
                tgt = targets[name]
                if (tgt != -100).any():
                    loss = loss + w * ce(logits[..., a:b].reshape(-1, b - a), tgt.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batches[bi])
            n += len(batches[bi])
        losses.append(total / max(n, 1))
        if eval_fn is not None:
            evals.append(eval_fn(model))
        log.info("epoch %d loss %.4f%s", epoch + 1, losses[-1], f" {evals[-1]}" if evals else "")
    return model, losses, evals


def numpy_weights(model) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().astype(np.float32).copy() for k, v in model.state_dict().items()}


def detector_from(model, config: dict) -> LearnedMentionDetector:
    return LearnedMentionDetector(numpy_weights(model), config)


def _probs_all(detector: LearnedMentionDetector, examples: list[Example]):
    out = []
    for e in examples:
        logits = forward(detector.weights, e.ids, e.tensor)
        out.append({name: _softmax(logits[:, a:b]) for name, (a, b) in detector.layout.items()})
    return out


def predict(detector: LearnedMentionDetector, examples: list[Example], thresholds: dict[str, float]) -> list:
    """Mentions per example (needs the docs kept) with the given thresholds."""
    detector.thresholds = dict(thresholds)
    return [detector(e.doc) for e in examples]


def choose_thresholds(detector, examples: list[Example], grid=None, min_overlap: float = 0.92) -> dict:
    """Per kind: the threshold with the best exact F1 among those keeping overlap recall >= min_overlap
    (else the one with the best overlap recall)."""
    grid = grid or [round(x, 2) for x in np.arange(0.1, 0.75, 0.05)]
    table = {}
    for thr in grid:
        found = predict(detector, examples, {k: thr for k in KINDS})
        table[thr] = detection_scores([e.gold for e in examples], found)
    chosen = {}
    for kind in KINDS:

        def f1(s):
            p, r = s["exact_precision"], s["exact_recall"]
            return 2 * p * r / (p + r) if p + r else 0.0

        ok = [t for t in grid if table[t][kind]["overlap_recall"] >= min_overlap]
        if ok:
            chosen[kind] = max(ok, key=lambda t: (f1(table[t][kind]), t))
        else:
            chosen[kind] = max(grid, key=lambda t: (table[t][kind]["overlap_recall"], t))
    return chosen


def choose_recall_mode(
    detector, examples: list[Example], min_overlap: float = 0.92, min_exact: float = 0.75, margin: float = 0.02
) -> tuple[dict, dict, dict]:
    """Per kind, the decode threshold t and span threshold tau (recall mode) with the best exact precision
    among those with overlap recall >= ``min_overlap + margin`` and exact recall >= ``min_exact + margin``
    on ``examples`` (else the best exact recall). Returns (thresholds, span_thresholds, table)."""
    probs = [detector.probabilities(e.doc) for e in examples]
    gold = [e.gold for e in examples]
    thresholds, span_thresholds, table = {}, {}, {}
    for kind in KINDS:
        rows = []
        for t in (0.1, 0.2, 0.3, 0.5):
            for tau in (0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 1.01):
                found = []
                for e, p in zip(examples, probs, strict=True):
                    d, bio = e.doc, p[f"bio_{kind}"]
                    spans = set(decode(bio, t)) | set(enumerate_spans(bio, tau))
                    found.append(
                        [Mention(d[a].idx, d[b - 1].idx + len(d[b - 1].text), "", kind=kind) for a, b in spans]
                    )
                r = detection_scores(gold, found)[kind]
                rows.append((t, tau, r))
                table[f"{kind} t={t} tau={tau}"] = {
                    m: round(r[m], 4) for m in ("overlap_recall", "exact_recall", "exact_precision")
                }
        ok = [
            x
            for x in rows
            if x[2]["overlap_recall"] >= min_overlap + margin and x[2]["exact_recall"] >= min_exact + margin
        ]
        best = max(ok, key=lambda x: x[2]["exact_precision"]) if ok else max(rows, key=lambda x: x[2]["exact_recall"])
        thresholds[kind], span_thresholds[kind] = best[0], best[1]
    log.info("recall mode: thresholds %s span thresholds %s", thresholds, span_thresholds)
    return thresholds, span_thresholds, table


def rule_candidates():
    """The spaCy rules of :mod:`features.detect` (``rule_mentions``)."""
    return rule_mentions


def choose_candidate_thresholds(detector, examples: list[Example], rules, beta: float = 2.0) -> dict:
    """Per kind: the span-probability threshold for rule candidates (kept beside the decoded spans) with
    the best exact F-beta (recall-weighted) on ``examples``."""
    grid = [0.0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.01]
    decoded, cands, scores = [], [], []
    for e in examples:
        decoded.append(detector(e.doc))
        c = [m for m in rules(e.doc) if m.kind in KINDS]
        cands.append(c)
        scores.append(detector.span_scores(e.doc, c))
    gold = [e.gold for e in examples]
    chosen, table = {}, {}
    for kind in KINDS:
        best = None
        for tau in grid:
            found = [
                union(d, [m for m, s in zip(c, sc, strict=True) if m.kind == kind and s >= tau])
                for d, c, sc in zip(decoded, cands, scores, strict=True)
            ]
            r = detection_scores(gold, found)[kind]
            p, rec = r["exact_precision"], r["exact_recall"]
            f = (1 + beta**2) * p * rec / (beta**2 * p + rec) if p + rec else 0.0
            table[f"{kind}@{tau}"] = {"exact_recall": round(rec, 4), "exact_precision": round(p, 4), "f": round(f, 4)}
            if best is None or f > best[0]:
                best = (f, tau)
        chosen[kind] = best[1]
    log.info("candidate thresholds %s from %s", chosen, table)
    return chosen
