"""A run, its spans and its meta are published as one unit and checked when read (issue 22, defect 4)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.core.errors import InputError
from hybrid.core.formats.runs import (
    meta_path,
    read_run_meta,
    run_set_lock,
    sha256_file,
    write_run,
    write_run_set,
    write_spans,
)
from hybrid.core.records import Hit


def a_run(seed: int) -> dict:
    return {f"q{q}": [Hit(f"d{seed}-{q}-{i}", float(10 - i), mention_start=0, mention_end=seed + 1,
                          mention_text=f"m{seed}") for i in range(3)] for q in range(3)}


def test_meta_is_written_last_with_the_hashes_of_the_set(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    meta = write_run_set(a_run(1), run, tag="t", spans_path=spans, meta={"model": "x"})
    on_disk = json.loads(meta_path(run).read_text())
    assert on_disk == json.loads(json.dumps(meta))
    assert on_disk["run_sha256"] == sha256_file(run) and on_disk["spans_sha256"] == sha256_file(spans)
    assert on_disk["model"] == "x" and on_disk["spans"] == str(spans)
    assert read_run_meta(run, spans)["model"] == "x"
    assert not (tmp_path / ".r.trec.lock").exists()  # the lock is removed when released (issue 38, item 5)


def test_the_removed_lock_still_lets_one_holder_in_at_a_time(tmp_path):
    run, inside, overlaps, errors = tmp_path / "r.trec", [0], [], []
    gate = threading.Lock()

    def holder() -> None:
        try:
            for _ in range(40):
                with run_set_lock(run):
                    with gate:
                        inside[0] += 1
                        overlaps.append(inside[0])
                    time.sleep(0.0005)
                    with gate:
                        inside[0] -= 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=holder) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(overlaps) == 160 and max(overlaps) == 1
    assert not (tmp_path / ".r.trec.lock").exists()


def test_a_lock_left_by_a_killed_holder_is_taken_over_and_removed(tmp_path):
    run = tmp_path / "r.trec"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "from hybrid.core.formats.runs import run_set_lock\n"
                               "with run_set_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)",
                               str(run)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()  # kill -9: the file stays, the kernel releases its lock
    holder.wait()
    assert (tmp_path / ".r.trec.lock").exists()
    write_run_set(a_run(1), run)
    assert read_run_meta(run) is not None and not (tmp_path / ".r.trec.lock").exists()


def test_a_writer_killed_after_the_run_leaves_no_foreign_spans_or_meta(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans, meta={"model": "old"})

    def killed(run_, path):
        raise KeyboardInterrupt  # the job dies right after its run was renamed into place

    with pytest.raises(KeyboardInterrupt):
        write_run_set(a_run(2), run, spans_path=spans, spans_writer=killed, meta={"model": "new"})
    assert "d2-0-0" in run.read_text()  # the new run is in place ...
    assert not spans.exists() and not meta_path(run).exists()  # ... and nothing of the old set claims it
    assert read_run_meta(run) is None


def test_a_meta_that_does_not_describe_the_run_is_reported(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans, meta={"model": "x"})
    write_run(a_run(2), run)  # rewritten without its meta (by hand, an old version, another tool)
    with pytest.raises(InputError) as caught:
        read_run_meta(run)
    assert caught.value.path == str(meta_path(run))
    assert "does not describe r.trec: the run's sha256 differs from the one recorded" in caught.value.reason
    assert_documented("the run's sha256 differs from the one recorded (the run was rewritten after its meta")


def test_spans_of_another_run_are_reported(tmp_path):
    run, spans, other = tmp_path / "r.trec", tmp_path / "r.spans.jsonl", tmp_path / "o.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans)
    write_spans(a_run(2), other)
    with pytest.raises(InputError) as caught:
        read_run_meta(run, other)
    assert caught.value.path == str(other) and "is not the spans file of r.trec" in caught.value.reason
    assert_documented("is not the spans file of run.trec: its sha256 differs from the one")


def test_two_writers_of_one_output_never_mix_their_sets(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        try:
            for i in range(15):
                write_run_set(a_run(seed * 100 + i), run, spans_path=spans, meta={"seed": seed})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                with run_set_lock(run):  # what a reader holding the lock sees is always one whole set
                    meta = read_run_meta(run, spans)
                    if meta is not None:
                        assert json.loads(spans.read_text().splitlines()[0])["docid"].split("-")[0] in run.read_text()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    meta = read_run_meta(run, spans)
    first_doc = run.read_text().split()[2]
    assert meta is not None and json.loads(spans.read_text().splitlines()[0])["docid"] == first_doc


def test_report_refuses_a_run_its_meta_does_not_describe(tmp_path, capsys):
    from hybrid.cli.report import main

    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans)
    args = ["--run", str(run), "--qrels", "q", "--topics", "t", "--index", str(tmp_path / "none"),
            "--output", str(tmp_path / "r.html")]
    other = tmp_path / "o.spans.jsonl"
    write_spans(a_run(2), other)
    assert run_cli(main, [*args, "--spans", str(other)]) == 2
    assert "is not the spans file of r.trec" in capsys.readouterr().err
    write_run(a_run(3), run)
    assert run_cli(main, args) == 2
    assert f"error: {meta_path(run)}: does not describe r.trec" in capsys.readouterr().err


def test_search_experiment_and_fused_components_publish_checked_sets(tiny_index, data_dir, tmp_path):
    from hybrid.cli.experiment import main as experiment_main
    from hybrid.cli.search import main as search_main

    out = tmp_path / "fused.trec"
    assert search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.tsv"), "--model", "fused",
                        "--fuse", "multifield,bm25", "--output", str(out), "--spans", str(tmp_path / "f.spans.jsonl"),
                        "--hits", "3", "--quiet"]) == 0
    assert read_run_meta(out, tmp_path / "f.spans.jsonl")["components"]
    for name in ("multifield", "bm25"):
        component = tmp_path / f"fused.{name}.trec"
        meta = read_run_meta(component, tmp_path / f"fused.{name}.spans.jsonl")
        assert meta["model"] == name and meta["component_of"] == str(out)
    runs = tmp_path / "exp"
    assert experiment_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--qrels",
                            str(data_dir / "tiny_qrels.txt"), "--recipes", "bm25", "multifield", "--hits", "3",
                            "--output-dir", str(runs)]) == 0
    for name in ("bm25", "multifield"):
        meta = read_run_meta(runs / f"{name}.trec")
        assert meta["recipe"]["name"] == name and meta["argv"][0] == "--index"
    assert Path(f"{runs / 'bm25.trec'}.meta.json").is_file()


def test_a_run_rewritten_without_spans_removes_the_stale_spans_of_its_set(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans, meta={"model": "old"})
    write_run_set(a_run(2), run, meta={"model": "new"})  # no --spans this time
    assert not spans.exists()  # the old spans would otherwise sit beside a run they do not describe


def test_a_spans_file_someone_replaced_is_not_removed(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "r.spans.jsonl"
    write_run_set(a_run(1), run, spans_path=spans, meta={"model": "old"})
    write_spans(a_run(3), spans)  # no longer the set's spans: another job's file, left alone
    write_run_set(a_run(2), run, meta={"model": "new"})
    assert spans.exists()


def test_spans_given_for_a_run_written_without_spans_are_refused(tmp_path):
    run, spans = tmp_path / "r.trec", tmp_path / "other.spans.jsonl"
    write_run_set(a_run(1), run, meta={"model": "x"})
    write_spans(a_run(1), spans)
    with pytest.raises(InputError) as caught:
        read_run_meta(run, spans)
    assert str(spans) in str(caught.value) and "written without spans" in str(caught.value)
    assert_documented("was written without spans")
