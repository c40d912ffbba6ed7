"""Adapters that plug other parts of the project in as feature groups (see :class:`FeatureProvider`).

Each adapter wraps one module owned by another part of the project and is *available* only when
that module imports and can serve the batch's index; otherwise ``available()`` says why.
"""

from __future__ import annotations

from features.pairs.base import FeatureProvider


def external_providers() -> list[FeatureProvider]:
    return []
