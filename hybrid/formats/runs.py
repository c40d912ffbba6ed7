"""TREC run files: ``qid Q0 docid rank score tag``.

Writing sorts every query's hits by score (rounded to the printed precision) and then by docid, so
the order in the file is exactly the order any evaluator re-derives from the scores: ties are broken
deterministically, never by hash or thread order. Writes are atomic.
"""

from __future__ import annotations

import json
from pathlib import Path

from hybrid.atomic import atomic_write
from hybrid.errors import InputError
from hybrid.formats.lines import iter_lines
from hybrid.records import Hit, Run

SCORE_DECIMALS = 6


def sorted_hits(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-round(h.score, SCORE_DECIMALS), h.docid))


def write_run(run: Run, path: str | Path, tag: str = "hybrid", spans_path: str | Path | None = None) -> None:
    """Write a TREC run (and optionally a JSONL of the best mention span of every hit)."""
    if any(c.isspace() for c in tag) or not tag:
        raise ValueError(f"run tag {tag!r} must be non-empty and contain no whitespace")
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
    path = Path(path)
    run: Run = {}
    seen: set[tuple[str, str]] = set()
    for number, line in iter_lines(path):
        cols = line.split()
        if len(cols) != 6:
            raise InputError(path, number, f"expected 'qid Q0 docid rank score tag', found {len(cols)} column(s)")
        qid, _, docid, _, score, _ = cols
        try:
            value = float(score)
        except ValueError:
            raise InputError(path, number, f"score {score!r} is not a number") from None
        if (qid, docid) in seen:
            raise InputError(path, number, f"docid {docid!r} appears twice for query {qid!r}")
        seen.add((qid, docid))
        run.setdefault(qid, []).append(Hit(docid=docid, score=value))
    for qid in run:
        run[qid] = sorted_hits(run[qid])
    return run
