"""Argument agreement on hand-made pairs: shared/conflicting times, places, people, numbers."""

from __future__ import annotations

import pytest

from features.annotate import MentionRecord
from features.pairs import arguments as A
from ltr.batch import standalone_pair


def rec(mention: str, context: str, ner: list[tuple[str, str]] = (), kind: str = "event", rid: str = "q:0#0",
        tag: str = "ACTION_OCCURRENCE") -> MentionRecord:
    pid = rid.split("#")[0]
    start = context.find(mention)
    return MentionRecord(id=rid, passage_id=pid, doc_id=pid.split(":")[0], start=start, end=start + len(mention),
                         mention=mention, kind=kind, tag=tag, source="gold", chain=None, context=context,
                         ner=[n for n, _ in ner], ner_labels=[label for _, label in ner])


def value(name: str, q: MentionRecord, c: MentionRecord, **kw) -> float:
    ctx = standalone_pair(q, c, **kw)
    return A.GROUP.value(name, ctx.query.record, ctx.candidate, ctx)


def test_time_keys():
    assert A.time_keys("Tuesday, May 5 2009") == {"d:tuesday", "m:may", "n:5", "y:2009"}
    assert A.time_keys("Sept. 12") == {"m:sep", "n:12"}
    assert A.time_keys("yesterday") == set()


def test_different_years_conflict_same_year_shared():
    q = rec("earthquake", "The earthquake of 2010 killed thousands.", [("2010", "TIME_DATE")])
    other_year = rec("earthquake", "The earthquake of 2008 killed thousands.", [("2008", "TIME_DATE")], rid="c:0#0")
    same_year = rec("quake", "A quake in 2010 destroyed the town.", [("2010", "TIME_DATE")], rid="c:0#0")
    assert value("args_time_conflict", q, other_year) == 1.0
    assert value("args_time_shared", q, other_year) == 0.0
    assert value("args_time_conflict", q, same_year) == 0.0
    assert value("args_time_shared", q, same_year) > 0.0
    assert value("args_time_jaccard", q, same_year) == 1.0


def test_weekday_conflict_from_heuristic_tagger_without_labels():
    # no ner annotations at all: the heuristic tagger reads the weekdays from the contexts
    q = rec("checked into", "Tara Reid checked into rehab on Tuesday.")
    c_other = rec("checked into", "Lindsay Lohan checked into rehab on Friday.", rid="c:0#0")
    c_same = rec("entered", "Reid entered a clinic on Tuesday.", rid="c:0#0")
    assert value("args_time_conflict", q, c_other) == 1.0
    assert value("args_time_conflict", q, c_same) == 0.0
    assert value("args_time_shared", q, c_same) > 0.0


def test_place_conflict_and_agreement_from_gold_labels():
    q = rec("earthquake", "An earthquake struck Yushu in Qinghai.", [("Yushu", "LOC_GEO"), ("Qinghai", "LOC_GEO")])
    c_far = rec("earthquake", "An earthquake hit Indonesia.", [("Indonesia", "LOC_GEO")], rid="c:0#0")
    c_near = rec("quake", "The quake in Yushu county left many dead.", [("Yushu county", "LOC_GEO")], rid="c:0#0")
    assert value("args_place_conflict", q, c_far) == 1.0
    assert value("args_place_conflict", q, c_near) == 0.0
    assert value("args_place_shared", q, c_near) > 0.0


def test_people_conflict_and_mention_itself_is_not_an_argument():
    q = rec("checked into", "Tara Reid checked into rehab.", [("Tara Reid", "HUMAN_PART_PER")])
    c_other = rec("checked into", "Lindsay Lohan checked into rehab.", [("Lindsay Lohan", "HUMAN_PART_PER")],
                  rid="c:0#0")
    c_same = rec("entered", "Reid entered rehab.", [("Reid", "HUMAN_PART_PER")], rid="c:0#0")
    assert value("args_person_conflict", q, c_other) == 1.0
    assert value("args_person_shared", q, c_same) > 0.0
    assert value("args_entities_conflict", q, c_other) == 1.0
    # an entity query: its own name is not one of its arguments
    reid = rec("Tara Reid", "Tara Reid checked into rehab.", kind="entity", tag="HUMAN_PART_PER")
    assert "tara" not in A.record_arguments(standalone_pair(reid, c_same).query.record).get("entities")


def test_numbers_shared_and_years_are_not_numbers():
    q = rec("killed", "The blast killed 27 people in 2009.")
    c = rec("died", "At least 27 died in the blast.", rid="c:0#0")
    c2 = rec("died", "At least 1,500 died in the blast.", rid="c:0#0")
    assert value("args_number_shared", q, c) > 0.0
    assert value("args_number_conflict", q, c2) == 1.0
    assert A.number_keys("1,500 people in 2009") == {"1500"}


def test_no_arguments_means_no_conflict():
    q = rec("attack", "The attack was condemned.")
    c = rec("attack", "They condemned the attack.", rid="c:0#0")
    for cls in A.CLASSES:
        assert value(f"args_{cls}_conflict", q, c) == 0.0


def test_document_level_arguments():
    q = rec("earthquake", "The earthquake destroyed the town.")
    c = rec("quake", "The quake destroyed homes.", rid="c:0#0")
    kw = dict(query_doc=["It struck Yushu on April 14, 2010."], candidate_doc=["It struck Sichuan on May 12, 2008."])
    assert value("args_time_conflict", q, c, **kw) == 0.0  # the sentences themselves have no times
    assert value("docargs_time_conflict", q, c, **kw) == 1.0
    assert value("docargs_entities_conflict", q, c, **kw) == 1.0
    same = dict(query_doc=["It struck Yushu on April 14, 2010."], candidate_doc=["Yushu was hit on April 14."])
    assert value("docargs_time_conflict", q, c, **same) == 0.0
    assert value("docargs_time_shared", q, c, **same) > 0.0
    assert value("docargs_entities_shared", q, c, **same) > 0.0


CLASS_EXAMPLES = {
    "time": (("May 2009", "TIME_DATE"), ("June 2011", "TIME_DATE")),
    "place": (("Yushu", "LOC_GEO"), ("Sichuan", "LOC_GEO")),
    "person": (("Tara Reid", "HUMAN_PART_PER"), ("Lindsay Lohan", "HUMAN_PART_PER")),
    "number": (("27", "NUMBER"), ("140", "NUMBER")),
    "entities": (("Oxfam", "HUMAN_PART_ORG"), ("Unicef", "HUMAN_PART_ORG")),
}


@pytest.mark.parametrize("cls", A.CLASSES)
@pytest.mark.parametrize("level", ["args", "docargs"])
def test_every_class_and_level_agrees_and_conflicts(cls, level):
    (same, label), (other, other_label) = CLASS_EXAMPLES[cls]

    def pair(arg: str, arg_label: str, rid: str) -> MentionRecord:
        return rec("happened", f"It happened ({arg}).", [(arg, arg_label)], rid=rid)

    q = pair(same, label, "q:0#0")
    agree, disagree = pair(same, label, "c:0#0"), pair(other, other_label, "c:0#0")
    assert value(f"{level}_{cls}_jaccard", q, agree) == 1.0
    assert value(f"{level}_{cls}_shared", q, agree) > 0.0
    assert value(f"{level}_{cls}_conflict", q, agree) == 0.0
    assert value(f"{level}_{cls}_jaccard", q, disagree) == 0.0
    assert value(f"{level}_{cls}_shared", q, disagree) == 0.0
    assert value(f"{level}_{cls}_conflict", q, disagree) == 1.0


def test_collect_keys_do_not_leak_between_calls_through_the_phrase_cache():
    """phrase_keys is cached and collect unions its keys into sets of its own: a phrase seen before (with another
    label, or beside other phrases) adds exactly its own keys, and each label keeps its own class."""
    first = A.collect([("Tara Reid", "HUMAN_PART_PER"), ("Reid", "HUMAN_PART_PER"), ("Malibu", "LOC_GEO"),
                       ("May 5 2009", "TIME_DATE"), ("1,500", "NUMBER")])
    assert first.get("person") == {"tara", "reid"} and first.get("place") == {"malibu"}
    assert first.get("entities") == {"tara", "reid", "malibu"}
    assert first.get("time") == {"m:may", "n:5", "y:2009"} and first.get("number") == {"1500"}
    again = A.collect([("Reid", "HUMAN_PART_PER"), ("Malibu", "TIME_DATE")])
    assert again.get("person") == {"reid"} and again.get("entities") == {"reid"}
    assert again.get("time") == set() and again.get("place") == set()
    assert A.collect([("Reid", "LOC_GEO")]).get("place") == {"reid"}
    assert A.collect([]).keys == {c: frozenset() for c in A.CLASSES}


def test_batch_compute_equals_each_feature_on_every_pair_for_any_subset_and_order():
    """ArgumentsGroup.compute reads each pair's four Arguments once; its columns are the features' own values,
    for a subset of one level only, in any order."""
    import numpy as np

    from features.pairs.base import PairBatch

    q = rec("earthquake", "The earthquake hit Yushu on April 14, 2010, killing 2,700.", [("Yushu", "LOC_GEO")])
    cands = [rec("quake", "The quake hit Yushu in April 2010.", [("Yushu", "LOC_GEO")], rid="c:0#0"),
             rec("quake", "A quake hit Sichuan on May 12, 2008, killing 69,000.", rid="d:0#0", kind="entity"),
             rec("it", "It was condemned by Tara Reid.", rid="e:0#0")]
    docs = [["Yushu was hit on April 14."], ["It struck Sichuan in 2008."], []]
    pairs = [standalone_pair(q, c, query_doc=["It struck Yushu on April 14, 2010."], candidate_doc=d)
             for c, d in zip(cands, docs, strict=True)]
    batch = PairBatch([p.query for p in pairs], pairs, list(range(len(pairs) + 1)))
    every = list(A.GROUP.features())
    for names in (every, every[::-1], [n for n in every if n.startswith("docargs_")][::3],
                  [n for n in every if n.startswith("args_")][1::4], []):
        expected = np.array([[A.GROUP.value(n, p.query.record, p.candidate, p) for n in names] for p in pairs],
                            dtype=np.float32).reshape(len(pairs), len(names))
        got = A.GROUP.compute(batch, names)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), names
    assert len({tuple(row) for row in A.GROUP.compute(batch, every)}) == 3  # the pairs differ


def test_passage_phrases_once_document_arguments_as_with_repeats():
    # every record of a sentence lists that sentence's entities: the passage keeps each labelled phrase once, and the
    # document's arguments are those of all the phrases, repeats included
    from features.pairs.views import DocumentView, PassageView, RecordView

    text = "The earthquake in Yushu in 2010 killed thousands."
    ner = [("Yushu", "LOC_GEO"), ("2010", "TIME_DATE")]
    first = PassageView("d:0", "d", text, [RecordView(rec("earthquake", text, ner, rid="d:0#0")),
                                           RecordView(rec("killed", text, ner, rid="d:0#1"))])
    second = PassageView("d:1", "d", "Yushu mourned.", [RecordView(rec("mourned", "Yushu mourned.", ner[:1],
                                                                       rid="d:1#0"))])
    labelled = A.passage_arguments(first)
    assert len(labelled) == len(set(labelled)) and set(ner) <= set(labelled)
    repeats = [x for p in (first, second) for x in A._heuristic(p.text, set())]
    repeats += [x for p in (first, second) for r in p.records
                for x in zip(r.record.ner, r.record.ner_labels, strict=True)]
    assert A.document_arguments(DocumentView("d", [first, second])) == A.collect(repeats)
    assert A.document_arguments(DocumentView("d", [first, second])).get("place") == frozenset({"yushu"})
