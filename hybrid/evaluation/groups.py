"""Query groups for per-kind tables: each query's kind from a topics file."""

from __future__ import annotations

from pathlib import Path

from hybrid.core.formats.lines import iter_lines, parse_json_object


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
