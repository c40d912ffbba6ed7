"""Learned within-document coreference: a mention-pair scorer plus clustering.

:class:`LearnedChainLinker` scores every pair of mentions of one document with a small model (logistic
regression or a one-hidden-layer MLP, numpy inference) over string, head, type, distance and, when the
spaCy parses of the sentences are given, frozen-encoder span features (``doc.tensor`` of
``en_core_web_sm``'s tok2vec, root lemma/POS/entity type). Pairs of different known kinds are never
linked. Pairs scoring above the threshold are clustered by union-find (``link = "union"``) or each
mention joins its best-scoring antecedent above the threshold (``link = "antecedent"``); mode and
threshold are set per kind (event / entity / unknown) and chosen on held-out train folds
(``python -m hybrid.train_coref``).

Two weight sets are shipped in one safetensors file: ``base.*`` (string/distance features only) and
``doc.*`` (plus the parse features), used when every sentence that holds a mention has a parse. The
JSON config beside the weights records the feature names, the sha256 of the weights (checked before
they are read), the training data hash, seed, thresholds, link modes and dev scores.

Gold fine types (``Mention.tag``) are not used: detected mentions have none.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from features.coref import UnionFind
from features.strings import FUNCTION_WORDS, PRONOUNS, acronyms, head_word, is_pronoun, tokens
from hybrid.core.formats.runs import sha256_file
from hybrid.core.records import ENTITY, EVENT, Mention

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

MODEL_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_WEIGHTS = MODEL_DIR / "coref_pairs.safetensors"

PRONOUN_CLASSES = {
    "he": "he him his himself".split(),
    "she": "she her hers herself".split(),
    "it": "it its itself".split(),
    "they": "they them their theirs themselves".split(),
    "person": "i me my mine myself we us our ours ourselves you your yours yourself yourselves".split(),
}
_PRON_CLASS = {w: c for c, ws in PRONOUN_CLASSES.items() for w in ws}
PRON_CLASS_NAMES = (*PRONOUN_CLASSES, "other")
SENT_BUCKETS = (0, 1, 2, 3, 5, 10)  # lower edges: 0, 1, 2, 3-4, 5-9, 10+
MENT_BUCKETS = (1, 2, 4, 8, 16, 32)  # 1, 2-3, 4-7, 8-15, 16-31, 32+

BASE_FEATURES: tuple[str, ...] = (
    "kind_event",
    "kind_entity",
    "kind_unknown",
    "exact",
    "lower_eq",
    "norm_eq",
    "head_eq",
    "stem5_eq",
    "jaccard",
    "overlap_min",
    "trigram_jaccard",
    "suffix",
    "prefix",
    "acronym",
    "heuristic",
    "pron_antecedent",
    "pron_anaphor",
    "pron_both",
    "pron_same_class",
    *(f"pron_class_{c}" for c in PRON_CLASS_NAMES),
    "cap_both",
    "cap_one",
    "digits_eq",
    "digits_conflict",
    "len_min",
    "len_max",
    "single_both",
    "nested",
    *(f"sent_dist_{b}" for b in SENT_BUCKETS),
    *(f"ment_dist_{b}" for b in MENT_BUCKETS),
    "log_sent_dist",
)
DOC_FEATURES: tuple[str, ...] = (
    *BASE_FEATURES,
    "cos_mean",
    "cos_root",
    "lemma_eq",
    "pos_eq",
    "propn_both",
    "ent_eq",
    "ent_conflict",
    "pron_person_ok",
    "pron_plural_ok",
)


_BLAS: list[Any] = []


def single_thread_blas() -> contextlib.AbstractContextManager:
    """BLAS limited to one thread: these products are small, and threaded BLAS on busy shared cores costs
    ~100x more than it saves (threadpoolctl comes with scikit-learn; without it, nothing changes)."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except Exception:  # noqa: BLE001 - optional speed-up only
            _BLAS.append(None)
    if _BLAS[0] is None:
        return contextlib.nullcontext()
    return _BLAS[0].limit(limits=1, user_api="blas")


class CorefModelError(ValueError):
    """The coreference model file is missing, tampered with or malformed."""


# --------------------------------------------------------------------------------------------------
# features


def _ids(keys: Sequence[Any]) -> np.ndarray:
    """Integer id per key (-1 for None), equal ids for equal keys."""
    table: dict[Any, int] = {}
    return np.array([-1 if k is None else table.setdefault(k, len(table)) for k in keys], dtype=np.int64)


def _eq(ids: np.ndarray) -> np.ndarray:
    return (ids[:, None] == ids[None, :]) & (ids[:, None] >= 0)


def _incidence(sets: Sequence[Iterable[Any]]) -> tuple[np.ndarray, dict[Any, int]]:
    """0/1 matrix (mentions x keys) over the keys shared by at least two mentions (the others never
    intersect)."""
    count: dict[Any, int] = {}
    for s in sets:
        for k in s:
            count[k] = count.get(k, 0) + 1
    vocab: dict[Any, int] = {}
    for k, c in count.items():
        if c > 1:
            vocab[k] = len(vocab)
    mat = np.zeros((len(sets), max(1, len(vocab))), dtype=np.float32)
    for i, s in enumerate(sets):
        for k in s:
            c = vocab.get(k)
            if c is not None:
                mat[i, c] = 1
    return mat, vocab


def _gram(mat: np.ndarray) -> np.ndarray:
    return np.rint(mat @ mat.T)


def _jaccard(sets: Sequence[set]) -> tuple[np.ndarray, np.ndarray]:
    mat, _ = _incidence(sets)
    inter = _gram(mat).astype(np.float64)
    size = np.array([len(s) for s in sets], dtype=np.float64)
    union = size[:, None] + size[None, :] - inter
    smaller = np.minimum(size[:, None], size[None, :])
    jac = inter / np.maximum(union, 1)
    over = inter / np.maximum(smaller, 1)
    return jac.astype(np.float32), over.astype(np.float32)


def _affix(words: list[list[str]], suffix: bool) -> np.ndarray:
    """[i, j]: i's lower-cased token list ends (starts) j's, or j's ends (starts) i's."""
    n = len(words)
    parts = [{tuple(w[k:]) if suffix else tuple(w[: len(w) - k]) for k in range(len(w))} if w else set() for w in words]
    mat, vocab = _incidence(parts)
    full = np.array([vocab.get(tuple(w), -1) if w else -1 for w in words], dtype=np.int64)
    a = np.zeros((n, n), dtype=bool)
    ok = full >= 0
    if ok.any():
        a[ok, :] = mat[:, full[ok]].T > 0  # a[i, j]: i's full list is an affix of j's
    return a | a.T


def _buckets(dist: np.ndarray, edges: Sequence[int]) -> list[np.ndarray]:
    out = []
    for k, lo in enumerate(edges):
        hi = edges[k + 1] if k + 1 < len(edges) else None
        out.append((dist >= lo) & (dist < hi) if hi is not None else dist >= lo)
    return out


@dataclass
class _SpanInfo:
    vec_mean: np.ndarray
    vec_root: np.ndarray
    lemma: str | None
    pos: str | None
    ent: str | None
    plural: bool


def _span_info(mention: Mention, doc: Doc) -> _SpanInfo:
    width = doc.tensor.shape[1] if getattr(doc, "tensor", None) is not None and doc.tensor.size else 96
    span = doc.char_span(mention.start, mention.end, alignment_mode="expand")
    if span is None or len(span) == 0:
        zero = np.zeros(width, dtype=np.float32)
        return _SpanInfo(zero, zero, None, None, None, False)
    root = span.root
    if doc.tensor is not None and doc.tensor.size:
        tensor = np.asarray(doc.tensor, dtype=np.float32)
        vec_mean, vec_root = tensor[span.start : span.end].mean(0), tensor[root.i]
    else:
        vec_mean = vec_root = np.zeros(width, dtype=np.float32)
    ents = [t.ent_type_ for t in span if t.ent_type_]
    return _SpanInfo(
        vec_mean,
        vec_root,
        (root.lemma_ or root.text).lower(),
        root.pos_ or None,
        ents[-1] if ents else None,
        root.tag_ in ("NNS", "NNPS"),
    )


def _cos(vecs: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vecs, axis=1, keepdims=True)
    unit = vecs / np.maximum(norm, 1e-8)
    return (unit @ unit.T).astype(np.float32)


def pair_matrices(
    mentions: Sequence[Mention], sentence_index: Sequence[int], docs: Sequence[Doc | None] | None = None
) -> tuple[dict[str, np.ndarray], bool]:
    """Every feature as an ``n x n`` matrix ([i, j] for the pair i < j); True when the parse features are in."""
    n = len(mentions)
    kinds = [m.kind for m in mentions]
    lower_words = [[w.lower() for w in tokens(m.text)] for m in mentions]
    content = [{w for w in ws if w not in FUNCTION_WORDS} for ws in lower_words]
    heads = [head_word(m.text) for m in mentions]
    pron = np.array([len(ws) == 1 and ws[0] in PRONOUNS for ws in lower_words])
    pclass = [(_PRON_CLASS.get(ws[0], "other") if p else None) for ws, p in zip(lower_words, pron, strict=True)]
    cap = np.array([m.text[:1].isupper() for m in mentions])
    is_event = np.array([k == EVENT for k in kinds])
    is_entity = np.array([k == ENTITY for k in kinds])
    known = is_event | is_entity
    digits = [frozenset(w for w in ws if any(ch.isdigit() for ch in w)) for ws in lower_words]
    ntok = np.array([len(ws) for ws in lower_words], dtype=np.float32)
    sent = np.asarray(sentence_index, dtype=np.int64)
    order = np.arange(n)

    f: dict[str, np.ndarray] = {}
    f["kind_event"] = is_event[:, None] & is_event[None, :]
    f["kind_entity"] = is_entity[:, None] & is_entity[None, :]
    f["kind_unknown"] = ~known[:, None] | ~known[None, :]
    f["exact"] = _eq(_ids([m.text for m in mentions]))
    f["lower_eq"] = _eq(_ids([" ".join(ws) or None for ws in lower_words]))
    f["norm_eq"] = _eq(_ids([tuple(sorted(c)) if c else None for c in content]))
    f["head_eq"] = _eq(_ids([h or None for h in heads]))
    f["stem5_eq"] = _eq(_ids([h[:5] if len(h) >= 4 else None for h in heads]))
    f["jaccard"], f["overlap_min"] = _jaccard(content)
    trigrams = []
    for ws in lower_words:
        s = f"#{' '.join(ws)}#" if ws else ""
        trigrams.append({s[k : k + 3] for k in range(len(s) - 2)})
    f["trigram_jaccard"], _ = _jaccard(trigrams)
    f["suffix"] = _affix(lower_words, suffix=True)
    f["prefix"] = _affix(lower_words, suffix=False)
    acr_mat, _ = _incidence([acronyms(m.text) for m in mentions])
    acr = _gram(acr_mat) > 0
    f["acronym"] = acr
    # features.coref._linked(mentions[i], mentions[j]) for i < j, vectorised
    single = ntok == 1
    entity_rule = (cap[:, None] & cap[None, :] & f["suffix"] & (ntok[:, None] > 0) & (ntok[None, :] > 0)) | (
        acr & (single[:, None] | single[None, :])
    )
    kind_ok = ~(known[:, None] & known[None, :] & (np.array(kinds)[:, None] != np.array(kinds)[None, :]))
    heur = f["norm_eq"] | np.where(is_event[:, None], f["stem5_eq"], entity_rule)
    f["heuristic"] = heur & kind_ok & ~pron[:, None] & ~pron[None, :]
    f["pron_antecedent"] = np.broadcast_to(pron[:, None], (n, n))
    f["pron_anaphor"] = np.broadcast_to(pron[None, :], (n, n))
    f["pron_both"] = pron[:, None] & pron[None, :]
    pc_ids = _ids(pclass)
    f["pron_same_class"] = _eq(pc_ids) & f["pron_both"]
    one_pron = pron[:, None] ^ pron[None, :]
    for c in PRON_CLASS_NAMES:
        has = np.array([p == c for p in pclass])
        f[f"pron_class_{c}"] = one_pron & (has[:, None] | has[None, :])
    f["cap_both"] = cap[:, None] & cap[None, :]
    f["cap_one"] = cap[:, None] ^ cap[None, :]
    dig_ids = _ids([d or None for d in digits])
    has_dig = dig_ids >= 0
    both_dig = has_dig[:, None] & has_dig[None, :]
    dig_mat, _ = _incidence([sorted(d) for d in digits])
    f["digits_eq"] = _eq(dig_ids)
    f["digits_conflict"] = both_dig & (_gram(dig_mat) == 0)
    f["len_min"] = np.minimum(ntok[:, None], ntok[None, :]).clip(0, 10) / 10
    f["len_max"] = np.maximum(ntok[:, None], ntok[None, :]).clip(0, 10) / 10
    f["single_both"] = single[:, None] & single[None, :]
    starts = np.array([m.start for m in mentions])
    ends = np.array([m.end for m in mentions])
    same_sent = sent[:, None] == sent[None, :]
    f["nested"] = same_sent & (starts[:, None] < ends[None, :]) & (starts[None, :] < ends[:, None])
    sdist = np.abs(sent[:, None] - sent[None, :])
    for b, m in zip(SENT_BUCKETS, _buckets(sdist, SENT_BUCKETS), strict=True):
        f[f"sent_dist_{b}"] = m
    mdist = np.abs(order[:, None] - order[None, :])
    for b, m in zip(MENT_BUCKETS, _buckets(mdist, MENT_BUCKETS), strict=True):
        f[f"ment_dist_{b}"] = m
    f["log_sent_dist"] = np.log1p(sdist).astype(np.float32)

    use_docs = docs is not None and n > 0 and all(0 <= s < len(docs) and docs[s] is not None for s in sent)
    if use_docs:
        assert docs is not None
        infos = [_span_info(m, docs[s]) for m, s in zip(mentions, sent, strict=True)]  # type: ignore[arg-type]
        f["cos_mean"] = _cos(np.stack([x.vec_mean for x in infos]))
        f["cos_root"] = _cos(np.stack([x.vec_root for x in infos]))
        f["lemma_eq"] = _eq(_ids([x.lemma for x in infos]))
        pos_ids = _ids([x.pos for x in infos])
        f["pos_eq"] = _eq(pos_ids)
        propn = np.array([x.pos == "PROPN" for x in infos])
        f["propn_both"] = propn[:, None] & propn[None, :]
        ent_ids = _ids([x.ent for x in infos])
        has_ent = ent_ids >= 0
        f["ent_eq"] = _eq(ent_ids)
        f["ent_conflict"] = has_ent[:, None] & has_ent[None, :] & ~f["ent_eq"]
        person = np.array([x.ent == "PERSON" for x in infos])
        he_she = np.array([c in ("he", "she") for c in pclass])
        it = np.array([c == "it" for c in pclass])
        they = np.array([c == "they" for c in pclass])
        plural = np.array([x.plural for x in infos])
        ok_person = (he_she[None, :] & person[:, None]) | (it[None, :] & ~person[:, None] & ~pron[:, None])
        f["pron_person_ok"] = ok_person | ok_person.T
        ok_plural = they[None, :] & (plural[:, None] | (is_entity[:, None] & ~person[:, None] & ~pron[:, None]))
        f["pron_plural_ok"] = ok_plural | ok_plural.T
    return f, use_docs


def pair_features(
    mentions: Sequence[Mention],
    sentence_index: Sequence[int],
    docs: Sequence[Doc | None] | None = None,
    names: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(i, j, X)`` for every pair i < j (X: one row per pair, columns ``names``) and whether parses were used."""
    mats, use_docs = pair_matrices(mentions, sentence_index, docs)
    if names is None:
        names = DOC_FEATURES if use_docs else BASE_FEATURES
    n = len(mentions)
    ii, jj = np.triu_indices(n, 1)
    x = np.empty((len(ii), len(names)), dtype=np.float32)
    flat = ii * n + jj
    for c, name in enumerate(names):
        x[:, c] = np.asarray(mats[name]).reshape(-1)[flat]
    return ii, jj, x, use_docs


# --------------------------------------------------------------------------------------------------
# model


@dataclass
class PairScorer:
    """Standardise, then logistic regression (``w1 is None``) or one ReLU hidden layer."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    w0: np.ndarray
    b0: np.ndarray
    w1: np.ndarray | None = None
    b1: np.ndarray | None = None

    def logits(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / self.scale
        h = z @ self.w0 + self.b0
        if self.w1 is not None:
            h = np.maximum(h, 0.0) @ self.w1 + self.b1
        return h.reshape(-1)

    def proba(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.clip(self.logits(x), -40, 40)))

    def tensors(self, prefix: str) -> dict[str, np.ndarray]:
        out = {"mean": self.mean, "scale": self.scale, "w0": self.w0, "b0": self.b0}
        if self.w1 is not None and self.b1 is not None:
            out |= {"w1": self.w1, "b1": self.b1}
        return {f"{prefix}.{k}": np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}

    @classmethod
    def from_tensors(cls, tensors: dict[str, np.ndarray], prefix: str, features: Sequence[str]) -> PairScorer:
        def get(k: str) -> np.ndarray | None:
            return tensors.get(f"{prefix}.{k}")

        mean, scale, w0, b0 = get("mean"), get("scale"), get("w0"), get("b0")
        if mean is None or scale is None or w0 is None or b0 is None:
            raise CorefModelError(f"weights for {prefix!r} are incomplete")
        if not (len(features) == mean.shape[0] == scale.shape[0] == w0.shape[0]):
            raise CorefModelError(f"weights for {prefix!r} do not match its {len(features)} features")
        return cls(tuple(features), mean, scale, w0, b0, get("w1"), get("b1"))


Setting = dict[str, Any]  # {"link": "union" | "antecedent", "threshold": float}
KIND_KEYS = (EVENT, ENTITY, "unknown")


def cluster(
    n: int,
    ii: np.ndarray,
    jj: np.ndarray,
    proba: np.ndarray,
    threshold: float | Sequence[float],
    link: str | Sequence[str],
    pronoun: Sequence[bool] | None = None,
) -> list[int]:
    """Cluster numbers (the smallest member index) from pair probabilities (pairs i < j).

    ``threshold``/``link`` are one value or one per mention (the later mention j of a pair decides):
    ``union`` links every earlier mention above the threshold, ``antecedent`` only the best one.
    Pronouns (``pronoun[i]``) never take part in ``union`` links (a pronoun scoring above the threshold
    with several chains would merge them all): a pronoun joins its best antecedent.
    """
    thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (n,))
    links = [link] * n if isinstance(link, str) else list(link)
    for mode in set(links):
        if mode not in ("union", "antecedent"):
            raise ValueError(f"unknown link mode {mode!r} (union | antecedent)")
    pron = np.zeros(n, dtype=bool) if pronoun is None else np.asarray(pronoun, dtype=bool)
    antecedent = np.array([mode == "antecedent" for mode in links], dtype=bool) | pron
    uf = UnionFind(n)
    if len(ii):
        sel = (proba > thr[jj]) & ~antecedent[jj] & ~pron[ii]
        for a, b in zip(ii[sel], jj[sel], strict=True):
            uf.union(int(a), int(b))
        if antecedent.any():
            mat = np.full((n, n), -1.0)
            mat[ii, jj] = proba
            arg, best = mat.argmax(0), mat.max(0)  # argmax: the earliest of equally good antecedents
            for b in np.nonzero(antecedent & (best > thr))[0]:
                uf.union(int(arg[b]), int(b))
    return [uf.find(i) for i in range(n)]


def per_mention(mentions: Sequence[Mention], settings: dict[str, Setting]) -> tuple[list[float], list[str]]:
    """Threshold and link mode of every mention from per-kind settings (``event``/``entity``/``unknown``)."""
    out = [settings.get(m.kind or "unknown", settings["unknown"]) for m in mentions]
    return [float(x["threshold"]) for x in out], [str(x["link"]) for x in out]




def config_path(weights: Path) -> Path:
    return weights.with_suffix(".json")


class LearnedChainLinker:
    """Within-document chains from a learned mention-pair scorer (see the module docstring)."""

    def __init__(self, base: PairScorer, doc: PairScorer | None, config: dict[str, Any]):
        self.base, self.doc, self.config = base, doc, config
        default = {"link": "union", "threshold": 0.5}
        settings = config.get("settings") or {}
        self.settings: dict[str, dict[str, Setting]] = {
            name: {k: dict(settings.get(name, {}).get(k, default)) for k in KIND_KEYS} for name in ("base", "doc")
        }

    @classmethod
    def load(cls, path: str | Path | None = None) -> LearnedChainLinker:
        """Load ``path`` (the ``.safetensors`` file or its folder; None: the shipped model)."""
        weights = Path(path) if path is not None else DEFAULT_WEIGHTS
        if weights.is_dir():
            weights = weights / DEFAULT_WEIGHTS.name
        cfg_file = config_path(weights)
        if not weights.is_file():
            raise CorefModelError(f"coreference model weights not found: {weights}")
        if not cfg_file.is_file():
            raise CorefModelError(f"coreference model config not found: {cfg_file} (beside {weights.name})")
        try:
            config = json.loads(cfg_file.read_text())
        except json.JSONDecodeError as exc:
            raise CorefModelError(f"coreference model config {cfg_file} is not valid JSON: {exc}") from exc
        digest = sha256_file(weights)
        if digest != config.get("weights_sha256"):
            raise CorefModelError(
                f"coreference model weights {weights} do not match the sha256 recorded in {cfg_file.name} "
                f"({digest[:12]} != {str(config.get('weights_sha256'))[:12]}): refusing to load a modified file"
            )
        from safetensors.numpy import load_file

        try:
            tensors = load_file(str(weights))
        except Exception as exc:  # noqa: BLE001 - any parse failure is a bad file
            raise CorefModelError(f"coreference model weights {weights} cannot be read: {exc}") from exc
        base = PairScorer.from_tensors(tensors, "base", config["base_features"])
        doc = PairScorer.from_tensors(tensors, "doc", config["doc_features"]) if "doc.w0" in tensors else None
        return cls(base, doc, config)

    def save(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write the weights (safetensors) and the JSON config (with the weights' sha256) beside them."""
        from safetensors.numpy import save_file

        weights = Path(path)
        if weights.suffix != ".safetensors":
            weights = weights / DEFAULT_WEIGHTS.name
        weights.parent.mkdir(parents=True, exist_ok=True)
        tensors = self.base.tensors("base")
        if self.doc is not None:
            tensors |= self.doc.tensors("doc")
        save_file(tensors, str(weights), metadata={"format": "hybrid-coref-pairs-1"})
        config = dict(self.config) | (extra or {})
        config |= {
            "base_features": list(self.base.features),
            "doc_features": list(self.doc.features) if self.doc is not None else [],
            "settings": self.settings,
            "weights_file": weights.name,
            "weights_sha256": sha256_file(weights),
        }
        self.config = config
        config_path(weights).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        return weights

    def scores(
        self, mentions: Sequence[Mention], sentence_index: Sequence[int], docs: Sequence[Doc | None] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """``(i, j, p)`` for every pair i < j (p = 0 across known different kinds) and whether parses were used."""
        if len(mentions) != len(sentence_index):
            raise ValueError("mentions and sentence_index differ in length")
        use = docs if self.doc is not None else None
        ii, jj, x, used = pair_features(mentions, sentence_index, use, None)
        scorer = self.doc if used and self.doc is not None else self.base
        if x.shape[1] != len(scorer.features):
            _, _, x, _ = pair_features(mentions, sentence_index, use, scorer.features)
        p = scorer.proba(x) if len(ii) else np.zeros(0)
        kind = np.array([{EVENT: 1, ENTITY: 2}.get(m.kind or "", 0) for m in mentions])
        cross = (kind[ii] != kind[jj]) & (kind[ii] > 0) & (kind[jj] > 0)
        if len(p):
            p = np.where(cross, 0.0, p)
        return ii, jj, p, used

    def chains(self, mentions: list[Mention], sentence_index: list[int], docs: list[Doc] | None = None) -> list[int]:
        """A cluster number per mention of ONE document (document order); equal numbers = same chain.

        ``sentence_index[i]`` is the index of the sentence (passage) mention i is in; ``docs[s]`` the
        spaCy parse of sentence s, optional (the parse features are used only when every sentence that
        holds a mention has one).
        """
        if not mentions:
            return []
        with single_thread_blas():
            ii, jj, p, used = self.scores(mentions, sentence_index, docs)
        thresholds, links = per_mention(mentions, self.settings["doc" if used else "base"])
        return cluster(len(mentions), ii, jj, p, thresholds, links, [is_pronoun(m.text) for m in mentions])
