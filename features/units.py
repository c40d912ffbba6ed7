"""What the bi-encoder encodes: a text and the mention spans in it that each want a vector.

Its own module, without torch, so that the index builders (:mod:`indexes.faiss_index`, :mod:`indexes.shards`)
can describe their inputs at module level while the encoder itself (:mod:`features.encoder`) is loaded only
when a model encodes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Unit:
    """A text and the character spans that each want a vector (no spans: one context vector)."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
