"""ECB+ sub-topics as events: seminal-event seeds, query forms, document judgments; test topics refused."""

from __future__ import annotations

import json

import pytest

from hybrid.collect.ecb import build_events, event_qrels, read_event_names, read_seed_mentions, subtopic
from hybrid.core.errors import InputError


def query(doc, sent, cluster, start=0, kind="event", split="dev"):
    return {"qid": f"{doc}-{sent}-{start}", "kind": kind, "doc_id": doc, "passage_id": f"{doc}:{sent}", "start": start,
            "end": start + 4, "mention": "xxxx", "cluster": cluster, "topic": int(doc.split("_")[0]), "split": split}


def test_seeds_queries_and_qrels(tmp_path):
    rows = [query("2_1ecb", 3, "A"), query("2_1ecb", 0, "A", 5), query("2_2ecb", 1, "A"), query("2_3ecb", 0, "A"),
            query("2_1ecb", 0, "B"), query("2_1ecbplus", 0, "C"), query("2_2ecbplus", 2, "C"),
            query("2_3ecbplus", 0, "D", kind="entity")]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    seeds = read_seed_mentions(path)
    assert [(s.doc_id, s.sentence, s.start) for s in seeds["2_ecb"]] == [("2_1ecb", 0, 5), ("2_2ecb", 1, 0),
                                                                         ("2_3ecb", 0, 0)]
    names = tmp_path / "names.tsv"
    names.write_text("# comment\n2_ecb\tOscars host named\n")
    events = build_events(seeds, lambda pid: "text of " + pid, read_event_names(names), n_single=2, ks=(2, 3))
    qids = [e.qid for e in events]
    assert qids == ["2_ecb/seed1-0", "2_ecb/seed1-1", "2_ecb/seed2", "2_ecb/seed3", "2_ecb/name",
                    "2_ecbplus/seed1-0", "2_ecbplus/seed1-1", "2_ecbplus/seed2"]
    assert events == build_events(seeds, lambda pid: "text of " + pid, read_event_names(names), n_single=2, ks=(2, 3))
    assert [e.group for e in events] == ["2_ecb"] * 5 + ["2_ecbplus"] * 3  # the sub-topic: CV never splits it
    assert events[0].to_json()["group"] == "2_ecb"
    docs = ["2_1ecb", "2_2ecb", "2_3ecb", "2_4ecb", "2_1ecbplus", "2_2ecbplus", "3_1ecb"]
    qrels = event_qrels(events, docs)
    assert set(qrels["2_ecb/name"]) == {"2_1ecb", "2_2ecb", "2_3ecb", "2_4ecb"}
    assert len(qrels["2_ecb/seed3"]) == 1 and set(qrels["2_ecbplus/seed2"]) == set()
    assert subtopic("12_3ecbplus") == "12_ecbplus"


def test_test_topics_are_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(query("40_1ecb", 0, "A", split="test")) + "\n")
    with pytest.raises(InputError, match="held out"):
        read_seed_mentions(path)
