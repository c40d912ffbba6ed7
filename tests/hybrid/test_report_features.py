"""The report names its baseline, explains itself (legend), lists the queries (table of contents) with each
query's baseline score and difference, and says "not in qrels" when the qrels hold only relevant passages."""

from __future__ import annotations

from hybrid.cli.report import render
from hybrid.core.records import Hit, Topic

TOPICS = [Topic("e1", "a b c", 0, 1, kind="event"), Topic("n1", "a b c", 2, 3, kind="entity")]
RUN = {"e1": [Hit("d1", 2.0), Hit("d9", 1.0)], "n1": [Hit("d9", 1.0)]}
BASELINE = {"e1": [Hit("d9", 2.0), Hit("d1", 1.0)], "n1": [Hit("d3", 1.0)]}
GROUPS = {"e1": "event", "n1": "entity"}


def page(qrels, baseline=True):
    return render(TOPICS, RUN, qrels, lambda d: "a b c", GROUPS, "mf.trec", baseline=BASELINE if baseline else None,
                  baseline_name="bm25.trec" if baseline else None)


def test_baseline_named_legend_toc_and_per_query_deltas():
    html = page({"e1": {"d1": 1}, "n1": {"d3": 1, "d8": 0}})
    assert "Baseline: <code>bm25.trec</code>" in html and "id='legend'" in html
    toc = html[html.index("id='toc'"):]
    toc = toc[: toc.index("</table>")]
    assert "<a href='#q-e1'>e1</a>" in toc and "<a href='#q-n1'>n1</a>" in toc
    # e1: AP 1 vs 0.5 (+0.5); n1: 0 vs 1 (-1)
    assert "<td>1.000</td><td>0.500</td><td class='better'>+0.500</td>" in toc
    assert "<td>0.000</td><td>1.000</td><td class='worse'>-1.000</td>" in toc
    assert "baseline AP@100 0.500 (<span class='better'>+0.500</span>)" in html
    summary = html[html.index("id='summary'"):]
    summary = summary[: summary.index("</table>")]
    assert "event: baseline" in summary and "entity: difference" in summary
    # graded qrels with zeros: unjudged stays unjudged
    assert "[unjudged]" in html and "[not in qrels]" not in html


def test_positive_only_qrels_say_not_in_qrels():
    html = page({"e1": {"d1": 1}, "n1": {"d3": 1}}, baseline=False)
    assert "[not in qrels]" in html and "[unjudged]" not in html
    assert "list only relevant passages" in html and "Baseline:" not in html


def test_judged_list_tells_judged_non_relevant_from_unjudged(tiny_index, data_dir, tmp_path):
    from hybrid.cli.report import main as report_main

    qrels, run, judged = tmp_path / "qrels.txt", tmp_path / "run.trec", tmp_path / "judged.txt"
    qrels.write_text("q-ev-checkin 0 b2:0 1\n")  # relevant passages only
    run.write_text("q-ev-checkin Q0 b2:0 1 2.0 t\nq-ev-checkin Q0 a1:0 2 1.0 t\nq-ev-checkin Q0 a1:1 3 0.5 t\n")
    judged.write_text("a1:0\n")
    common = ["--run", str(run), "--qrels", str(qrels), "--topics", str(data_dir / "tiny_topics.jsonl"),
              "--index", str(tiny_index)]
    assert report_main([*common, "--output", str(tmp_path / "plain.html")]) == 0
    plain = (tmp_path / "plain.html").read_text()
    assert "[not in qrels]</span> <code>a1:0</code>" in plain
    assert report_main([*common, "--judged", str(judged), "--output", str(tmp_path / "judged.html")]) == 0
    html = (tmp_path / "judged.html").read_text()
    assert "[relevant]</span> <code>b2:0</code>" in html
    assert "[not relevant]</span> <code>a1:0</code>" in html
    assert "[unjudged]</span> <code>a1:1</code>" in html
