"""Qrels and TREC runs: column splitting as trec_eval does it, deterministic order, refusing unwritable runs."""

from __future__ import annotations

import math

import pytest

from hybrid.core.formats.lines import control_character
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import _check_token, read_run, write_run
from hybrid.core.records import Hit


def test_qrels_accept_tabs_and_spaces(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("q1 0 d1 1\nq1\t0\td2\t0\n  q2  Q0  d1  -1  \n", encoding="utf-8")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": -1}}


def test_run_round_trip_orders_by_score_then_docid(tmp_path):
    run = {"q2": [Hit("b", 1.0), Hit("a", 1.0), Hit("c", 3.25)], "q1": [Hit("x", -0.5)]}
    path = tmp_path / "r.trec"
    write_run(run, path, tag="t1")
    assert path.read_text().splitlines() == [
        "q1 Q0 x 1 -0.500000 t1", "q2 Q0 c 1 3.250000 t1", "q2 Q0 a 2 1.000000 t1", "q2 Q0 b 3 1.000000 t1"]
    back = read_run(path)
    assert {q: [(h.docid, h.score) for h in hits] for q, hits in back.items()} == {
        "q1": [("x", -0.5)], "q2": [("c", 3.25), ("a", 1.0), ("b", 1.0)]}


def test_read_run_ignores_file_order_and_rank_values(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 low 1 0.1 t\nq1 Q0 high 7 0.9 t\n", encoding="utf-8")
    assert [h.docid for h in read_run(path)["q1"]] == ["high", "low"]
    path.write_text("", encoding="utf-8")
    assert read_run(path) == {}


@pytest.mark.parametrize(("run", "tag", "message"), [
    ({"q 1": [Hit("d", 1.0)]}, "t", "query id 'q 1'"),
    ({"q1": [Hit("d\t1", 1.0)]}, "t", "docid (query q1) 'd\\t1'"),
    ({"q1": [Hit("", 1.0)]}, "t", "docid (query q1) ''"),
    ({"q1": [Hit("d", math.nan)]}, "t", "is not a finite number"),
    ({"q1": [Hit("d", math.inf)]}, "t", "is not a finite number"),
    ({"q1": [Hit("d", 1.0), Hit("d", 0.5)]}, "t", "appears twice for query 'q1'"),
    ({"q1": [Hit("d", 1.0)]}, "my tag", "run tag 'my tag'"),
])
def test_write_run_refuses_what_a_trec_file_cannot_hold(tmp_path, run, tag, message):
    path = tmp_path / "r.trec"
    path.write_text("previous\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        write_run(run, path, tag=tag)
    assert message in str(caught.value)
    assert path.read_text() == "previous\n"  # nothing half-written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.trec"]


def test_spans_file_is_written_with_the_run(tmp_path):
    run = {"q1": [Hit("a", 2.0, mention_start=0, mention_end=4, mention_text="Tara"), Hit("b", 1.0)]}
    write_run(run, tmp_path / "r.trec", spans_path=tmp_path / "r.spans.jsonl")
    rows = (tmp_path / "r.spans.jsonl").read_text().splitlines()
    assert rows[0] == '{"qid": "q1", "docid": "a", "rank": 1, "score": 2.0, "start": 0, "end": 4, "mention": "Tara"}'
    assert '"start": null' in rows[1]


def test_ids_are_refused_exactly_for_blanks_and_control_characters():
    # the printable-ASCII shortcut accepts no id the full check refuses, and refuses none it accepts
    def accepted(value):
        try:
            _check_token("docid", value)
        except ValueError:
            return False
        return True

    for code in range(0x10000):
        for value in (chr(code), f"d{chr(code)}1"):
            expected = bool(value) and not any(c.isspace() for c in value) and control_character(value) is None
            assert accepted(value) == expected, hex(code)
    assert not accepted("")
