"""Feature groups are registered like every other component (hybrid.core.registry): each declares its
``[providers.<group>]`` options once, and that declaration checks a feature set's options, fills in their
defaults and is the provider's constructor default."""

from __future__ import annotations

import inspect

import pytest

import hybrid.retrieval.providers  # noqa: F401  (registers the bm25f, dense and fusion groups)
from features.pairs import registry
from hybrid.core.errors import ConfigError
from hybrid.core.registry import REGISTRIES


def test_every_group_is_in_the_one_catalogue_with_its_declared_options():
    groups = registry.FEATURE_GROUPS
    assert REGISTRIES["feature group"] is groups
    assert {"string", "neighbours", "sparse_fields", "dense", "dense_neighbours", "fusion", "reader"} <= set(groups)
    assert set(groups["dense"].params) == {"index", "encoder", "depth", "batch_size"}
    assert groups["string"].params == {} and groups["string"].target is registry.provider("string")


def test_a_declared_default_is_the_providers_own_default():
    """What ``python -m hybrid.recipes types`` shows is what a provider without options uses."""
    checked = 0
    for name, entry in registry.FEATURE_GROUPS.items():
        signature = inspect.signature(type(entry.target).__init__).parameters
        for option in entry.params.values():
            assert signature[option.name].default == option.default, (name, option.name)
            checked += 1
    assert checked >= 10


def test_options_are_checked_and_defaults_filled():
    fused = registry.configured("fusion", {"method": "combsum"})
    assert (fused.method, fused.depth, fused.index_path) == ("combsum", 100, None)
    assert registry.configured("dense", {"depth": 20}).batch_size == 64
    with pytest.raises(ConfigError, match=r"unknown option 'dpeth' for \[providers\.dense\]; allowed: .*did you mean "
                                          r"'depth'"):
        registry.configured("dense", {"dpeth": 20})
    with pytest.raises(ConfigError, match=r"\[providers\.dense\] 'depth' must be an integer >= 1, got 'deep'"):
        registry.configured("dense", {"depth": "deep"})
    with pytest.raises(ConfigError, match=r"\[providers\.fusion\] 'method' must be one of .*got 'rff'; did you mean "
                                          r"'rrf'"):
        registry.configured("fusion", {"method": "rff"})
