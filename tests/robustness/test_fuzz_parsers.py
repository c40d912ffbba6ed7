"""A few thousand mutated files through every parser (the engine of fuzz_parsers.py, beside this file).

Only two outcomes are allowed: the file parses and its records satisfy the format's invariants, or
an InputError names the file. Each format must see both outcomes, so the fuzzer provably reaches
past the first check.
"""

from __future__ import annotations

from pathlib import Path

import fuzz_parsers as fuzzer


def test_fuzzed_inputs_parse_cleanly_or_raise_input_error():
    report = fuzzer.fuzz(3000, seed=20261122)
    crashes = "\n\n".join(f"{fmt}: {data[:200]!r}\n{trace}" for fmt, data, trace in report.crashes[:3])
    assert not report.crashes, f"{len(report.crashes)} crash(es):\n{crashes}"
    assert report.cases == 3000
    for fmt in fuzzer.CHECKS:
        assert report.outcomes[fmt, "ok"] > 0, f"{fmt}: no mutated input parsed"
        assert report.outcomes[fmt, "rejected"] > 0, f"{fmt}: no mutated input rejected"


def test_seeds_are_valid():
    """The unmutated seed files parse: rejections in the fuzz come from the mutations."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for fmt, lines in fuzzer.SEEDS.items():
            path = Path(tmp) / fmt
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            fuzzer.CHECKS[fmt](path)
