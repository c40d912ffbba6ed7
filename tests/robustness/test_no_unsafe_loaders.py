"""No code path may load an artifact in a way that runs code from it.

Models, indexes, runs and configs come from other people's machines; a pickle (``pickle.load``,
``torch.load`` without ``weights_only=True``, ``joblib.load``, ``numpy.load(allow_pickle=True)``), a
TorchScript archive, a YAML tag, ``eval``/``exec`` or ``trust_remote_code`` turns such a file into a
program. Weights load from safetensors, everything else from JSON/TOML/text. This test parses every
Python file of the repository (AST, so strings and comments do not count) and fails on any of these
calls, so future code cannot regress. ``test_scanner_flags_each_forbidden_form`` shows the scanner
catching each form, so a silent scanner cannot pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "target", "node_modules", "__pycache__", ".ruff_cache",
             ".pytest_cache", ".hypothesis"}

#: Calls that deserialise code-carrying formats, whatever their arguments.
FORBIDDEN = {
    "pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle.load", "_pickle.loads", "cPickle.load",
    "cPickle.loads", "dill.load", "dill.loads", "cloudpickle.load", "cloudpickle.loads", "joblib.load",
    "shelve.open", "marshal.load", "marshal.loads", "pandas.read_pickle", "torch.jit.load",
    "yaml.unsafe_load", "yaml.full_load", "yaml.unsafe_load_all", "yaml.full_load_all", "numpy.lib.format.read_array",
}
BUILTINS = {"eval", "exec"}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_const(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


class Scanner(ast.NodeVisitor):
    """Collects (line, problem) for every unsafe loading call in one module."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.problems: list[tuple[int, str]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(
                ".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.generic_visit(node)

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head, head)
        full = {"np": "numpy", "pd": "pandas"}.get(full, full)
        return f"{full}.{rest}" if rest else full

    def visit_Call(self, node: ast.Call) -> None:
        raw = _dotted(node.func)
        name = self.resolve(raw) if raw else None
        problem = None
        if isinstance(node.func, ast.Name) and node.func.id in BUILTINS and node.func.id not in self.aliases:
            problem = f"{node.func.id}() runs code"
        elif name in FORBIDDEN:
            problem = f"{name} can run code from the file"
        elif name == "torch.load" and not _is_const(_keyword(node, "weights_only"), True):
            problem = "torch.load without weights_only=True unpickles arbitrary objects"
        elif name in ("yaml.load", "yaml.load_all"):
            loader = _keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
            if not (loader is not None and (_dotted(loader) or "").endswith("SafeLoader")):
                problem = f"{name} without Loader=yaml.SafeLoader constructs arbitrary objects"
        elif name == "numpy.load" and not _is_const(_keyword(node, "allow_pickle"), False) and (
                _keyword(node, "allow_pickle") is not None):
            problem = "numpy.load with allow_pickle unpickles object arrays"
        if problem is None:
            trust = _keyword(node, "trust_remote_code")
            if trust is not None and not _is_const(trust, False):
                problem = "trust_remote_code runs Python shipped with a model"
            elif _is_const(_keyword(node, "weights_only"), False):
                problem = "weights_only=False unpickles arbitrary objects"
            elif _is_const(_keyword(node, "use_safetensors"), False):
                problem = "use_safetensors=False loads pickled weights"
        if problem:
            self.problems.append((node.lineno, problem))
        self.generic_visit(node)


def scan_source(source: str) -> list[tuple[int, str]]:
    scanner = Scanner()
    scanner.visit(ast.parse(source))
    return scanner.problems


def python_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if not any(part in SKIP_DIRS or (part.startswith(".") and part != ".") for part in rel.parts[:-1]):
            files.append(path)
    return sorted(files)


def test_repository_has_no_unsafe_loaders() -> None:
    files = python_files()
    assert len(files) > 20 and ROOT / "hybrid" / "core" / "atomic.py" in files
    found = []
    for path in files:
        try:
            problems = scan_source(path.read_text(encoding="utf-8"))
        except SyntaxError as error:  # a file another helper is halfway through writing
            pytest.fail(f"{path.relative_to(ROOT)} does not parse: {error}")
        found += [f"{path.relative_to(ROOT)}:{line}: {problem}" for line, problem in problems]
    assert not found, "unsafe artifact loading:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet", [
    "import pickle\npickle.load(open('m.pkl', 'rb'))",
    "import pickle as p\np.loads(b'')",
    "from pickle import loads\nloads(b'')",
    "import joblib\njoblib.load('m.joblib')",
    "import torch\ntorch.load('m.pt')",
    "import torch\ntorch.load('m.pt', weights_only=False)",
    "import torch\ntorch.jit.load('m.pt')",
    "import yaml\nyaml.load(open('c.yaml'))",
    "import yaml\nyaml.load(open('c.yaml'), Loader=yaml.Loader)",
    "import yaml\nyaml.full_load('x')",
    "import numpy as np\nnp.load('a.npy', allow_pickle=True)",
    "import pandas as pd\npd.read_pickle('x')",
    "eval(open('config.py').read())",
    "exec(open('config.py').read())",
    "from transformers import AutoModel\nAutoModel.from_pretrained('x', trust_remote_code=True)",
    "from transformers import AutoModel\nAutoModel.from_pretrained('x', trust_remote_code=flag)",
    "from transformers import AutoModel\nAutoModel.from_pretrained('x', use_safetensors=False)",
    "import marshal\nmarshal.loads(b'')",
])
def test_scanner_flags_each_forbidden_form(snippet: str) -> None:
    assert len(scan_source(snippet)) == 1


@pytest.mark.parametrize("snippet", [
    "import torch\ntorch.load('m.pt', weights_only=True)",
    "import yaml\nyaml.load(open('c.yaml'), Loader=yaml.SafeLoader)",
    "import yaml\nyaml.safe_load(open('c.yaml'))",
    "import numpy as np\nnp.load('a.npy')\nnp.load('a.npz', allow_pickle=False)",
    "from safetensors.torch import load_file\nload_file('m.safetensors')",
    "import json, tomllib\njson.load(open('a'))\ntomllib.loads('')",
    "model.eval()",
    "from transformers import AutoModel\nAutoModel.from_pretrained('x', trust_remote_code=False)",
    "text = 'pickle.load(f) and eval(x) in a string'",
])
def test_scanner_accepts_safe_forms(snippet: str) -> None:
    assert scan_source(snippet) == []
