"""Every bundled recipe resolves to the parameters recorded in ``recipe_params.json``: each system, component
recipe (named or inline), reranker and learner with every default filled in.

The record was made before the system types, rerankers, fusion methods and learners moved to one registry
(issue 40 §5), so a default lost or changed by such a move fails here, naming the recipe and the value. A
deliberate change of a default or of a bundled recipe is recorded again with
``python tests/hybrid/recipes/test_resolved_params.py --write`` (and the diff of the JSON file shows it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().parent / "recipe_params.json"


def resolved_system(system: dict[str, Any], source) -> dict[str, Any]:
    """The ``[system]`` table with every parameter's value (defaults filled), components resolved in place."""
    from hybrid.recipes.builders import reranker_specs
    from hybrid.recipes.registry import BUILDERS, resolve_params

    values = resolve_params(system, BUILDERS[system["type"]], source)
    for key in ("recipes", "base", "first"):
        if key in values and values[key] is not None:
            values[key] = resolved_component(values[key], source)
    if system["type"] == "pipeline":
        values["rerankers"] = [resolved_reranker(spec, source) for spec in reranker_specs(system, source)]
    return values


def resolved_component(value: Any, source) -> Any:
    """A component: a recipe name (its recipe's system, resolved) or an inline table; a list of them."""
    from hybrid.recipes import load_recipe

    if isinstance(value, list):
        return [resolved_component(v, source) for v in value]
    if isinstance(value, dict):
        return resolved_system(value, source)
    recipe = load_recipe(value)
    return {"recipe": value, "system": resolved_system(recipe.system, recipe.source)}


def resolved_reranker(spec: dict[str, Any], source) -> dict[str, Any]:
    """A reranker table as :func:`reranker_specs` resolves it (every default filled), its learner's defaults too."""
    from ltr.learners import make_learner

    values = dict(spec)
    if spec["type"] == "union":
        values["recipes"] = resolved_component(values["recipes"], source)
    if values.get("learner") is not None:
        values["learner_params"] = make_learner(values["learner"], values["params"] or {}).params
    return values


def resolved_recipes() -> dict[str, Any]:
    from hybrid.recipes import bundled_recipes, load_recipe

    out = {}
    for name in bundled_recipes():
        recipe = load_recipe(name)
        out[name] = resolved_system(recipe.system, recipe.source)
    return json.loads(json.dumps(out))  # tuples as lists, as the record holds them


def test_every_bundled_recipe_resolves_to_the_recorded_parameters():
    recorded = json.loads(RECORD.read_text())
    resolved = resolved_recipes()
    assert sorted(resolved) == sorted(recorded), "a bundled recipe was added or removed: record again (--write)"
    for name in recorded:
        assert resolved[name] == recorded[name], name


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/hybrid/recipes/test_resolved_params.py --write")
    RECORD.write_text(json.dumps(resolved_recipes(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD}")
