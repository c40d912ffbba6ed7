"""docs/errors.md as the tests see it: every message a test provokes must be listed there."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def assert_documented(*fragments: str) -> None:
    """Fail unless each wording appears in docs/errors.md (so the page cannot drift from the code)."""
    docs = DOCS.read_text(encoding="utf-8").replace("\\|", "|")
    missing = [f for f in fragments if f not in docs]
    assert not missing, f"docs/errors.md lacks: {missing}"
