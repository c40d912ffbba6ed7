"""The regression command passes on the bundled sample and reports drift when an expectation moves."""

from __future__ import annotations

import re
from pathlib import Path

from hybrid.cli.regress import check, main

SAMPLE = Path(__file__).resolve().parents[2] / "regressions" / "sample.toml"


def test_sample_regression_passes_and_detects_drift(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_CACHE", str(tmp_path / "cache"))
    assert check(SAMPLE, output_dir=tmp_path / "ok") == []
    text = SAMPLE.read_text()
    drifted = re.sub(r'(\[expected\.multifield\.all\]\n"RR@10" = )([0-9.]+)', r"\g<1>0.1234", text)
    assert drifted != text
    bad = tmp_path / "drift.toml"
    bad.write_text(drifted)
    messages = check(bad, output_dir=tmp_path / "bad")
    assert messages and messages[0].startswith("multifield all RR@10: expected 0.1234")
    assert main([str(bad)]) == 1
