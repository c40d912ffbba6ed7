"""hybrid.evaluation.pooling: the pool's union, the query sample, the key with controls, answers and agreement."""

from __future__ import annotations

import pytest

from hybrid.core.errors import InputError
from hybrid.core.records import Hit
from hybrid.evaluation.pooling import (
    agreement,
    build_key,
    named_paths,
    pool_runs,
    read_assessed,
    sample_queries,
)


def test_the_pool_is_the_union_of_each_runs_top_depth_in_first_seen_order():
    a = {"q": [Hit("x", 3.0), Hit("y", 2.0), Hit("z", 1.0)]}
    b = {"q": [Hit("w", 3.0), Hit("x", 2.0), Hit("v", 1.0)], "r": [Hit("u", 1.0)]}
    assert pool_runs([a, b], ["q", "r", "s"], 2) == {"q": ["x", "y", "w"], "r": ["u"], "s": []}


def test_the_sample_draws_per_kind_seeded_and_skips_earlier_queries():
    kinds = {f"e{i}": "event" for i in range(6)} | {f"n{i}": "entity" for i in range(6)} | {"x": None}
    first = sample_queries(kinds, kinds, 2, seed=3)
    assert first == sample_queries(kinds, kinds, 2, seed=3)  # seeded
    assert sum(q.startswith("e") for q in first) == 2 and sum(q.startswith("n") for q in first) == 2
    assert "x" in first  # a query of no known kind is a group of its own
    second = sample_queries(kinds, kinds, 10, seed=4, exclude=first)
    assert set(second) == set(kinds) - set(first)


def test_the_key_holds_unjudged_pooled_passages_and_one_control_per_query():
    pooled = {"q": ["r", "j", "u1", "u2"], "p": ["u3"]}
    key = build_key(pooled, {"q": {"r": 1}, "p": {}}, frozenset({"j"}), seed=1, known=frozenset({("q", "u2")}),
                    kind_of={"q": "event"})
    assert sorted((k.qid, k.docid, k.source) for k in key if k.source == "pool") == [("p", "u3", "pool"),
                                                                                     ("q", "u1", "pool")]
    controls = [(k.qid, k.docid, k.label) for k in key if k.source == "control"]
    assert controls in ([("q", "r", "yes")], [("q", "j", "no")])  # p's pool has no known label
    assert [k.item for k in key] == ["0001", "0002", "0003"] and {k.qid: k.kind for k in key}["p"] == ""


def test_an_answer_that_is_not_yes_or_no_names_the_file_and_line(tmp_path):
    path = tmp_path / "done.tsv"
    path.write_text("item\tcoreferent\tnote\n0001\t Yes \t\n0002\tmaybe\t\n")
    with pytest.raises(InputError) as raised:
        read_assessed(path)
    assert "done.tsv:3" in str(raised.value)
    path.write_text("item\tcoreferent\tnote\n0001\t Yes \tsure\n0002\tno\t\n")
    assert {i: (a.relevance, a.note) for i, a in read_assessed(path).items()} == {"0001": (1, "sure"), "0002": (0, "")}
    path.write_text("item\tanswer\n0001\tyes\n")
    with pytest.raises(InputError, match="missing columns"):
        read_assessed(path)


def test_agreement_is_accuracy_and_cohens_kappa():
    pairs = [(1, 1), (1, 1), (0, 0), (1, 0)]
    result = agreement(pairs)
    # observed 0.75; expected 0.75 * 0.5 + 0.25 * 0.5 = 0.5; kappa (0.75 - 0.5) / 0.5
    assert result["accuracy"] == 0.75 and result["kappa"] == pytest.approx(0.5)
    assert result["gold_yes_assessed_no"] == 1 and result["gold_no_assessed_yes"] == 0
    assert agreement([]) == {"n": 0}


def test_runs_are_named_by_name_or_file():
    assert named_paths(["bm25=runs/a.trec", "runs/dense.trec"]) == {"bm25": "runs/a.trec", "dense": "runs/dense.trec"}
    with pytest.raises(InputError, match="given twice"):
        named_paths(["x/a.trec", "y/a.trec"])
