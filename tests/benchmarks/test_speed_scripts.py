"""benchmarks/gpu_throughput.py --smoke (every GPU row at tiny sizes, on the CPU) and dense_net_speed.py compare."""

from __future__ import annotations

import json


def test_gpu_throughput_smoke_measures_every_row(benchmark_script, tiny_bert, tmp_path):
    script = benchmark_script("gpu_throughput")
    out = tmp_path / "speed-gpu"
    assert script.main(["--smoke", "--device", "cpu", "--encoder", str(tiny_bert), "--reader-base", str(tiny_bert),
                        "--precisions", "bf16", "--output", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    rows = {row["row"].split(" (")[0].split(",")[0]: row for row in report["rows"]}
    assert set(rows) == {"encode passages", "reader score_pairs", "bi-encoder training", "FAISS exact",
                         "FAISS HNSW"}
    assert [r["row"] for r in report["rows"][:2]] == ["encode passages (fp32)", "encode passages (bf16)"]
    for row in report["rows"]:
        measured = [row[k] for k in ("full path", "forward alone", "CPU") if row.get(k) is not None]
        assert measured and all(v > 0 for v in measured), row
        assert row.get("GPU") is None  # no GPU here: the GPU column stays empty
    assert "| encode passages (fp32) | passages/s |" in out.with_suffix(".md").read_text()


def test_compare_accepts_near_tie_swaps_only(benchmark_script):
    script = benchmark_script("dense_net_speed")
    before = [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]
    assert script.compare_lists(before, before, 1e-5) is None
    assert script.compare_lists(before, [("a", 3.0), ("c", 2.0), ("b", 2.0 + 1e-7), ("d", 1.0)], 1e-5) is None
    assert "not a near-tie" in script.compare_lists([("a", 2.0), ("b", 1.0)], [("b", 2.0), ("a", 1.0)], 1e-5)
    assert "score" in script.compare_lists(before, [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.1)], 1e-5)
    assert "hits" in script.compare_lists(before, before[:3], 1e-5)
