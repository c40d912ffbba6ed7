"""A transformer encoder run by ONNX Runtime on the CPU (the bi-encoder's ``onnx`` backend, :mod:`hybrid.core.backend`).

The torch module is exported in memory when the model is made (MiniLM-L6: ~1 s) and the session is built from those
bytes, so there is no exported file to build, keep in step with the weights or check when opened: the session is
always the weights the encoder holds at that moment. On the 2-core CPU machine ONNX Runtime's fused kernels run the
MiniLM forward about twice as fast as torch at the same fp32 precision (1,987 ECB+ passages in length-sorted
batches of 64: 6.5 s -> 3.2-3.4 s), with hidden states within 5e-6 of torch's.

The session's threads do not spin while waiting for work (``allow_spinning`` off), for the same reason ``import
hybrid`` sets ``OMP_WAIT_POLICY=PASSIVE``: on shared cores spinning threads take their partner's time slices; on idle
cores spinning bought 2-4% of the forward.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import torch
from transformers.modeling_outputs import BaseModelOutput

from hybrid.core.errors import ConfigError

#: ONNX operator set of the export (ONNX Runtime >= 1.13 runs it).
OPSET = 17
INSTALL = "pip install 'hybrid[onnx]'"


class _LastHidden(torch.nn.Module):
    """The exported function: token ids and attention mask -> last hidden states."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _session_type() -> Any:
    try:
        import onnx  # noqa: F401  (torch's exporter needs it)
        import onnxruntime
    except ImportError as e:
        raise ConfigError(None, None, f"--backend onnx needs the onnx and onnxruntime packages ({e.name} is "
                                      f"missing): {INSTALL}, or use --backend torch") from None
    return onnxruntime


def export_bytes(model: torch.nn.Module) -> bytes:
    """The ONNX graph (weights included) of ``model``'s forward from ``input_ids`` and ``attention_mask`` to its last
    hidden states, batch size and length dynamic. Traced on a padded example batch: a model whose code skips the mask
    of an unpadded batch could otherwise have that branch frozen into the graph (transformers' own mask code checks
    for tracing; a user's model may not)."""
    if next(model.parameters()).device.type != "cpu":
        raise ConfigError(None, None, "--backend onnx runs on the CPU; use --device cpu, or --backend torch on a GPU")
    ids = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]], dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.long)
    buffer = io.BytesIO()
    was_training = model.training
    model.eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on the branches it fixes; the exporter's deprecation
            torch.onnx.export(_LastHidden(model), (ids, mask), buffer, input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state"], opset_version=OPSET, dynamo=False,
                              dynamic_axes={name: {0: "batch", 1: "length"}
                                            for name in ("input_ids", "attention_mask", "last_hidden_state")})
    except ConfigError:
        raise
    except Exception as e:  # an architecture the exporter cannot trace
        raise ConfigError(None, None, f"cannot export {type(model).__name__} to ONNX ({type(e).__name__}: "
                                      f"{str(e).splitlines()[0] if str(e) else ''}); use --backend torch") from None
    finally:
        model.train(was_training)
    return buffer.getvalue()


class OnnxEncoderModel:
    """``model``'s forward in an ONNX Runtime session; called as a transformers encoder is (``input_ids=``,
    ``attention_mask=``; CPU tensors) and answers with the same output type, so the encoder's inference loop runs
    either. ``threads``: the session's intra-op threads (default: torch's, i.e. ``--threads`` where given)."""

    def __init__(self, model: torch.nn.Module, threads: int | None = None):
        ort = _session_type()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: no notes on the graph's initialisers
        self.session = ort.InferenceSession(export_bytes(model), options, providers=["CPUExecutionProvider"])

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> BaseModelOutput:
        (hidden,) = self.session.run(["last_hidden_state"], {"input_ids": input_ids.numpy(),
                                                             "attention_mask": attention_mask.numpy()})
        return BaseModelOutput(last_hidden_state=torch.from_numpy(hidden))
