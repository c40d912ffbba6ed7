"""Kind/type agreement and DiscK type-paired features on hand-made pairs."""

from __future__ import annotations

import pytest

from features.annotate import MentionRecord
from features.pairs import types as T
from ltr.batch import standalone_pair


def rec(mention: str, kind: str | None, tag: str | None, rid: str = "q:0#0") -> MentionRecord:
    pid = rid.split("#")[0]
    return MentionRecord(id=rid, passage_id=pid, doc_id=pid.split(":")[0], start=0, end=len(mention),
                         mention=mention, kind=kind, tag=tag, source="gold", chain=None, context=mention)


def value(name: str, q: MentionRecord, c: MentionRecord) -> float:
    ctx = standalone_pair(q, c)
    return T.GROUP.value(name, ctx.query.record, ctx.candidate, ctx)


def test_coarse_types_of_both_vocabularies():
    assert T.coarse_type("entity", "HUMAN_PART_PER") == "person"
    assert T.coarse_type("entity", "HUMAN_PART_GPE") == "place"
    assert T.coarse_type("entity", "LOC_GEO") == "place"
    assert T.coarse_type("entity", "TIME_DATE") == "time"
    assert T.coarse_type("event", "NEG_ACTION_OCCURRENCE") == "event"
    assert T.coarse_type("entity", "AUTO_NAME") == "name"
    assert T.coarse_type("entity", "AUTO_DATE") == "time"
    assert T.coarse_type("entity", "GPE") == "place"
    assert T.coarse_type("entity", None) == "other"
    assert T.coarse_type(None, None) == "unknown"


def test_type_agreement():
    person = rec("Tara Reid", "entity", "HUMAN_PART_PER")
    assert value("type_agree", person, rec("Reid", "entity", "HUMAN_PART_PER", "c:0#0")) == 1.0
    assert value("type_agree", person, rec("Malibu", "entity", "LOC_GEO", "c:0#0")) == 0.0
    # a generic name may hide a person: not known to disagree
    assert value("type_agree", person, rec("Reid", "entity", "AUTO_NAME", "c:0#0")) == 1.0
    assert value("type_agree", person, rec("entered", "event", "ACTION_OCCURRENCE", "c:0#0")) == 0.0


def test_kind_match():
    ev = rec("quake", "event", "ACTION_OCCURRENCE")
    assert value("type_kind_match", ev, rec("earthquake", "event", "AUTO_EVENT", "c:0#0")) == 1.0
    assert value("type_kind_match", ev, rec("Yushu", "entity", "LOC_GEO", "c:0#0")) == 0.0
    assert value("type_kind_match", ev, rec("Yushu", None, None, "c:0#0")) == 1.0


def test_query_type_indicator_and_disck_pairs():
    org = rec("WHO", "entity", "HUMAN_PART_ORG")
    cand = rec("World Health Organization", "entity", "HUMAN_PART_ORG", "c:0#0")
    assert value("type_query_org", org, cand) == 1.0
    assert value("type_query_person", org, cand) == 0.0
    assert value("disck_org_acronym", org, cand) == 1.0
    assert value("disck_place_acronym", org, cand) == 0.0
    place = rec("UK", "entity", "LOC_GEO")
    assert value("disck_place_acronym", place, rec("United Kingdom", "entity", "LOC_GEO", "c:0#0")) == 1.0
    assert value("disck_org_acronym", place, rec("United Kingdom", "entity", "LOC_GEO", "c:0#0")) == 0.0


TYPE_TAGS = {"event": ("event", "ACTION_OCCURRENCE"), "person": ("entity", "HUMAN_PART_PER"),
             "org": ("entity", "HUMAN_PART_ORG"), "place": ("entity", "LOC_GEO"), "time": ("entity", "TIME_DATE"),
             "thing": ("entity", "NON_HUMAN_PART")}


@pytest.mark.parametrize("coarse", T.QUERY_TYPES)
def test_every_disck_pair_fires_only_for_its_query_type(coarse):
    kind, tag = TYPE_TAGS[coarse]
    q = rec("Red Cross", kind, tag)
    c = rec("Red Cross", kind, tag, "c:0#0")
    for other in T.QUERY_TYPES:
        assert value(f"type_query_{other}", q, c) == float(other == coarse)
        for short in T.DISCK_BASE:
            expected = 1.0 if other == coarse else 0.0
            assert value(f"disck_{other}_{short}", q, c) == expected, (other, short)


def test_batch_compute_equals_each_feature_on_every_pair_for_any_subset_and_order():
    """TypeGroup.compute calls only the DiscK pairs of the query's own type; its columns are the features' own values,
    for queries of several types (each with candidates of several), a subset, in any order."""
    import numpy as np

    from features.pairs.base import PairBatch

    queries = [rec("Tara Reid", "entity", "HUMAN_PART_PER"), rec("WHO", "entity", "HUMAN_PART_ORG", "q:1#0"),
               rec("quake", "event", "ACTION_OCCURRENCE", "q:2#0"), rec("it", None, None, "q:3#0")]
    cands = [rec("Reid", "entity", "HUMAN_PART_PER", "c:0#0"),
             rec("World Health Organization", "entity", "ORG", "c:1#0"),
             rec("earthquake", "event", "AUTO_EVENT", "c:2#0"), rec("Malibu", "entity", "LOC_GEO", "c:3#0")]
    pairs = [standalone_pair(q, c) for q in queries for c in cands]
    batch = PairBatch([p.query for p in pairs], pairs, list(range(len(pairs) + 1)))
    every = list(T.GROUP.features())
    for names in (every, every[::-1], [n for n in every if n.startswith("disck_")][::4], ["type_agree"], []):
        expected = np.array([[T.GROUP.value(n, p.query.record, p.candidate, p) for n in names] for p in pairs],
                            dtype=np.float32).reshape(len(pairs), len(names))
        got = T.GROUP.compute(batch, names)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), names
    values = T.GROUP.compute(batch, every)
    for name in ("disck_person_containment", "disck_org_acronym", "disck_event_char3", "type_query_event"):
        assert values[:, every.index(name)].any(), name
