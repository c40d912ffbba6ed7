"""TREC run files: ``qid Q0 docid rank score tag``.

Writing sorts every query's hits by score (rounded to the printed precision) and then by docid, so
the order in the file is exactly the order any evaluator re-derives from the scores: ties are broken
deterministically, never by hash or thread order. Writes are atomic: an interrupted job leaves the
previous run file or none, never half of one. Reading re-sorts the same way and ignores the rank
column's values (trec_eval does too) but requires it to be an integer.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hybrid.atomic import atomic_write
from hybrid.errors import InputError
from hybrid.formats.lines import control_character, iter_lines, split_columns
from hybrid.records import Hit, Run

SCORE_DECIMALS = 6
RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")


def sorted_hits(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-round(h.score, SCORE_DECIMALS), h.docid))


def _check_token(what: str, value: str) -> None:
    if not value or any(c.isspace() for c in value) or control_character(value) is not None:
        raise ValueError(f"{what} {value!r} cannot be written to a TREC run: it must be non-empty with no whitespace")


def check_run(run: Run, tag: str = "hybrid") -> None:
    """Refuse runs a TREC file cannot represent faithfully (whitespace in ids, NaN scores, duplicates)."""
    _check_token("run tag", tag)
    for qid, hits in run.items():
        _check_token("query id", qid)
        seen: set[str] = set()
        for hit in hits:
            _check_token(f"docid (query {qid})", hit.docid)
            if not math.isfinite(hit.score):
                raise ValueError(f"score {hit.score} of ({qid}, {hit.docid}) is not a finite number")
            if hit.docid in seen:
                raise ValueError(f"docid {hit.docid!r} appears twice for query {qid!r}")
            seen.add(hit.docid)


def write_run(run: Run, path: str | Path, tag: str = "hybrid", spans_path: str | Path | None = None) -> None:
    """Write a TREC run (and optionally a JSONL of the best mention span of every hit), atomically."""
    check_run(run, tag)
    with atomic_write(path) as out:
        for qid in sorted(run):
            for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                out.write(f"{qid} Q0 {hit.docid} {rank} {hit.score:.{SCORE_DECIMALS}f} {tag}\n")
    if spans_path is not None:
        with atomic_write(spans_path) as out:
            for qid in sorted(run):
                for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                    record = {
                        "qid": qid, "docid": hit.docid, "rank": rank, "score": round(hit.score, SCORE_DECIMALS),
                        "start": hit.mention_start, "end": hit.mention_end, "mention": hit.mention_text,
                    }
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_run(path: str | Path) -> Run:
    """Read a TREC run; an empty file is an empty run (no query has results)."""
    path = Path(path)
    run: Run = {}
    first: dict[tuple[str, str], int] = {}
    for number, line in iter_lines(path):
        qid, _, docid, rank, score, _ = split_columns(path, number, line, RUN_COLUMNS)
        try:
            int(rank)
        except ValueError:
            raise InputError(path, number, f"rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise InputError(path, number, f"score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise InputError(path, number, f"score {score!r} is not a finite number")
        if (qid, docid) in first:
            raise InputError(
                path, number, f"docid {docid!r} appears twice for query {qid!r} (first on line {first[qid, docid]})"
            )
        first[qid, docid] = number
        run.setdefault(qid, []).append(Hit(docid=docid, score=value))
    for qid in run:
        run[qid] = sorted_hits(run[qid])
    return run
