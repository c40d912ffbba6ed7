"""Related-entity ranking (ContFreq, CheapEntRel), the rankers and the document run on a toy collection."""

from __future__ import annotations

import math

import numpy as np
from collect_toy import BagEncoder, toy_collection

from hybrid.collect.events import EventQuery
from hybrid.collect.kb import KBEntry, KnowledgeBase, entity_key
from hybrid.collect.rankers import RANKERS, ranking, score_event
from hybrid.collect.related import contfreq_ranking, rank_entities
from hybrid.collect.stage import EventCollector
from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.records import Topic


def seed_event(collection, qid="rehab"):
    row = collection.passage_index["r1:0"]
    text = collection.passages[row].text
    seed = Topic(qid=f"{qid}#0", text=text, start=text.index("checked"), end=text.index("checked") + 12,
                 doc_id="r1", passage_id="r1:0")
    return EventQuery(qid=qid, seeds=[seed])


def test_contfreq_counts_entities_in_the_seed_window():
    collection = toy_collection()
    ranked = dict(contfreq_ranking(collection, seed_event(collection)))
    # the window is r1:0 .. r1:1 (the seed sentence and its neighbour): "Reid" in r1:2 is outside it
    assert ranked[entity_key("Tara Reid")] == 1 and ranked[entity_key("Jack Ketsoyan")] == 1
    assert entity_key("American Pie") not in ranked and entity_key("Yushu") not in ranked


def test_cheap_relatedness_prefers_entities_concentrated_in_the_event():
    collection = toy_collection()
    evidence = rank_entities(collection, EventQuery(qid="q", name="Tara Reid Promises rehab"))
    keys = [e.key for e in evidence.related]
    assert entity_key("Promises") in keys[:3] and entity_key("Tara Reid") in keys[:5]
    assert not {entity_key("Yushu"), entity_key("Turkmenistan")} & set(keys)
    assert all(e.score > 0 for e in evidence.related)
    assert evidence.place == "Malibu"
    top = {e.key: e for e in evidence.top}
    assert top[entity_key("Malibu")].passage  # a contextual passage from an evidence window
    scores = [e.score for e in evidence.related]
    assert scores == sorted(scores, reverse=True)


def test_kb_outlinks_join_the_candidates_and_give_the_passage():
    collection = toy_collection()
    event = KBEntry("Tara Reid rehab", description="Tara Reid entered rehab. American Pie made her famous. "
                                                   "She later left.", links=("American Pie",))
    kb = KnowledgeBase(entries={event.key: event, entity_key("American Pie"): KBEntry("American Pie")},
                       alias_of={event.key: event.key, entity_key("American Pie"): entity_key("American Pie")})
    evidence = rank_entities(collection, EventQuery(qid="q", name="Tara Reid rehab"), kb)
    pie = next(e for e in evidence.related if e.key == entity_key("American Pie"))
    assert pie.in_kb and "American Pie made her famous" in pie.passage


def test_rankers_exclude_seed_documents_and_find_the_story():
    collection = toy_collection()
    evidence = rank_entities(collection, seed_event(collection))
    scored = score_event(collection, evidence, RANKERS, encoder=BagEncoder())
    for name, values in scored.scores.items():
        assert not np.isfinite(values[collection.row_of["r1"]]), name
        hits = ranking(collection, values, 3)
        assert hits and hits[0].docid in {"r2", "r3"}, name
    name_only = score_event(collection, rank_entities(collection, EventQuery(qid="n", name="Yushu earthquake")),
                            ("event-name",))
    found = {h.docid for h in ranking(collection, name_only.scores["event-name"], 10)}
    assert found == {"q1", "q2"} and math.isinf(name_only.scores["event-name"][collection.row_of["v1"]])


def test_document_run_is_valid_trec_with_evidence(tmp_path):
    collection = toy_collection()
    stage = EventCollector(collection, ranker="entities", k=10)
    topics = [seed_event(collection).to_topic(), EventQuery(qid="quake", name="Yushu earthquake").to_topic()]
    run = stage(topics)
    path = tmp_path / "run.trec"
    write_run(run, path, tag="eventcoll")
    lines = path.read_text().splitlines()
    assert all(len(line.split()) == 6 and line.split()[1] == "Q0" for line in lines)
    back = read_run(path)
    assert [h.docid for h in back["rehab"]] == [h.docid for h in run["rehab"]]
    assert {h.docid for h in back["rehab"]} <= set(collection.doc_ids) - {"r1"}
    evidence = stage.evidence["rehab"]
    assert evidence["related"] and evidence["documents"][0]["matches"]
    assert all(p.split(":")[0] == d["docid"] for d in evidence["documents"] for ps in d["matches"].values()
               for p in ps)
