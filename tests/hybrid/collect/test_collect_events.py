"""Event query files: names and marked seed mentions, with clear errors naming file and line."""

from __future__ import annotations

import json

import pytest

from hybrid.collect.events import EventQuery, event_groups, event_of, read_event_topics, read_events
from hybrid.core.errors import InputError

TEXTS = {"a1:0": "Actress Tara Reid checked into Promises Treatment Center on Tuesday."}
#: The passage's document as the collection records it: not the id's part before ':' (ECB+'s convention).
DOCS = {"a1:0": "rehab-story"}


def write(tmp_path, rows):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_reads_names_and_seeds(tmp_path):
    path = write(tmp_path, [
        {"qid": "e1", "name": "Tara Reid rehab", "place": "Malibu"},
        {"qid": "e2", "seeds": ["She <m> checked into </m> rehab .", {"passage_id": "a1:0", "start": 18, "end": 30}]},
    ])
    events = read_events(path, TEXTS.get, DOCS.get)
    assert events[0].name == "Tara Reid rehab" and events[0].place == "Malibu" and not events[0].seeds
    seeds = events[1].seeds
    assert seeds[0].mention == "checked into" and seeds[0].doc_id is None
    assert seeds[1].mention == "checked into" and seeds[1].doc_id == "rehab-story"
    assert events[1].excluded == {"rehab-story"}
    assert read_events(path, TEXTS.get)[1].seeds[1].doc_id is None  # no collection documents: the id is not parsed
    topics = read_event_topics(path, TEXTS.get, DOCS.get)
    assert event_of(topics[1]) is not None and event_of(topics[1]).qid == "e2"
    assert event_of(topics[1]).to_json()["seeds"][1] == {"passage_id": "a1:0", "start": 18, "end": 30}


@pytest.mark.parametrize("row, reason", [
    ({"qid": "x", "name": "   "}, "'name' is empty"),
    ({"qid": "x"}, "needs a 'name' or at least one seed"),
    ({"qid": "x", "seeds": ["no markers here"]}, "seeds[0]: no <m> ... </m> markers"),
    ({"qid": "x", "seeds": [{"passage_id": "zz:0", "start": 0, "end": 2}]}, "not in the collection"),
    ({"qid": "x", "seeds": [{"passage_id": "a1:0", "start": 0, "end": 999}]}, "outside passage"),
    ({"qid": "x", "name": "a", "when": "2004"}, "unknown key 'when'"),
])
def test_bad_events_name_file_and_line(tmp_path, row, reason):
    path = write(tmp_path, [{"qid": "ok", "name": "fine"}, row])
    with pytest.raises(InputError) as error:
        read_events(path, TEXTS.get)
    assert error.value.line == 2 and reason in error.value.reason


def test_event_query_checks_itself():
    with pytest.raises(ValueError, match="empty"):
        EventQuery(qid="x", name="")
    with pytest.raises(ValueError, match="neither"):
        EventQuery(qid="x")


def test_cv_groups_are_declared_never_parsed_from_query_ids(tmp_path):
    path = write(tmp_path, [{"qid": "a/1", "name": "x", "group": "g"}, {"qid": "a/2", "name": "y", "group": 7},
                            {"qid": "a/3", "name": "z"}])
    events = read_events(path)
    assert event_groups(events) == {"a/1": "g", "a/2": "7", "a/3": "a/3"}
    assert events[0].to_json()["group"] == "g"
    bad = write(tmp_path, [{"qid": "e", "name": "x", "group": "two words"}])
    with pytest.raises(InputError, match="events.jsonl:1: 'group' 'two words' must be one word"):
        read_events(bad)
