"""The house rules of docs/architecture.md that import-linter does not check.

import-linter (``lint-imports`` in scripts/test.sh) enforces the layer direction, imports inside functions
included. These tests add what it cannot see: no file-level import circle, and no project import hidden
inside a function without a comment saying why it is deferred (a heavy dependency, or a cycle).
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


def test_project_imports_inside_functions_say_why():
    unexplained = []
    for path in _modules().values():
        lines = path.read_text(encoding="utf-8").split("\n")
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and _project(node.module) or (
                    isinstance(node, ast.Import) and any(_project(a.name) for a in node.names)
                ):
                    same_line = "#" in lines[node.end_lineno - 1]
                    above = lines[node.lineno - 2].strip().startswith("#")
                    if not (same_line or above):
                        unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unexplained, f"project imports inside functions without a comment saying why: {unexplained}"


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
