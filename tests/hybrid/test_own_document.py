"""Topics without the own-document column: found by their text among the index's passages, else warned about."""

from __future__ import annotations

import logging

from hybrid.cli.search import main as search_main
from hybrid.core.formats.runs import read_run
from hybrid.core.formats.topics import read_topics


def two_columns(data_dir, tmp_path, extra: str = ""):
    lines = [line.rsplit("\t", 1)[0] for line in (data_dir / "tiny_topics.tsv").read_text().splitlines()]
    path = tmp_path / "two.tsv"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def test_a_topic_whose_text_is_a_passage_gets_its_document(sparse_index, data_dir, tmp_path, caplog):
    three = {t.qid: t.doc_id for t in read_topics(data_dir / "tiny_topics.tsv")}
    with caplog.at_level(logging.WARNING):
        topics = read_topics(two_columns(data_dir, tmp_path), resolve=sparse_index.passage_text)
    assert {t.qid: t.doc_id for t in topics} == three
    assert not any(t.passage_id for t in topics)  # as a third column: the document only
    assert "own-document exclusion is off" not in caplog.text
    # without an index nothing is looked up
    assert not any(t.doc_id for t in read_topics(two_columns(data_dir, tmp_path)))


def test_other_topics_are_warned_about_once(sparse_index, data_dir, tmp_path, caplog):
    extra = "q-new\tA new <m> quake </m> struck nobody knows where.\n"
    with caplog.at_level(logging.WARNING):
        topics = read_topics(two_columns(data_dir, tmp_path, extra), resolve=sparse_index.passage_text)
    assert [t.doc_id for t in topics if t.qid == "q-new"] == [None]
    warnings = [r.getMessage() for r in caplog.records if "own-document exclusion is off" in r.getMessage()]
    assert len(warnings) == 1 and "for 1 of 4 topics" in warnings[0] and "not a passage of the index" in warnings[0]
    assert "(e.g. q-new)" in warnings[0]


def test_two_column_run_equals_three_column_run(tiny_index, data_dir, tmp_path):
    runs = {}
    for name, topics in (("three", data_dir / "tiny_topics.tsv"), ("two", two_columns(data_dir, tmp_path))):
        out = tmp_path / f"{name}.trec"
        assert search_main(["--index", str(tiny_index), "--topics", str(topics), "--output", str(out), "--quiet",
                            "--model", "bm25"]) == 0
        runs[name] = read_run(out)
    assert {q: [h.docid for h in hits] for q, hits in runs["two"].items()} == {
        q: [h.docid for h in hits] for q, hits in runs["three"].items()}
    own = {"q-ev-checkin": "a1", "q-en-reid": "a1", "q-ev-quake": "e5"}
    assert not [h for q, hits in runs["two"].items() for h in hits if h.docid.split(":")[0] == own[q]]


def test_a_sentence_found_in_several_documents_is_not_guessed(caplog):
    from types import SimpleNamespace

    from hybrid.core.records import Topic
    from indexes.sparse_index import SparseIndex

    docs = {"x1:0": "x1", "x2:4": "x2", "y1:0": "y1", "y1:3": "y1"}
    stub = SimpleNamespace(path="idx", passage_json=lambda pid: {"doc_id": docs[pid]},
                           passages_with_text=lambda texts: [["x1:0", "x2:4"], ["y1:0", "y1:3"], []])
    topics = [Topic("dup", "same", 0, 4), Topic("one", "other", 0, 5), Topic("none", "new", 0, 3)]
    with caplog.at_level(logging.WARNING):
        assert SparseIndex.own_documents(stub, topics) == 1
    assert [t.doc_id for t in topics] == [None, "y1", None]
    message = caplog.records[-1].getMessage()
    assert "for 2 of 3 topics" in message and "1 whose text is a passage of several documents (e.g. dup)" in message
