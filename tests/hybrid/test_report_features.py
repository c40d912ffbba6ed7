"""The report names its baseline, explains itself (legend), lists the queries (table of contents) with each
query's baseline score and difference, and says "not in qrels" when the qrels hold only relevant passages."""

from __future__ import annotations

from hybrid.core.records import Hit, Topic
from hybrid.report import render

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
