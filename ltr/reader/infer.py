"""Reader inference: score (query, passage) pairs, rerank a run's top-k, write the extracted spans.

Batched and gradient-free, on the reader's device (the GPU when one is present). Windows are
sorted by length before batching so that dynamic padding wastes little on short ECB+ sentences.
A pair split into several windows takes the window with the highest pair score (and its span).

:func:`score_pairs` is the entry point for other components (e.g. learning-to-rank features):
it returns, per pair, the reader score s(m_j, m_i), the span confidence P_start(s) * P_end(e) of the
extracted span, and the span itself in passage characters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from tqdm import tqdm

from hybrid.atomic import atomic_write
from hybrid.errors import InputError
from hybrid.formats.runs import SCORE_DECIMALS, sorted_hits
from hybrid.records import Hit, Run, Topic
from ltr.reader.encoding import collate, encode_pairs
from ltr.reader.store import Reader


@dataclass(frozen=True)
class Span:
    start: int  # char offsets into the passage text
    end: int
    text: str


class PairScores(NamedTuple):
    scores: np.ndarray  # (n,) float32 reader score s(m_j, m_i)
    span_confidences: np.ndarray  # (n,) float32 in [0, 1]
    spans: list[Span | None]  # None: the passage had no token to extract from


def score_pairs(reader: Reader, topics: Sequence[Topic], passages: Sequence[str], batch_size: int = 64,
                chunk_pairs: int = 2048, progress: bool = False) -> PairScores:
    """Score pairs (topics[i], passages[i]) - passages are texts. Deterministic; the model is put in eval mode."""
    if len(topics) != len(passages):
        raise ValueError("topics and passages must have the same length")
    n = len(topics)
    scores = np.full(n, -np.inf, dtype=np.float32)
    confidences = np.zeros(n, dtype=np.float32)
    spans: list[Span | None] = [None] * n
    reader.model.eval()
    device = reader.device
    bar = tqdm(total=n, desc="reader", unit="pair", disable=not progress)
    for lo in range(0, n, chunk_pairs):
        hi = min(n, lo + chunk_pairs)
        windows = encode_pairs(reader.tokenizer, list(topics[lo:hi]), list(passages[lo:hi]), reader.encoding)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
        for b in range(0, len(order), batch_size):
            chunk = [windows[i] for i in order[b : b + batch_size]]
            batch = {k: v.to(device) for k, v in collate(chunk, reader.tokenizer.pad_token_id).items()}
            batch.pop("gold_start"), batch.pop("gold_end")
            with torch.inference_mode():
                out = reader.model(**batch)
            score = out.score.float().cpu().numpy()
            start, end = out.span_start.cpu().tolist(), out.span_end.cpu().tolist()
            confidence = out.decoded.confidence.cpu().numpy()
            for k, window in enumerate(chunk):
                pair = lo + window.pair
                if score[k] <= scores[pair]:
                    continue
                scores[pair] = score[k]
                confidences[pair] = confidence[k]
                if start[k] >= 0:
                    a, z = window.char_span(start[k], end[k])
                    spans[pair] = Span(a, z, passages[pair][a:z])
                else:
                    spans[pair] = None
        bar.update(hi - lo)
    bar.close()
    return PairScores(scores=scores, span_confidences=confidences, spans=spans)


def rerank_run(reader: Reader, topics: Sequence[Topic], run: Run, passage_text: Callable[[str], str | None],
               depth: int = 50, batch_size: int = 64, progress: bool = False) -> Run:
    """Rerank each topic's top ``depth`` hits by reader score; deeper hits follow in their old order.

    Reranked hits carry the extracted span (``mention_start/end/text``) and, in ``extra``,
    ``reader_score``, ``span_confidence``, ``first_stage_score`` and ``first_stage_rank``.
    """
    if depth < 1:
        raise InputError(None, None, f"rerank depth must be >= 1, got {depth}")
    pair_topics, pair_texts, owners = [], [], []
    for topic in topics:
        for rank, hit in enumerate(sorted_hits(run.get(topic.qid, []))[:depth], start=1):
            text = passage_text(hit.docid)
            if text is None:
                raise InputError(None, None, f"run hit {hit.docid!r} of query {topic.qid!r} is not in the index")
            pair_topics.append(topic)
            pair_texts.append(text)
            owners.append((topic.qid, rank, hit))
    result = score_pairs(reader, pair_topics, pair_texts, batch_size=batch_size, progress=progress)
    out: Run = {}
    for (qid, rank, hit), score, confidence, span in zip(owners, result.scores, result.span_confidences,
                                                         result.spans, strict=True):
        out.setdefault(qid, []).append(Hit(
            docid=hit.docid, score=float(score),
            mention_start=span.start if span else None, mention_end=span.end if span else None,
            mention_text=span.text if span else None,
            extra={"reader_score": float(score), "span_confidence": float(confidence),
                   "first_stage_score": hit.score, "first_stage_rank": rank},
        ))
    for topic in topics:
        hits = sorted_hits(run.get(topic.qid, []))
        if not hits:
            continue
        reranked = out.setdefault(topic.qid, [])
        floor = min((h.score for h in reranked), default=0.0)
        for i, hit in enumerate(hits[depth:], start=1):
            reranked.append(Hit(docid=hit.docid, score=floor - i, extra={"first_stage_score": hit.score,
                                                                         "first_stage_rank": depth + i}))
        out[topic.qid] = sorted_hits(reranked)
    return out


def write_spans(run: Run, path: str | Path) -> None:
    """JSONL, one row per hit in run order: qid, docid, rank, start, end (chars), text, score, span_confidence."""
    with atomic_write(path) as out:
        for qid in sorted(run):
            for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                row = {"qid": qid, "docid": hit.docid, "rank": rank, "start": hit.mention_start,
                       "end": hit.mention_end, "text": hit.mention_text, "score": round(hit.score, SCORE_DECIMALS),
                       "span_confidence": hit.extra.get("span_confidence")}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
