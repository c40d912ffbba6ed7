"""benchmarks/unjudged_sample.py: which first hits are unjudged, and the seeded TSV for the assessor."""

from __future__ import annotations

import csv
import json
import sys

from hybrid.core.formats.runs import write_run
from hybrid.core.records import Hit


def test_only_first_hits_that_are_neither_relevant_nor_judged_are_sampled(benchmark_script, tmp_path, monkeypatch):
    script = benchmark_script("unjudged_sample")
    corpus = [{"id": f"d{i}:0", "doc_id": f"d{i}", "text": f"Sentence {i} about the quake."} for i in range(6)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    topics = [{"qid": q, "passage_id": "d0:0", "start": 0, "end": 8, "kind": kind}
              for q, kind in (("ev1", "event"), ("ev2", "event"), ("ev3", "event"), ("en1", "entity"))]
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in topics))
    (tmp_path / "qrels.txt").write_text("ev1 0 d1:0 1\nev2 0 d1:0 1\nev3 0 d1:0 1\nen1 0 d1:0 1\nev3 0 d5:0 0\n")
    (tmp_path / "judged.txt").write_text("d2:0\n")
    # ev1: first hit relevant; ev2: first hit judged for every query; ev3: first hit judged for ev3 only
    # (its qrels list it with 0); en1: first hit unjudged - the only one to sample.
    first = {"ev1": "d1:0", "ev2": "d2:0", "ev3": "d5:0", "en1": "d4:0"}
    write_run({q: [Hit(docid=d, score=2.0), Hit(docid="d3:0", score=1.0)] for q, d in first.items()},
              tmp_path / "run.trec")
    monkeypatch.setattr(sys, "argv", ["unjudged_sample.py", "--run", str(tmp_path / "run.trec"),
                                      "--qrels", str(tmp_path / "qrels.txt"), "--judged", str(tmp_path / "judged.txt"),
                                      "--topics", str(tmp_path / "topics.jsonl"),
                                      "--corpus", str(tmp_path / "corpus.jsonl"), "--output", str(tmp_path / "s.tsv")])
    script.main()
    rows = list(csv.DictReader((tmp_path / "s.tsv").open(), delimiter="\t"))
    assert [(r["kind"], r["qid"], r["docid"], r["coreferent"]) for r in rows] == [("entity", "en1", "d4:0", "")]
    assert rows[0]["query"] == "[[Sentence]] 0 about the quake." and rows[0]["hit"] == "Sentence 4 about the quake."
