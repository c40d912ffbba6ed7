"""The report gives what its --help promises: per-kind means of the AP@100 differences (issue 22, defect 7)."""

from __future__ import annotations

import re

from hybrid.cli.report import parser, render
from hybrid.core.records import Hit, Topic


def test_per_kind_means_of_the_differences():
    topics = [Topic("e1", "a b c", 0, 1, kind="event"), Topic("e2", "a b c", 0, 1, kind="event"),
              Topic("n1", "a b c", 0, 1, kind="entity")]
    qrels = {"e1": {"d1": 1}, "e2": {"d2": 1}, "n1": {"d3": 1}}
    run = {"e1": [Hit("d1", 2.0)], "e2": [Hit("d9", 2.0), Hit("d2", 1.0)], "n1": [Hit("d9", 1.0)]}
    baseline = {"e1": [Hit("d9", 2.0), Hit("d1", 1.0)], "e2": [Hit("d2", 1.0)], "n1": [Hit("d3", 1.0)]}
    groups = {t.qid: t.kind for t in topics}
    page = render(topics, run, qrels, lambda d: "a b c", groups, "r", baseline=baseline)
    table = page[page.index("id='delta-by-kind'"):]
    table = table[: table.index("</table>")]
    rows = {m.group(1): tuple(float(x) for x in m.groups()[1:]) for m in re.finditer(
        r"<tr><td>(\w+) \(\d+\)</td><td>([\d.]+)</td><td>([\d.]+)</td><td>([+-][\d.]+)</td></tr>", table)}
    # AP@100: run e1 1, e2 0.5, n1 0; baseline e1 0.5, e2 1, n1 1
    assert rows["event"] == (0.75, 0.75, 0.0)
    assert rows["entity"] == (0.0, 1.0, -1.0)
    assert rows["all"] == (0.5, 0.833, -0.333)
    assert "per-kind means" in " ".join(parser().format_help().split())  # what --help promises
