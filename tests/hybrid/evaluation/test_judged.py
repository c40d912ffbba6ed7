"""Passages judged for every query and condensed lists (``trec_eval -J``), on hand-checked examples."""

from __future__ import annotations

import json

import pytest

from hybrid.core.errors import InputError
from hybrid.core.judged import judged_only, read_judged, unjudged_count, with_judged
from hybrid.core.measures import per_query
from hybrid.core.records import Hit
from hybrid.sample import sample_paths

QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d5": 1}}
# d2 is judged for every query (a curated passage), d8 nobody judged
RUN = {"q1": [Hit("d2", 3.0), Hit("d1", 2.0), Hit("d8", 1.5), Hit("d3", 1.0)], "q2": [Hit("d2", 1.0)]}


def test_with_judged_adds_zero_labels_only_where_the_qrels_are_silent():
    qrels = {"q1": {"d1": 1, "d2": 2}}
    out = with_judged(qrels, {"d2", "d9"})
    assert out == {"q1": {"d1": 1, "d2": 2, "d9": 0}}
    assert qrels == {"q1": {"d1": 1, "d2": 2}}  # not changed in place
    assert "q3" not in with_judged(qrels, {"d9"})  # no judgments for a query nobody judged


def test_with_judged_restricted_to_a_run_adds_only_retrieved_passages():
    out = with_judged(QRELS, {"d2", "d9"}, RUN)
    assert out == {"q1": {"d1": 1, "d3": 1, "d2": 0}, "q2": {"d5": 1, "d2": 0}}


def test_judged_counts_in_judged_at_k():
    measures = ("Judged@10",)
    assert per_query(QRELS, RUN, measures)["Judged@10"]["q1"] == pytest.approx(2 / 4)
    assert per_query(with_judged(QRELS, {"d2"}, RUN), RUN, measures)["Judged@10"]["q1"] == pytest.approx(3 / 4)


def test_condensed_lists_by_hand():
    qrels = with_judged(QRELS, {"d2"}, RUN)
    condensed = judged_only(RUN, qrels)
    assert [h.docid for h in condensed["q1"]] == ["d2", "d1", "d3"]
    assert [h.score for h in condensed["q1"]] == [3.0, 2.0, 1.0]
    pq = per_query(qrels, condensed, ("AP@100", "RR@10"))
    # d2 judged non-relevant stays in front: relevant at 2 and 3 -> AP (1/2 + 2/3) / 2
    assert pq["AP@100"]["q1"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert pq["RR@10"]["q1"] == pytest.approx(1 / 2)
    # standard lists: relevant at 2 and 4
    assert per_query(qrels, RUN, ("AP@100",))["AP@100"]["q1"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    # without the list every non-relevant is unjudged and the relevant passages move to the top
    assert per_query(QRELS, judged_only(RUN, QRELS), ("AP@100",))["AP@100"]["q1"] == pytest.approx(1.0)
    assert unjudged_count(RUN, qrels) == (1, 5)
    assert unjudged_count(RUN, QRELS) == (3, 5)


def test_a_query_with_no_judged_passage_left_stays_in_the_run():
    assert judged_only({"q2": [Hit("d8", 1.0)]}, QRELS) == {"q2": []}


def test_read_judged_skips_blank_lines_and_comments(tmp_path):
    path = tmp_path / "judged.txt"
    path.write_text("# curated sentences\nd1\n\n  d2  \n")
    assert read_judged(path) == frozenset({"d1", "d2"})


@pytest.mark.parametrize("text, line", [("d1\nd2 d3\n", 2), ("# nothing\n", None)])
def test_read_judged_names_the_file_and_line(tmp_path, text, line):
    path = tmp_path / "judged.txt"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_judged(path)
    assert str(path) in str(error.value)
    assert error.value.line == line


def test_the_sample_list_is_the_sample_corpus_curated_sentences():
    paths = sample_paths()
    with paths.corpus.open() as handle:
        curated = {p["id"] for p in map(json.loads, handle) if p.get("validated")}
    assert read_judged(paths.judged) == curated
