"""Span evaluation: exact match and token F1 against the gold coreferring mention (SQuAD style).

As in CoreSearch (footnote 9), lexical equality is not enough - "plane crash" can occur twice in a
passage for two different crashes - so a predicted span is compared only with gold mentions whose
character range *overlaps* it; a span overlapping no gold coreferring mention scores 0. With several
overlapping gold mentions the best one counts.

Gold mentions of a (query, candidate) pair are the candidate's mentions of the query's cluster; they
are read (labels, evaluation only) for the clusters of the evaluated queries and nothing else.
Only candidates that hold such a mention (the coreferent ones) are scored.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, optional, parse_json_object, require

GoldMention = tuple[int, int, str]


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_span(start: int | None, end: int | None, text: str | None,
               golds: Iterable[GoldMention]) -> tuple[float, float]:
    """(EM, F1) of a predicted char span against the gold mentions it overlaps (0, 0 if none)."""
    if start is None or end is None or text is None:
        return 0.0, 0.0
    best_em, best_f1 = 0.0, 0.0
    for g_start, g_end, g_text in golds:
        if start < g_end and g_start < end:
            best_em = max(best_em, exact_match(text, g_text))
            best_f1 = max(best_f1, token_f1(text, g_text))
    return best_em, best_f1


@dataclass
class QueryLabel:
    cluster: str
    doc_id: str | None
    kind: str | None


def read_query_labels(path: str | Path) -> dict[str, QueryLabel]:
    """qid -> cluster (and kind, own document) from JSONL queries carrying a ``cluster`` key."""
    labels = {}
    for number, line in iter_lines(path):
        obj = parse_json_object(path, number, line)
        qid = str(require(path, number, obj, "qid", (str, int)))
        cluster = require(path, number, obj, "cluster", (str, int))
        labels[qid] = QueryLabel(cluster=str(cluster), doc_id=optional(path, number, obj, "doc_id", str),
                                 kind=optional(path, number, obj, "kind", str))
    if not labels:
        raise InputError(path, None, "no queries found")
    return labels


def gold_mentions(corpus_path: str | Path, labels: dict[str, QueryLabel]) -> dict[str, dict[str, list[GoldMention]]]:
    """qid -> candidate passage id -> that passage's mentions of the query's cluster (other documents only)."""
    wanted: dict[str, list[str]] = {}
    for qid, label in labels.items():
        wanted.setdefault(label.cluster, []).append(qid)
    gold: dict[str, dict[str, list[GoldMention]]] = {qid: {} for qid in labels}
    for number, line in iter_lines(corpus_path):
        obj = parse_json_object(corpus_path, number, line)
        mentions = obj.get("mentions") or []
        if not any(str(m.get("cluster")) in wanted for m in mentions if isinstance(m, dict)):
            continue
        pid = require(corpus_path, number, obj, "id", str)
        text = require(corpus_path, number, obj, "text", str)
        doc_id = optional(corpus_path, number, obj, "doc_id", str) or pid.rsplit(":", 1)[0]
        for m in mentions:
            qids = wanted.get(str(m.get("cluster")))
            if not qids:
                continue
            start, end = m.get("start"), m.get("end")
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
                raise InputError(corpus_path, number, f"mention with bad offsets [{start}, {end})")
            for qid in qids:
                if labels[qid].doc_id != doc_id:
                    gold[qid].setdefault(pid, []).append((start, end, text[start:end]))
    return gold


@dataclass
class SpanRow:
    qid: str
    docid: str
    rank: int
    start: int | None
    end: int | None
    text: str | None


def read_spans(path: str | Path) -> list[SpanRow]:
    rows = []
    for number, line in iter_lines(path):
        obj = parse_json_object(path, number, line)
        start, end = obj.get("start"), obj.get("end")
        if (start is None) != (end is None) or (start is not None and not (isinstance(start, int)
                                                                           and isinstance(end, int) and start <= end)):
            raise InputError(path, number, f"bad span [{start}, {end})")
        rows.append(SpanRow(qid=str(require(path, number, obj, "qid", (str, int))),
                            docid=require(path, number, obj, "docid", str), rank=int(obj.get("rank") or 0),
                            start=start, end=end, text=obj.get("text", obj.get("mention"))))
    return rows


def evaluate_spans(rows: Iterable[SpanRow], gold: dict[str, dict[str, list[GoldMention]]],
                   kinds: dict[str, str | None] | None = None, top: int | None = None) -> dict[str, dict[str, float]]:
    """group -> {EM, F1, #pairs} over coreferent candidates (rank <= ``top`` if given); groups: all + kinds."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        golds = gold.get(row.qid, {}).get(row.docid)
        if not golds or (top is not None and row.rank > top):
            continue
        em, f1 = score_span(row.start, row.end, row.text, golds)
        groups = ["all"] + ([kinds[row.qid]] if kinds and kinds.get(row.qid) else [])
        for group in groups:
            acc = sums.setdefault(group, [0.0, 0.0, 0])
            acc[0] += em
            acc[1] += f1
            acc[2] += 1
    return {g: {"EM": em / n, "F1": f1 / n, "#pairs": n} for g, (em, f1, n) in sums.items()}


def evaluate_spans_file(spans_path: str | Path, corpus_path: str | Path, queries_path: str | Path,
                        top: int | None = None) -> dict[str, dict[str, float]]:
    rows = read_spans(spans_path)
    labels = read_query_labels(queries_path)
    asked = {r.qid for r in rows}
    labels = {q: lab for q, lab in labels.items() if q in asked}
    if not labels:
        raise InputError(spans_path, None, f"no query of the spans file has a label in {queries_path}")
    gold = gold_mentions(corpus_path, labels)
    return evaluate_spans(rows, gold, {q: lab.kind for q, lab in labels.items()}, top)


def dumps(table: dict[str, dict[str, float]]) -> str:
    return json.dumps(table, indent=2)
