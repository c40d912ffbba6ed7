"""The stage interface: small objects with one job that compose into a pipeline read in one glance.

``Retriever``: topics -> run.  ``Reranker``: (topics, run) -> run.  ``a >> b`` feeds a's run into
reranker b; ``Fuse`` (see :mod:`hybrid.fusion`) combines several retrievers' runs. Every stage works
on a batch of topics at once so it can be parallelised or sharded without changing its interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from hybrid.core.records import Run, Topic


class Stage(ABC):
    name: str = "stage"

    def __rshift__(self, other: Reranker) -> Pipeline:
        if not isinstance(other, Reranker):
            raise TypeError(f"can only feed a run into a Reranker, not {type(other).__name__}")
        return Pipeline(self, other)

    @abstractmethod
    def __call__(self, topics: list[Topic], run: Run | None = None) -> Run: ...


class Retriever(Stage):
    """Topics in, run out; ignores an incoming run."""

    @abstractmethod
    def search(self, topics: list[Topic], k: int) -> Run: ...

    k: int = 100

    def __call__(self, topics: list[Topic], run: Run | None = None) -> Run:
        return self.search(topics, self.k)


class Reranker(Stage):
    """Reorders (and may cut) the hits of an incoming run."""

    @abstractmethod
    def rerank(self, topics: list[Topic], run: Run) -> Run: ...

    def __call__(self, topics: list[Topic], run: Run | None = None) -> Run:
        if run is None:
            raise ValueError(f"{self.name} needs an input run")
        return self.rerank(topics, run)


class Pipeline(Stage):
    def __init__(self, *stages: Stage):
        self.stages = stages
        self.name = " >> ".join(s.name for s in stages)

    def __rshift__(self, other: Reranker) -> Pipeline:
        if not isinstance(other, Reranker):
            raise TypeError(f"can only feed a run into a Reranker, not {type(other).__name__}")
        return Pipeline(*self.stages, other)

    def __call__(self, topics: list[Topic], run: Run | None = None) -> Run:
        for stage in self.stages:
            run = stage(topics, run)
        assert run is not None
        return run
