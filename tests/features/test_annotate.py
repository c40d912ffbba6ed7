"""Annotation fields on the hand-made corpus (tests/data/tiny_corpus.jsonl)."""

from __future__ import annotations

import pytest

from features.annotate import LEGACY, AnnotationConfig, Annotator
from hybrid.core.formats import read_corpus
from hybrid.core.records import Topic


@pytest.fixture(scope="module")
def records(tiny_corpus):
    out = {}
    for passage, recs in Annotator(LEGACY).annotate(read_corpus(tiny_corpus)):
        out[passage.id] = recs
    return out


def by_text(recs, text):
    (found,) = [r for r in recs if r.mention == text]
    return found


def test_gold_mentions_keep_offsets_kind_and_tag(records):
    rec = by_text(records["a1:0"], "checked into")
    assert (rec.start, rec.end, rec.kind, rec.tag, rec.source) == (18, 30, "event", "ACTION_OCCURRENCE", "gold")
    assert rec.id == "a1:0#1" and rec.doc_id == "a1"


def test_ner_is_the_other_gold_entities_of_the_sentence(records):
    rec = by_text(records["a1:0"], "checked into")
    assert rec.ner == ["Tara Reid", "Promises Treatment Center", "Tuesday"]
    reid = by_text(records["a1:0"], "Tara Reid")
    assert "Tara Reid" not in reid.ner and "Tuesday" in reid.ner


def test_coref_field_is_the_rest_of_the_gold_chain_across_sentences(records):
    rec = by_text(records["a1:0"], "checked into")
    assert rec.coref == ["entered"]
    assert by_text(records["a1:0"], "Tara Reid").coref == ["she"]
    assert by_text(records["b2:1"], "Reid").coref == ["Tara Reid"]


def test_context_window(tiny_corpus):
    ann = Annotator(AnnotationConfig(annotation="corpus", context_window=1))
    recs = dict((p.id, r) for p, r in ann.annotate(read_corpus(tiny_corpus)))
    rec = by_text(recs["a1:0"], "checked into")
    assert rec.context.startswith("Actress Tara Reid") and rec.context.endswith("rehab voluntarily.")


def test_unannotated_passages_get_detected_candidates_and_heuristic_chains(records):
    quake = records["d4:0"]
    texts = {r.mention: r for r in quake}
    assert "earthquake" in texts and texts["earthquake"].kind == "event" and texts["earthquake"].source == "auto"
    assert "Yushu" in texts and texts["Yushu"].kind == "entity"
    assert "killing" in texts
    # The heuristic links the two "Yushu" mentions of document d4 across sentences.
    yushu_1 = by_text(records["d4:1"], "Yushu")
    assert yushu_1.chain == texts["Yushu"].chain and "Qinghai" in texts["earthquake"].ner


def test_string_fields(records):
    rec = by_text(records["a1:0"], "Promises Treatment Center")
    assert rec.field_text("acronym") == "acrptc"
    assert rec.field_text("type") == "kind_entity tag_loc_fac"
    assert len(rec.field_text("trigrams").split()) == len("#promises treatment center#") - 2


def test_query_annotation_without_index():
    topic = Topic(qid="q", text="Tara Reid checked into rehab on Tuesday", start=10, end=22, kind="event")
    rec = Annotator(LEGACY).annotate_topic(topic)
    assert rec.mention == "checked into" and rec.kind == "event"
    assert "Tara Reid" in rec.ner and "Tuesday" in rec.ner


def test_record_from_json_as_init_fills_defaults_refuses_stray_keys():
    from features.annotate import MentionRecord

    full = MentionRecord(id="p#0", passage_id="p", doc_id="d", start=4, end=9, mention="quake", kind="event",
                         tag="ACTION_OCCURRENCE", source="gold", chain="c1", ner=["Yushu"], ner_labels=["LOC_GEO"],
                         context="The quake hit Yushu.", coref=["it"])
    stored = full.to_json()
    again = MentionRecord.from_json(stored)
    assert again == full and repr(again) == repr(full) and again.to_json() == stored
    again.kind = "entity"  # a record is its own: filling in a field leaves the stored dict as it was
    assert stored["kind"] == "event"
    assert MentionRecord.from_json(dict(reversed(stored.items()))) == full  # the fields in another order
    short = {k: v for k, v in stored.items() if k not in ("ner", "ner_labels", "context", "coref")}
    assert MentionRecord.from_json(short) == MentionRecord(**short)
    assert MentionRecord.from_json(short).coref == [] and MentionRecord.from_json(short).context == ""
    with pytest.raises(TypeError):
        MentionRecord.from_json({**stored, "score": 1.0})
