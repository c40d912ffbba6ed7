"""TREC qrels: ``qid iter docid relevance`` per line."""

from __future__ import annotations

from pathlib import Path

from hybrid.errors import InputError
from hybrid.formats.lines import iter_lines

Qrels = dict[str, dict[str, int]]


def read_qrels(path: str | Path) -> Qrels:
    path = Path(path)
    qrels: Qrels = {}
    for number, line in iter_lines(path):
        cols = line.split()
        if len(cols) != 4:
            raise InputError(path, number, f"expected 'qid iter docid relevance', found {len(cols)} column(s)")
        qid, _, docid, rel = cols
        try:
            relevance = int(rel)
        except ValueError:
            raise InputError(path, number, f"relevance {rel!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if docid in judged and judged[docid] != relevance:
            raise InputError(path, number, f"conflicting judgments for ({qid}, {docid})")
        judged[docid] = relevance
    if not qrels:
        raise InputError(path, None, "no judgments found")
    return qrels
