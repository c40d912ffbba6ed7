"""The reader as a pipeline stage: ``retriever >> ReaderReranker(reader, index)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hybrid.records import Run, Topic
from hybrid.retrieval.base import Reranker
from ltr.reader.infer import rerank_run
from ltr.reader.store import Reader, load_reader


class ReaderReranker(Reranker):
    """Reranks the top ``depth`` hits of the incoming run with the neural coreference reader.

    ``passages`` is a :class:`~hybrid.retrieval.sparse_index.SparseIndex` (or any callable
    passage id -> text), used only to fetch candidate texts.
    """

    def __init__(self, reader: Reader | str | Path, passages, depth: int = 50, batch_size: int = 64,
                 device: str | None = None, progress: bool = False):
        self.reader = reader if isinstance(reader, Reader) else load_reader(reader, device=device)
        self.passage_text: Callable[[str], str | None] = getattr(passages, "passage_text", passages)
        self.depth, self.batch_size, self.progress = depth, batch_size, progress
        self.name = f"reader@{depth}"

    def rerank(self, topics: list[Topic], run: Run) -> Run:
        return rerank_run(self.reader, topics, run, self.passage_text, depth=self.depth, batch_size=self.batch_size,
                          progress=self.progress)
