"""The reader: a cross-encoder with span heads and the Lee et al. (2017) mention-pair scorer.

CoreSearch's "E2E-Integrated" reader (Eirew et al. 2022, eqs. 3-9):

* span heads: ``P_start = softmax(P w_start)``, ``P_end = softmax(P w_end)`` over passage tokens;
* passage selection by the coreference score of the query mention m_i and the candidate span m_j:
  ``s(m_j, m_i) = s_m(g_j) + s_a(g_i, g_j)``, ``s_m = w_m . FFNN_m(g_j)``,
  ``s_a = w_a . FFNN_a([g_i, g_j, g_i * g_j])``, each FFNN with one hidden layer (128);
* ``g = [h_start; h_end]``, the first and last token of a mention (the paper's ``g_x = [m_x,s; m_x,t]``,
  for both x = i and x = j): for the query, the first and last token between its ``<m>``/``</m>``
  markers; for the candidate, its span's first and last token - the gold span while training, the
  best valid predicted span at inference.

``query_boundary = "markers"`` takes the query's g_i from the hidden states of the two marker tokens
instead. Readers trained before this option existed did that, and load with it. Why the default
changed: the markers are tokens added to the vocabulary, whose embeddings start as random draws around
the vocabulary mean, so their hidden states say little about the query mention until the encoder has
learnt them; the mention's own tokens start from pretrained embeddings, in the same space as the
candidate's g_j. On ECB+, with the same seed and batches, the in-passage mention loss of steps 201-300
was 0.51 with the mention tokens and 1.40 with the markers (docs/history/benchmarks-2026-11.md, "The query's g_i at the
mention tokens").

The query's own s_m is omitted (constant per query, as the paper notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hybrid.core.backend import backend_device
from hybrid.core.precision import autocast, check_precision
from ltr.reader.decoding import DecodedSpans, best_spans


class FFNN(nn.Module):
    """``w . ReLU(W x + b)``: one hidden layer, scalar output."""

    def __init__(self, n_in: int, hidden: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


@dataclass
class ReaderOutput:
    start_logits: torch.Tensor  # (n, T), -inf-free; mask with passage_mask before any softmax
    end_logits: torch.Tensor
    span_start: torch.Tensor  # (n,) the span g_j was taken from (gold or decoded); -1 none
    span_end: torch.Tensor
    score: torch.Tensor  # (n,) s(m_j, m_i)
    decoded: DecodedSpans | None  # best valid predicted spans (None when every window had a gold span)
    hidden: torch.Tensor | None = None  # (n, T, h) last hidden states, when asked for


def gather_positions(hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """hidden (n, T, h), positions (n,) -> (n, h)."""
    index = positions.clamp(min=0)[:, None, None].expand(-1, 1, hidden.shape[-1])
    return hidden.gather(1, index)[:, 0]


QUERY_BOUNDARIES = ("mention", "markers")


def query_boundary_positions(query_open: torch.Tensor, query_close: torch.Tensor,
                             query_boundary: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the query's g_i: the first/last mention token, or the markers themselves.

    A mention with no token between its markers (never produced by the encoder, which refuses empty
    mentions) falls back to the markers rather than reading a position outside the mention.
    """
    if query_boundary == "markers":
        return query_open, query_close
    first, last = query_open + 1, query_close - 1
    empty = last < first
    return torch.where(empty, query_open, first), torch.where(empty, query_close, last)


class ReaderModel(nn.Module):
    def __init__(self, encoder: nn.Module, ffnn_hidden: int = 128, dropout: float = 0.1, max_span_tokens: int = 10,
                 query_boundary: str = "mention"):
        super().__init__()
        if query_boundary not in QUERY_BOUNDARIES:
            raise ValueError(f"query_boundary must be one of {QUERY_BOUNDARIES}, got {query_boundary!r}")
        self.encoder = encoder
        size = encoder.config.hidden_size
        self.span_head = nn.Linear(size, 2)  # w_start, w_end
        self.mention_scorer = FFNN(2 * size, ffnn_hidden, dropout)  # s_m
        self.pair_scorer = FFNN(6 * size, ffnn_hidden, dropout)  # s_a
        self.max_span_tokens = max_span_tokens
        self.query_boundary = query_boundary
        #: Precision of the encoder in eval mode (``hybrid.core.precision``); in train mode it always runs in fp32.
        self.precision = "fp32"
        #: Backend of the encoder at inference (``hybrid.core.backend``); in train mode it always runs in torch.
        self.backend = "torch"
        # token types passed or not -> the encoder's OnnxEncoderModel, made at first use, dropped in train mode
        self._onnx: dict[bool, Any] = {}

    def _device(self) -> str:
        return str(next(self.parameters()).device)

    def set_precision(self, precision: str) -> ReaderModel:
        """Run the encoder in ``precision`` at inference (eval mode): ``fp32``, or ``bf16`` / ``fp16`` autocast.

        The heads read the encoder's states cast back to fp32, so only the encoder runs in half precision (scores
        move by what tests/ltr/test_reader_precision.py bounds); training is never affected. Under the ``onnx``
        backend only fp32 runs (another precision is a ConfigError).
        """
        return self.set_inference(precision=precision)

    def set_backend(self, backend: str) -> ReaderModel:
        """Run the encoder with ``backend`` at inference (eval mode, gradients off): ``torch``, or ``onnx`` (ONNX
        Runtime on the CPU, fp32; the encoder is exported when first used, from the weights it holds then; the heads
        stay in torch). Training always runs in torch. A precision or device onnx cannot run is a ConfigError."""
        return self.set_inference(backend=backend)

    def set_inference(self, precision: str | None = None, backend: str | None = None) -> ReaderModel:
        """Set the precision and the backend together (None keeps the current one), their combination checked once
        on the model's device, so that neither order of two single settings is refused on the way. A backend given
        drops the ONNX sessions."""
        precision = check_precision(self.precision if precision is None else precision)
        backend_device(self.backend if backend is None else backend, precision, self._device())
        self.precision = precision
        if backend is not None:
            self.backend = backend
            self._onnx.clear()
        return self

    def train(self, mode: bool = True) -> ReaderModel:
        """Training mode (``eval()`` is ``train(False)``); entering it drops the ONNX sessions, which were exported
        from the weights of their day: the next inference exports the trained weights."""
        if mode:
            self._onnx.clear()
        return super().train(mode)

    def _inference_encoder(self, token_types: bool) -> Any:
        """What runs the encoder now: the torch module (training, gradients on, or the torch backend), or its ONNX
        Runtime session (exported at first use, with a token type input when the caller passes token types)."""
        if self.backend == "torch" or self.training or torch.is_grad_enabled():
            return self.encoder
        if token_types not in self._onnx:
            from features.onnx_model import OnnxEncoderModel  # deferred: onnx and onnxruntime only for this backend

            self._onnx[token_types] = OnnxEncoderModel(self.encoder, token_types=token_types)
        return self._onnx[token_types]

    def heads_config(self) -> dict:
        return {"ffnn_hidden": self.mention_scorer.net[0].out_features, "dropout": self.mention_scorer.net[2].p,
                "max_span_tokens": self.max_span_tokens, "query_boundary": self.query_boundary}

    def pair_score(self, hidden: torch.Tensor, query_open: torch.Tensor, query_close: torch.Tensor,
                   span_start: torch.Tensor, span_end: torch.Tensor) -> torch.Tensor:
        first, last = query_boundary_positions(query_open, query_close, self.query_boundary)
        g_i = torch.cat([gather_positions(hidden, first), gather_positions(hidden, last)], dim=-1)
        g_j = torch.cat([gather_positions(hidden, span_start), gather_positions(hidden, span_end)], dim=-1)
        return self.mention_scorer(g_j) + self.pair_scorer(torch.cat([g_i, g_j, g_i * g_j], dim=-1))

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               token_type_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Hidden states and the start/end logits (eqs. 3-4 before the softmax)."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        encoder = self._inference_encoder(token_type_ids is not None)
        with autocast(input_ids.device, "fp32" if self.training else self.precision):
            hidden = encoder(**kwargs).last_hidden_state
        hidden = hidden.float()  # the heads run in fp32 (a no-op in fp32)
        logits = self.span_head(hidden)
        return hidden, logits[..., 0], logits[..., 1]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, passage_mask: torch.Tensor,
                query_open: torch.Tensor, query_close: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                gold_start: torch.Tensor | None = None, gold_end: torch.Tensor | None = None,
                return_hidden: bool = False) -> ReaderOutput:
        """Score windows. Where ``gold_start >= 0`` g_j uses the gold span, elsewhere the decoded one.

        A window without any valid span (no passage token) scores g_j at position 0 ([CLS]). Without
        ``gold_start`` (inference) every window takes its decoded span, decided here without reading a tensor back
        (on a GPU, whether any gold is missing is a host-device sync; training, which gives gold, still asks it).
        """
        hidden, start_logits, end_logits = self.encode(input_ids, attention_mask, token_type_ids)
        use_gold = None if gold_start is None else gold_start >= 0
        decoded = None
        if use_gold is None or not bool(use_gold.all()):
            with torch.no_grad():
                decoded = best_spans(start_logits.detach(), end_logits.detach(), passage_mask, self.max_span_tokens)
        if use_gold is None:
            span_start, span_end = decoded.start, decoded.end
        elif decoded is None:
            span_start, span_end = gold_start, gold_end
        else:
            span_start = torch.where(use_gold, gold_start, decoded.start)
            span_end = torch.where(use_gold, gold_end, decoded.end)
        score = self.pair_score(hidden, query_open, query_close, span_start, span_end)
        return ReaderOutput(start_logits=start_logits, end_logits=end_logits, span_start=span_start,
                            span_end=span_end, score=score, decoded=decoded, hidden=hidden if return_hidden else None)
