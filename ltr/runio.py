"""First-stage runs for reranking: a TREC run plus, optionally, the spans JSONL ``hybrid.search --spans`` writes.

The spans tell which mention of each passage the first stage matched; without them the candidate
mention is chosen by :func:`ltr.batch.select_candidate`.
"""

from __future__ import annotations

from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, parse_json_object
from hybrid.core.formats.runs import read_run
from hybrid.core.records import Rankings


def read_first_stage(run_path: str | Path, spans_path: str | Path | None = None) -> Rankings:
    """The run, with ``mention_start``/``mention_end`` filled from the spans file when given."""
    run = read_run(run_path)
    if spans_path is None:
        return run
    spans: dict[tuple[str, str], tuple[int | None, int | None]] = {}
    for number, line in iter_lines(spans_path):
        obj = parse_json_object(spans_path, number, line)
        try:
            key = (str(obj["qid"]), str(obj["docid"]))
        except KeyError as exc:
            raise InputError(spans_path, number, f"missing key {exc.args[0]!r}") from None
        start, end = obj.get("start"), obj.get("end")
        if (start is None) != (end is None) or (start is not None and not (isinstance(start, int)
                                                                            and isinstance(end, int))):
            raise InputError(spans_path, number, "'start' and 'end' must both be integers or both null")
        spans[key] = (start, end)
    for qid, hits in run.items():
        for hit in hits:
            hit.mention_start, hit.mention_end = spans.get((qid, hit.docid), (None, None))
    return run
