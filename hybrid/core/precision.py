"""Inference precisions of the neural parts (encoders, the reader), named here so that commands can offer them
without importing torch.

``fp32`` is exact and the default everywhere. ``bf16`` / ``fp16`` run the model under torch autocast: on a GPU
with tensor cores, and on a CPU with native bf16 instructions (AVX512-BF16 or AMX), bf16 is about twice as fast;
MiniLM's vectors move by at most 2e-3 in bf16 (the mention and passage vectors of 2,000 ECB+ dev passages; the
tests bound a tiny random model more loosely) and retrieval quality by what BENCHMARKS.md measures. On a CPU
without those instructions half precision is slower than fp32. Training always runs in fp32.
"""

from __future__ import annotations

from typing import Any

from hybrid.core.errors import ConfigError

PRECISIONS = ("fp32", "bf16", "fp16")


def check_precision(precision: str) -> str:
    """``precision`` when it is one of :data:`PRECISIONS`; a :class:`ConfigError` otherwise."""
    if precision not in PRECISIONS:
        raise ConfigError(None, None, f"unknown precision {precision!r}; choose from {PRECISIONS}")
    return precision


def precision_record(precision: str) -> dict[str, str]:
    """What a record (an artifact's, a run's meta) says of a model's precision: nothing for fp32, so that an fp32
    run's record stays as it always was; ``{"precision": ...}`` otherwise."""
    return {} if check_precision(precision) == "fp32" else {"precision": precision}


def autocast(device: Any, precision: str):
    """The context a model's inference runs in at ``precision`` on ``device`` (a torch device or its name):
    nothing for fp32, torch autocast to bfloat16 / float16 otherwise. torch is imported here, not with the module."""
    import contextlib

    if check_precision(precision) == "fp32":
        return contextlib.nullcontext()
    import torch

    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)
