"""``python -m hybrid.eval``: TREC measures of a run, overall and by query kind.

Example::

    python -m hybrid.eval --qrels qrels.dev.txt --run run.trec --topics queries.dev.jsonl --by-kind
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli_common import run_cli
from hybrid.evaluation import DEFAULT_MEASURES, evaluate, per_query
from hybrid.formats.consistency import compare_query_ids, topic_query_ids
from hybrid.formats.lines import iter_lines, parse_json_object
from hybrid.formats.qrels import read_qrels
from hybrid.formats.runs import read_run


def kinds_from_topics(path: str | Path) -> dict[str, str]:
    """qid -> kind from JSONL topics (``kind`` key) or TSV topics (``ev-``/``en-`` qid prefixes)."""
    kinds: dict[str, str] = {}
    for number, line in iter_lines(path):
        if line.lstrip().startswith("{"):
            obj = parse_json_object(path, number, line)
            if obj.get("kind"):
                kinds[str(obj["qid"])] = obj["kind"]
        else:
            qid = line.split("\t", 1)[0]
            if qid.startswith(("ev-", "en-")):
                kinds[qid] = "event" if qid.startswith("ev-") else "entity"
    return kinds


def format_table(table: dict[str, dict[str, float]], measures: tuple[str, ...]) -> str:
    head = f"{'group':10s} {'#q':>6s} " + " ".join(f"{m:>9s}" for m in measures)
    rows = [head]
    for group, values in table.items():
        rows.append(f"{group:10s} {int(values['#q']):6d} " + " ".join(f"{values[m]:9.4f}" for m in measures))
    return "\n".join(rows)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hybrid.eval", description=__doc__.split("\n")[0])
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES), help="ir_measures names")
    p.add_argument("--topics", help="topics file giving each query's kind (for --by-kind)")
    p.add_argument("--by-kind", action="store_true", help="split results by event/entity")
    p.add_argument("--per-query", action="store_true", help="print one row per query")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    measures = tuple(args.measures)
    qrels, run = read_qrels(args.qrels), read_run(args.run)
    topic_ids = topic_query_ids(args.topics) if args.topics else None
    for line in compare_query_ids(qrels, run, topic_ids).lines():
        print(f"warning: {line}", file=sys.stderr)
    groups = None
    if args.by_kind:
        groups = kinds_from_topics(args.topics) if args.topics else {
            q: ("event" if q.startswith("ev-") else "entity") for q in qrels if q.startswith(("ev-", "en-"))
        }
    table = evaluate(qrels, run, measures, groups)
    if args.per_query:
        pq = per_query(qrels, run, measures)
        for qid in sorted(qrels):
            print(qid, " ".join(f"{m}={pq[m][qid]:.4f}" for m in measures))
    print(json.dumps(table, indent=2) if args.json else format_table(table, measures))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
