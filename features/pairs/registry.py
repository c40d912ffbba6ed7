"""The catalogue of feature providers: the built-in groups plus the pluggable external ones.

Built-in groups (pure Python, always available): ``string``, ``type``, ``chain``, ``arguments``,
``context``, ``first_stage``, ``union`` (the scores of a feature union ``a ** b`` in the candidate list),
``neighbours`` (how the other candidates of the same list resemble the candidate).
External groups wrap other parts of the project (:mod:`ltr.providers` and :mod:`hybrid.retrieval.providers`,
registered by them through :func:`register_external`): per-field sparse scores of the Java extractor,
dense and fusion scores, the neural reader. An external provider whose module is missing or not usable is still
listed, with the reason, so a feature set naming its features fails with an explanation rather than
"unknown feature".
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from features.pairs import arguments, chains, context, first_stage, neighbours, strings, types, union
from features.pairs.base import Feature, FeatureProvider
from hybrid.core.errors import ConfigError
from hybrid.core.registry import Component, Registry

BUILTIN: tuple[FeatureProvider, ...] = (
    strings.GROUP, types.GROUP, chains.GROUP, arguments.GROUP, context.GROUP, first_stage.GROUP, union.GROUP,
    neighbours.PROVIDER,
)


#: Factories of the external providers. They wrap parts of the project above ``features/`` (retrievers, the
#: reader), so those parts register them: :mod:`ltr.providers` registers its own when ``ltr`` is imported, and
#: :mod:`hybrid.retrieval.providers` (bm25f, dense, fusion) when it is imported (by :mod:`hybrid.recipes` and
#: ``python -m hybrid.ltr``).
_EXTERNAL_FACTORIES: list[Callable[[], Iterable[FeatureProvider]]] = []


def register_external(factory: Callable[[], Iterable[FeatureProvider]]) -> None:
    """Add a factory of external providers (called once, on the first lookup after registration)."""
    if factory not in _EXTERNAL_FACTORIES:
        _EXTERNAL_FACTORIES.append(factory)
        external_providers.cache_clear()


@lru_cache(maxsize=1)
def external_providers() -> tuple[FeatureProvider, ...]:
    """The registered external providers by group name: the same order whichever part of the project registered
    its own first."""
    return tuple(sorted((provider for make in _EXTERNAL_FACTORIES for provider in make()), key=lambda p: p.group))


def providers() -> tuple[FeatureProvider, ...]:
    return BUILTIN + external_providers()


@dataclass(frozen=True)
class FeatureGroupEntry(Component):
    """A feature group in the registry: ``target`` is its provider, ``params`` its declared options."""

    def notes(self) -> list[str]:
        provider: FeatureProvider = self.target
        missing = provider.available()
        if missing is not None:
            return [f"Unavailable here: {missing}."]
        return [f"Features: {', '.join(provider.features())}."]


class FeatureGroups(Registry[FeatureGroupEntry]):
    """The feature groups by name: the built-in ones and those the layers above register through
    :func:`register_external`, read afresh whenever those change (an external factory runs on first use)."""

    def __init__(self) -> None:
        super().__init__("feature group", FeatureGroupEntry, noun="option",
                         describe="A group of LTR features a feature set names (ltr/configs/*.toml); its options "
                                  "are the set's [providers.GROUP] table.")
        self._seen: tuple[FeatureProvider, ...] | None = None

    def _sync(self) -> None:
        external = external_providers()
        if external is not self._seen:
            self._items = {}
            for p in BUILTIN + external:
                self.add(p.group, p, p.OPTIONS, p.description)
            self._seen = external

    def __getitem__(self, name: str) -> FeatureGroupEntry:
        self._sync()
        return super().__getitem__(name)

    def __iter__(self):
        self._sync()
        return super().__iter__()

    def __len__(self) -> int:
        self._sync()
        return super().__len__()


#: Every feature group with its declared options (``python -m hybrid.recipes types`` lists them).
FEATURE_GROUPS = FeatureGroups()


def provider(group: str) -> FeatureProvider:
    for p in providers():
        if p.group == group:
            return p
    raise KeyError(group)


def catalogue() -> dict[str, tuple[FeatureProvider, Feature]]:
    """feature name -> (provider, feature), over every available provider."""
    out: dict[str, tuple[FeatureProvider, Feature]] = {}
    for p in providers():
        if p.available() is not None:
            continue
        for name, feat in p.features().items():
            if name in out:
                raise RuntimeError(f"feature {name!r} is defined by both {out[name][0].group!r} and {p.group!r}")
            out[name] = (p, feat)
    return out


_CONFIGURED: dict[tuple[str, str], FeatureProvider] = {}


def configured(group: str, options: dict | None = None) -> FeatureProvider:
    """The provider of ``group`` set up with ``options`` (one instance per distinct options)."""
    import json

    if not options:
        return provider(group)
    key = (group, json.dumps(options, sort_keys=True, default=str))
    if key not in _CONFIGURED:
        _CONFIGURED[key] = provider(group).configure(dict(options))
    return _CONFIGURED[key]


def unavailable() -> dict[str, str]:
    """group -> reason, for providers that cannot run here."""
    return {p.group: reason for p in providers() if (reason := p.available()) is not None}


def lookup(name: str, path: str | None = None, line: int | None = None) -> tuple[FeatureProvider, Feature]:
    """The provider and feature of ``name``; a ConfigError with a suggestion (or the reason) otherwise."""
    cat = catalogue()
    if name in cat:
        return cat[name]
    hint = difflib.get_close_matches(name, list(cat), n=3)
    missing = unavailable()
    reason = f"unknown feature {name!r}"
    if hint:
        reason += f"; did you mean {', '.join(hint)}?"
    if missing:
        reason += " (unavailable providers: " + "; ".join(f"{g}: {r}" for g, r in sorted(missing.items())) + ")"
    raise ConfigError(path, line, reason)


def group_features(group: str) -> list[str]:
    """The feature names of one provider, in registration order."""
    return list(provider(group).features())
