"""The house rules of docs/architecture.md that import-linter does not check.

import-linter (``lint-imports`` in scripts/test.sh) enforces the layer direction, imports inside functions
included. These tests add what it cannot see: no file-level import circle, and no project import hidden
inside a function without a ``# deferred: <why>`` comment (a heavy dependency it loads, or an optional
module; never a cycle, which is broken instead).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hybrid", "features", "indexes", "ltr")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _project(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in PACKAGES


def _is_project_import(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and _project(node.module)
    return isinstance(node, ast.Import) and any(_project(a.name) for a in node.names)


def unexplained_deferred_imports(source: str) -> list[int]:
    """Lines of project imports inside functions that no ``# deferred: <why>`` explains.

    A deferred import is explained by the comment on its own line, or by one comment line directly above the
    run of adjacent import statements it belongs to (two imports deferred for one reason carry one comment).
    What a good reason is (docs/architecture.md): the import loads torch, faiss, the JVM, LightGBM,
    transformers or spaCy (or ir_measures / numpy where a light command would otherwise pay for them), or
    the module is optional; never a cycle, which is broken instead."""
    lines = source.split("\n")

    def says_why(text: str) -> bool:
        _, found, why = text.partition("# deferred:")
        return bool(found and why.strip())

    unexplained = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in (getattr(n, field) for n in ast.walk(fn) for field in ("body", "orelse", "finalbody")
                     if isinstance(getattr(n, field, None), list)):
            run_explained, previous = False, None
            for node in body:
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    run_explained, previous = False, None
                    continue
                above = lines[node.lineno - 2] if node.lineno >= 2 else ""
                if above.strip().startswith("#"):
                    run_explained = says_why(above)
                elif previous is None or previous.end_lineno != node.lineno - 1:
                    run_explained = False
                previous = node
                if _is_project_import(node) and not (run_explained or says_why(lines[node.end_lineno - 1])):
                    unexplained.append(node.lineno)
    return sorted(set(unexplained))


def test_project_imports_inside_functions_say_why():
    unexplained = [f"{path.relative_to(ROOT)}:{line}" for path in _modules().values()
                   for line in unexplained_deferred_imports(path.read_text(encoding="utf-8"))]
    assert not unexplained, f"project imports inside functions without a '# deferred: <why>' comment: {unexplained}"


def test_the_deferred_rule_flags_what_it_should():
    """The checker itself: an unexplained or unreasoned import is flagged, one comment covers its run."""
    source = """def ok():
    from hybrid.core import jvm  # deferred: loads the JVM
    # deferred: both load torch
    from features import encoder
    from ltr.reader import store
    import json
    from hybrid.core import java

def no_comment():
    from hybrid.core import jvm

def plain_comment():
    # the JVM
    from hybrid.core import jvm

def no_reason():
    from hybrid.core import jvm  # deferred:

def nested():
    if True:
        x = 1
        from hybrid.core import jvm
    import os  # not a project import: free
"""
    assert unexplained_deferred_imports(source) == [10, 14, 17, 22]


def test_no_import_circle_between_files():
    """Module-level imports (TYPE_CHECKING blocks aside) form no cycle; importing a module imports its packages."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        def visit(nodes, module=module):
            for node in nodes:
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    continue
                if isinstance(node, (ast.If, ast.Try)):
                    visit(node.body)
                    visit(getattr(node, "orelse", []))
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and _project(node.module):
                    targets = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                    for target in targets or [resolve(node.module)]:
                        if target and target != module:
                            edges[module].add(target)
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        target = resolve(a.name) if _project(a.name) else None
                        if target and target != module:
                            edges[module].add(target)

        visit(ast.parse(path.read_text(encoding="utf-8")).body)
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            dfs(node)
    assert not cycles, f"import circles between files: {cycles[:5]}"


#: top-level modules of hybrid/ that are not command entry points: the package's face and the Python API
NOT_ENTRY_POINTS = {"__init__", "api"}


def _entry_points() -> dict[Path, str]:
    """Every file that `python -m` runs, with the command module of hybrid/cli it hands over to: hybrid/<name>.py,
    and the __main__ of a package (`python -m hybrid.collect`)."""
    found = {path: path.stem for path in sorted((ROOT / "hybrid").glob("*.py")) if path.stem not in NOT_ENTRY_POINTS}
    for package in PACKAGES:
        found.update({path: path.parent.name for path in sorted((ROOT / package).rglob("__main__.py"))})
    return found


def _is_entry_point(tree: ast.Module, command: str) -> bool:
    """A docstring, then only (imports in any order): import sys; from hybrid.cli.common import run_cli;
    from hybrid.cli.<command> import main; if __name__ == "__main__": sys.exit(run_cli(main))."""
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    expected = ast.parse(f"import sys\nfrom hybrid.cli.common import run_cli\nfrom hybrid.cli.{command} import main\n"
                         'if __name__ == "__main__":\n    sys.exit(run_cli(main))\n').body
    return sorted(map(ast.dump, body)) == sorted(map(ast.dump, expected))


def test_every_command_is_found_by_one_rule():
    """Every command is hybrid/cli/<name>.py with a main(); `python -m hybrid.<name>` finds it through an entry
    point that holds nothing else, so no command logic hides outside hybrid/cli and the folder shows the layer."""
    commands = {p.stem for p in (ROOT / "hybrid" / "cli").glob("*.py")} - {"__init__", "common"}
    not_thin = [str(path.relative_to(ROOT)) for path, command in _entry_points().items()
                if not _is_entry_point(ast.parse(path.read_text(encoding="utf-8")), command)]
    assert not not_thin, f"an entry point only imports main from hybrid.cli.<name> and runs it: {not_thin}"
    assert sorted(set(_entry_points().values())) == sorted(commands), "every command has one entry point"
    without_main = [name for name in sorted(commands)
                    if not any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in
                               ast.parse((ROOT / "hybrid" / "cli" / f"{name}.py").read_text(encoding="utf-8")).body)]
    assert not without_main, f"command modules without main(): {without_main}"


#: what ltr/, indexes/ and features/ may import of hybrid/: the ground layer (hybrid.core, and the model store
#: hybrid.store, files only) is the one place below them that lives inside the hybrid/ folder
GROUND = ("hybrid.core", "hybrid.store")


def imports_above_the_ground(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of a hybrid.* module outside the ground layer, wherever it stands: module
    level, inside a function (deferred), under ``if TYPE_CHECKING``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != "hybrid" else [f"hybrid.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names
                  if name.split(".")[0] == "hybrid" and not any(name == g or name.startswith(g + ".") for g in GROUND)]
    return sorted(found)


def test_the_lower_folders_import_only_the_ground_of_hybrid():
    """Between top-level folders the only imports that run back up are those into the ground layer: ltr/, indexes/
    and features/ sit below hybrid's retrieval, commands and systems, and import of hybrid/ only hybrid.core and
    hybrid.store (docs/architecture.md). import-linter holds the layer order; this holds the folders to it, imports
    inside functions included."""
    upward = [f"{path.relative_to(ROOT)}:{line} imports {name}"
              for package in ("ltr", "indexes", "features") for path in sorted((ROOT / package).rglob("*.py"))
              for line, name in imports_above_the_ground(path.read_text(encoding="utf-8"))]
    assert not upward, f"imports from a lower folder up into hybrid/: {upward}"


def test_the_upward_rule_flags_what_it_should():
    source = """from hybrid.core.records import Rankings
from hybrid.store import models
import hybrid.core.jvm
from hybrid.retrieval.sparse import MultiFieldBM25
from hybrid import api, core
import hybrid.fusion.fuse as fuse

def later():
    from hybrid.evaluation.comparison import compare  # deferred: loads scipy

if TYPE_CHECKING:
    from hybrid.recipes import Context
from hybridish import x
"""
    assert imports_above_the_ground(source) == [
        (4, "hybrid.retrieval.sparse"), (5, "hybrid.api"), (6, "hybrid.fusion.fuse"),
        (9, "hybrid.evaluation.comparison"), (12, "hybrid.recipes")]
