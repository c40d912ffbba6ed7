"""``python -m hybrid.recipes``: what can be built - the bundled recipes, and every system type with its parameters.

Examples::

    python -m hybrid.recipes                  # the bundled recipes, one line each (with the artifacts they need),
                                              # then the recommended ones
    python -m hybrid.recipes types            # every system type: its parameters, types, defaults, descriptions
    python -m hybrid.recipes types dense      # one system type
    python -m hybrid.recipes show fused-net   # one recipe's TOML

The parameter tables are generated from the builders' declarations (:class:`hybrid.core.params.Param`), the
same objects that check recipe files and give ``python -m hybrid.search`` its options and defaults.
"""

from __future__ import annotations

import sys

from hybrid.cli.common import add_subparser, make_parser, run_cli
from hybrid.core.errors import InputError
from hybrid.core.params import Param
from hybrid.recipes import BUILDERS, Recipe, bundled_recipes, load_recipe
from hybrid.recipes.builders import RERANKERS
from hybrid.recipes.registry import NAME_PARAM


def type_name(param: Param) -> str:
    kinds = param.type if isinstance(param.type, tuple) else (param.type,)
    names = {"dict": "table", "str": "string", "float": "number", "int": "integer"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in kinds)


def param_rows(params: list[Param]) -> list[str]:
    rows = ["| parameter | type | default | description |", "|---|---|---|---|"]
    for param in params:
        default = "(required)" if param.required else repr(param.default) if param.default is not None else "-"
        bounds = f" ({param.rule()})" if param.minimum is not None or param.choices else ""
        desc = f"{param.desc}{bounds}".replace("|", "\\|")
        rows.append(f"| `{param.name}` | {type_name(param)} | {default} | {desc} |")
    return rows


def describe_type(kind: str) -> str:
    builder = BUILDERS[kind]
    lines = [f"## {kind}", "", builder.doc or "", ""]
    if builder.topics != "mentions":
        lines += [f"Topics: {builder.topics}; hits are documents.", ""]
    lines += param_rows([*builder.params.values(), NAME_PARAM])
    if kind == "pipeline":
        for reranker in sorted(RERANKERS):
            rows = param_rows(RERANKERS.parameters(reranker))
            lines += ["", f"Reranker `{{type = \"{reranker}\", ...}}`:", "", *rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser("python -m hybrid.recipes", __doc__, epilog=True)
    sub = parser.add_subparsers(dest="command")
    add_subparser(sub, "list", help="the bundled recipes (the default)")
    types = add_subparser(sub, "types", help="system types and their parameters (markdown)")
    types.add_argument("type", nargs="*", help="only these system types")
    show = add_subparser(sub, "show", help="a recipe's TOML")
    show.add_argument("recipe", help="a bundled recipe's name or a TOML path")
    args = parser.parse_args(argv)
    if args.command == "types":
        unknown = [t for t in args.type if t not in BUILDERS]
        if unknown:
            raise InputError(None, None, f"unknown system type {unknown[0]!r}; known: {sorted(BUILDERS)}")
        print("\n\n".join(describe_type(kind) for kind in (args.type or sorted(BUILDERS))))
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
