"""The kind filter's default follows the index (issue 37, part 5): on raw text the detector's kinds are often
wrong, and a same-kind search hid coreferent passages behind them; on a corpus-annotated index it stays on."""

from __future__ import annotations

import json

import pytest

from hybrid.api import system
from hybrid.core.records import Topic

#: ``9/11`` is a coreferent *event* mention in both documents, but the detector types it as an entity only (a
#: spaCy CARDINAL / DATE): an event query for it in ``a`` finds ``b`` only when the kind does not filter.
RAW = [
    {"id": "a:0", "doc_id": "a", "text": "Families remembered 9/11 on Sunday."},
    {"id": "b:0", "doc_id": "b", "text": "Since 9/11, airport security has tightened."},
    {"id": "c:0", "doc_id": "c", "text": "Airport queues grew longer on Sunday."},
]
QUERY = Topic(qid="ev-911", text=RAW[0]["text"], start=20, end=24, doc_id="a", passage_id="a:0", kind="event")
MENTION_ONLY = {"type": "multifield", "weights": "mention=1"}


@pytest.fixture(scope="module")
def raw_index(tmp_path_factory):
    from hybrid.api import open_index
    from hybrid.cli.index import main as index_main

    where = tmp_path_factory.mktemp("raw")
    corpus = where / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in RAW), encoding="utf-8")
    assert index_main(["--corpus", str(corpus), "--index", str(where / "index"), "--quiet"]) == 0
    return open_index(where / "index")


def test_the_coreferent_mention_carries_only_the_wrong_automatic_kind(raw_index):
    kinds = {r.kind for r in raw_index.mention_records("b:0") if r.mention == "9/11"}
    assert raw_index.kinds_detected and kinds == {"entity"}


def test_raw_index_default_no_longer_hides_a_coreferent_passage_behind_a_wrong_kind(raw_index):
    default = system(MENTION_ONLY, raw_index).search([QUERY])["ev-911"]
    assert [h.docid for h in default] == ["b:0"]
    hidden = system({**MENTION_ONLY, "same_kind": True}, raw_index).search([QUERY])["ev-911"]
    assert hidden == []  # what the old default returned: b's only "9/11" is an entity


@pytest.mark.parametrize("recipe", ["multifield", "bm25f"])
def test_default_filter_is_on_for_a_corpus_annotated_index_off_for_a_raw_one(recipe, raw_index, sparse_index):
    assert not sparse_index.kinds_detected  # tests' tiny index: --annotation corpus
    assert system({"type": recipe}, sparse_index).stage.same_kind is True
    assert system({"type": recipe}, raw_index).stage.same_kind is False
    assert system({"type": recipe, "same_kind": True}, raw_index).stage.same_kind is True
    assert system({"type": recipe, "same_kind": False}, sparse_index).stage.same_kind is False


def test_search_cli_default_and_same_kind_flag(raw_index, tmp_path):
    from hybrid.cli.search import main as search_main

    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"qid": QUERY.qid, "passage_id": "a:0", "start": 20, "end": 24, "doc_id": "a",
                                  "kind": "event"}) + "\n", encoding="utf-8")
    found = {}
    for flag in ([], ["--same-kind"], ["--any-kind"]):
        run = tmp_path / f"run{len(found)}.trec"
        assert search_main(["--index", str(raw_index.path), "--topics", str(topics), "--model", "multifield",
                            "--no-safety-net", "--weights", "mention=1", "--output", str(run), "--quiet", *flag]) == 0
        found[" ".join(flag)] = [line.split()[2] for line in run.read_text().splitlines()]
    assert found == {"": ["b:0"], "--same-kind": [], "--any-kind": ["b:0"]}
