"""Host-to-device copies that do not wait for the device (torch is imported at the call, not with the module).

A copy from pageable host memory (``tensor.to("cuda")``, ``torch.tensor(..., device="cuda")``) waits until every
kernel already queued on the stream has run, i.e. for the batch the GPU is still running, so the host cannot prepare
the next batch meanwhile. Staged in pinned memory and copied with ``non_blocking`` it does not wait; torch's caching
host allocator keeps the pinned source alive until the copy is done. Used by the encoder's and the reader's
inference loops (features/encoder.py, ltr/reader/infer.py), which read their results back in groups, not per batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def to_device(values: Any, device: str | torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``values`` (a CPU tensor, an array or a list) as a tensor of ``dtype`` (converted on the host) on ``device``;
    on a CUDA device through pinned memory without waiting, elsewhere a plain copy (none on the CPU)."""
    import torch

    tensor = torch.as_tensor(values)
    if dtype is not None:
        tensor = tensor.to(dtype)
    if torch.device(device).type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
