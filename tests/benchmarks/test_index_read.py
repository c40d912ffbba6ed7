"""benchmarks/index_read.py: both readers timed on a built index, their passages checked equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexes.lucene import PASSAGES
from indexes.lucene_access import passage_span_reader

ROOT = Path(__file__).resolve().parents[2]


def test_both_readers_are_timed_and_agree(tiny_index, tmp_path):
    reader = passage_span_reader(tiny_index / PASSAGES)
    if reader is None:
        pytest.skip("the project jar predates io.hybrid.lucene.PassageSpans: rebuild it (mvn package)")
    reader.close()
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "index_read.py"), "--index", str(tiny_index),
                           "--rounds", "2", "--chunk", "3"], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(x["round"], x["reader"]) for x in lines[:-1]] == [(1, "java"), (1, "python"), (2, "java"),
                                                               (2, "python")]
    assert all(x["passages"] == 10 and x["passages_per_second"] > 0 for x in lines[:-1])
    assert lines[-1]["passages"] == 10 and lines[-1]["mentions"] > 0 and lines[-1]["speedup"] > 0
