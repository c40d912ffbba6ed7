"""TREC qrels: ``qid iter docid relevance`` per line (spaces or tabs between columns).

A judgment given twice for the same (qid, docid) is an error even when both lines agree: it means
two qrels files were concatenated or a split leaked, and trec_eval would silently keep one of them.
There is no ``--skip-bad`` for qrels: evaluating against partly read judgments gives wrong numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, split_columns

Qrels = dict[str, dict[str, int]]
QRELS_COLUMNS = ("qid", "iter", "docid", "relevance")
MAX_RELEVANCE = 2**31  # trec_eval and pytrec_eval store relevance in a C int
#: A relevance as trec_eval reads it: ASCII digits with an optional sign (no '1.5', '1e0', '1_0', non-ASCII digits).
INTEGER = re.compile(r"[+-]?[0-9]+")


def read_qrels(path: str | Path) -> Qrels:
    path = Path(path)
    qrels: Qrels = {}
    first: dict[tuple[str, str], int] = {}
    for number, line in iter_lines(path):
        qid, _, docid, rel = split_columns(path, number, line, QRELS_COLUMNS)
        if not INTEGER.fullmatch(rel):  # int() would also take '1_0' (10), '١' (1) and ' 1 '
            raise InputError(path, number, f"relevance {rel!r} is not an integer")
        relevance = int(rel)
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


def check_qrels(qrels: Mapping, what: str = "qrels") -> dict[str, dict[str, int]]:
    """Qrels given as a mapping (the Python API) checked as a file is: ``{qid: {docid: int relevance}}`` with
    string ids and integer relevance (bools, floats and numeric strings are refused, naming the entry)."""
    if not isinstance(qrels, Mapping):
        raise TypeError(f"{what} must be a mapping {{qid: {{docid: relevance}}}}, a qrels file or 'sample', "
                        f"got {type(qrels).__name__}")
    out: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        if not isinstance(qid, str) or not isinstance(judged, Mapping):
            raise TypeError(f"{what}[{qid!r}] must map a str query id to {{docid: relevance}}, got "
                            f"{type(qid).__name__} -> {type(judged).__name__}")
        for docid, relevance in judged.items():
            if not isinstance(docid, str) or isinstance(relevance, bool) or not isinstance(relevance, int):
                raise InputError(None, None, f"{what}[{qid!r}][{docid!r}]: relevance {relevance!r} is not an "
                                             "integer (qrels relevance is an integer grade, e.g. 0, 1, 2)")
            if abs(relevance) >= MAX_RELEVANCE:
                raise InputError(None, None, f"{what}[{qid!r}][{docid!r}]: relevance {relevance} is out of range "
                                             "(|relevance| < 2**31)")
        out[qid] = dict(judged)
    return out
