"""benchmarks/kind_typing.py's matching rule and outcomes on hand-made spans (no index needed)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def kt(benchmark_script):
    return benchmark_script("kind_typing")


def test_exact_span_wins_then_largest_overlap_over_union(kt):
    S = kt.Span
    gold = S(4, 14, "event")  # "earthquake" in "The earthquake killed ..."
    auto = [S(0, 14, "entity", "AUTO_NP"), S(4, 14, "event", "AUTO_EVENT"), S(15, 21, "event")]
    assert kt.best_match(gold, auto) == auto[1]
    assert kt.best_match(S(0, 20, "event"), auto[:1] + auto[2:]) == auto[0]  # 14/20 of the union beats 5/21
    assert kt.best_match(S(30, 35, "event"), auto) is None


def test_typed_kind_reports_a_span_given_both_kinds(kt):
    S = kt.Span
    gold = S(4, 14, "event")
    assert kt.typed_kind(gold, [S(4, 14, "entity"), S(4, 14, "event")]) == "both"
    assert kt.typed_kind(gold, [S(4, 14, "entity"), S(0, 14, "event")]) == "entity"
    assert kt.typed_kind(gold, []) == "none"


def test_passage_outcome_and_families(kt):
    S = kt.Span
    coref = [S(10, 15, "event")]
    assert kt.passage_outcome(coref, [S(10, 15, "entity"), S(0, 5, "event")], "event") == "wrong_kind_only"
    assert kt.passage_outcome(coref, [S(8, 15, "event")], "event") == "right"
    assert kt.passage_outcome(coref, [S(0, 5, "event")], "event") == "undetected"
    assert [kt.family(t) for t in ("NEG_ACTION_STATE", "ACTION_OCCURRENCE", "NON_HUMAN_PART", "HUMAN_PART_PER",
                                   "LOC_GEO", "TIME_DATE", None)] == [
        "NEG_ACTION", "ACTION", "NON_HUMAN", "HUMAN", "LOC", "TIME", "OTHER"]


def test_hidden_table_counts_wrong_kind_only_passages_per_query(kt):
    S = kt.Span
    gold = {"p1": [S(0, 5, "event")], "p2": [S(0, 5, "event")]}
    clusters = {"p1": ["c"], "p2": ["c"]}
    auto = {"p1": [S(0, 5, "event")], "p2": [S(0, 5, "entity")]}
    queries = [{"qid": "q", "kind": "event", "cluster": "c"}]
    row = kt.hidden_table(queries, {"q": {"p1": 1, "p2": 1, "p3": 1}}, gold, clusters, auto)["event"]
    assert (row["relevant_passages"], row["right"], row["wrong_kind_only"], row["no_mention_of_kind"]) == (
        2, 0.5, 0.5, 0.5)
    assert row["queries_with_a_wrong_kind_only_passage"] == 1.0 and row["queries_all_wrong_kind_only"] == 0.0
