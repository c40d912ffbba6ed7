"""TREC qrels: ``qid iter docid relevance`` per line (spaces or tabs between columns).

A judgment given twice for the same (qid, docid) is an error even when both lines agree: it means
two qrels files were concatenated or a split leaked, and trec_eval would silently keep one of them.
There is no ``--skip-bad`` for qrels: evaluating against partly read judgments gives wrong numbers.
"""

from __future__ import annotations

from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, split_columns

Qrels = dict[str, dict[str, int]]
QRELS_COLUMNS = ("qid", "iter", "docid", "relevance")
MAX_RELEVANCE = 2**31  # trec_eval and pytrec_eval store relevance in a C int


def read_qrels(path: str | Path) -> Qrels:
    path = Path(path)
    qrels: Qrels = {}
    first: dict[tuple[str, str], int] = {}
    for number, line in iter_lines(path):
        qid, _, docid, rel = split_columns(path, number, line, QRELS_COLUMNS)
        try:
            relevance = int(rel)
        except ValueError:
            raise InputError(path, number, f"relevance {rel!r} is not an integer") from None
        if abs(relevance) >= MAX_RELEVANCE:
            raise InputError(path, number, f"relevance {rel} is out of range (a 32-bit integer, |relevance| < 2**31, "
                                           "as trec_eval reads it)")
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            how = "conflicting" if judged[docid] != relevance else "duplicate"
            raise InputError(path, number, f"{how} judgment for ({qid}, {docid}) (first on line {first[qid, docid]})")
        judged[docid] = relevance
        first[qid, docid] = number
    if not qrels:
        raise InputError(path, None, "no judgments found")
    return qrels
