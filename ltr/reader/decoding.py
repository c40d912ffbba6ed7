"""Best valid span per window from start/end logits (CoreSearch eqs. 3-4 + its validity filter).

A span (s, e) is valid when both ends are passage tokens, ``e >= s`` and it has at most ``L``
tokens; its score is ``start[s] + end[e]`` (the log of P_start(s) * P_end(e) up to the softmax
normalisers). Filtering is done on the full s x e matrix, so the result is the true argmax over
valid spans, not a heuristic top-k search. Windows with no passage token get (-1, -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class DecodedSpans:
    start: torch.Tensor  # (n,) long, -1 where no valid span exists
    end: torch.Tensor  # (n,) long
    logit: torch.Tensor  # (n,) start[s] + end[e]; -inf where none
    confidence: torch.Tensor  # (n,) P_start(s) * P_end(e) with softmax over the window's passage tokens; 0 if none


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log_softmax over positions where ``mask``; other positions get -inf (rows without any: all -inf)."""
    filled = logits.float().masked_fill(~mask, float("-inf"))
    has_any = mask.any(dim=-1, keepdim=True)
    out = torch.log_softmax(filled.masked_fill(~has_any, 0.0), dim=-1)
    return out.masked_fill(~mask, float("-inf"))


def valid_span_mask(passage_mask: torch.Tensor, max_span_tokens: int) -> torch.Tensor:
    """(n, T, T) bool: span (s, e) allowed."""
    width = passage_mask.shape[-1]
    pos = torch.arange(width, device=passage_mask.device)
    length_ok = (pos[None, :] >= pos[:, None]) & (pos[None, :] - pos[:, None] < max_span_tokens)
    return length_ok[None] & passage_mask[:, :, None] & passage_mask[:, None, :]


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, passage_mask: torch.Tensor,
               max_span_tokens: int) -> DecodedSpans:
    if max_span_tokens < 1:
        raise ValueError("max_span_tokens must be >= 1")
    start_lp = masked_log_softmax(start_logits, passage_mask)
    end_lp = masked_log_softmax(end_logits, passage_mask)
    valid = valid_span_mask(passage_mask, max_span_tokens)
    scores = (start_lp[:, :, None] + end_lp[:, None, :]).masked_fill(~valid, float("-inf"))
    width = scores.shape[-1]
    flat = scores.reshape(scores.shape[0], -1)
    best, index = flat.max(dim=-1)
    found = torch.isfinite(best)
    start = torch.where(found, index // width, torch.full_like(index, -1))
    end = torch.where(found, index % width, torch.full_like(index, -1))
    raw = start_logits.float().gather(1, start.clamp(min=0)[:, None])[:, 0] + \
        end_logits.float().gather(1, end.clamp(min=0)[:, None])[:, 0]
    logit = torch.where(found, raw, torch.full_like(raw, float("-inf")))
    confidence = torch.where(found, best.exp(), torch.zeros_like(best))
    return DecodedSpans(start=start, end=end, logit=logit, confidence=confidence)
