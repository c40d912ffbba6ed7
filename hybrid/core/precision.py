"""Inference precisions of the neural parts (encoders), named here so that commands can offer them without
importing torch.

``fp32`` is exact and the default everywhere. ``bf16`` / ``fp16`` run the model under torch autocast: on a GPU
with tensor cores, and on a CPU with native bf16 instructions (AVX512-BF16 or AMX), bf16 is about twice as fast;
vectors move by about 1e-3 (``tests/features/test_encoder.py`` states the bound) and retrieval quality by what
BENCHMARKS.md measures. On a CPU without those instructions half precision is slower than fp32. Training always
runs in fp32.
"""

from __future__ import annotations

PRECISIONS = ("fp32", "bf16", "fp16")
