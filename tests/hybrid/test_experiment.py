"""The experiment command: runs, per-query file, table with p-values, byte-identical reruns."""

from __future__ import annotations

import json

import pytest

from hybrid.cli.experiment import main as experiment_main


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


def test_judged_list_adds_the_condensed_comparison(tiny_index, data_dir, tmp_path, capsys):
    from hybrid.cli.eval import main as eval_main

    corpus = [json.loads(line)["id"] for line in (data_dir / "tiny_corpus.jsonl").read_text().splitlines()]
    judged = tmp_path / "judged.txt"
    judged.write_text("\n".join(corpus[::2]) + "\n")  # every other passage is judged for every query
    out = tmp_path / "exp"
    assert experiment_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--qrels",
                            str(data_dir / "tiny_qrels.txt"), "--recipes", "bm25", "multifield", "--output-dir",
                            str(out), "--hits", "5", "--judged", str(judged), "--measures", "AP@100",
                            "Judged@10"]) == 0
    capsys.readouterr()
    results = json.loads((out / "results.json").read_text())
    assert results["condensed"]["judged"] == str(judged)
    assert (out / "per_query.condensed.tsv").is_file()
    assert "Condensed lists" in (out / "results.condensed.md").read_text()
    for name in ("bm25", "multifield"):  # both tables are what hybrid.eval gives on the written run
        for extra, key in (([], "results"), (["-J"], "condensed")):
            assert eval_main(["--qrels", str(data_dir / "tiny_qrels.txt"), "--run", str(out / f"{name}.trec"),
                              "--judged", str(judged), "--json", "--measures", "AP@100", "Judged@10", *extra]) == 0
            table = json.loads(capsys.readouterr().out)["all"]
            got = results[key]["all"][name] if key == "results" else results["condensed"]["results"]["all"][name]
            assert got["AP@100"]["mean"] == pytest.approx(table["AP@100"])
            assert got["Judged@10"]["mean"] == pytest.approx(table["Judged@10"])
    assert results["condensed"]["results"]["all"]["bm25"]["Judged@10"]["mean"] == pytest.approx(1.0)
