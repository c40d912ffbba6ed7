"""benchmarks/pool_assess.py: pooling, blind items with controls, and scoring on completed qrels."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from hybrid.core.errors import InputError
from hybrid.core.formats.runs import write_run
from hybrid.core.records import Hit


def _files(tmp_path):
    corpus = [{"id": f"d{i}:{j}", "doc_id": f"d{i}", "text": f"Doc {i} sentence {j} about the quake."}
              for i in range(5) for j in range(2)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    topics = [{"qid": "ev1", "passage_id": "d0:0", "start": 0, "end": 3, "kind": "event"},
              {"qid": "en1", "passage_id": "d0:0", "start": 4, "end": 5, "kind": "entity"}]
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in topics))
    (tmp_path / "qrels.txt").write_text("ev1 0 d1:0 1\nen1 0 d1:1 1\n")
    (tmp_path / "judged.txt").write_text("d2:0\n")

    def run(lists):
        return {q: [Hit(docid=d, score=float(10 - r)) for r, d in enumerate(ds)] for q, ds in lists.items()}

    write_run(run({"ev1": ["d1:0", "d2:0", "d3:0"], "en1": ["d3:0", "d1:1"]}), tmp_path / "a.trec")
    write_run(run({"ev1": ["d4:0", "d1:0"], "en1": ["d1:1", "d4:0"]}), tmp_path / "b.trec")
    return ["--runs", f"a={tmp_path / 'a.trec'}", f"b={tmp_path / 'b.trec'}", "--qrels", str(tmp_path / "qrels.txt"),
            "--judged", str(tmp_path / "judged.txt"), "--topics", str(tmp_path / "topics.jsonl"),
            "--corpus", str(tmp_path / "corpus.jsonl")]


def _pool(script, monkeypatch, common, out, *extra):
    """Run ``pool_assess.py pool`` at depth 2, five queries per kind."""
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "pool", *common, "--per-kind", "5", "--depth", "2",
                                      "--output-dir", str(out), *extra])
    script.main()


def _read(path):
    return list(csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"))


def _write(path, rows):
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, list(rows[0]), delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_pool_writes_blind_items_and_scores_on_completed_qrels(benchmark_script, tmp_path, monkeypatch):
    script = benchmark_script("pool_assess")
    common = _files(tmp_path)
    pool_dir = tmp_path / "pool"
    _pool(script, monkeypatch, common, pool_dir)
    key, items = _read(pool_dir / "key.tsv"), _read(pool_dir / "items.tsv")
    # depth 2 pools ev1: d1:0 (relevant), d2:0 (judged), d4:0 (unjudged); en1: d3:0, d1:1 (relevant), d4:0
    pooled = sorted((r["qid"], r["docid"]) for r in key if r["source"] == "pool")
    assert pooled == [("en1", "d3:0"), ("en1", "d4:0"), ("ev1", "d4:0")]
    controls = {r["qid"]: (r["docid"], r["label"]) for r in key if r["source"] == "control"}
    assert controls["en1"] == ("d1:1", "yes")  # the only known label in en1's pool
    assert controls["ev1"] in {("d1:0", "yes"), ("d2:0", "no")}
    # the assessor's file names no passage, query or system, and no label
    assert list(items[0]) == ["item", "coreferent", "note", "query", "query_lead", "hit", "hit_lead"]
    assert [r["item"] for r in items] == [r["item"] for r in key]
    assert all(not r["coreferent"] for r in items)
    flat = (pool_dir / "items.tsv").read_text()
    assert "d4:0" not in flat and "ev1" not in flat and "control" not in flat
    by_item = {r["item"]: r for r in items}
    row = next(r for r in key if r["qid"] == "ev1" and r["source"] == "pool")
    assert by_item[row["item"]]["query"] == "[[Doc]] 0 sentence 0 about the quake."
    assert by_item[row["item"]]["hit"] == "Doc 4 sentence 0 about the quake."
    assert by_item[row["item"]]["hit_lead"] == "Doc 4 sentence 0 about the quake. / Doc 4 sentence 1 about the quake."

    # the assessor: ev1's d4:0 and en1's d3:0 coreferent, en1's d4:0 not; controls as the qrels say
    answers = {("ev1", "d4:0"): "yes", ("en1", "d3:0"): "yes", ("en1", "d4:0"): "no"}
    for r in key:
        by_item[r["item"]]["coreferent"] = r["label"] or answers[(r["qid"], r["docid"])]
    _write(tmp_path / "done.tsv", items)
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "score", *common, "--pool-dir", str(pool_dir),
                                      "--assessed", str(tmp_path / "done.tsv"), "--output", str(tmp_path / "out"),
                                      "--qrels-out", str(tmp_path / "full.qrels")])
    script.main()
    summary = json.loads((tmp_path / "out.json").read_text())
    assert summary["controls"]["accuracy"] == 1.0 and summary["controls"]["n"] == 2
    assert summary["relevant_added"] == {"event": 1, "entity": 1}
    std, full = summary["results"]["standard"], summary["results"]["completed"]
    assert std["event"]["b"]["RR@10"]["mean"] == 0.5 and full["event"]["b"]["RR@10"]["mean"] == 1.0
    assert std["entity"]["a"]["RR@10"]["mean"] == 0.5 and full["entity"]["a"]["RR@10"]["mean"] == 1.0
    assert full["event"]["a"]["RR@10"]["mean"] == 1.0  # a's first hit was already relevant
    assert full["entity"]["b"]["P@10"]["mean"] == pytest.approx(0.1)  # d1:1 relevant, d4:0 assessed no
    assert full["event"]["b"]["Judged@10"]["mean"] == 1.0 and std["event"]["b"]["Judged@10"]["mean"] == 0.5
    assert (tmp_path / "full.qrels").read_text().splitlines() == [
        "en1 0 d1:1 1", "en1 0 d3:0 1", "en1 0 d4:0 0", "ev1 0 d1:0 1", "ev1 0 d4:0 1"]
    assert summary["runs"]["a"]["pooled"] and summary["runs"]["b"]["pooled"]

    # a stricter reading: a yes the assessor called doubtful counts as no
    for r in items:
        if r["coreferent"] == "yes":
            r["note"] = "Doubtful: same quake?"
    _write(tmp_path / "done.tsv", items)
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "score", *common, "--pool-dir", str(pool_dir),
                                      "--assessed", str(tmp_path / "done.tsv"), "--output", str(tmp_path / "strict"),
                                      "--doubtful-as-no"])
    script.main()
    strict = json.loads((tmp_path / "strict.json").read_text())
    assert strict["relevant_added"] == {"event": 0, "entity": 0}
    assert strict["results"]["completed"]["event"]["b"]["RR@10"]["mean"] == 0.5


def test_an_unanswered_item_names_the_file_and_line(benchmark_script, tmp_path):
    script = benchmark_script("pool_assess")
    path = tmp_path / "done.tsv"
    path.write_text("item\tcoreferent\n0001\tyes\n0002\tmaybe\n")
    with pytest.raises(InputError) as raised:
        script.read_assessed(path)
    assert "done.tsv" in str(raised.value) and "3" in str(raised.value)


def test_a_second_pool_draws_other_queries_and_both_are_scored_together(benchmark_script, tmp_path, monkeypatch):
    script = benchmark_script("pool_assess")
    common = _files(tmp_path)
    for name, extra in (("p1", []), ("p2", ["--exclude-pool", str(tmp_path / "p1")])):
        monkeypatch.setattr(sys, "argv", ["pool_assess.py", "pool", *common, "--per-kind", "1", "--depth", "2",
                                          "--output-dir", str(tmp_path / name), *extra])
        script.main()
    first = json.loads((tmp_path / "p1" / "pool.json").read_text())["queries"]
    second = json.loads((tmp_path / "p2" / "pool.json").read_text())["queries"]
    assert first == ["en1", "ev1"] and second == []  # one query of each kind exists, so nothing is left
    # two pools that share queries are refused
    for name in ("p1", "p3"):
        monkeypatch.setattr(sys, "argv", ["pool_assess.py", "pool", *common, "--per-kind", "1", "--depth", "2",
                                          "--output-dir", str(tmp_path / name)])
        script.main()
    for name in ("p1", "p3"):
        rows = _read(tmp_path / name / "items.tsv")
        for r in rows:
            r["coreferent"] = "no"
        _write(tmp_path / name / "done.tsv", rows)
    with pytest.raises(InputError, match="share queries"):
        script.read_pools([str(tmp_path / "p1"), str(tmp_path / "p3")],
                          [str(tmp_path / "p1" / "done.tsv"), str(tmp_path / "p3" / "done.tsv")])
    key, assessed, manifest = script.read_pools([str(tmp_path / "p1"), str(tmp_path / "p2")],
                                                [str(tmp_path / "p1" / "done.tsv"), str(tmp_path / "p1" / "done.tsv")])
    assert manifest["queries"] == ["en1", "ev1"] and all(row["item"].startswith("1/") for row in key)
    assert set(assessed) >= {row["item"] for row in key}


def test_extend_adds_a_run_to_a_pool_without_assessing_a_passage_twice(benchmark_script, tmp_path, monkeypatch):
    script = benchmark_script("pool_assess")
    common = _files(tmp_path)
    _pool(script, monkeypatch, common, tmp_path / "p1")
    # run c: ev1 -> d4:0 (assessed in p1) and d3:1 (new); en1 -> d4:1 (new), d3:0 (assessed in p1)
    write_run({"ev1": [Hit(docid="d4:0", score=2.0), Hit(docid="d3:1", score=1.0)],
               "en1": [Hit(docid="d4:1", score=2.0), Hit(docid="d3:0", score=1.0)]}, tmp_path / "c.trec")
    runs_at = common.index("--qrels")
    extended = ["--runs", f"c={tmp_path / 'c.trec'}", *common[runs_at:]]
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "pool", *extended, "--depth", "2",
                                      "--extend", str(tmp_path / "p1"), "--output-dir", str(tmp_path / "p2")])
    script.main()
    key2 = _read(tmp_path / "p2" / "key.tsv")
    assert sorted((r["qid"], r["docid"], r["source"]) for r in key2) == [("en1", "d4:1", "pool"),
                                                                          ("ev1", "d3:1", "pool")]
    for name in ("p1", "p2"):
        rows = _read(tmp_path / name / "items.tsv")
        for r in rows:
            r["coreferent"] = "yes"
        _write(tmp_path / name / "done.tsv", rows)
    all_runs = ["--runs", common[1], common[2], f"c={tmp_path / 'c.trec'}", *common[runs_at:]]
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "score", *all_runs, "--pool-dir", str(tmp_path / "p1"),
                                      str(tmp_path / "p2"), "--assessed", str(tmp_path / "p1" / "done.tsv"),
                                      str(tmp_path / "p2" / "done.tsv"), "--output", str(tmp_path / "out")])
    script.main()
    summary = json.loads((tmp_path / "out.json").read_text())
    assert all(summary["runs"][n]["pooled"] for n in ("a", "b", "c"))
    assert summary["manifest"]["queries"] == ["en1", "ev1"]
    assert summary["results"]["completed"]["event"]["c"]["P@10"]["mean"] == pytest.approx(0.2)
    # the extension alone is refused: its queries were drawn by a pool that is not given
    with pytest.raises(InputError, match="extension pool"):
        script.read_pools([str(tmp_path / "p2")], [str(tmp_path / "p2" / "done.tsv")])


def test_a_second_assessor_sees_a_blind_resample_and_agreement_is_counted(benchmark_script, tmp_path, monkeypatch):
    script = benchmark_script("pool_assess")
    common = _files(tmp_path)
    _pool(script, monkeypatch, common, tmp_path / "p1")
    items = _read(tmp_path / "p1" / "items.tsv")
    for r in items:
        r["coreferent"] = "yes"
    _write(tmp_path / "p1" / "done.tsv", items)
    texts = common[common.index("--topics"):]
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "second", *texts, "--pool-dir", str(tmp_path / "p1"),
                                      "--assessed", str(tmp_path / "p1" / "done.tsv"), "--sample", "4", "--seed", "1",
                                      "--output-dir", str(tmp_path / "second")])
    script.main()
    key, second = _read(tmp_path / "second" / "key.tsv"), _read(tmp_path / "second" / "items.tsv")
    assert len(key) == len(second) == 4 and all(r["first"] == "yes" for r in key)
    assert [r["item"] for r in second] == ["0001", "0002", "0003", "0004"]
    assert all(not r["coreferent"] for r in second) and "yes" not in (tmp_path / "second" / "items.tsv").read_text()
    first_key = {r["item"]: (r["qid"], r["docid"]) for r in _read(tmp_path / "p1" / "key.tsv")}
    assert all(first_key[r["first_item"]] == (r["qid"], r["docid"]) for r in key)
    for number, r in enumerate(second):
        r["coreferent"] = "no" if number == 0 else "yes"
    _write(tmp_path / "second" / "done.tsv", second)
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "agree", "--second-dir", str(tmp_path / "second"),
                                      "--assessed", str(tmp_path / "second" / "done.tsv"),
                                      "--output", str(tmp_path / "agree")])
    script.main()
    summary = json.loads((tmp_path / "agree.json").read_text())
    assert summary["first_vs_second"]["n"] == 4 and summary["first_vs_second"]["accuracy"] == 0.75


def test_split_and_merge_give_each_assessor_a_part_and_refuse_a_gap_or_a_repeat(benchmark_script, tmp_path,
                                                                                monkeypatch):
    script = benchmark_script("pool_assess")
    common = _files(tmp_path)
    pool_dir = tmp_path / "pool"
    _pool(script, monkeypatch, common, pool_dir)
    items = _read(pool_dir / "items.tsv")
    assert len(items) == 5  # three pooled passages and two controls
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "split", "--items", str(pool_dir / "items.tsv"),
                                      "--parts-of", "2", "--output-dir", str(tmp_path / "parts")])
    script.main()
    parts = [_read(tmp_path / "parts" / f"part-{n:02d}.tsv") for n in (1, 2, 3)]
    assert [len(p) for p in parts] == [2, 2, 1]
    assert [r for p in parts for r in p] == items  # every column kept, in the items' order

    def answer(path, rows, notes=None):
        _write(path, [{"item": r["item"], "coreferent": "yes" if i % 2 else "no",
                       "note": (notes or {}).get(r["item"], "")} for i, r in enumerate(rows)])

    files = [tmp_path / f"a{n}.tsv" for n in (1, 2, 3)]
    answer(files[0], parts[0], {parts[0][0]["item"]: "different  quake"})
    answer(files[1], parts[1])
    answer(files[2], parts[2])

    def merge(*paths):
        monkeypatch.setattr(sys, "argv", ["pool_assess.py", "merge", "--items", str(pool_dir / "items.tsv"),
                                          "--answers", *map(str, paths), "--output", str(tmp_path / "done.tsv")])
        script.main()

    merge(files[2], files[0], files[1])  # the answer files in any order; the output keeps the items' order
    done = _read(tmp_path / "done.tsv")
    assert [r["item"] for r in done] == [r["item"] for r in items]
    assert [r["coreferent"] for r in done] == ["no", "yes", "no", "yes", "no"]
    assert done[0]["note"] == "different quake" and done[0]["hit"] == items[0]["hit"]
    assert script.read_assessed(tmp_path / "done.tsv")[items[1]["item"]][0] == 1
    monkeypatch.setattr(sys, "argv", ["pool_assess.py", "merge", "--items", str(pool_dir / "items.tsv"), "--answers",
                                      *map(str, files), "--output", str(tmp_path / "short.tsv"), "--answers-only"])
    script.main()
    short = _read(tmp_path / "short.tsv")
    assert short == [{k: r[k] for k in ("item", "coreferent", "note")} for r in done]

    (tmp_path / "done.tsv").unlink()
    with pytest.raises(InputError, match="not assessed"):
        merge(files[0], files[1])  # part 3 missing
    with pytest.raises(InputError) as raised:
        merge(files[0], files[1], files[2], files[0])
    assert "answered twice" in str(raised.value) and "a1.tsv" in str(raised.value)
    _write(files[2], [{"item": "9999", "coreferent": "yes", "note": ""}])
    with pytest.raises(InputError, match="not in"):
        merge(*files)
    _write(files[2], [{"item": parts[2][0]["item"], "coreferent": "maybe", "note": ""}])
    with pytest.raises(InputError) as raised:
        merge(*files)
    assert "a3.tsv" in str(raised.value) and "2" in str(raised.value)
    assert not (tmp_path / "done.tsv").exists()  # nothing half-written
