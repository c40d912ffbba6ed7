"""The reader as a pipeline stage: ``retriever >> ReaderReranker(reader, index)``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from hybrid.core.backend import backend_device
from hybrid.core.records import Rankings, Topic
from hybrid.core.stage import Reranker
from ltr.reader.context import LeadContext
from ltr.reader.infer import rerank_run
from ltr.reader.interpolate import KindWeights, interpolate
from ltr.reader.settings import BATCH_SIZE, DEPTH, SPAN_SOURCE, SPAN_SOURCES
from ltr.reader.store import Reader, load_reader


def index_mention_spans(index, same_kind: bool = True) -> Callable[[Topic, str], list[tuple[int, int]]]:
    """Candidate spans of a passage: the mentions the index holds for it (gold where annotated, else
    detected), restricted to the query's kind when it is known (unknown-kind mentions are kept)."""

    def spans(topic: Topic, passage_id: str) -> list[tuple[int, int]]:
        return [(m.start, m.end) for m in index.mention_records(passage_id)
                if not same_kind or not topic.kind or not m.kind or m.kind == topic.kind]

    return spans


class ReaderReranker(Reranker):
    """Reranks the top ``depth`` hits of the incoming run with the neural coreference reader.

    ``passages`` is a :class:`~indexes.sparse_index.SparseIndex` (or any callable
    passage id -> text). ``span_source="mentions"`` (needs a SparseIndex) also scores every
    indexed mention of the candidate with the pair scorer and keeps the best; ``"predicted"``
    scores only the span heads' best valid span (CoreSearch's inference). ``interpolate=w`` orders the
    reranked hits by ``(1 - w) z(first stage) + w z(reader)`` (:mod:`ltr.reader.interpolate`); None: reader alone.
    ``w`` may be per kind: ``{"event": 0.35, "entity": 0.65}`` or ``"event=0.35;entity=0.65"``.
    ``precision`` (``fp32``, ``bf16``, ``fp16``) sets the reader's inference precision; None keeps the reader's own.
    ``backend`` (``torch``, ``onnx``: its encoder in ONNX Runtime on the CPU, fp32) sets the reader's inference
    backend; None keeps the reader's own. A reader loaded here for onnx with no ``device`` is loaded on the CPU.
    """

    def __init__(self, reader: Reader | str | Path, passages, depth: int = DEPTH.default,
                 batch_size: int = BATCH_SIZE.default, device: str | None = None, progress: bool = False,
                 span_source: str = SPAN_SOURCE.default,
                 interpolate: float | KindWeights | Mapping[str, float] | str | None = None,
                 precision: str | None = None, backend: str | None = None):
        if span_source not in SPAN_SOURCES:
            raise ValueError(f"span_source must be one of {SPAN_SOURCES}, got {span_source!r}")
        if not isinstance(reader, Reader):  # refused before loading; onnx with no device: the CPU, not the GPU
            device = backend_device(backend or "torch", precision or "fp32", device)
        self.reader = reader if isinstance(reader, Reader) else load_reader(reader, device=device)
        self.reader.set_inference(precision, backend)
        self.passage_text: Callable[[str], str | None] = getattr(passages, "passage_text", passages)
        self.span_candidates = index_mention_spans(passages) if span_source == "mentions" else None
        self.context = LeadContext.for_reader(self.reader, passages)
        self.depth, self.batch_size, self.progress = depth, batch_size, progress
        self.interpolate = None if interpolate is None else KindWeights.of(interpolate)
        self.name = f"reader@{depth}" + ("+mentions" if self.span_candidates else "") + (
            f"~{self.interpolate}" if self.interpolate is not None else "")

    def rerank(self, topics: list[Topic], run: Rankings) -> Rankings:
        reranked = rerank_run(self.reader, topics, run, self.passage_text, depth=self.depth,
                              batch_size=self.batch_size, progress=self.progress,
                              span_candidates=self.span_candidates, context=self.context)
        if self.interpolate is None:
            return reranked
        return interpolate(reranked, self.interpolate, kinds={t.qid: t.kind for t in topics})
