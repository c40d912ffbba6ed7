"""``python -m hybrid.pool``: a pool of two runs for an assessor, split and merged answers, completed qrels, and
the output policy (a pool never writes over the runs, qrels or answers it reads)."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.pool import main as pool_main
from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run
from hybrid.core.records import Hit

# docs/errors.md as the catalogue tests see it (tests/robustness/documented.py, loaded by path: tests is no package)
_spec = importlib.util.spec_from_file_location(
    "documented", Path(__file__).resolve().parents[1] / "robustness" / "documented.py")
_documented = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_documented)
assert_documented = _documented.assert_documented


def _run(lists):
    return {q: [Hit(docid=d, score=float(10 - r)) for r, d in enumerate(ds)] for q, ds in lists.items()}


@pytest.fixture()
def files(tmp_path):
    """Five two-passage documents, an event and an entity query on d0:0, qrels, a judged list and two runs."""
    corpus = [{"id": f"d{i}:{j}", "doc_id": f"d{i}", "text": f"Doc {i} sentence {j} about the quake."}
              for i in range(5) for j in range(2)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    topics = [{"qid": "ev1", "passage_id": "d0:0", "start": 0, "end": 3, "kind": "event"},
              {"qid": "en1", "passage_id": "d0:0", "start": 4, "end": 5, "kind": "entity"}]
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in topics))
    (tmp_path / "qrels.txt").write_text("ev1 0 d1:0 1\nen1 0 d1:1 1\n")
    (tmp_path / "judged.txt").write_text("d2:0\n")
    write_run(_run({"ev1": ["d1:0", "d2:0", "d3:0"], "en1": ["d3:0", "d1:1"]}), tmp_path / "a.trec")
    write_run(_run({"ev1": ["d4:0", "d1:0"], "en1": ["d1:1", "d4:0"]}), tmp_path / "b.trec")
    return tmp_path


def texts(ws):
    return ["--topics", str(ws / "topics.jsonl"), "--corpus", str(ws / "corpus.jsonl")]


def make(ws, out, *extra, runs=("a", "b")):
    argv = ["make", "--runs", *(f"{r}={ws / r}.trec" for r in runs), *texts(ws), "--qrels", str(ws / "qrels.txt"),
            "--judged", str(ws / "judged.txt"), "--depth", "2", "--output-dir", str(out), "--quiet", *extra]
    assert pool_main(argv) == 0


def read(path):
    return list(csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"))


def write(path, rows):
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, list(rows[0]), delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def answer_all(pool_dir, answers, path):
    """Fill the pool's items as an assessor would: ``answers`` by (qid, docid), controls as the qrels say."""
    items = {r["item"]: r for r in read(pool_dir / "items.tsv")}
    for r in read(pool_dir / "key.tsv"):
        items[r["item"]]["coreferent"] = r["label"] or answers[(r["qid"], r["docid"])]
    write(path, list(items.values()))


def test_make_pools_two_runs_into_blind_items_with_controls(files):
    pool = files / "pool"
    make(files, pool)
    key, items = read(pool / "key.tsv"), read(pool / "items.tsv")
    # depth 2 pools ev1: d1:0 (relevant), d2:0 (judged), d4:0 (unjudged); en1: d3:0, d1:1 (relevant), d4:0
    assert sorted((r["qid"], r["docid"]) for r in key if r["source"] == "pool") == [
        ("en1", "d3:0"), ("en1", "d4:0"), ("ev1", "d4:0")]
    controls = {r["qid"]: (r["docid"], r["label"]) for r in key if r["source"] == "control"}
    assert controls["en1"] == ("d1:1", "yes")  # the only known label in en1's pool
    assert controls["ev1"] in {("d1:0", "yes"), ("d2:0", "no")}
    assert {r["qid"]: r["kind"] for r in key} == {"ev1": "event", "en1": "entity"}
    # the assessor's file names no passage, query, system or label, and the items follow the key
    assert list(items[0]) == ["item", "coreferent", "note", "query", "query_lead", "hit", "hit_lead"]
    assert [r["item"] for r in items] == [r["item"] for r in key] == ["0001", "0002", "0003", "0004", "0005"]
    flat = (pool / "items.tsv").read_text()
    assert "d4:0" not in flat and "ev1" not in flat and "control" not in flat and "a.trec" not in flat
    by_item = {r["item"]: r for r in items}
    row = next(r for r in key if r["qid"] == "ev1" and r["source"] == "pool")
    assert by_item[row["item"]]["query"] == "[[Doc]] 0 sentence 0 about the quake."
    assert by_item[row["item"]]["hit"] == "Doc 4 sentence 0 about the quake."
    assert by_item[row["item"]]["hit_lead"] == "Doc 4 sentence 0 about the quake. / Doc 4 sentence 1 about the quake."
    manifest = json.loads((pool / "pool.json").read_text())
    assert manifest["queries"] == ["en1", "ev1"] and manifest["depth"] == 2 and manifest["items"] == 5
    assert list(manifest["runs"]) == ["a", "b"] and len(manifest["runs"]["a"]["sha256"]) == 64
    # the same arguments give the same pool (seeded)
    make(files, files / "again")
    assert (files / "again" / "key.tsv").read_text() == (pool / "key.tsv").read_text()
    # a pool is replaced only with --overwrite: answers given to it mean nothing without its key
    key_before = (pool / "key.tsv").read_bytes()
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        make(files, pool, "--seed", "5")
    assert (pool / "key.tsv").read_bytes() == key_before
    make(files, pool, "--seed", "5", "--overwrite")
    assert json.loads((pool / "pool.json").read_text())["seed"] == 5
    # without qrels every topic is pooled, every pooled passage is an item, and no control can be drawn
    assert pool_main(["make", "--runs", str(files / "a.trec"), *texts(files), "--depth", "1", "--output-dir",
                      str(files / "fresh"), "--quiet"]) == 0
    assert sorted((r["qid"], r["docid"], r["source"]) for r in read(files / "fresh" / "key.tsv")) == [
        ("en1", "d3:0", "pool"), ("ev1", "d1:0", "pool")]


def test_assessments_merge_into_the_qrels(files):
    pool = files / "pool"
    make(files, pool)
    answer_all(pool, {("ev1", "d4:0"): "yes", ("en1", "d3:0"): "yes", ("en1", "d4:0"): "no"}, files / "done.tsv")
    (files / "qrels.txt").write_text("ev1 0 d1:0 1\nen1 0 d1:1 1\nzz 0 d0:1 1\n")  # a query outside the pool
    out = files / "completed.txt"
    assert pool_main(["qrels", "--qrels", str(files / "qrels.txt"), "--pool-dir", str(pool), "--assessed",
                      str(files / "done.tsv"), "--output", str(out), "--quiet"]) == 0
    # assessed yes = 1, no = 0 (judged non-relevant), the collection's labels kept, every query of the qrels kept
    assert out.read_text().splitlines() == ["en1 0 d1:1 1", "en1 0 d3:0 1", "en1 0 d4:0 0", "ev1 0 d1:0 1",
                                            "ev1 0 d4:0 1", "zz 0 d0:1 1"]
    assert read_qrels(out)["en1"] == {"d1:1": 1, "d3:0": 1, "d4:0": 0}
    assert pool_main(["qrels", "--qrels", str(files / "qrels.txt"), "--pool-dir", str(pool), "--assessed",
                      str(files / "done.tsv"), "--output", str(out), "--pooled-only", "--quiet"]) == 0
    assert "zz" not in out.read_text() and len(out.read_text().splitlines()) == 5


def test_the_answers_of_several_assessors_are_merged_once_each(files):
    pool = files / "pool"
    make(files, pool)
    items = read(pool / "items.tsv")
    assert pool_main(["split", "--items", str(pool / "items.tsv"), "--parts-of", "2", "--output-dir",
                      str(files / "parts"), "--quiet"]) == 0
    parts = [read(files / "parts" / f"part-{n:02d}.tsv") for n in (1, 2, 3)]
    assert [len(p) for p in parts] == [2, 2, 1] and [r for p in parts for r in p] == items
    answers = [files / f"a{n}.tsv" for n in (1, 2, 3)]
    for path, part in zip(answers, parts, strict=True):
        write(path, [{"item": r["item"], "coreferent": "yes" if r["item"] in ("0002", "0004") else "no",
                      "note": "different  quake" if r["item"] == "0001" else ""} for r in part])

    def merge(*paths, output="done.tsv"):
        return pool_main(["merge", "--items", str(pool / "items.tsv"), "--answers", *map(str, paths), "--output",
                          str(files / output), "--quiet"])

    assert merge(answers[2], answers[0], answers[1]) == 0  # any order; the output keeps the items' order
    done = read(files / "done.tsv")
    assert [r["coreferent"] for r in done] == ["no", "yes", "no", "yes", "no"]
    assert done[0]["note"] == "different quake" and done[0]["hit"] == items[0]["hit"]
    (files / "done.tsv").unlink()
    with pytest.raises(InputError, match="the answer files: 1 items not assessed"):
        merge(answers[0], answers[1])  # part 3 missing
    with pytest.raises(InputError, match="is answered twice"):
        merge(*answers, answers[0])
    write(answers[2], [{"item": "9999", "coreferent": "yes", "note": ""}])
    with pytest.raises(InputError, match="'9999' is not in"):
        merge(*answers)
    write(answers[2], [{"item": parts[2][0]["item"], "coreferent": "maybe", "note": ""}])
    with pytest.raises(InputError) as raised:
        merge(*answers)
    assert "a3.tsv:2: coreferent must be yes or no, got 'maybe'" in str(raised.value)
    assert_documented("items not assessed, e.g.", "is answered twice (first in", "is not in pool/items.tsv",
                      "coreferent must be yes or no, got 'maybe'")
    assert not (files / "done.tsv").exists()  # nothing half-written


def test_a_second_pool_draws_other_queries_and_an_extension_assesses_only_new_passages(files, capsys):
    make(files, files / "p1", "--per-kind", "1")
    make(files, files / "p2", "--per-kind", "1", "--exclude-pool", str(files / "p1"))
    assert json.loads((files / "p1" / "pool.json").read_text())["queries"] == ["en1", "ev1"]
    assert json.loads((files / "p2" / "pool.json").read_text())["queries"] == []  # nothing left to draw
    # run c: ev1 -> d4:0 (assessed in p1) and d3:1 (new); en1 -> d4:1 (new), d3:0 (assessed in p1)
    write_run(_run({"ev1": ["d4:0", "d3:1"], "en1": ["d4:1", "d3:0"]}), files / "c.trec")
    make(files, files / "p3", "--extend", str(files / "p1"), runs=("c",))
    assert sorted((r["qid"], r["docid"], r["source"]) for r in read(files / "p3" / "key.tsv")) == [
        ("en1", "d4:1", "pool"), ("ev1", "d3:1", "pool")]
    yes = {q: "yes" for q in [("ev1", "d4:0"), ("en1", "d3:0"), ("en1", "d4:0"), ("ev1", "d3:1"), ("en1", "d4:1")]}
    answer_all(files / "p1", yes, files / "p1.tsv")
    answer_all(files / "p3", yes, files / "p3.tsv")
    out = files / "completed.txt"
    assert pool_main(["qrels", "--pool-dir", str(files / "p1"), str(files / "p3"), "--assessed",
                      str(files / "p1.tsv"), str(files / "p3.tsv"), "--output", str(out), "--quiet"]) == 0
    assert read_qrels(out) == {"ev1": {"d4:0": 1, "d3:1": 1}, "en1": {"d3:0": 1, "d4:0": 1, "d4:1": 1}}
    # the extension alone is refused (its queries were drawn by a pool not given), and a pool given twice too
    for pools, message in (([files / "p3"], "an extension pool has queries no other pool drew"),
                           ([files / "p1", files / "p1"], "the pools share queries")):
        assert run_cli(pool_main, ["qrels", "--pool-dir", *map(str, pools), "--assessed",
                                   *[str(files / f"{p.name}.tsv") for p in pools], "--output", str(out)]) == 2
        assert message in capsys.readouterr().err
        assert_documented(message)
    (files / "empty").mkdir()
    assert run_cli(pool_main, ["qrels", "--pool-dir", str(files / "empty"), "--assessed", str(files / "p1.tsv"),
                               "--output", str(out)]) == 2
    assert "pool.json: not found: is this a pool folder" in capsys.readouterr().err
    assert_documented("not found: is this a pool folder (made by python -m hybrid.pool make)?")


def test_outputs_never_replace_the_runs_qrels_or_answers_read(files, capsys):
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    # the pool folder's items.tsv would be the input run
    (files / "pool").mkdir()
    (files / "pool" / "items.tsv").write_bytes((files / "a.trec").read_bytes())
    run = (files / "pool" / "items.tsv").read_bytes()
    assert run_cli(pool_main, ["make", "--runs", f"a={files / 'pool' / 'items.tsv'}", *texts(files),
                               "--output-dir", str(files / "pool")]) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert (files / "pool" / "items.tsv").read_bytes() == run and not (files / "pool" / "key.tsv").exists()
    make(files, files / "p")
    answer_all(files / "p", {("ev1", "d4:0"): "yes", ("en1", "d3:0"): "yes", ("en1", "d4:0"): "no"},
               files / "done.tsv")
    for argv in (["qrels", "--qrels", str(files / "qrels.txt"), "--pool-dir", str(files / "p"), "--assessed",
                  str(files / "done.tsv"), "--output", str(files / "qrels.txt")],
                 ["merge", "--items", str(files / "p" / "items.tsv"), "--answers", str(files / "done.tsv"),
                  "--output", str(files / "done.tsv")],
                 ["merge", "--items", str(files / "p" / "items.tsv"), "--answers", str(files / "done.tsv"),
                  "--output", str(files / "p" / "items.tsv")]):
        assert run_cli(pool_main, argv) == 2
        assert "refusing to overwrite an input" in capsys.readouterr().err
    assert all((files / name).read_bytes() == data for name, data in before.items())
