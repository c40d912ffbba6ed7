"""``python -m hybrid.recipes``: what can be built - the bundled recipes, and every component with its parameters.

Examples::

    python -m hybrid.recipes                  # the bundled recipes, one line each (with the artifacts they need),
                                              # then the recommended ones
    python -m hybrid.recipes types            # every component: system types, reranker types, fusion methods,
                                              # learners and feature groups, with their parameters, types,
                                              # defaults and descriptions
    python -m hybrid.recipes types dense      # the components named dense (a system type and a feature group)
    python -m hybrid.recipes show fused-net   # one recipe's TOML

The parameter tables are generated from the components' declarations (:class:`hybrid.core.params.Param` in a
:class:`hybrid.core.registry.Registry`), the same objects that check recipe files, fill in their defaults and
give ``python -m hybrid.search`` its options and defaults.
"""

from __future__ import annotations

import sys

from hybrid.cli.common import add_subparser, make_parser, run_cli
from hybrid.core.errors import InputError
from hybrid.core.params import Param, suggestion
from hybrid.core.registry import REGISTRIES, Registry
from hybrid.recipes import Recipe, bundled_recipes, load_recipe


def type_name(param: Param) -> str:
    kinds = param.type if isinstance(param.type, tuple) else (param.type,)
    names = {"dict": "table", "str": "string", "float": "number", "int": "integer"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in kinds)


def param_rows(params: list[Param], word: str = "parameter") -> list[str]:
    rows = [f"| {word} | type | default | description |", "|---|---|---|---|"]
    for param in params:
        default = "(required)" if param.required else repr(param.default) if param.default is not None else "-"
        bounds = f" ({param.rule()})" if param.minimum is not None or param.choices else ""
        desc = f"{param.desc}{bounds}".replace("|", "\\|")
        rows.append(f"| `{param.name}` | {type_name(param)} | {default} | {desc} |")
    return rows


#: The kinds of component, in the order ``types`` prints them (a registry made later is printed after them).
KINDS = ("system type", "reranker type", "fusion method", "learner", "feature group")


def registries() -> list[Registry]:
    """Every registry of components, in :data:`KINDS` order."""
    return sorted(REGISTRIES.values(), key=lambda r: KINDS.index(r.kind) if r.kind in KINDS else len(KINDS))


def describe_component(registry: Registry, name: str) -> str:
    """One component: its name, what it is, its notes and its parameter table (the kind's common ones too)."""
    component = registry[name]
    lines = [f"## {name}", "", component.doc or "", ""]
    if component.notes():
        lines += [" ".join(component.notes()), ""]
    word = registry.noun if registry.noun != "key" else "parameter"  # a feature group has options
    params = registry.parameters(name)
    lines += param_rows(params, word) if params else [f"No {word}s."]
    return "\n".join(lines)


def describe_kind(registry: Registry, names: list[str] | None = None) -> str:
    """A kind's heading and what it is, then each of its components (``names``: only these)."""
    title = f"# {registry.kind[0].upper()}{registry.kind[1:]}s"
    parts = [f"{title}\n\n{registry.describe}" if registry.describe else title]
    parts += [describe_component(registry, name) for name in (names or sorted(registry))]
    return "\n\n".join(parts)


def describe_types(names: list[str]) -> str:
    """Every component of every kind, or those named (a name may be a component of several kinds)."""
    known = {name for registry in registries() for name in registry}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(None, None, f"no component named {unknown[0]!r}; known: {', '.join(sorted(known))}"
                                     f"{suggestion(unknown[0], sorted(known))}")
    parts = []
    for registry in registries():
        chosen = [name for name in names if name in registry] if names else sorted(registry)
        if chosen:
            parts.append(describe_kind(registry, chosen))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser("python -m hybrid.recipes", __doc__, epilog=True)
    sub = parser.add_subparsers(dest="command")
    add_subparser(sub, "list", help="the bundled recipes (the default)")
    types = add_subparser(sub, "types", help="every component (system types, reranker types, fusion methods, learners, "
                                             "feature groups) and its parameters (markdown)")
    types.add_argument("type", nargs="*", help="only the components of these names")
    show = add_subparser(sub, "show", help="a recipe's TOML")
    show.add_argument("recipe", help="a bundled recipe's name or a TOML path")
    args = parser.parse_args(argv)
    if args.command == "types":
        print(describe_types(args.type))
    elif args.command == "show":
        print(load_recipe(args.recipe).source.text, end="")
    else:
        print(list_table([load_recipe(name) for name in bundled_recipes()]))
    return 0


def list_table(recipes: list[Recipe]) -> str:
    """One aligned row per recipe (name, system type, the artifacts it needs, description), then one line per
    recommended setting: which recipe to start from, as the recipes themselves declare (``recommended``)."""
    rows = [("recipe", "type", "artifacts", "description")]
    rows += [(r.name, str(r.system.get("type", "?")), ", ".join(r.artifacts) or "-", r.description) for r in recipes]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
             for row in rows]
    recommended = sorted(((f"recommended for {r.recommended}:", r) for r in recipes if r.recommended),
                         key=lambda pair: pair[0])
    if recommended:
        width = max(len(label) for label, _ in recommended)
        lines.append("")
        for label, r in recommended:
            needs = f"needs artifacts: {', '.join(r.artifacts)}" if r.artifacts else "needs no artifacts"
            lines.append(f"{label.ljust(width)} {r.name} ({needs})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(run_cli(main))
