"""Reading a hybrid index's passages for a dense build: the project jar's PassageSpans (the stored JSON parsed in
Java) gives what decoding the stored JSON in Python gives, chunk by chunk."""

from __future__ import annotations

import json
import shutil

import pytest

import indexes.faiss_index as faiss_index
from hybrid.core.errors import IndexMissingError
from indexes.faiss_index import IndexedPassage, index_passage_chunks, iter_index_passages, passage_of_raw
from indexes.lucene import PASSAGES, _run_anserini
from indexes.lucene_access import passage_span_reader, stored_raw
from indexes.sparse_index import SparseIndex

CONTEXT = 'He said "start": 99, "end": 3} ]\\\\ and \\u00e9t\\u00e9 {"kind": "x"}'


def _record(pid: str, mentions: list, **extra) -> dict:
    return {"id": pid, "contents": f"text of {pid} \u00e9t\u00e9", "docref": "doc1", "doc_id": pid.split(":")[0],
            "mentions": mentions, **extra}


def _mention(start: int, end: int, kind=..., **extra) -> dict:
    m = {"start": start, "end": end, "context": CONTEXT, "ner": ["A", {"nested": [1, 2, {"start": 5}]}], **extra}
    if kind is not ...:
        m["kind"] = kind
    return m


RECORDS = [
    _record("a:0", [_mention(0, 4, "event"), _mention(0, 4, "event"), _mention(0, 4, "entity"), _mention(5, 9)]),
    _record("a:1", []),  # no candidate mention: a passage-only row
    # keys in another order, a null kind (equal to an absent one), the same span repeated after another
    {"mentions": [_mention(3, 7, None), _mention(1, 2, "event"), _mention(3, 7)], "doc_id": "b", "id": "b:0",
     "contents": "b zero", "extra": {"mentions": [_mention(8, 9, "event")]}},
    _record("b:1", [_mention(2, 6, "entity", chain="c#1")]),
    {"id": "c:0", "doc_id": "c", "contents": "c zero",
     "mentions": [_mention(2, 3, "entity"), _mention(2, 3, "entity")]},
]
#: c:0 stored with a first "mentions" key that the later one replaces, as Python's json reads it
LINES = [json.dumps(r, ensure_ascii=False) for r in RECORDS[:-1]] + [
    '{"id": "c:0", "mentions": [{"start": 0, "end": 1, "kind": "event"}], "doc_id": "c", "contents": "c zero", '
    + json.dumps({"mentions": RECORDS[-1]["mentions"]})[1:]]


def _write_passages(tmp_path, tiny_index, records: list, raw_lines: list[str] | None = None):
    """A copy of the tiny hybrid index whose passages/ Lucene index holds ``records`` (stored raw JSON)."""
    index = tmp_path / "index"
    shutil.copytree(tiny_index, index)
    shutil.rmtree(index / PASSAGES)
    source = tmp_path / "collection"
    source.mkdir()
    lines = raw_lines or [json.dumps(r, ensure_ascii=False) for r in records]
    (source / "part-0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run_anserini(source, index / PASSAGES, ("docref",), 1, store_raw=True)
    return SparseIndex(index)


def _java_reader_or_skip(directory):
    reader = passage_span_reader(directory)
    if reader is None:
        pytest.skip("the project jar predates io.hybrid.lucene.PassageSpans: rebuild it (mvn package)")
    reader.close()


def test_python_decoding_of_the_crafted_records():
    """The reference the Java side is held to: repeated (start, end, kind) dropped in order, a null kind is None."""
    got = [passage_of_raw(json.dumps(r)) for r in RECORDS]
    assert got[0].mentions == [(0, 4, "event"), (0, 4, "entity"), (5, 9, None)]
    assert got[1].mentions == []
    assert got[2] == IndexedPassage("b:0", "b", "b zero", [(3, 7, None), (1, 2, "event")])
    assert got[4].mentions == [(2, 3, "entity")]


@pytest.mark.parametrize("size", [1, 2, 4096])
def test_java_reader_reads_what_python_decodes(tmp_path, tiny_index, size):
    index = _write_passages(tmp_path, tiny_index, RECORDS, LINES)
    _java_reader_or_skip(index.path / PASSAGES)
    expected = [passage_of_raw(raw) for raw in stored_raw(index.path / PASSAGES)]
    assert len(expected) == len(RECORDS) and expected[-1] == passage_of_raw(json.dumps(RECORDS[-1]))
    chunks = list(index_passage_chunks(index, size))
    assert [len(c) for c in chunks] == [min(size, len(RECORDS) - lo) for lo in range(0, len(RECORDS), size)]
    assert [p for c in chunks for p in c] == expected
    assert [p for c in index_passage_chunks(index, size, limit=3) for p in c] == expected[:3]


def test_both_readers_agree_on_a_built_index(sparse_index, monkeypatch):
    _java_reader_or_skip(sparse_index.path / PASSAGES)
    java = iter_index_passages(sparse_index)
    monkeypatch.setattr(faiss_index, "passage_span_reader", lambda directory: None)
    python = iter_index_passages(sparse_index)
    assert java == python and len(java) == sparse_index.passages.num_docs
    assert sum(len(p.mentions) for p in java) > 0


@pytest.mark.parametrize("bad, problem", [
    ({"id": "x:1", "doc_id": "x", "contents": "t", "mentions": [{"end": 3}]}, "a mention lacks its start or end"),
    ({"id": "x:1", "doc_id": "x", "contents": "t", "mentions": [{"start": "0", "end": 3}]}, "is not an integer"),
    ({"id": "x:1", "doc_id": "x", "contents": "t"}, "lacks id, doc_id, contents or mentions"),
    ({"id": "x:1", "doc_id": "x", "contents": "t", "mentions": [{"start": 0, "end": 1}, 5]},
     "a mention is not a JSON object"),
])
def test_a_passage_the_java_reader_cannot_read_is_named_in_one_line(tmp_path, tiny_index, bad, problem):
    index = _write_passages(tmp_path, tiny_index, [RECORDS[0], bad])
    _java_reader_or_skip(index.path / PASSAGES)
    with pytest.raises(IndexMissingError, match=f"is damaged: passage number 1: .*{problem}") as caught:
        list(index_passage_chunks(index, 1))
    assert "\n" not in str(caught.value) and "hybrid.index --corpus" in str(caught.value)

