"""Topic reading: marked TSV/JSONL queries, offsets, format detection, skipping and writing back."""

from __future__ import annotations

import json

import pytest

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import SkipReport
from hybrid.core.formats.topics import parse_marked, read_topics, write_topics_tsv
from hybrid.core.records import Topic
from hybrid.sample import sample_paths


def test_marker_spaces_belong_to_the_markers():
    assert parse_marked("a <m> b c </m> d") == ("a b c d", 2, 5)
    assert parse_marked("<m>b</m>") == ("b", 0, 1)
    # extra whitespace inside the markers is moved out of the mention
    text, start, end = parse_marked("a <m>   b  </m> d")
    assert text[start:end] == "b" and text == "a   b  d"


def test_tsv_topics_with_and_without_document(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("q1\tTara Reid <m> entered </m> rehab.\td1\nq2\t<m> Reid </m> left\n", encoding="utf-8")
    q1, q2 = read_topics(path)
    assert (q1.qid, q1.mention, q1.doc_id, q1.text) == ("q1", "entered", "d1", "Tara Reid entered rehab.")
    assert (q2.mention, q2.doc_id) == ("Reid", None)


def test_jsonl_topics_resolve_passages_and_keep_metadata(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"qid": "q1", "passage_id": "a:0", "start": 5, "end": 9, "mention": "Reid", "cluster": "X", "split": "dev"},
            {"qid": 7, "text": "a <m> b </m>", "kind": "event", "examples": ["c <m> d </m> e"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    q1, q2 = read_topics(path, resolve={"a:0": "Tara Reid entered rehab."}.get)
    assert (q1.mention, q1.passage_id, q1.meta) == ("Reid", "a:0", {"cluster": "X", "split": "dev"})
    assert q2.qid == "7" and q2.kind == "event"
    assert [(e.qid, e.mention) for e in q2.examples] == [("7#ex0", "d")]


def test_format_is_decided_once_per_file(tmp_path):
    """A TSV topic whose text starts with '{' is still TSV; a JSON line in a TSV file is a TSV error."""
    path = tmp_path / "t.tsv"
    path.write_text("q1\t{braces} <m> x </m>\n", encoding="utf-8")
    assert read_topics(path)[0].text == "{braces} x"
    path.write_text('q1\ta <m> x </m>\n{"qid": "q2", "text": "b <m> y </m>"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.tsv:2: expected 'qid<TAB>marked text"):
        read_topics(path)
    unnamed = tmp_path / "topics"
    unnamed.write_text('{"qid": "q2", "text": "b <m> y </m>"}\n', encoding="utf-8")
    assert read_topics(unnamed)[0].mention == "y"


def test_skip_bad_topics_are_reported(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b"q1\ta <m> b </m>\nq2\tno markers\nq3\t\xff<m> c </m>\nq1\td <m> e </m>\nq4\tf <m> g </m>\n")
    report = SkipReport()
    assert [t.qid for t in read_topics(path, skip_bad=report)] == ["q1", "q4"]
    assert [e.line for e in report.errors] == [2, 3, 4]
    path.write_text("q1\tno markers\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no topics found \(1 bad line\(s\) skipped\)"):
        read_topics(path, skip_bad=SkipReport())


def test_write_topics_tsv_round_trips_and_refuses_what_tsv_cannot_hold(tmp_path):
    topics = [Topic(qid="q1", text="Tara Reid entered rehab.", start=10, end=17, doc_id="d1"),
              Topic(qid="q2", text="  spaced  out ", start=2, end=8)]
    path = tmp_path / "out.tsv"
    write_topics_tsv(topics, path)
    back = read_topics(path)
    assert [(t.qid, t.text, t.start, t.end, t.doc_id) for t in back] == [
        ("q1", "Tara Reid entered rehab.", 10, 17, "d1"), ("q2", "spaced  out", 0, 6, None)]
    with pytest.raises(ValueError, match="tab, newline"):
        write_topics_tsv([Topic(qid="q", text="a\tb", start=0, end=1)], tmp_path / "bad.tsv")
    assert not (tmp_path / "bad.tsv").exists()


def test_bundled_sample_topics_read_cleanly():
    paths = sample_paths()
    tsv = read_topics(paths.topics_tsv)
    assert len(tsv) == len({t.qid for t in tsv}) > 0
    assert all(t.text[t.start : t.end].strip() == t.mention for t in tsv)
