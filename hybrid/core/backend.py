"""Inference backends of the bi-encoder and the reader, named here so that commands can offer them without importing
torch.

``torch`` is the default everywhere: PyTorch on any device, at any precision (:mod:`hybrid.core.precision`).
``onnx`` exports the encoder's transformer to ONNX in memory when it is first used and runs it in ONNX Runtime on the
CPU, in fp32 (``features/onnx_model.py``): on the 2-core CPU machine the MiniLM forward is about twice as fast (a
dense index encodes ~1.7x faster), and vectors move by float rounding of another kernel library (at most 2.9e-7 over a
trained MiniLM's ECB+ dev vectors; ECB+ dev means equal at four decimals: BENCHMARKS.md). The reader's encoder runs
there too (its span heads and pair scorer stay in torch), its scores moving by as little (5.2e-7). It needs the
``onnx`` extra (``pip install 'hybrid[onnx]'``: the exporter needs the ``onnx`` package; ONNX Runtime comes with
pyserini). Training always runs in torch.
"""

from __future__ import annotations

from hybrid.core.errors import ConfigError

BACKENDS = ("torch", "onnx")


def check_backend(backend: str) -> str:
    """``backend`` when it is one of :data:`BACKENDS`; a :class:`ConfigError` otherwise."""
    if backend not in BACKENDS:
        raise ConfigError(None, None, f"unknown backend {backend!r}; choose from {BACKENDS}")
    return backend


def backend_record(backend: str) -> dict[str, str]:
    """What a record (an artifact's, a run's meta) says of the backend: nothing for torch, so that a torch run's
    record stays as it always was; ``{"backend": ...}`` otherwise."""
    return {} if check_backend(backend) == "torch" else {"backend": backend}


def backend_device(backend: str, precision: str, device: str | None) -> str | None:
    """The device the bi-encoder or the reader runs on under ``backend`` at ``precision``: ``onnx`` runs on the CPU in
    fp32 (no device given: ``cpu``, not the GPU torch would pick), and another device or precision is a
    :class:`ConfigError` naming the options; ``torch`` takes ``device`` as given (None: cuda when available)."""
    if check_backend(backend) == "torch":
        return device
    if precision != "fp32":
        raise ConfigError(None, None, f"--backend {backend} runs in fp32; use --precision fp32, or --backend torch "
                                      f"for {precision}")
    if device is not None and device.split(":")[0] != "cpu":
        raise ConfigError(None, None, f"--backend {backend} runs on the CPU, not on {device}; use --device cpu, or "
                                      "--backend torch")
    return "cpu"
