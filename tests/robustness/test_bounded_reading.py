"""Reading stops at the line limit, and invisible text is rejected (issue 22, defect 6)."""

from __future__ import annotations

import json
import os
import time

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.lines import MAX_LINE_BYTES, SkipReport, iter_lines
from hybrid.core.formats.topics import read_topics

needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")


@needs_dev_zero
def test_an_endless_line_stops_at_the_limit():
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        list(read_corpus("/dev/zero"))
    assert caught.value.line == 1 and caught.value.reason == f"line is longer than {MAX_LINE_BYTES} bytes"
    assert time.monotonic() - started < 30


@needs_dev_zero
def test_an_endless_line_with_skip_bad_stops_too():
    with pytest.raises(InputError, match="has no end within .* bytes; stopped reading"):
        list(iter_lines("/dev/zero", on_error=SkipReport().add))
    assert_documented("has no end within", "stopped reading (is this a text file?)")


@needs_dev_zero
def test_index_cli_on_dev_zero_exits_2(tmp_path, capsys):
    from hybrid.cli.index import main

    assert run_cli(main, ["--corpus", "/dev/zero", "--index", str(tmp_path / "idx"), "--quiet"]) == 2
    assert f"error: /dev/zero:1: line is longer than {MAX_LINE_BYTES} bytes" in capsys.readouterr().err


def test_an_over_long_line_is_still_skipped_with_skip_bad(tmp_path):
    path = tmp_path / "c.jsonl"
    with path.open("wb") as out:
        out.write(b'{"id": "a:0", "text": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
        out.write(b'{"id": "b:0", "text": "fine"}\n')
    report = SkipReport()
    assert [n for n, _ in iter_lines(path, on_error=report.add)] == [2]
    assert len(report) == 1


def test_a_bom_inside_a_file_is_rejected(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("\ufeffq1\ta <m> b </m>\n\ufeffq2\tc <m> d </m>\n", encoding="utf-8")  # two files concatenated
    with pytest.raises(InputError) as caught:
        read_topics(path)
    assert caught.value.line == 2
    wording = "byte-order mark (U+FEFF) at character 0 of the line: only the very start of a file may carry one"
    assert wording in caught.value.reason
    assert_documented(wording)
    path.write_text("\ufeffq1\ta <m> b </m>\n", encoding="utf-8")  # at the start: accepted and removed
    assert read_topics(path)[0].qid == "q1"


def test_a_zero_width_no_break_space_inside_a_line_is_text(tmp_path):
    # U+FEFF inside a line is a character of the text (ZWNBSP), not a concatenated file's start: a JSON string
    # written with ensure_ascii=False holds it literally
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "d:0", "text": "a\ufeffb"}\n', encoding="utf-8")
    (passage,) = read_corpus(path)
    assert passage.text == "a\ufeffb"


def _mention_line(text: str, start: int, end: int) -> str:
    return json.dumps({"id": "d:0", "text": text, "mentions": [{"start": start, "end": end, "kind": "entity"}]})


@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\u200d", "\u2060", "\u00ad"])
def test_a_corpus_mention_of_only_zero_width_characters(invisible, tmp_path):
    path = tmp_path / "c.jsonl"
    text = f"Tara{invisible}Reid"
    path.write_text(_mention_line(text, 4, 4 + len(invisible)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(read_corpus(path))
    assert caught.value.line == 1 and "mentions[0] is made only of zero-width characters (U+" in caught.value.reason
    assert_documented("is made only of zero-width characters")


def test_a_topic_mention_of_only_zero_width_characters(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("q1\tTara <m> \u200b </m> Reid\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"the mention between <m> and </m> is made only of zero-width characters "
                                         r"\(U\+200B\)"):
        read_topics(path)
    path = tmp_path / "t.jsonl"
    path.write_text('{"qid": "q1", "passage_id": "a:0", "start": 4, "end": 5}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"cover only zero-width characters \(U\+200C\)"):
        read_topics(path, resolve={"a:0": "Tara\u200cReid"}.get)
    assert_documented("the mention between <m> and </m> is made only of zero-width characters",
                      "cover only zero-width characters")


def test_visible_mentions_with_zero_width_joiners_are_fine(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(_mention_line("a\u200dTara b", 1, 6) + "\n", encoding="utf-8")
    assert list(read_corpus(path))[0].mentions[0].start == 1
