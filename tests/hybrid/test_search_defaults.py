"""The default job does what the README says (issue 22, defect 7): sample.<model>.trec plus its spans."""

from __future__ import annotations

import json

import hybrid.cli.search
import hybrid.sample
from hybrid.cli.search import default_outputs, parser
from hybrid.cli.search import main as search_main
from hybrid.core.formats.runs import read_run_meta


def test_default_outputs():
    assert default_outputs(parser().parse_args(["--topics", "sample"])) == (
        "sample.multifield.trec", "sample.multifield.spans.jsonl")
    assert default_outputs(parser().parse_args(["--topics", "sample", "--model", "bm25", "--spans", "s.jsonl"])) == (
        "sample.bm25.trec", "s.jsonl")
    assert default_outputs(parser().parse_args(["--topics", "t.tsv"])) == ("run.multifield.trec", None)
    assert default_outputs(parser().parse_args(["--topics", "sample", "--output", "r.trec"])) == ("r.trec", None)


def test_default_job_writes_the_sample_run_and_its_spans(tiny_index, data_dir, tmp_path, monkeypatch):
    sample = hybrid.sample.SamplePaths(data_dir / "tiny_corpus.jsonl", data_dir / "tiny_topics.jsonl",
                                       data_dir / "tiny_topics.tsv", data_dir / "tiny_qrels.txt")
    monkeypatch.setattr(hybrid.cli.search, "sample_paths", lambda: sample)  # the tiny data stands in for the sample
    monkeypatch.chdir(tmp_path)
    assert search_main(["--topics", "sample", "--index", str(tiny_index), "--hits", "3", "--quiet"]) == 0
    run, spans = tmp_path / "sample.multifield.trec", tmp_path / "sample.multifield.spans.jsonl"
    assert run.is_file() and spans.is_file() and not (tmp_path / "run.multifield.trec").exists()
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    assert rows and all(r["mention"] for r in rows if r["start"] is not None)
    assert read_run_meta(run, spans)["spans"] == "sample.multifield.spans.jsonl"
