"""A few thousand mutated files through every parser (the engine of benchmarks/fuzz_parsers.py).

Only two outcomes are allowed: the file parses and its records satisfy the format's invariants, or
an InputError names the file. Each format must see both outcomes, so the fuzzer provably reaches
past the first check.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_parsers.py"


def load_fuzzer():
    if "fuzz_parsers" in sys.modules:
        return sys.modules["fuzz_parsers"]
    spec = importlib.util.spec_from_file_location("fuzz_parsers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_parsers"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_fuzzed_inputs_parse_cleanly_or_raise_input_error():
    fuzzer = load_fuzzer()
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

    fuzzer = load_fuzzer()
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, lines in fuzzer.SEEDS.items():
            path = Path(tmp) / fmt
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            fuzzer.CHECKS[fmt](path)
