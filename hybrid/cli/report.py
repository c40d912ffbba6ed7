"""``python -m hybrid.report``: a static HTML report of a run against qrels.

Example::

    python -m hybrid.report --index idx --topics queries.dev.jsonl --qrels qrels.dev.txt \\
        --run runs/mf.trec --spans runs/mf.spans.jsonl --baseline runs/bm25.trec --output report.html

Per query: the marked query mention in its context, the top results with the matching (or extracted)
mention span highlighted and the judgment shown (relevant / not relevant / unjudged), and the query's
measures, with ``--baseline`` the baseline's AP@100 and the difference. Above them: a legend, the run's
means by kind (with the baseline's and the differences), with ``--baseline`` (named on the page) a plot of
per-query AP@100 differences (sorted) and per-kind means, and a table of contents of the queries. Qrels
that list only relevant passages label the other hits "not in qrels" rather than "unjudged"; with ``--judged
FILE`` (passages judged for every query, as ``hybrid.eval --judged``) a listed passage missing from a query's
qrels shows as "not relevant" and the rest as "unjudged". ``sample``
stands for the bundled sample's index, topics or qrels. One self-contained file (the plot is embedded), no
scripts, no external resources: it opens anywhere and archives with the run.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import sys
from pathlib import Path

from hybrid.api import open_index, sample_path
from hybrid.cli.common import make_parser, output_file, positive_int, run_cli
from hybrid.core.atomic import atomic_write
from hybrid.core.formats import read_qrels, read_run, read_topics
from hybrid.core.formats.runs import read_run_meta
from hybrid.core.formats.runs import read_spans as read_span_rows
from hybrid.core.judged import read_judged, with_judged
from hybrid.core.measures import aggregate, group_qids, per_query
from hybrid.core.outputs import Input, Kind, Output, Writes, run_input
from hybrid.core.records import Rankings, Topic

CSS = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em} h2{font-size:1.1em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.2em .6em;border:1px solid #ddd;font-size:.9em}
mark.query{background:#ffd54f;font-weight:bold} mark.span{background:#81d4fa}
.rel{color:#1b5e20;font-weight:bold} .nonrel{color:#b71c1c} .unjudged{color:#777}
li{margin:.3em 0} .meta{color:#555;font-size:.85em} .kind{font-variant:small-caps}
.better{color:#1b5e20} .worse{color:#b71c1c} #legend{background:#f7f7f7;padding:.5em 1em;border:1px solid #ddd}
#legend dt{float:left;clear:left;width:9em;font-weight:bold} #legend dd{margin:0 0 .3em 10em}
#toc td,#toc th{font-size:.85em}
"""


def highlight(text: str, start: int | None, end: int | None, css: str) -> str:
    if start is None or end is None or not 0 <= start < end <= len(text):
        return html.escape(text)
    return (html.escape(text[:start]) + f'<mark class="{css}">' + html.escape(text[start:end]) + "</mark>"
            + html.escape(text[end:]))


def read_spans(path: str | Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(qid, docid) -> (start, end) from a spans JSONL; a malformed line is an InputError naming it."""
    return {key: (start, end) for key, (start, end, _) in read_span_rows(path).items()}


def delta_plot(deltas: dict[str, float], groups: dict[str, str]) -> str:
    """Sorted per-query differences as a bar chart, returned as a data: URI (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    qids = sorted(deltas, key=lambda q: (deltas[q], q))
    colours = {"event": "#ef6c00", "entity": "#1565c0"}
    fig, ax = plt.subplots(figsize=(10, 3.2), dpi=90)
    ax.bar(range(len(qids)), [deltas[q] for q in qids], width=1.0,
           color=[colours.get(groups.get(q, ""), "#777") for q in qids])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("queries (sorted by difference; orange = event, blue = entity)")
    ax.set_ylabel("AP@100 run - baseline")
    ax.set_xlim(-0.5, len(qids) - 0.5)
    ax.set_xticks([])
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _delta_class(delta: float) -> str:
    return "better" if delta > 1e-9 else "worse" if delta < -1e-9 else "equal"


def legend(positive_only: bool, baseline_name: str | None) -> str:
    """What the colours, labels and numbers of the page mean."""
    unjudged = ("<dd><span class='unjudged'>[not in qrels]</span> the passage is not in the qrels; these qrels list "
                "only relevant passages, so it is most likely not relevant</dd>") if positive_only else (
        "<dd><span class='unjudged'>[unjudged]</span> the passage has no judgment in the qrels</dd>")
    parts = ["<section id='legend'><h2>Legend</h2><dl>",
             "<dt>query</dt><dd><mark class='query'>mention</mark> the query's marked mention in its context</dd>",
             "<dt>hit</dt><dd><mark class='span'>span</mark> the mention of the passage that matched "
             "(from the run's spans, else the retriever's)</dd>",
             "<dt>judgment</dt><dd><span class='rel'>[relevant]</span> judged relevant (relevance &gt; 0)</dd>"]
    if not positive_only:
        parts.append("<dd><span class='nonrel'>[not relevant]</span> judged, relevance 0 or less</dd>")
    parts.append(unjudged)
    parts.append("<dt>measures</dt><dd>RR@10, AP@100, R@100, nDCG@10 (ir_measures), means over the judged queries; "
                 "the kind (event/entity) is the topic's, else its indexed mention's</dd>")
    if baseline_name:
        parts.append(f"<dt>difference</dt><dd>run minus baseline <code>{html.escape(baseline_name)}</code> in AP@100: "
                     "<span class='better'>+ better</span>, <span class='worse'>- worse</span>; in the plot, "
                     "orange bars are event queries and blue bars entity queries</dd>")
    parts.append("</dl></section>")
    return "\n".join(parts)


def render(topics: list[Topic], run: Rankings, qrels: dict, passage_text, groups: dict[str, str], name: str,
           spans: dict | None = None, baseline: Rankings | None = None, depth: int = 10,
           baseline_name: str | None = None) -> str:
    measures = ("RR@10", "AP@100", "R@100", "nDCG@10")
    scores = per_query(qrels, run, measures)
    base_scores = per_query(qrels, baseline, measures) if baseline is not None else None
    if baseline is not None and not baseline_name:
        baseline_name = "baseline"
    judged = [t for t in topics if t.qid in qrels]
    # qrels that hold only relevant passages (many benchmarks': ECB+'s) cannot say "judged not relevant"
    positive_only = bool(qrels) and all(v > 0 for rel in qrels.values() for v in rel.values())
    by_group = group_qids([t.qid for t in judged], groups, missing="unknown")

    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(name)}</title>",
             f"<style>{CSS}</style></head><body>", f"<h1>Run <code>{html.escape(name)}</code></h1>"]
    if baseline_name:
        parts.append(f"<p id='baseline-name'>Baseline: <code>{html.escape(baseline_name)}</code></p>")
    parts.append(legend(positive_only, baseline_name))
    parts.append("<h2>Means by kind</h2>")
    parts.append("<table id='summary'><tr><th>queries</th>" + "".join(f"<th>{m}</th>" for m in measures) + "</tr>")
    for group, qids in by_group.items():
        if not qids:
            continue
        mine = {m: aggregate(scores[m], qids) for m in measures}
        cells = "".join(f"<td>{mine[m]:.3f}</td>" for m in measures)
        parts.append(f"<tr><td>{html.escape(group)} ({len(qids)})</td>{cells}</tr>")
        if base_scores is not None:
            theirs = {m: aggregate(base_scores[m], qids) for m in measures}
            parts.append(f"<tr class='meta'><td>{html.escape(group)}: baseline</td>"
                         + "".join(f"<td>{theirs[m]:.3f}</td>" for m in measures) + "</tr>")
            parts.append(f"<tr class='meta'><td>{html.escape(group)}: difference</td>"
                         + "".join(f"<td class='{_delta_class(mine[m] - theirs[m])}'>{mine[m] - theirs[m]:+.3f}</td>"
                                   for m in measures) + "</tr>")
    parts.append("</table>")
    deltas: dict[str, float] = {}
    if base_scores is not None:
        base = base_scores["AP@100"]
        deltas = {t.qid: scores["AP@100"][t.qid] - base[t.qid] for t in judged}
        better = sum(d > 1e-9 for d in deltas.values())
        worse = sum(d < -1e-9 for d in deltas.values())
        parts.append(f"<h2>Per-query AP@100 against the baseline <code>{html.escape(baseline_name or '')}</code></h2>"
                     f"<p>{better} better, {worse} worse, {len(deltas) - better - worse} equal.</p>")
        parts.append(f"<img id='delta-plot' alt='per-query AP@100 differences' src='{delta_plot(deltas, groups)}'>")
        parts.append("<table id='delta-by-kind'><tr><th>queries</th><th>run AP@100</th><th>baseline AP@100</th>"
                     "<th>mean difference</th></tr>")
        for group, qids in by_group.items():
            if qids:
                mine, theirs = (aggregate(values, qids) for values in (scores["AP@100"], base))
                parts.append(f"<tr><td>{html.escape(group)} ({len(qids)})</td><td>{mine:.3f}</td>"
                             f"<td>{theirs:.3f}</td><td>{mine - theirs:+.3f}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Queries</h2><table id='toc'><tr><th>query</th><th>kind</th><th>mention</th><th>AP@100</th>"
                 + ("<th>baseline</th><th>difference</th>" if base_scores is not None else "") + "</tr>")
    for topic in topics:
        qid = html.escape(topic.qid)
        row = (f"<tr><td><a href='#q-{qid}'>{qid}</a></td><td class='kind'>{html.escape(groups.get(topic.qid, ''))}"
               f"</td><td>{html.escape(topic.mention)}</td>")
        if topic.qid in qrels:
            row += f"<td>{scores['AP@100'][topic.qid]:.3f}</td>"
            if base_scores is not None:
                delta = deltas[topic.qid]
                row += (f"<td>{base_scores['AP@100'][topic.qid]:.3f}</td>"
                        f"<td class='{_delta_class(delta)}'>{delta:+.3f}</td>")
        else:
            row += "<td colspan='3'>not judged</td>" if base_scores is not None else "<td>not judged</td>"
        parts.append(row + "</tr>")
    parts.append("</table>")
    for topic in topics:
        rel = qrels.get(topic.qid, {})
        kind = groups.get(topic.qid, "")
        measures_text = ", ".join(f"{m} {scores[m][topic.qid]:.3f}" for m in measures) if topic.qid in qrels else (
            "not judged")
        if base_scores is not None and topic.qid in qrels:
            delta = deltas[topic.qid]
            measures_text += (f"; baseline AP@100 {base_scores['AP@100'][topic.qid]:.3f} "
                              f"(<span class='{_delta_class(delta)}'>{delta:+.3f}</span>)")
        parts.append(f"<section class='query' id='q-{html.escape(topic.qid)}'><h2>{html.escape(topic.qid)} "
                     f"<span class='kind'>{html.escape(kind)}</span></h2>")
        parts.append(f"<p>{highlight(topic.text, topic.start, topic.end, 'query')}</p>")
        parts.append(f"<p class='meta'>{measures_text}; {sum(1 for v in rel.values() if v > 0)} relevant "
                     "<a href='#toc'>(back to the list)</a></p><ol>")
        for hit in run.get(topic.qid, [])[:depth]:
            text = passage_text(hit.docid) or ""
            start, end = hit.mention_start, hit.mention_end
            if spans and (topic.qid, hit.docid) in spans:
                start, end = spans[(topic.qid, hit.docid)]
            if hit.docid not in rel:
                judgment, css = ("not in qrels" if positive_only else "unjudged"), "unjudged"
            elif rel[hit.docid] > 0:
                judgment, css = "relevant", "rel"
            else:
                judgment, css = "not relevant", "nonrel"
            parts.append(f"<li><span class='{css}'>[{judgment}]</span> <code>{html.escape(hit.docid)}</code> "
                         f"<span class='meta'>{hit.score:.3f}</span><br>{highlight(text, start, end, 'span')}</li>")
        parts.append("</ol></section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.report", __doc__, epilog=True)
    p.add_argument("--run", required=True, help="the TREC run to show (checked against its .meta.json when it has one)")
    p.add_argument("--qrels", required=True, help="qrels, or 'sample' for the bundled sample's")
    p.add_argument("--topics", required=True, help="topics, or 'sample' for the bundled sample's")
    p.add_argument("--index", required=True, help="hybrid index (passage texts), or 'sample' for the bundled "
                                                  "sample's (built on first use)")
    p.add_argument("--spans", help="spans JSONL from hybrid.search --spans or the reader")
    p.add_argument("--baseline", help="baseline run for the per-query delta plot")
    p.add_argument("--depth", type=positive_int, default=10, help="results shown per query")
    p.add_argument("--judged", metavar="FILE", help="passage ids judged for every query, one per line ('sample': the "
                                                    "bundled sample's curated sentences): shown as not relevant where "
                                                    "the qrels do not list them, the others as unjudged")
    p.add_argument("--output", required=True, type=output_file, help="the HTML report to write")
    return p


def _looks_like_html(path: Path) -> bool:
    """An earlier report (HTML) or an empty file."""
    with open(path, "rb") as handle:
        head = handle.read(64).lstrip().lower()
    return not head or head.startswith((b"<!doctype html", b"<html"))


#: The HTML page this command writes, for the output policy: it replaces an earlier page, no other file.
HTML_REPORT = Kind("HTML report", looks_like=_looks_like_html)


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes and reads, for the output policy (hybrid.core.outputs)."""
    reads = [run_input("--run", args.run), run_input("--baseline", args.baseline), Input("--index", args.index),
             Input("--spans", args.spans),
             *(Input(f"--{what}", sample_path(what, getattr(args, what))) for what in ("qrels", "topics", "judged"))]
    return Writes("hybrid.report", [Output("--output", args.output, HTML_REPORT, replace=True)], reads)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()

    read_run_meta(args.run, args.spans)  # a meta or spans file that does not belong to the run is an error
    if args.baseline:
        read_run_meta(args.baseline)
    judged = read_judged(sample_path("judged", args.judged)) if args.judged else None
    index = open_index(args.index, progress=False)
    topics = read_topics(sample_path("topics", args.topics), resolve=index.passage_text)
    run = read_run(args.run)
    spans = read_spans(args.spans) if args.spans else None
    baseline = read_run(args.baseline) if args.baseline else None
    groups = {t.qid: (t.kind or index.query_record(t).kind or "unknown") for t in topics}
    qrels = read_qrels(sample_path("qrels", args.qrels))
    if judged is not None:
        shown = {q: [*run.get(q, []), *(baseline or {}).get(q, [])] for q in qrels}
        qrels = with_judged(qrels, judged, shown)
    page = render(topics, run, qrels, index.passage_text, groups, Path(args.run).name, spans, baseline, args.depth,
                  baseline_name=Path(args.baseline).name if args.baseline else None)
    with atomic_write(args.output) as out:
        out.write(page)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
