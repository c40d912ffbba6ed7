"""Per-kind groups come from the topics' own ``kind`` field, never from a query id prefix (ECB+'s ``ev-``/``en-``
are only names): ids without a prefix still group, ``ev-x`` of kind entity is an entity, TSV topics give none."""

from __future__ import annotations

import json

from hybrid.cli.compare import main as compare_main
from hybrid.cli.eval import main as eval_main
from hybrid.evaluation.groups import kinds_from_topics

TOPICS = {"alpha": "event", "beta": "entity", "ev-x": "entity", "en-y": "event"}
QRELS = "alpha 0 d1 1\nbeta 0 d2 1\nev-x 0 d3 1\nen-y 0 d4 1\n"
RUN = "alpha Q0 d1 1 2 t\nbeta Q0 d9 1 2 t\nev-x Q0 d3 1 2 t\nen-y Q0 d8 1 2 t\nen-y Q0 d4 2 1 t\n"


def write(tmp_path):
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"qid": q, "text": "a <m> b </m>", "kind": k}) + "\n"
                                                   for q, k in TOPICS.items()))
    (tmp_path / "topics.tsv").write_text("".join(f"{q}\ta <m> b </m>\n" for q in TOPICS))
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN)
    return tmp_path


def test_kinds_are_the_topics_field_not_the_id(tmp_path):
    write(tmp_path)
    assert kinds_from_topics(tmp_path / "topics.jsonl") == TOPICS
    assert kinds_from_topics(tmp_path / "topics.tsv") == {}  # 'ev-x' / 'en-y' are names, not kinds


def test_eval_groups_by_the_topics_kind(tmp_path, capsys):
    write(tmp_path)
    base = [str(tmp_path / "qrels.txt"), str(tmp_path / "run.trec"), "--by-kind", "--json", "--measures", "RR@10"]
    assert eval_main([*base, "--topics", str(tmp_path / "topics.jsonl")]) == 0
    table = json.loads(capsys.readouterr().out)
    assert {g: table[g]["#q"] for g in table} == {"all": 4, "entity": 2, "event": 2}
    assert table["entity"]["RR@10"] == 0.5  # beta (missed) and ev-x (found at 1)
    assert table["event"]["RR@10"] == 0.75  # alpha (1) and en-y (found at 2)
    for extra in ([], ["--topics", str(tmp_path / "topics.tsv")]):
        assert eval_main([*base, *extra]) == 0
        out = capsys.readouterr()
        assert set(json.loads(out.out)) == {"all"}
        notes = [line for line in out.err.splitlines() if line.startswith("note:")]
        assert len(notes) == 1 and "4 of 4 judged queries have no kind" in notes[0]
        assert ("TSV topics carry no kind" in notes[0]) == bool(extra)


def test_compare_groups_by_the_topics_kind_and_says_once_when_it_cannot(tmp_path, capsys):
    write(tmp_path)
    out = tmp_path / "out"
    argv = ["--qrels", str(tmp_path / "qrels.txt"), f"a={tmp_path / 'run.trec'}", f"b={tmp_path / 'run.trec'}",
            "--measures", "RR@10", "--output-dir", str(out)]
    assert compare_main([*argv, "--topics", str(tmp_path / "topics.jsonl")]) == 0
    results = json.loads((out / "results.json").read_text())["results"]
    assert {g: results[g]["a"]["#q"] for g in results} == {"all": 4, "entity": 2, "event": 2}
    assert results["entity"]["a"]["RR@10"]["mean"] == 0.5
    assert "note:" not in capsys.readouterr().err
    assert compare_main([*argv, "--topics", str(tmp_path / "topics.tsv")]) == 0
    assert set(json.loads((out / "results.json").read_text())["results"]) == {"all"}
    err = capsys.readouterr().err
    assert err.count("note: no per-kind tables") == 1 and "TSV topics carry no kind" in err
