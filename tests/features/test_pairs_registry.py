"""The feature-provider registry (features.pairs.registry): external groups are listed in one order."""

from __future__ import annotations

from features.pairs import registry
from features.pairs.base import FeatureProvider


class _Named(FeatureProvider):
    def __init__(self, group: str):
        self.group, self.description = group, f"test group {group}"

    def features(self):
        return {}

    def compute(self, batch, names):
        raise NotImplementedError


def test_external_groups_are_listed_by_name_whoever_registered_first(monkeypatch):
    first, second = (lambda: [_Named("zz_test"), _Named("aa_test")]), (lambda: [_Named("mm_test")])
    orders = []
    for factories in ([first, second], [second, first]):
        monkeypatch.setattr(registry, "_EXTERNAL_FACTORIES", list(factories))
        registry.external_providers.cache_clear()
        orders.append([p.group for p in registry.external_providers()])
    registry.external_providers.cache_clear()
    assert orders == [["aa_test", "mm_test", "zz_test"]] * 2
