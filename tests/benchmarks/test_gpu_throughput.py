"""benchmarks/gpu_throughput.py --smoke: every row of the GPU benchmark runs at tiny sizes on any machine, so the
script a GPU session runs (issue 39) is known to work before a GPU is lent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from indexes.faiss_index import faiss_has_gpu

ROOT = Path(__file__).resolve().parents[2]
ROWS = ("matrix products at the encoder's shapes (fp32;", "matrix products at the encoder's shapes (fp32, onnx;",
        "encode passages (fp32)", "encode passages (fp32, onnx)", "reader score_pairs (fp32)", "reader pair encoding",
        "bi-encoder training", "FAISS exact (flat)", "FAISS HNSW")


def test_smoke_measures_every_row_and_marks_missing_gpu_cells(tmp_path):
    out = tmp_path / "speed"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_throughput.py"), "--smoke", "--device", "cpu",
                           "--backends", "torch", "onnx", "--output", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    rows = {row["row"]: row for row in report["rows"]}
    gpu = faiss_has_gpu()
    for name in ROWS:
        (row,) = [r for label, r in rows.items() if label.startswith(name)]
        measured = [v for key, v in row.items() if key in ("full path", "forward alone", "CPU", "GFLOP/s")
                    and v is not None]
        assert measured and all(v > 0 for v in measured), row
        if not gpu:
            assert row.get("GPU") is None  # no GPU: no GPU cell is filled in
    table = out.with_suffix(".md").read_text()
    assert all(name in table for name in ROWS)
