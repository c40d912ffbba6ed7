"""The feature groups that wrap retrievers (hybrid.retrieval.providers) register from their own layer: whatever reads
a feature set from above (the recipes, python -m hybrid.ltr) finds them, in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RETRIEVER_GROUPS = {"bm25f", "dense", "fusion"}


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_ltr_alone_does_not_register_them_and_the_recipes_do():
    probe = ("import json; from features.pairs import registry; "
             "print(json.dumps(sorted(p.group for p in registry.providers())))")
    assert not RETRIEVER_GROUPS & set(json.loads(_python(f"import ltr; {probe}")))
    assert RETRIEVER_GROUPS <= set(json.loads(_python(f"import hybrid.recipes; {probe}")))


def test_the_ltr_command_lists_them():
    out = subprocess.run([sys.executable, "-m", "hybrid.ltr", "features"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert RETRIEVER_GROUPS <= {line.split("\t")[1] for line in out.splitlines() if line.count("\t") >= 2}
