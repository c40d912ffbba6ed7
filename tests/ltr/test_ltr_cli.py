"""``python -m hybrid.ltr`` end to end on the tiny index: train, rerank, refusal, export, ablate, importance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.ltr import main
from hybrid.core.formats.runs import read_run

CONFIGS = Path(__file__).resolve().parents[2] / "ltr" / "configs"


@pytest.fixture(scope="module")
def first_stage(tiny_index, data_dir, tmp_path_factory):
    from hybrid.cli.search import main as search

    out = tmp_path_factory.mktemp("ltr-cli")
    run, spans = out / "mf.trec", out / "mf.spans.jsonl"
    assert search(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--model",
                   "multifield", "--hits", "10", "--output", str(run), "--spans", str(spans), "--quiet"]) == 0
    return {"dir": out, "run": run, "spans": spans, "topics": data_dir / "tiny_topics.jsonl",
            "qrels": data_dir / "tiny_qrels.txt", "index": tiny_index}


def inputs(fs: dict) -> list[str]:
    return ["--index", str(fs["index"]), "--topics", str(fs["topics"]), "--run", str(fs["run"]), "--spans",
            str(fs["spans"]), "--quiet"]


@pytest.fixture(scope="module")
def model(first_stage):
    out = first_stage["dir"] / "model"
    argv = ["train", *inputs(first_stage), "--qrels", str(first_stage["qrels"]), "--learner", "logistic",
            "--featureset", str(CONFIGS / "default.toml"), "--output", str(out), "--importance",
            str(first_stage["dir"] / "imp.png")]
    assert run_cli(main, argv) == 0
    return out


def test_train_writes_a_self_describing_model(model, first_stage):
    meta = json.loads((model / "ltr-model.json").read_text())
    assert meta["learner"] == "logistic" and meta["featureset"]["name"] == "default"
    assert meta["config"]["queries"] == 3 and meta["config"]["depth"] == 100
    assert (first_stage["dir"] / "imp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rerank_reorders_the_same_candidates(model, first_stage, capsys):
    out = first_stage["dir"] / "ltr.trec"
    argv = ["rerank", *inputs(first_stage), "--model", str(model), "--output", str(out), "--qrels",
            str(first_stage["qrels"])]
    assert run_cli(main, argv) == 0
    before, after = read_run(first_stage["run"]), read_run(out)
    assert set(after) == set(before)
    for qid in before:
        assert {h.docid for h in after[qid]} == {h.docid for h in before[qid]}
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["queries"] == 3 and meta["fingerprint"] and "features_s" in meta
    table = capsys.readouterr().err.split("reranked\n", 1)[1].splitlines()  # the table every command prints
    assert table[0].split() == ["group", "#q", "AP@100", "RR@10"]
    assert [row.split()[:2] for row in table[1:4]] == [["all", "3"], ["entity", "1"], ["event", "2"]]


def test_rerank_refuses_another_feature_set(model, first_stage, capsys):
    argv = ["rerank", *inputs(first_stage), "--model", str(model), "--output", str(first_stage["dir"] / "x.trec"),
            "--featureset", str(CONFIGS / "linear.toml")]
    assert run_cli(main, argv) == 2
    err = capsys.readouterr().err
    assert "is not the one this model was trained with" in err and "linear.toml" in err
    assert not (first_stage["dir"] / "x.trec").exists()


def test_export_letor(first_stage):
    out = first_stage["dir"] / "tiny.letor"
    argv = ["export", *inputs(first_stage), "--qrels", str(first_stage["qrels"]), "--output", str(out)]
    assert run_cli(main, argv) == 0
    lines = out.read_text().splitlines()[1:]
    assert len(lines) == sum(len(h) for h in read_run(first_stage["run"]).values())
    assert any(line.startswith("1 qid:") and "docid=b2:0" in line for line in lines)


def test_ablate_by_topic_cv(first_stage, capsys):
    argv = ["ablate", *inputs(first_stage), "--qrels", str(first_stage["qrels"]), "--learner", "logistic",
            "--cv", "2", "--output", str(first_stage["dir"] / "ablation.md")]
    assert run_cli(main, argv) == 0
    table = (first_stage["dir"] / "ablation.md").read_text()
    for group in ("full", "-string", "-type", "-chain", "-arguments", "-context", "-first_stage"):
        assert f"| {group} |" in table


def test_importance_command(model, first_stage, capsys):
    png = first_stage["dir"] / "imp2.png"
    argv = ["importance", *inputs(first_stage), "--qrels", str(first_stage["qrels"]), "--model", str(model),
            "--png", str(png), "--top", "5"]
    assert run_cli(main, argv) == 0
    out = capsys.readouterr().out
    assert "| feature | group | native (share) | permutation ΔAP@100 |" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_features_command_lists_documented_features(capsys):
    assert run_cli(main, ["features", "--group", "chain", "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| feature | group | description |"
    assert any(line.startswith("| chain_shared_phrase | chain | ") for line in lines)
    assert run_cli(main, ["features", "--group", "nope"]) == 2


def test_train_with_cv_prints_the_cv_means_in_the_common_table(first_stage, capsys):
    argv = ["train", *inputs(first_stage), "--qrels", str(first_stage["qrels"]), "--learner", "logistic",
            "--featureset", str(CONFIGS / "default.toml"), "--cv", "2", "--output", str(first_stage["dir"] / "cv")]
    assert run_cli(main, argv) == 0
    table = capsys.readouterr().err.split("logistic 2-fold CV\n", 1)[1].splitlines()
    assert table[0].split() == ["group", "#q", "AP@100", "RR@10"]
    cv = json.loads((first_stage["dir"] / "cv" / "ltr-model.json").read_text())["metrics"]["cv"]
    assert [row.split()[0] for row in table[1:4]] == ["all", "entity", "event"]
    assert float(table[1].split()[2]) == pytest.approx(cv["AP@100"]["all"], abs=1e-4)
