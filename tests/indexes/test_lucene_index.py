"""Building the two-part Lucene index: layout, provenance, atomicity, stored annotations."""

from __future__ import annotations

import json

import pytest

from features.annotate import LEGACY
from indexes.lucene import METADATA, IndexConfig, build_index, docref, parse_mention_doc_id


def test_layout_and_provenance(tiny_index):
    meta = json.loads((tiny_index / METADATA).read_text())
    assert (tiny_index / "passages").is_dir() and (tiny_index / "mentions").is_dir()
    assert meta["counts"]["passages"] == 10 and meta["counts"]["documents"] == 5
    assert meta["counts"]["gold_mentions"] == 26  # 4+5+4+3+4+3+3 in the fixture
    assert meta["counts"]["auto_mentions"] > 0  # d4:*, e5:1 have no annotation
    assert meta["versions"]["pyserini"] == "1.6.0"
    assert meta["config"]["annotation"]["ner"] == "heuristic"
    assert len(meta["corpus_sha256"]) == 64
    assert not list(tiny_index.parent.glob(".*building"))


def test_lucene_documents(sparse_index):
    assert sparse_index.passages.num_docs == 10
    counts = json.loads((sparse_index.path / METADATA).read_text())["counts"]
    assert sparse_index.mentions.num_docs == counts["mentions"]
    records = sparse_index.mention_records("a1:0")
    assert [r.mention for r in records] == ["Tara Reid", "checked into", "Promises Treatment Center", "Tuesday"]
    assert sparse_index.document_passage_ids("a1") == ["a1:0", "a1:1"]
    assert sparse_index.passage_text("nope") is None


def test_mention_doc_id_round_trip():
    assert parse_mention_doc_id("doc:3#10-22") == ("doc:3", 10, 22)
    assert parse_mention_doc_id("a#b:1#0-4") == ("a#b:1", 0, 4)
    assert docref("1_10ecb") == docref("1_10ecb") != docref("1_11ecb")
    assert docref("x").startswith("doc") and docref("x")[3:].isdigit()


def test_existing_index_is_kept_unless_overwrite(tiny_corpus, tmp_path):
    out = tmp_path / "idx"
    cfg = IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY)
    build_index(cfg, out, progress=False)
    first = json.loads((out / METADATA).read_text())["built_at"]
    with pytest.raises(FileExistsError):
        build_index(cfg, out, progress=False)
    build_index(cfg, out, overwrite=True, progress=False)
    assert (out / METADATA).is_file() and json.loads((out / METADATA).read_text())["built_at"] >= first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_failed_build_leaves_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a:0", "text": "fine"}\n{"id": "a:1", "text": ""}\n')
    from hybrid.core.errors import InputError

    with pytest.raises(InputError, match=r"bad.jsonl:2: .*empty text"):
        build_index(IndexConfig(corpus=str(bad), annotation=LEGACY), tmp_path / "idx", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_corrupt_metadata_is_a_clear_error(tiny_corpus, tmp_path):
    from hybrid.core.errors import IndexMissingError
    from indexes.sparse_index import SparseIndex

    out = tmp_path / "idx"
    build_index(IndexConfig(corpus=str(tiny_corpus), annotation=LEGACY), out, progress=False)
    (out / METADATA).write_text("{ not json")
    with pytest.raises(IndexMissingError, match="corrupt"):
        SparseIndex(out)


def test_a_command_without_a_sharded_path_refuses_a_sharded_index_by_name(tmp_path):
    from hybrid.core.errors import ConfigError
    from indexes.shards import MANIFEST, open_one_index

    (tmp_path / MANIFEST).write_text("{}")
    with pytest.raises(ConfigError, match="python -m hybrid.fewshot works on one index, and this is a sharded index"):
        open_one_index(tmp_path, "python -m hybrid.fewshot")


def test_a_query_outside_the_index_is_annotated_once_and_each_caller_gets_its_own_record(sparse_index):
    """query_record parses an unindexed query once (a reranker asks again for what its first stage asked), and
    hands out copies: a caller filling in a field does not change what the next caller gets."""
    from hybrid.core.records import Topic

    text = "The Yushu earthquake destroyed most buildings in the town."
    topic = Topic(qid="q-cache", text=text, start=10, end=20, kind="event")
    other = Topic(qid="q-cache", text=text, start=4, end=9, kind="entity")
    annotator = sparse_index.annotator
    parsed = []
    annotate = annotator.annotate_topic
    annotator.annotate_topic = lambda t: parsed.append((t.start, t.end)) or annotate(t)
    try:
        first = sparse_index.query_record(topic)
        fresh = annotate(topic)
        assert first == fresh
        first.kind, first.coref = "changed", [*first.coref, "added"]
        first.ner.append("added")
        assert sparse_index.query_record(topic) == fresh
        assert sparse_index.query_record(other) == annotate(other)
    finally:
        del annotator.annotate_topic
    assert parsed == [(10, 20), (4, 9)]


def test_document_passages_read_in_one_pass_equal_the_ids_and_lookups(sparse_index, monkeypatch):
    """document_passages gives each passage id of document_passage_ids with its passage_json, read from the
    document's search hits; with more hits than max_doc_passages (which the search would cut) it falls back."""
    documents = sorted({sparse_index.passage_json(pid)["doc_id"] for pid in ("a1:0", "e5:0", "d4:0")})
    for doc_id in [*documents, "no-such-document"]:
        expected = [(pid, sparse_index.passage_json(pid)) for pid in sparse_index.document_passage_ids(doc_id)]
        assert sparse_index._document_stored(doc_id) is not None
        assert sparse_index.document_passages(doc_id) == expected
    monkeypatch.setitem(sparse_index.metadata, "max_doc_passages", 1)
    assert sparse_index._document_stored("a1") is None
    assert [pid for pid, _ in sparse_index.document_passages("a1")] == sparse_index.document_passage_ids("a1")
