"""The experiment command: runs, per-query file, table with p-values, byte-identical reruns."""

from __future__ import annotations

import json

from hybrid.experiment import main as experiment_main


def test_experiment_outputs_and_determinism(tiny_index, data_dir, tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        rc = experiment_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--qrels",
                              str(data_dir / "tiny_qrels.txt"), "--recipes", "bm25", "multifield", "cmr-doc",
                              "--output-dir", str(out), "--hits", "5"])
        assert rc == 0
        outs.append(out)
    for name in ("bm25", "multifield", "cmr-doc"):
        assert (outs[0] / f"{name}.trec").read_bytes() == (outs[1] / f"{name}.trec").read_bytes()
    results = json.loads((outs[0] / "results.json").read_text())
    assert results["baseline"] == "bm25"
    cell = results["results"]["all"]["multifield"]["AP@100"]
    assert {"mean", "delta", "t_p", "w_p"} <= set(cell) and 0 <= cell["t_p"] <= 1
    assert set(results["results"]) == {"all", "event", "entity"}
    rows = (outs[0] / "per_query.tsv").read_text().splitlines()
    assert rows[0] == "system\tqid\tkind\tmeasure\tvalue" and len(rows) == 1 + 3 * 3 * 4
    assert "| multifield |" in (outs[0] / "results.md").read_text()
