"""Issue 38, item 7: ``python -m hybrid.recipes list`` says which recipes need artifacts and which are recommended
for raw text with and without training, aligned whatever the name length; both come from the recipes' own
declarations (``artifacts``, ``recommended``), which are checked here against the recipe table of docs/recipes.md
and each other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hybrid.cli.recipes import list_table
from hybrid.cli.recipes import main as recipes_main
from hybrid.core.errors import ConfigError
from hybrid.recipes import bundled_recipes, load_recipe, parse_recipe
from hybrid.recipes.builders import HOW_TO_BUILD

RECIPES_DOC = Path(__file__).resolve().parents[3] / "docs" / "recipes.md"


def _listed(capsys) -> list[str]:
    assert recipes_main(["list"]) == 0
    return capsys.readouterr().out.rstrip("\n").split("\n")


def test_list_rows_are_aligned_and_carry_the_artifacts(capsys):
    lines = _listed(capsys)
    rows = lines[: lines.index("")]
    assert rows[0].split() == ["recipe", "type", "artifacts", "description"]
    description_at = rows[0].index("description")
    names = bundled_recipes()
    assert [row.split()[0] for row in rows[1:]] == names
    for row, name in zip(rows[1:], names, strict=True):
        recipe = load_recipe(name)
        assert row[description_at:] == recipe.description, name  # one column, however long the name
        assert row[:description_at].split(maxsplit=2)[2].strip() == (", ".join(recipe.artifacts) or "-")
    assert "hybrid-dense-reader-judged" in names and len("hybrid-dense-reader-judged") > 20


def test_list_names_the_recommended_recipes_one_line_each(capsys):
    lines = _listed(capsys)
    recommended = lines[lines.index("") + 1:]
    assert recommended == [
        "recommended for raw text, no training:   multifield-net (needs no artifacts)",
        "recommended for raw text, with training: hybrid-dense-net (needs artifacts: dense, ltr)",
    ]


def test_alignment_holds_for_any_name_length():
    short = parse_recipe('name = "a"\ndescription = "first"\n[system]\ntype = "bm25"\n')
    long = parse_recipe('name = "' + "x" * 45 + '"\ndescription = "second"\nartifacts = ["ltr"]\n'
                        'recommended = "a very long setting name, with training"\n[system]\ntype = "bm25"\n')
    lines = list_table([short, long]).split("\n")
    assert len({line.index(d) for line, d in zip(lines[:3], ("description", "first", "second"), strict=True)}) == 1
    assert lines[-1] == f"recommended for a very long setting name, with training: {'x' * 45} (needs artifacts: ltr)"


def _artifacts_in_recipes_doc() -> dict[str, set[str]]:
    """recipe -> artifacts, from the recipe table of docs/recipes.md (its last column)."""
    table = {}
    for line in RECIPES_DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z0-9-]+)` \|.*\| ([a-z, -]+) \|$", line)
        if match:
            table[match[1]] = set() if match[2].strip() == "-" else {a.strip() for a in match[2].split(",")}
    return table


def _referenced(value) -> list[str]:
    """Bundled recipes a [system] table names (first = "...", base = "...", recipes = [...])."""
    names = set(bundled_recipes())
    if isinstance(value, str):
        return [value] if value in names else []
    if isinstance(value, dict):
        return [n for v in value.values() for n in _referenced(v)]
    if isinstance(value, list):
        return [n for v in value for n in _referenced(v)]
    return []


def test_declared_artifacts_agree_with_the_recipes_doc_the_builders_and_the_recipes_they_build_on():
    documented = _artifacts_in_recipes_doc()
    for name in bundled_recipes():
        recipe = load_recipe(name)
        declared = set(recipe.artifacts)
        assert declared <= set(HOW_TO_BUILD), name
        assert documented[name] == declared, name
        assert not (recipe.ci and declared), f"{name}: a CI recipe builds without artifacts"
        for inner in _referenced(recipe.system):
            assert set(load_recipe(inner).artifacts) <= declared, f"{name} builds on {inner}"
    settings = [load_recipe(n).recommended for n in bundled_recipes() if load_recipe(n).recommended]
    assert sorted(settings) == ["raw text, no training", "raw text, with training"]


@pytest.mark.parametrize(("line", "error"), [('artifacts = "dense"', "'artifacts' must be a list"),
                                              ("recommended = true", "'recommended' must be a string")])
def test_bad_declarations_name_the_line(tmp_path, line, error):
    path = tmp_path / "r.toml"
    path.write_text(f'name = "x"\n{line}\n[system]\ntype = "bm25"\n')
    with pytest.raises(ConfigError, match=rf"r\.toml:2: {error}"):
        load_recipe(str(path))
