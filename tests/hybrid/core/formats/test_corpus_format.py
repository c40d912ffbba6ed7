"""Corpus JSONL reading: what a valid line becomes, and how bad lines are skipped, reported or truncated."""

from __future__ import annotations

import json
import logging

import pytest

from hybrid.core.errors import InputError
from hybrid.core.formats import lines as lines_module
from hybrid.core.formats.corpus import MAX_PASSAGE_CHARS, read_corpus
from hybrid.core.formats.lines import SkipReport
from hybrid.sample import sample_paths


def write(tmp_path, *rows, name="c.jsonl"):
    path = tmp_path / name
    data = b"".join((r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()) + b"\n"
                    for r in rows)
    path.write_bytes(data)
    return path


def test_valid_line_keeps_metadata_drops_mention_labels(tmp_path):
    path = write(tmp_path, {"id": "1_10ecb:0", "text": "Tara Reid entered rehab.", "topic": 1, "split": "dev",
                            "mentions": [{"start": 10, "end": 17, "kind": "event", "cluster": "ACT1"},
                                         {"start": 0, "end": 9, "text": "Tara Reid", "kind": "entity",
                                          "chain": "c0", "center": True}]})
    (passage,) = read_corpus(path)
    assert passage.doc_id == "1_10ecb"  # id before the last ':'
    assert passage.meta == {"topic": 1, "split": "dev"}
    assert [(m.start, m.end, m.text) for m in passage.mentions] == [(0, 9, "Tara Reid"), (10, 17, "entered")]
    assert not hasattr(passage.mentions[1], "cluster")  # the label never reaches retrieval code


def test_empty_mentions_list_and_contents_key(tmp_path):
    path = write(tmp_path, {"id": "a", "contents": "Plain text.", "mentions": []})
    (kept,) = read_corpus(path)
    (detect,) = read_corpus(path, empty_means_unannotated=True)
    assert kept.mentions == [] and detect.mentions is None and kept.text == "Plain text." and kept.doc_id == "a"


def test_bom_and_crlf_are_accepted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": "x y"}).encode() + b"\r\n\r\n"
                     + json.dumps({"id": "b", "text": "z"}).encode() + b"\r\n")
    assert [p.id for p in read_corpus(path)] == ["a", "b"]


def test_skip_bad_reports_each_skipped_line_and_keeps_the_rest(tmp_path):
    path = write(tmp_path,
                 {"id": "a", "text": "good one"},
                 b'{"id": "b", "text": "caf\xe9"}',
                 {"id": "c", "text": ""},
                 {"id": "a", "text": "same id again"},
                 "not json",
                 {"id": "d", "text": "good two"})
    report = SkipReport()
    assert [p.id for p in read_corpus(path, skip_bad=report)] == ["a", "d"]
    assert [(e.line, e.reason.split(" (")[0]) for e in report.errors] == [
        (2, "invalid UTF-8 byte 0xE9 at offset 24 of the line"), (3, "passage 'c' has empty text"),
        (4, "duplicate passage id 'a'"), (5, "broken JSON"),
    ]
    summary = report.summary()
    assert summary.startswith("skipped 4 bad line(s):") and f"{path}:5: broken JSON" in summary


def test_without_skip_bad_the_first_bad_line_stops_the_read(tmp_path):
    path = write(tmp_path, {"id": "a", "text": "good"}, {"id": "b"}, {"id": "c", "text": ""})
    passages = read_corpus(path)
    assert next(passages).id == "a"
    with pytest.raises(InputError, match=r"c\.jsonl:2: missing required field 'text'"):
        next(passages)


def test_over_long_line_is_an_error_and_skippable(tmp_path, monkeypatch):
    monkeypatch.setattr(lines_module, "MAX_LINE_BYTES", 64)
    path = write(tmp_path, {"id": "a", "text": "x" * 100}, {"id": "b", "text": "short"})
    with pytest.raises(InputError, match=r"c\.jsonl:1: line is longer than 64 bytes"):
        list(read_corpus(path))
    report = SkipReport()
    (passage,) = read_corpus(path, skip_bad=report)
    assert passage.id == "b" and report.errors[0].line == 1


def test_long_passage_is_truncated_with_a_warning_naming_file_and_line(tmp_path, caplog):
    words = " ".join(["word"] * 1500)  # 7,499 characters
    text = "Tara " + words
    path = write(tmp_path, {"id": "s", "text": "short"},
                 {"id": "long", "text": text, "mentions": [{"start": 0, "end": 4}, {"start": 6000, "end": 6004}]})
    report = SkipReport()
    with caplog.at_level(logging.WARNING, logger="hybrid.core.formats"):
        short, long = read_corpus(path, skip_bad=report)
    assert short.text == "short"
    assert len(long.text) <= MAX_PASSAGE_CHARS and text.startswith(long.text) and long.text.endswith("word")
    assert [(m.start, m.end) for m in long.mentions] == [(0, 4)]
    expected = f"{path}:2: passage 'long' has {len(text)} characters; truncated to {len(long.text)} (limit 5000)"
    assert expected + ", dropping 1 mention(s) past the cut" in caplog.text
    assert report.warnings and report.warnings[0].startswith(expected) and not report.errors
    (untouched,) = [p for p in read_corpus(path, max_chars=None) if p.id == "long"]
    assert untouched.text == text


def test_many_truncations_are_summarised(tmp_path, caplog):
    path = write(tmp_path, *({"id": f"p{i}", "text": "x" * 60} for i in range(15)))
    with caplog.at_level(logging.WARNING, logger="hybrid.core.formats"):
        passages = list(read_corpus(path, max_chars=50))
    assert all(len(p.text) == 50 for p in passages)
    assert caplog.text.count("truncated to 50") == 10
    assert "15 passages longer than 50 characters were truncated" in caplog.text


def test_bundled_sample_corpus_reads_cleanly():
    passages = list(read_corpus(sample_paths().corpus))
    assert len(passages) == len({p.id for p in passages}) > 0
