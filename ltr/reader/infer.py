"""Reader inference: score (query, passage) pairs, rerank a run's top-k, write the extracted spans.

Batched and gradient-free, on the reader's device (the GPU when one is present). Windows are
sorted by length before batching so that dynamic padding wastes little on short ECB+ sentences.
A pair split into several windows takes the window with the highest pair score (and its span).

:func:`score_pairs` is the entry point for other components (e.g. learning-to-rank features):
it returns, per pair, the reader score s(m_j, m_i), the span confidence P_start(s) * P_end(e) of the
extracted span, and the span itself in passage characters.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hybrid.core.atomic import atomic_write
from hybrid.core.device import to_device
from hybrid.core.errors import InputError
from hybrid.core.formats.runs import SCORE_DECIMALS, sorted_hits
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import tail_below
from ltr.reader.context import LeadContext
from ltr.reader.decoding import masked_log_softmax
from ltr.reader.encoding import PairEncoder, collate, token_span
from ltr.reader.store import Reader


@dataclass(frozen=True)
class Span:
    start: int  # char offsets into the passage text
    end: int
    text: str


@dataclass
class PairScores:
    """Per pair: reader score s(m_j, m_i), span confidence in [0, 1], extracted span (None: nothing to extract).

    Iterates as ``(scores, span_confidences, spans)``. ``predicted_scores``/``predicted_spans`` are the
    score and span of the span heads' best valid span alone (equal to the others unless candidate
    spans were given), so one pass yields both scoring modes.
    """

    scores: np.ndarray
    span_confidences: np.ndarray
    spans: list[Span | None]
    predicted_scores: np.ndarray
    predicted_spans: list[Span | None]

    def __iter__(self):
        return iter((self.scores, self.span_confidences, self.spans))


def _candidate_positions(window, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Token positions (start, end) of the candidate char spans lying wholly inside the window."""
    out = []
    for start, end in spans:
        found = token_span(window.offsets, start, end)
        if found is not None:
            out.append((window.passage_positions[found[0]], window.passage_positions[found[1]]))
    return out


#: Pairs encoded at once by score_pairs (their windows sorted by length, then batched): bounds the windows in memory
#: (two chunks' at most: one queued on the device while the one before it is read back).
CHUNK_PAIRS = 2048


def score_pairs(reader: Reader, topics: Sequence[Topic], passages: Sequence[str], batch_size: int = 64,
                chunk_pairs: int = CHUNK_PAIRS, progress: bool = False,
                candidates: Sequence[Sequence[tuple[int, int]]] | None = None,
                contexts: Sequence[tuple[str, str]] | None = None) -> PairScores:
    """Score pairs (topics[i], passages[i]) - passages are texts. Deterministic; the model is put in eval mode.

    ``candidates[i]``: char spans of known mentions in passages[i] (e.g. the index's mention records).
    When given, a pair's score is the best s(m_j, m_i) over those spans and the predicted span
    (Lee et al.'s scorer applied to every candidate mention, not only to the span heads' choice).
    ``contexts[i]``: (lead of the query's document, lead of passages[i]'s document), for a reader trained
    with document context (:class:`ltr.reader.context.LeadContext` gives them).

    Nothing is read back to the host per batch (on a GPU, a read-back waits for the device): every batch of a chunk
    is queued (inputs copied from pinned memory without waiting, forward, candidate scores), its few numbers per
    window stay on the device, and the chunk's results are copied back in one go, waited for only after the next
    chunk has been encoded and queued. So on a GPU the host encodes and collates while the device runs the forward;
    on a CPU it is the same computation in the same order (the same bits as a read-back per batch).
    """
    if len(topics) != len(passages) or any(x is not None and len(x) != len(passages) for x in (candidates, contexts)):
        raise ValueError("topics, passages (and candidates, contexts) must have the same length")
    n = len(topics)
    result = PairScores(scores=np.full(n, -np.inf, dtype=np.float32),
                        span_confidences=np.zeros(n, dtype=np.float32), spans=[None] * n,
                        predicted_scores=np.full(n, -np.inf, dtype=np.float32), predicted_spans=[None] * n)
    reader.model.eval()
    bar = progress_bar(desc="reader", unit="pair", total=n, enabled=progress)
    encoder = PairEncoder(reader.tokenizer, reader.encoding)  # each query side and passage tokenised once a call
    queued: _QueuedChunk | None = None
    for lo in range(0, n, chunk_pairs):
        hi = min(n, lo + chunk_pairs)
        windows = encoder.encode(list(topics[lo:hi]), list(passages[lo:hi]),
                                 contexts=list(contexts[lo:hi]) if contexts is not None else None)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
        batches = [[windows[i] for i in order[b : b + batch_size]] for b in range(0, len(order), batch_size)]
        chunk = _QueuedChunk(reader, lo, hi - lo, batches, candidates)
        if queued is not None:  # the previous chunk's results, while the device runs this one
            queued.keep_best(result, passages)
            bar.update(queued.pairs)
        queued = chunk
    if queued is not None:
        queued.keep_best(result, passages)
        bar.update(queued.pairs)
    bar.close()
    return result


class _QueuedChunk:
    """One chunk of score_pairs: its batches queued on the reader's device at construction, their results (per
    window: score, span start and end, confidence; per candidate span: score, confidence) kept on the device and
    copied to the host in one non-blocking copy per field; :meth:`keep_best` waits for those copies only."""

    def __init__(self, reader: Reader, lo: int, pairs: int, batches: list[list], candidates):
        device = reader.device
        self.lo, self.pairs, self.batches = lo, pairs, batches
        self.candidates: list[list[tuple[int, int, int]]] = []  # per batch: (row, start, end) of candidate spans
        fields: list[list[torch.Tensor]] = [[] for _ in range(6)]
        gpu = device.type == "cuda"
        with torch.inference_mode():
            for windows in batches:
                rows = [(k, s, e) for k, window in enumerate(windows) if candidates is not None
                        for s, e in _candidate_positions(window, candidates[lo + window.pair])]
                self.candidates.append(rows)
                batch = collate(windows, reader.tokenizer.pad_token_id)
                batch.pop("gold_start"), batch.pop("gold_end")
                if rows:
                    batch["candidates"] = torch.tensor(rows)
                batch = {k: to_device(v, device) for k, v in batch.items()}
                for field, values in zip(fields, _batch_results(reader, batch, candidates is not None), strict=True):
                    field.append(values)
            # one copy per field; on a GPU into pinned host memory, not waited for until keep_best
            self.host = [torch.cat(field).to("cpu", non_blocking=gpu) for field in fields]
        self.done = torch.cuda.Event() if gpu else None
        if self.done is not None:
            self.done.record()

    def keep_best(self, result: PairScores, passages: Sequence[str]) -> None:
        """Wait for this chunk's results, then keep each pair's best window (and its span) in ``result``."""
        if self.done is not None:
            self.done.synchronize()
        score, start, end, confidence, cand_score, cand_confidence = (field.tolist() for field in self.host)
        w = c = 0  # positions of the next window and of the next candidate span in the chunk's results
        for windows, rows in zip(self.batches, self.candidates, strict=True):
            options = [[(score[w + k], start[w + k], end[w + k], confidence[w + k])] for k in range(len(windows))]
            for i, (row, s, e) in enumerate(rows):
                options[row].append((cand_score[c + i], s, e, cand_confidence[c + i]))
            w, c = w + len(windows), c + len(rows)
            for k, window in enumerate(windows):
                pair = self.lo + window.pair
                alone, s, e, _ = options[k][0]
                if alone > result.predicted_scores[pair]:
                    result.predicted_scores[pair] = alone
                    result.predicted_spans[pair] = _span(window, s, e, passages[pair])
                best_score, s, e, best_confidence = max(options[k], key=lambda o: o[0])
                if best_score > result.scores[pair]:
                    result.scores[pair], result.span_confidences[pair] = best_score, best_confidence
                    result.spans[pair] = _span(window, s, e, passages[pair])


def _span(window, start: int, end: int, text: str) -> Span | None:
    if start < 0:
        return None
    a, z = window.char_span(start, end)
    return Span(a, z, text[a:z])


def _batch_results(reader: Reader, batch: dict[str, torch.Tensor], with_candidates: bool) -> tuple[torch.Tensor, ...]:
    """On the device, nothing read back (called in inference mode): per window (score, span start, span end,
    confidence) of the predicted span, then per candidate span of ``batch["candidates"]`` (rows of (window, start,
    end)) its score and confidence (empty without candidates)."""
    rows = batch.pop("candidates", None)
    out = reader.model(**batch, return_hidden=with_candidates)
    predicted = (out.score.float(), out.span_start, out.span_end, out.decoded.confidence)
    if rows is None:
        empty = torch.empty(0, dtype=torch.float32, device=out.score.device)
        return (*predicted, empty, empty)
    rows_t, starts_t, ends_t = rows[:, 0], rows[:, 1], rows[:, 2]
    cand_scores = reader.model.pair_score(out.hidden[rows_t], batch["query_open"][rows_t],
                                          batch["query_close"][rows_t], starts_t, ends_t).float()
    start_lp = masked_log_softmax(out.start_logits, batch["passage_mask"])
    end_lp = masked_log_softmax(out.end_logits, batch["passage_mask"])
    cand_conf = (start_lp[rows_t, starts_t] + end_lp[rows_t, ends_t]).exp().float()
    return (*predicted, cand_scores, cand_conf)


def rerank_run(reader: Reader, topics: Sequence[Topic], run: Rankings, passage_text: Callable[[str], str | None],
               depth: int = 50, batch_size: int = 64, progress: bool = False,
               span_candidates: Callable[[Topic, str], list[tuple[int, int]]] | None = None,
               context: LeadContext | None = None) -> Rankings:
    """Rerank each topic's top ``depth`` hits by reader score; deeper hits follow in their old order.

    ``context`` gives the document leads a reader trained with document context needs (ignored otherwise).

    Reranked hits carry the extracted span (``mention_start/end/text``) and, in ``extra``,
    ``reader_score``, ``span_confidence``, ``first_stage_score`` and ``first_stage_rank``.
    """
    if depth < 1:
        raise InputError(None, None, f"rerank depth must be >= 1, got {depth}")
    if reader.encoding.uses_context and context is None:
        raise InputError(None, None, "this reader was trained with document context; rerank with a LeadContext "
                                     "(e.g. LeadContext.from_index(index))")
    pair_topics, pair_texts, owners, pair_candidates = [], [], [], []
    pair_contexts: list[tuple[str, str]] | None = [] if reader.encoding.uses_context else None
    for topic in topics:
        for rank, hit in enumerate(sorted_hits(run.get(topic.qid, []))[:depth], start=1):
            text = passage_text(hit.docid)
            if text is None:
                raise InputError(None, None, f"run hit {hit.docid!r} of query {topic.qid!r} is not in the index")
            pair_topics.append(topic)
            pair_texts.append(text)
            owners.append((topic.qid, rank, hit))
            if span_candidates is not None:
                pair_candidates.append(span_candidates(topic, hit.docid))
            if pair_contexts is not None:
                pair_contexts.append(context.pair(topic, hit.docid))
    result = score_pairs(reader, pair_topics, pair_texts, batch_size=batch_size, progress=progress,
                         candidates=pair_candidates if span_candidates is not None else None,
                         contexts=pair_contexts)
    out: Rankings = {}
    for k, (qid, rank, hit) in enumerate(owners):
        score, confidence, span = result.scores[k], result.span_confidences[k], result.spans[k]
        alone, alone_span = result.predicted_scores[k], result.predicted_spans[k]
        out.setdefault(qid, []).append(Hit(
            docid=hit.docid, score=float(score),
            mention_start=span.start if span else None, mention_end=span.end if span else None,
            mention_text=span.text if span else None,
            extra={"reader_score": float(score), "span_confidence": float(confidence),
                   "predicted_span_score": float(alone),
                   "predicted_span": (alone_span.start, alone_span.end) if alone_span else None,
                   "first_stage_score": hit.score, "first_stage_rank": rank},
        ))
    for topic in topics:
        hits = sorted_hits(run.get(topic.qid, []))
        if not hits:
            continue
        tail = [dataclasses.replace(hit, extra={**hit.extra, "first_stage_score": hit.score,
                                                 "first_stage_rank": depth + i})
                for i, hit in enumerate(hits[depth:], start=1)]
        out[topic.qid] = tail_below(sorted_hits(out.get(topic.qid, [])), tail)
    return out


def write_spans(run: Rankings, path: str | Path) -> None:
    """JSONL, one row per hit in run order: qid, docid, rank, start, end (chars), text, score, span_confidence."""
    with atomic_write(path) as out:
        for qid in sorted(run):
            for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                row = {"qid": qid, "docid": hit.docid, "rank": rank, "start": hit.mention_start,
                       "end": hit.mention_end, "text": hit.mention_text, "score": round(hit.score, SCORE_DECIMALS),
                       "span_confidence": hit.extra.get("span_confidence")}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
