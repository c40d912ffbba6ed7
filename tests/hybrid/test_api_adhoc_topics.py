"""Issue 38, items 3 and 4: topics written in a notebook (dicts, marked strings, PyTerrier topic frames) are read and
checked like a topics file, and ``Run.to_dataframe()`` carries each hit's mention text as the CLI's spans do."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

import hybrid
from hybrid.cli.search import main as search_main
from hybrid.core.errors import InputError
from hybrid.core.formats.topics import generated_qid, read_topics

QUAKE = "The Yushu <m> earthquake </m> destroyed most buildings in the town."
REID = "Actress <m> Tara Reid </m> checked into Promises Treatment Center on Tuesday."


@pytest.fixture
def bm25(sparse_index):
    return hybrid.system("bm25", sparse_index, hits=5)


def docids(run, qid):
    return [h.docid for h in run[qid]]


def test_dicts_strings_and_frames_search_like_a_topics_file(bm25, tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text(f"z\t{QUAKE}\ny\t{REID}\n")
    expected = bm25.search(str(tsv))
    by_dicts = bm25.search([{"qid": "z", "text": QUAKE}, {"qid": "y", "text": REID}])
    frame = pd.DataFrame({"qid": ["z", "y"], "query": [QUAKE, REID]})
    by_frame = bm25.search(frame)
    for run in (by_dicts, by_frame):
        assert run.to_dict() == expected.to_dict() and run["z"]
    by_strings = bm25.search([QUAKE, REID])
    assert set(by_strings) == {generated_qid(QUAKE), generated_qid(REID)}
    assert docids(by_strings, generated_qid(QUAKE)) == docids(expected, "z")
    alone = bm25.search(QUAKE)  # one marked string: not a path
    assert docids(alone, generated_qid(QUAKE)) == docids(expected, "z")


def test_generated_qid_is_stable_and_documented():
    assert generated_qid(QUAKE) == "q-" + hashlib.sha256(QUAKE.encode()).hexdigest()[:10]
    assert [t.qid for t in hybrid.topics([REID, QUAKE])][1] == hybrid.topics(QUAKE)[0].qid
    assert "q-<sha256 prefix>" in hybrid.topics.__doc__


def test_topics_of_a_list_are_parsed_not_passed_through():
    topics = hybrid.topics([{"qid": "z", "text": QUAKE, "kind": "event"}])
    assert topics[0].text == QUAKE.replace("<m> ", "").replace(" </m>", "") and topics[0].mention == "earthquake"
    assert topics[0].kind == "event"


def test_a_pyterrier_frame_with_offsets_kind_and_gaps():
    text = QUAKE.replace("<m> ", "").replace(" </m>", "")
    start = text.index("earthquake")
    frame = pd.DataFrame({"qid": ["a", "b"], "query": [text, REID], "start": [start, None],
                          "end": [start + len("earthquake"), None], "kind": ["event", None]})
    a, b = hybrid.topics(frame)
    assert (a.mention, a.kind, b.mention, b.kind) == ("earthquake", "event", "Tara Reid", None)
    numeric = hybrid.topics(pd.DataFrame({"qid": [7], "query": [QUAKE]}))
    assert numeric[0].qid == "7"


@pytest.mark.parametrize(("topics", "message"), [
    ([{"qid": "z", "text": "no markers here"}], "topics[0]: no <m> ... </m> markers around the query mention"),
    ([{"qid": "z", "text": QUAKE}, {"qid": "z", "text": REID}],
     "topics[1]: duplicate query id 'z' (first at topics[0])"),
    ([{"text": QUAKE}], "topics[0]: missing required field 'qid'"),
    ([{"qid": "z", "text": QUAKE, "kind": "place"}], "topics[0]: kind must be one of"),
    ([{"qid": "z", "text": QUAKE, "query": REID}], "topics[0]: give the query as 'text' or as 'query'"),
    ([{"qid": "z", "text": "a quake", "start": 2, "end": 40}],
     "topics[0]: offsets [2, 40) lie outside the query text (length 7) or are empty"),
    ([QUAKE, QUAKE], f"topics[1]: duplicate query id '{generated_qid(QUAKE)}' (first at topics[0])"),
    (pd.DataFrame({"qid": ["a", "b"], "query": [QUAKE, "Tara </m> Reid"]}),
     "frame[1]: 1 </m> without an opening <m>"),
    ([], "topics: no topics found"),
])
def test_bad_topics_get_the_messages_of_a_topics_file(topics, message):
    with pytest.raises(InputError) as error:
        hybrid.topics(topics)
    assert str(error.value).startswith(message)


def test_an_item_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"topics\[0\] must be a Topic, a dict .* or a marked string .* got int"):
        hybrid.topics([1, 2])


def test_jsonl_files_take_offsets_into_unmarked_text_too(tmp_path):
    path = tmp_path / "t.jsonl"
    text = "The Yushu earthquake destroyed most buildings."
    path.write_text(json.dumps({"qid": "z", "text": text, "start": 10, "end": 20}) + "\n")
    assert read_topics(path)[0].mention == "earthquake"
    path.write_text(json.dumps({"qid": "z", "text": QUAKE, "start": 10, "end": 20}) + "\n")
    with pytest.raises(InputError, match="give either 'text' with <m> markers or 'start'/'end'"):
        read_topics(path)


def test_dataframe_carries_the_mention_text_of_the_cli_spans(tiny_index, sparse_index, data_dir, tmp_path):
    topics = data_dir / "tiny_topics.jsonl"
    out, spans = tmp_path / "cli.trec", tmp_path / "cli.spans.jsonl"
    assert search_main(["--index", str(tiny_index), "--topics", str(topics), "--model", "multifield", "--output",
                        str(out), "--spans", str(spans), "--hits", "5", "--quiet"]) == 0
    cli = {(s["qid"], s["docid"]): s["mention"] for s in map(json.loads, spans.read_text().splitlines())}
    run = hybrid.system("multifield-net", sparse_index, hits=5).search(hybrid.topics(topics, sparse_index))
    frame = run.to_dataframe()
    spanned = frame[frame["start"].notna()]
    assert len(spanned) and spanned["mention"].notna().all()
    for row in spanned.itertuples():
        assert row.mention == sparse_index.passage_text(row.docno)[row.start:row.end]
        assert cli.get((row.qid, row.docno), row.mention) == row.mention
    assert any((row.qid, row.docno) in cli for row in spanned.itertuples())
    # ranks: 1-based like the TREC run (its 4th column); PyTerrier's 0-based on request
    assert (frame.groupby("qid")["rank"].min() == 1).all()
    assert (run.to_dataframe(first_rank=0).groupby("qid")["rank"].min() == 0).all()
