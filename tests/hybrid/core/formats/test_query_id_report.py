"""Run/qrels/topics query-id mismatches are reported with counts and examples, never dropped silently."""

from __future__ import annotations

from hybrid.cli.eval import main as eval_main
from hybrid.core.formats.consistency import compare_query_ids, topic_query_ids
from hybrid.core.records import Hit


def test_report_names_each_kind_of_mismatch():
    qrels = {"q1": {"d": 1}, "q2": {"d": 1}, "q3": {"d": 0}}
    run = {"q1": [Hit("d", 1.0)], "q3": [], "q9": [Hit("d", 1.0)]}
    report = compare_query_ids(qrels, run, topics={"q1", "q2", "q3"})
    assert (report.unjudged, report.missing, report.unknown_topics) == (["q9"], ["q2", "q3"], ["q9"])
    assert not report.ok
    assert report.lines() == [
        "1 run queries have no judgments in the qrels and are ignored by the evaluation (e.g. q9)",
        "2 of 3 judged queries have no results in the run and score 0 (e.g. q2, q3)",
        "1 query ids of the run/qrels are not in the topics file (e.g. q9)",
    ]
    assert compare_query_ids(qrels, {q: [Hit("d", 1.0)] for q in qrels}).ok


def test_examples_are_capped():
    qrels = {f"q{i}": {"d": 1} for i in range(10)}
    (line,) = compare_query_ids(qrels, {}).lines()
    assert line == "10 of 10 judged queries have no results in the run and score 0 (e.g. q0, q1, q2, ...)"


def test_topic_ids_from_tsv_and_jsonl(tmp_path):
    (tmp_path / "t.tsv").write_text("q1\ta <m> b </m>\nq2\tc <m> d </m>\td\n", encoding="utf-8")
    (tmp_path / "t.jsonl").write_text('{"qid": "q1", "passage_id": "p", "start": 0, "end": 1}\n{"qid": 5}\n',
                                      encoding="utf-8")
    assert topic_query_ids(tmp_path / "t.tsv") == {"q1", "q2"}
    assert topic_query_ids(tmp_path / "t.jsonl") == {"q1", "5"}


def test_eval_cli_reports_mismatches_and_still_scores(tmp_path, capsys):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq2 0 d1 1\n", encoding="utf-8")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 t\nq7 Q0 d1 1 1.0 t\n", encoding="utf-8")
    (tmp_path / "t.tsv").write_text("q1\ta <m> b </m>\nq2\tc <m> d </m>\n", encoding="utf-8")
    assert eval_main(["--qrels", str(tmp_path / "q.txt"), "--run", str(tmp_path / "r.trec"), "--topics",
                      str(tmp_path / "t.tsv"), "--measures", "RR@10"]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == [
        "warning: 1 run queries have no judgments in the qrels and are ignored by the evaluation (e.g. q7)",
        "warning: 1 of 2 judged queries have no results in the run and score 0 (e.g. q2)",
        "warning: 1 query ids of the run/qrels are not in the topics file (e.g. q7)",
    ]
    all_row = out.out.splitlines()[1].split()
    assert all_row[:3] == ["all", "2", "0.5000"]  # q1 found at rank 1, q2 missing scores 0
