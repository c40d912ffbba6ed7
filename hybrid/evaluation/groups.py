"""Query groups for per-kind tables: each query's kind as its topics file states it.

A kind is what the topic says (the ``kind`` field of JSONL topics), never read from the query id: an id such as
``ev-x`` is only a name. TSV topics have no kind column, so they give no groups.
"""

from __future__ import annotations

from pathlib import Path

from hybrid.core.formats.lines import iter_lines, parse_json_object
from hybrid.core.formats.topics import topics_format

#: Why a TSV topics file gives no per-kind groups (said once by the commands that group).
TSV_HAS_NO_KINDS = "TSV topics carry no kind; give JSONL topics with a 'kind' field for per-kind groups"


def kinds_from_topics(path: str | Path) -> dict[str, str]:
    """qid -> kind from JSONL topics (their ``kind`` field); TSV topics, which have no kind: empty."""
    kinds: dict[str, str] = {}
    for number, line in iter_lines(path):
        if number == 1 and topics_format(Path(path), line) != "jsonl":
            return {}
        obj = parse_json_object(path, number, line)
        if obj.get("kind"):
            kinds[str(obj["qid"])] = obj["kind"]
    return kinds


def no_kinds_reason(path: str | Path | None) -> str:
    """Why no query of ``path`` has a kind: no topics, TSV topics, or JSONL topics without ``kind``."""
    if path is None:
        return "give --topics as JSONL with a 'kind' field (a query's kind is never read from its id)"
    for _, line in iter_lines(path):
        if topics_format(Path(path), line) == "tsv":
            return f"{path}: {TSV_HAS_NO_KINDS}"
        break
    return f"their topics in {path} have no 'kind' field"
