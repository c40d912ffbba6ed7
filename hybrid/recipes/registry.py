"""Named recipes: a system described as data (TOML), built into a retrieval stage.

A recipe file::

    name = "cmr-doc"
    description = "Coreferent Mention Retrieval 'doc': mention words + document text at 10%"
    paper = "Sankepally et al. 2018"
    [system]
    type = "multifield"
    weights = "mention=1.0,mention:context=0.1"
    same_kind = false

``system.type`` picks a builder from :data:`BUILDERS`; each builder declares the parameters it accepts
(:class:`hybrid.core.params.Param`: name, type, default, description). An unknown key or a value of the
wrong type is an error naming the file and line (a typo must never silently fall back to a default); the
builder receives every declared parameter, defaults filled in. Every system type also takes ``name`` (the
name its stage and run carry). Where a recipe names another recipe (``fuse.recipes``,
``safety-net.base``, ``pipeline.first``) it may give the system inline instead, as a table
(``base = {type = "multifield", weights = "mention=1"}``). Recipes shipped with the project live in
``hybrid/configs/recipes/`` and are addressed by name; ``python -m hybrid.recipes`` lists them and every
system type with its parameters.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hybrid.core.backend import backend_device
from hybrid.core.errors import ConfigError
from hybrid.core.formats.config import read_config_text, toml_loads
from hybrid.core.params import Param
from hybrid.core.registry import Component, Registry
from hybrid.core.stage import Stage

RECIPE_DIR = Path(__file__).resolve().parent.parent / "configs" / "recipes"
TOP_KEYS = {"name", "description", "paper", "system", "cost", "ci", "artifacts", "recommended"}
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
    """What builders need from the run, not from the recipe: the index, depth, threads, progress bars, the torch
    device, where artifacts live, and a cache of built stages."""

    index: Any  # SparseIndex (or a ShardedIndex: builders adapt their stages to it)
    hits: int = 100
    threads: int = 1
    built: dict[str, Stage] = field(default_factory=dict)
    artifacts: Path | None = None  # where relative artifact paths of recipes resolve (see hybrid.recipes.builders)
    progress: bool = False
    device: str | None = None
    #: Inference precision of the query encoders and readers the builders load (``hybrid.core.precision``).
    precision: str = "fp32"
    #: Inference backend of the bi-encoders and readers the builders load (``hybrid.core.backend``).
    backend: str = "torch"
    #: Artifact paths are taken as given (a command line the user typed) instead of being confined to
    #: ``artifacts`` (a recipe file, which must not reach outside it).
    plain_paths: bool = False

    def __post_init__(self) -> None:
        backend_device(self.backend, self.precision, self.device)  # refused here: it is no one builder's key


#: Every system type accepts this besides its own parameters.
NAME_PARAM = Param("name", str, None, "the name the stage (and its run's tag) carries")


@dataclass(frozen=True)
class Builder(Component):
    """A system type: ``target`` builds its stage from the resolved ``[system]`` table."""

    topics: str = "mentions"  # what its stage's topics are: "mentions" (marked mentions) or "events" (EventQuery)

    @property
    def build(self) -> Callable[[dict[str, Any], Context, RecipeSource], Stage]:
        return self.target

    @property
    def keys(self) -> frozenset[str]:
        return BUILDERS.keys_of(self.name)

    def notes(self) -> list[str]:
        return [f"Topics: {self.topics}; hits are documents."] if self.topics != "mentions" else []


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

    def for_type(self, kind: str) -> RecipeSource:
        """The source as seen by the builder of ``kind`` (a file's lines do not depend on it)."""
        return self


@dataclass(frozen=True)
class CommandLineSource(RecipeSource):
    """A system assembled from command-line options: errors name the option (``flags``: (system type, key) ->
    option) instead of a file line."""

    flags: dict[tuple[str, str], str] = field(default_factory=dict)
    system_type: str = ""

    def for_type(self, kind: str) -> RecipeSource:
        return replace(self, system_type=kind)

    def error(self, key: str | None, reason: str) -> ConfigError:
        flag = self.flags.get((self.system_type, key or ""))
        return ConfigError(None, None, f"{flag}: {reason}" if flag else reason)


#: The system types (``system.type``), each with its declared parameters; :mod:`hybrid.recipes.builders` fills it.
BUILDERS: Registry[Builder] = Registry("system type", Builder, common=[NAME_PARAM], fixed=["type"],
                                      describe="A recipe's [system] table: type = NAME and the type's parameters.")

#: Decorator: ``@register("kind", [Param(...), ...])`` makes ``kind`` a recipe ``system.type`` accepting those
#: parameters (plus ``type`` and ``name``); ``topics="events"`` marks a stage whose topics are event queries
#: (:mod:`hybrid.collect`) and whose hits are documents.
register = BUILDERS.register


def resolve_params(system: dict[str, Any], builder: Builder, source: RecipeSource) -> dict[str, Any]:
    """The system's values checked against the builder's parameters, defaults filled in (``type`` kept); an error
    names the key's line (a required key that is missing: the ``type`` line)."""
    return BUILDERS.resolve(builder.name, system, lambda key, reason: source.error(key or "type", reason),
                            what=f"system type {system.get('type')!r}")


@dataclass
class Recipe:
    name: str
    description: str
    system: dict[str, Any]
    source: RecipeSource
    paper: str = ""
    cost: str = ""  # e.g. "cheap" / "needs trained dense model (~20 min CPU)"
    ci: bool = False  # cheap enough for the CI regression run
    #: The kinds of trained artifact it needs under ``--artifacts`` (``dense``, ``ltr``, ``reader``, ...; empty: none),
    #: declared in the recipe so that ``python -m hybrid.recipes list`` can say so without building it.
    artifacts: tuple[str, ...] = ()
    #: The setting it is the recommended recipe for (``"raw text, no training"``), or empty.
    recommended: str = ""

    def build(self, context: Context) -> Stage:
        if self.name in context.built:
            return context.built[self.name]
        stage = build_system(self.system, context, self.source)
        stage.name = self.name
        context.built[self.name] = stage
        return stage


def build_system(system: dict[str, Any], context: Context, source: RecipeSource) -> Stage:
    """The stage of one ``[system]`` table (parameters checked, defaults filled, ``name`` applied)."""
    kind = BUILDERS.lookup(system.get("type"), lambda key, reason: source.error(key, reason), "type").name
    source = source.for_type(kind)
    values = resolve_params(system, BUILDERS[kind], source)
    stage = BUILDERS[kind].build(values, context, source)
    if values["name"] is not None:
        stage.name = values["name"]
    return stage


def parse_recipe(text: str, path: Path | None = None) -> Recipe:
    source = RecipeSource(path, text)
    try:
        data = toml_loads(text, path)
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
    artifacts = data.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(a, str) and a for a in artifacts):
        raise source.error("artifacts", "'artifacts' must be a list of artifact kinds (e.g. [\"dense\", \"ltr\"])")
    if not isinstance(data.get("recommended", ""), str):
        raise source.error("recommended", "'recommended' must be a string naming a setting (e.g. \"raw text, no "
                                          "training\")")
    return Recipe(name=data["name"], description=data.get("description", ""), system=data["system"], source=source,
                  paper=data.get("paper", ""), cost=data.get("cost", ""), ci=bool(data.get("ci", False)),
                  artifacts=tuple(artifacts), recommended=data.get("recommended", ""))


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
