"""Named recipes: a system described as data (TOML), built into a retrieval stage.

A recipe file::

    name = "cmr-doc"
    description = "Coreferent Mention Retrieval 'doc': mention words + document text at 10%"
    paper = "Sankepally et al. 2018"
    [system]
    type = "multifield"
    weights = "mention=1.0,mention:context=0.1"
    same_kind = false

``system.type`` picks a builder from :data:`BUILDERS`; each builder declares the keys it accepts, and
an unknown key is an error naming the file and line (a typo must never silently fall back to a
default). Recipes shipped with the project live in ``hybrid/configs/recipes/`` and are addressed by name.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.core.formats.config import read_config_text
from hybrid.retrieval.base import Stage

RECIPE_DIR = Path(__file__).resolve().parent.parent / "configs" / "recipes"
TOP_KEYS = {"name", "description", "paper", "system", "cost", "ci"}
#: A recipe name becomes a file name (``<name>.trec``): one plain path component, never ``..`` or ``/``.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit"


def check_name(name: object) -> str | None:
    """Why ``name`` cannot be a recipe name (None when it can)."""
    if not isinstance(name, str):
        return f"recipe name must be a string, got {type(name).__name__}"
    if not NAME.fullmatch(name) or len(name) > 200:
        return f"recipe name {name!r} is not a plain name ({NAME_RULE}); it names the files the recipe writes"
    return None


@dataclass
class Context:
    """What builders need from the experiment: the index, depth, threads, and a cache of built stages."""

    index: Any  # SparseIndex
    hits: int = 100
    threads: int = 1
    built: dict[str, Stage] = field(default_factory=dict)
    artifacts: Path | None = None  # where relative artifact paths of recipes resolve (see hybrid.recipes.builders)


@dataclass(frozen=True)
class Builder:
    keys: frozenset[str]
    build: Callable[[dict[str, Any], Context, RecipeSource], Stage]
    topics: str = "mentions"  # what its stage's topics are: "mentions" (marked mentions) or "events" (EventQuery)


@dataclass(frozen=True)
class RecipeSource:
    """Where a recipe came from, so errors can name the file and line."""

    path: Path | None
    text: str

    def line_of(self, key: str) -> int | None:
        for number, line in enumerate(self.text.splitlines(), start=1):
            stripped = line.strip()
            if stripped.startswith(f"{key} ") or stripped.startswith(f"{key}=") or stripped == f"[{key}]":
                return number
        return None

    def error(self, key: str | None, reason: str) -> ConfigError:
        return ConfigError(self.path, self.line_of(key) if key else None, reason)


BUILDERS: dict[str, Builder] = {}


def register(kind: str, keys: set[str], topics: str = "mentions") -> Callable:
    """Decorator: make ``kind`` a recipe ``system.type`` accepting ``keys`` (plus ``type``); ``topics="events"``
    marks a stage whose topics are event queries (:mod:`hybrid.collect`) and whose hits are documents."""

    def wrap(fn: Callable[[dict[str, Any], Context, RecipeSource], Stage]) -> Callable:
        BUILDERS[kind] = Builder(frozenset(keys | {"type"}), fn, topics)
        return fn

    return wrap


@dataclass
class Recipe:
    name: str
    description: str
    system: dict[str, Any]
    source: RecipeSource
    paper: str = ""
    cost: str = ""  # e.g. "cheap" / "needs trained dense model (~20 min CPU)"
    ci: bool = False  # cheap enough for the CI regression run

    def build(self, context: Context) -> Stage:
        if self.name in context.built:
            return context.built[self.name]
        stage = build_system(self.system, context, self.source)
        stage.name = self.name
        context.built[self.name] = stage
        return stage


def build_system(system: dict[str, Any], context: Context, source: RecipeSource) -> Stage:
    kind = system.get("type")
    if kind not in BUILDERS:
        raise source.error("type", f"unknown system type {kind!r}; known types: {sorted(BUILDERS)}")
    unknown = set(system) - BUILDERS[kind].keys
    if unknown:
        key = sorted(unknown)[0]
        raise source.error(key, f"unknown key {key!r} for system type {kind!r}; allowed: {sorted(BUILDERS[kind].keys)}")
    return BUILDERS[kind].build(system, context, source)


def parse_recipe(text: str, path: Path | None = None) -> Recipe:
    source = RecipeSource(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, getattr(exc, "lineno", None), f"invalid TOML: {exc}") from None
    unknown = set(data) - TOP_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise source.error(key, f"unknown recipe key {key!r}; allowed: {sorted(TOP_KEYS)}")
    for key in ("name", "system"):
        if key not in data:
            raise ConfigError(path, None, f"recipe needs '{key}'")
    if not isinstance(data["system"], dict):
        raise source.error("system", "'system' must be a table")
    bad_name = check_name(data["name"])
    if bad_name:
        raise source.error("name", bad_name)
    return Recipe(name=data["name"], description=data.get("description", ""), system=data["system"], source=source,
                  paper=data.get("paper", ""), cost=data.get("cost", ""), ci=bool(data.get("ci", False)))


def load_recipe(name_or_path: str) -> Recipe:
    """A recipe by file path, or by the name of a bundled recipe (``hybrid/configs/recipes/<name>.toml``)."""
    path = Path(name_or_path)
    if not path.suffix:
        if check_name(name_or_path):
            raise ConfigError(None, None, f"no recipe named {name_or_path!r}; bundled: {bundled_recipes()}")
        path = RECIPE_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise ConfigError(None, None, f"no recipe named {name_or_path!r}; bundled: {bundled_recipes()}")
    if not path.is_file():
        raise ConfigError(path, None, "recipe file does not exist")
    return parse_recipe(read_config_text(path), path)


def bundled_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPE_DIR.glob("*.toml"))


def topics_kind(recipe: Recipe) -> str:
    """What a recipe's stage takes as topics: "mentions" or "events" (unknown types count as mentions and fail
    later with their own error)."""
    builder = BUILDERS.get(recipe.system.get("type"))
    return builder.topics if builder else "mentions"
