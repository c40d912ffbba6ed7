"""``python -m hybrid.regress``: re-run a benchmark's recipes and fail when a score drifts.

A regression file (TOML)::

    name = "sample"
    index = "sample"                      # or an index directory
    corpus = "..."                        # optional: build the index here first when missing
    annotation = { annotation = "corpus" } # optional: how that index is annotated (AnnotationConfig fields)
    topics = "sample"                     # or a topics file; relative paths resolve against this file
    qrels = "sample"
    tolerance = 1e-3
    [expected.multifield.all]             # expected.<recipe>.<group>.<measure> = value
    "AP@100" = 0.6978

``--update`` rewrites the expected values from the current run (review the diff before committing).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from features.annotate import AnnotationConfig
from hybrid.cli.common import make_parser, run_cli
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.formats.config import read_config_text, toml_loads
from hybrid.core.outputs import Input, Kind, Output, Writes
from indexes.lucene import HYBRID_INDEX, IndexConfig, build_index

KEYS = {"name", "description", "index", "corpus", "topics", "qrels", "tolerance", "hits", "recipes", "expected",
        "runtime", "annotation"}


def _resolve(base: Path, value: str) -> str:
    if value == "sample":
        return value
    path = Path(value)
    return str(path if path.is_absolute() else (base / path).resolve())


def load(path: Path) -> dict:
    try:
        data = toml_loads(read_config_text(path), path)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"invalid TOML: {exc}") from None
    unknown = set(data) - KEYS
    if unknown:
        raise ConfigError(path, None, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(KEYS)}")
    for key in ("topics", "qrels", "expected"):
        if key not in data:
            raise ConfigError(path, None, f"missing '{key}'")
    return data


def _looks_like_regression(path: Path) -> bool:
    """A regression file: TOML with an ``expected`` table."""
    try:
        return isinstance(toml_loads(read_config_text(path), path).get("expected"), dict)
    except (ConfigError, tomllib.TOMLDecodeError, OSError):
        return False


#: What ``--update`` rewrites, for the output policy: a regression file, in place, and nothing else.
REGRESSION_FILE = Kind("regression file", looks_like=_looks_like_regression)


def writes(path: Path, data: dict, update: bool) -> Writes:
    """What one regression writes (its own file with ``--update``; the index when it builds one) and reads,
    for the output policy (hybrid.core.outputs): an update never rewrites the topics, qrels or corpus."""
    base = path.parent
    named = {key: _resolve(base, data[key]) for key in ("topics", "qrels", "corpus", "index")
             if isinstance(data.get(key), str) and data[key] != "sample"}
    outputs = [Output(f"--update {path}", path if update else None, REGRESSION_FILE, replace=True)]
    if "index" in named and not Path(named["index"]).exists() and "corpus" in named:
        outputs.append(Output(f"{path}: index", named.pop("index"), HYBRID_INDEX))
    return Writes("hybrid.regress", outputs, [Input(f"{path}: {key}", value) for key, value in named.items()])


def check(path: Path, update: bool = False, output_dir: Path | None = None) -> list[str]:
    """Run the regression; return the list of drift messages (empty = pass)."""
    import tempfile

    from hybrid.cli.experiment import main as experiment_main  # deferred: importing it loads ir_measures, numpy, scipy

    data = load(path)
    writes(path, data, update).check()
    base = path.parent
    recipes = data.get("recipes") or sorted(data["expected"])
    index = data.get("index", "sample")
    if index != "sample":
        index = _resolve(base, index)
        if not Path(index).exists() and data.get("corpus"):
            # [annotation]: AnnotationConfig fields (an index of gold annotation must say so: annotation="corpus")
            annotation = AnnotationConfig(**data.get("annotation", {}))
            build_index(IndexConfig(corpus=_resolve(base, data["corpus"]), annotation=annotation, threads=2), index)
    out = output_dir or Path(tempfile.mkdtemp(prefix="regress-"))
    argv = ["--topics", _resolve(base, data["topics"]), "--recipes", *recipes, "--output-dir", str(out),
            "--hits", str(data.get("hits", 100))]
    if data["qrels"] != "sample":
        argv += ["--qrels", _resolve(base, data["qrels"])]
    if index != "sample":
        argv += ["--index", index]
    experiment_main(argv)
    import json

    results = json.loads((out / "results.json").read_text())["results"]
    tolerance = float(data.get("tolerance", 1e-3))
    drift = []
    for recipe, groups in data["expected"].items():
        for group, measures in groups.items():
            for measure, expected in measures.items():
                got = results[group][recipe][measure]["mean"]
                if abs(got - expected) > tolerance:
                    drift.append(f"{recipe} {group} {measure}: expected {expected:.4f}, got {got:.4f}")
    if update:
        data["expected"] = {
            recipe: {group: {m: round(cells[m]["mean"], 4) for m in cells if m != "#q"}
                     for group, by_recipe in results.items() for cells in [by_recipe[recipe]]}
            for recipe in recipes
        }
        _write(path, data)
    return drift


def _write(path: Path, data: dict) -> None:
    lines = []
    for key, value in data.items():
        if key == "expected":
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    for recipe, groups in data["expected"].items():
        for group, measures in groups.items():
            lines.append(f"\n[expected.{_toml_key(recipe)}.{group}]")
            for measure, value in measures.items():
                lines.append(f'"{measure}" = {value}')
    with atomic_write(path) as out:
        out.write("\n".join(lines) + "\n")


def _toml_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else f'"{key}"'


def _toml_value(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def main(argv: list[str] | None = None) -> int:
    p = make_parser("python -m hybrid.regress", __doc__, epilog=True)
    p.add_argument("configs", nargs="+", help="regression TOML files")
    p.add_argument("--update", action="store_true", help="rewrite expected values from this run")
    args = p.parse_args(argv)
    failed = False
    for config in args.configs:
        drift = check(Path(config), update=args.update)
        if drift and not args.update:
            failed = True
            print(f"FAIL {config}:\n  " + "\n  ".join(drift), file=sys.stderr)
        else:
            print(f"{'UPDATED' if args.update else 'PASS'} {config}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
