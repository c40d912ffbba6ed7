"""A transformer encoder run by ONNX Runtime on the CPU (the ``onnx`` backend of the bi-encoder and of the reader's
encoder, :mod:`hybrid.core.backend`).

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
    """The exported function: token ids, attention mask (and token types, when given) -> last hidden states."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}  # a model may not take them
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state


def _session_type() -> Any:
    try:
        import onnx  # noqa: F401  (torch's exporter needs it)
        import onnxruntime
    except ImportError as e:
        raise ConfigError(None, None, f"--backend onnx needs the onnx and onnxruntime packages ({e.name} is "
                                      f"missing): {INSTALL}, or use --backend torch") from None
    return onnxruntime


def export_bytes(model: torch.nn.Module, token_types: bool = False) -> bytes:
    """The ONNX graph (weights included) of ``model``'s forward from ``input_ids`` and ``attention_mask`` (and
    ``token_type_ids`` with ``token_types``: the reader's pairs) to its last hidden states, batch size and length
    dynamic. Traced on a padded example batch: a model whose code skips the mask of an unpadded batch could otherwise
    have that branch frozen into the graph (transformers' own mask code checks for tracing; a user's model may not).
    The example's token types are all 0, which every type vocabulary has; their values are inputs of the graph, not
    frozen into it. A model that ignores its token types has no such input in the graph (the exporter drops inputs
    nothing reads)."""
    if next(model.parameters()).device.type != "cpu":
        raise ConfigError(None, None, "--backend onnx runs on the CPU; use --device cpu, or --backend torch on a GPU")
    ids = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]], dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.long)
    args: tuple[torch.Tensor, ...] = (ids, mask, torch.zeros_like(ids)) if token_types else (ids, mask)
    names = ["input_ids", "attention_mask", "token_type_ids"][: len(args)]
    buffer = io.BytesIO()
    was_training = model.training
    model.eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on the branches it fixes; the exporter's deprecation
            torch.onnx.export(_LastHidden(model), args, buffer, input_names=names,
                              output_names=["last_hidden_state"], opset_version=OPSET, dynamo=False,
                              dynamic_axes={name: {0: "batch", 1: "length"} for name in [*names, "last_hidden_state"]})
    except Exception as e:  # an architecture the exporter cannot trace
        raise ConfigError(None, None, f"cannot export {type(model).__name__} to ONNX ({type(e).__name__}: "
                                      f"{str(e).splitlines()[0] if str(e) else ''}); use --backend torch") from None
    finally:
        model.train(was_training)
    return buffer.getvalue()


class OnnxEncoderModel:
    """``model``'s forward in an ONNX Runtime session; called as a transformers encoder is (``input_ids=``,
    ``attention_mask=``, with ``token_types`` also ``token_type_ids=``; CPU tensors) and answers with the same output
    type, so the encoder's inference loop runs either. ``threads``: the session's intra-op threads (default: torch's,
    i.e. ``--threads`` where given). ``token_types``: the graph takes token type ids (the reader's pairs); without
    it, a call that passes them is refused rather than run without them."""

    def __init__(self, model: torch.nn.Module, threads: int | None = None, token_types: bool = False):
        ort = _session_type()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: no notes on the graph's initialisers
        self.token_types = token_types
        self.session = ort.InferenceSession(export_bytes(model, token_types), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 token_type_ids: torch.Tensor | None = None) -> BaseModelOutput:
        feed = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        if token_type_ids is not None:
            if not self.token_types:
                raise ValueError("this session was exported without token_type_ids; make it with token_types=True")
            if "token_type_ids" in self.inputs:  # absent: the model reads none (the exporter dropped the input)
                feed["token_type_ids"] = token_type_ids.numpy()
        elif self.token_types:
            raise ValueError("this session was exported with token_type_ids; pass them")
        (hidden,) = self.session.run(["last_hidden_state"], feed)
        return BaseModelOutput(last_hidden_state=torch.from_numpy(hidden))
