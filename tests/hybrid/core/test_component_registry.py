"""The one registration mechanism (hybrid.core.registry): declared parameters check values, fill defaults and
name the key and the fix in every error."""

from __future__ import annotations

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.params import Param
from hybrid.core.registry import REGISTRIES, Component, Registry
from hybrid.recipes import BUILDERS


def make() -> Registry:
    things = Registry("test thing", common=[Param("name", str, None, "a label")], fixed=["type"], listed=False)

    @things.register("alpha", [Param("depth", int, 100, "hits kept", minimum=1),
                               Param("model", str, None, "the model (a path)", required=True)])
    def alpha():
        """The first thing."""

    return things


def test_defaults_are_filled_from_the_declaration_and_values_checked():
    things = make()
    assert things["alpha"].doc == "The first thing." and things["alpha"].defaults() == {"depth": 100, "model": None}
    assert things.resolve("alpha", {"type": "alpha", "model": "m"}) == {"type": "alpha", "depth": 100, "model": "m",
                                                                       "name": None}
    assert things.keys_of("alpha") == {"depth", "model", "name", "type"}
    assert "test thing" not in REGISTRIES and REGISTRIES["system type"] is BUILDERS


@pytest.mark.parametrize(("values", "key", "reason"), [
    ({"model": "m", "dpeth": 5}, "dpeth", "unknown key 'dpeth' for test thing 'alpha'; allowed: ['depth', 'model', "
                                          "'name', 'type']; did you mean 'depth'?"),
    ({"model": "m", "depth": 0}, "depth", "'depth' must be an integer >= 1, got 0"),
    ({"depth": 5}, None, "test thing 'alpha' needs 'model': the model (a path)"),
])
def test_every_refusal_names_the_key_and_what_is_right(values, key, reason):
    seen = []

    def error(k, r):
        seen.append(k)
        return ConfigError(None, None, r)

    with pytest.raises(ConfigError) as caught:
        make().resolve("alpha", values, error)
    assert caught.value.reason == reason and seen == [key]


def test_an_unknown_name_lists_the_known_ones_and_a_near_one():
    with pytest.raises(ConfigError, match=r"unknown test thing 'alpah'; known: alpha; did you mean 'alpha'\?"):
        make().lookup("alpah")
    with pytest.raises(ValueError, match="registered twice"):
        make().add("alpha", None)
    assert isinstance(make()["alpha"], Component)
