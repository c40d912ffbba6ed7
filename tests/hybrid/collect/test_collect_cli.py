"""``python -m hybrid.collect run`` on the tiny corpus (spaCy annotation), and an eventcoll recipe through
``hybrid.experiment`` on the tiny index: valid TREC document runs, meta and evidence."""

from __future__ import annotations

import json

from hybrid.cli.collect import main
from hybrid.core.formats.runs import read_run, read_run_meta


def test_cli_run_writes_run_meta_and_evidence(tiny_corpus, tmp_path):
    out = tmp_path / "run.trec"
    assert main(["run", "--corpus", str(tiny_corpus), "--name", "Tara Reid rehab", "--ranker", "entities",
                 "--output", str(out), "--no-progress", "--entities-cache", str(tmp_path / "ent.jsonl")]) == 0
    run = read_run(out)
    assert run["event"][0].docid in {"a1", "b2", "c3"}
    meta = read_run_meta(out)
    assert meta["config"]["ranker"] == "entities" and "versions" in meta
    evidence = [json.loads(line) for line in (tmp_path / "run.trec.evidence.jsonl").read_text().splitlines()]
    assert evidence[0]["related"] and evidence[0]["documents"][0]["docid"] == run["event"][0].docid
    assert (tmp_path / "ent.jsonl").is_file()


def test_cli_rejects_unmarked_seed(tiny_corpus, tmp_path, capsys):
    from hybrid.cli.common import run_cli

    code = run_cli(main, ["run", "--corpus", str(tiny_corpus), "--seed", "no markers", "--output",
                          str(tmp_path / "r.trec"), "--no-progress"])
    assert code == 2 and "no <m> ... </m> markers" in capsys.readouterr().err


def test_eventcoll_recipe_through_experiment(tiny_index, tmp_path):
    from hybrid.cli.experiment import main as experiment

    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"qid": "rehab", "name": "Tara Reid rehab"}) + "\n"
                      + json.dumps({"qid": "quake", "seeds": [{"passage_id": "d4:0", "start": 11, "end": 21}]}) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("rehab 0 a1 1\nrehab 0 b2 1\nquake 0 e5 1\n")
    out = tmp_path / "exp"
    assert experiment(["--index", str(tiny_index), "--topics", str(events), "--qrels", str(qrels), "--recipes",
                       "eventcoll-name", "eventcoll-entities", "--measures", "AP", "P@5", "--output-dir",
                       str(out)]) == 0
    run = read_run(out / "eventcoll-entities.trec")
    assert run["quake"][0].docid == "e5" and "d4" not in {h.docid for h in run["quake"]}
    results = json.loads((out / "results.json").read_text())
    assert results["results"]["all"]["eventcoll-entities"]["AP"]["mean"] > 0


def test_train_then_eventcoll_full_through_experiment(tiny_index, tmp_path):
    from hybrid.cli.experiment import main as experiment

    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(e) for e in (
        {"qid": "rehab", "name": "Tara Reid rehab"}, {"qid": "quake", "name": "Yushu earthquake"},
        {"qid": "lohan", "seeds": [{"passage_id": "c3:0", "start": 14, "end": 26}]})) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("rehab 0 a1 1\nrehab 0 b2 1\nquake 0 d4 1\nquake 0 e5 1\nlohan 0 a1 1\nlohan 0 b2 1\n")
    artifacts = tmp_path / "artifacts"
    assert main(["train", "--index", str(tiny_index), "--events", str(events), "--qrels", str(qrels),
                 "--output", str(artifacts / "eventcoll" / "full"), "--no-progress"]) == 0
    out = tmp_path / "exp"
    assert experiment(["--index", str(tiny_index), "--topics", str(events), "--qrels", str(qrels), "--recipes",
                       "eventcoll-name", "eventcoll-full", "--artifacts", str(artifacts), "--measures", "AP",
                       "--output-dir", str(out)]) == 0
    run = read_run(out / "eventcoll-full.trec")
    assert set(run) == {"rehab", "quake", "lohan"} and "c3" not in {h.docid for h in run["lohan"]}
