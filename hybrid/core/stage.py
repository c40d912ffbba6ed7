"""The stage interface: small objects with one job that compose into a pipeline read in one glance.

``Retriever``: topics -> run.  ``Reranker``: (topics, run) -> run.  ``a >> b`` feeds a's run into
reranker b; ``a ** b`` is a feature union (PyTerrier's ``**``): a reranker that leaves the incoming run's
order alone and attaches each retriever's score of every hit, which LTR reads as the ``union`` feature
group, so a retriever's score becomes a feature without ``features/`` importing retrievers. ``Fuse``
(see :mod:`hybrid.fusion`) combines several retrievers' runs. Every stage works on a batch of topics at
once so it can be parallelised or sharded without changing its interface.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterable

from hybrid.core.records import UNION_KEY, Hit, Rankings, Topic


class Stage(ABC):
    name: str = "stage"

    def __rshift__(self, other: Reranker) -> Pipeline:
        if not isinstance(other, Reranker):
            raise TypeError(f"can only feed a run into a Reranker, not {type(other).__name__}")
        return Pipeline(self, other)

    def __pow__(self, other: Stage) -> FeatureUnion:
        return FeatureUnion(self, other)

    @abstractmethod
    def __call__(self, topics: list[Topic], run: Rankings | None = None) -> Rankings: ...


class Retriever(Stage):
    """Topics in, run out; ignores an incoming run."""

    @abstractmethod
    def search(self, topics: list[Topic], k: int) -> Rankings: ...

    k: int = 100

    def __call__(self, topics: list[Topic], run: Rankings | None = None) -> Rankings:
        return self.search(topics, self.k)


class Reranker(Stage):
    """Reorders (and may cut) the hits of an incoming run.

    A reranker that rescores only the head of each run (its depth) keeps the rest with :meth:`keep_tail`,
    so every reranker ranks the tail the same way.
    """

    @abstractmethod
    def rerank(self, topics: list[Topic], run: Rankings) -> Rankings: ...

    @staticmethod
    def keep_tail(head: list[Hit], tail: Iterable[Hit]) -> list[Hit]:
        """``head``, then ``tail`` in its order, each tail hit scored below the head's lowest score
        (``floor - 1 - i``) with its mention span and extras kept: the one tail rule of every reranker."""
        return tail_below(head, tail)

    def __call__(self, topics: list[Topic], run: Rankings | None = None) -> Rankings:
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

    def __call__(self, topics: list[Topic], run: Rankings | None = None) -> Rankings:
        for stage in self.stages:
            run = stage(topics, run)
        assert run is not None
        return run


class FeatureUnion(Reranker):
    """``a ** b ** ...``: every retriever scores the incoming run's passages; the run keeps its order and scores.

    Each hit gets ``extra["union"]``: one score per retriever, in order, or None where that retriever did not
    return the passage in its top ``depth`` (default: the longest incoming hit list). The ``union`` feature group
    (:mod:`features.pairs.union`) turns them into ``union_score_<i>`` / ``union_found_<i>`` features, positional
    as in PyTerrier.
    """

    def __init__(self, *stages: Stage, depth: int | None = None):
        flat: list[Retriever] = []
        for stage in stages:
            parts = stage.stages if isinstance(stage, FeatureUnion) else [stage]
            for part in parts:
                if not isinstance(part, Retriever):
                    raise TypeError(f"a feature union takes retrievers, not {type(part).__name__}")
                flat.append(part)
        self.stages, self.depth = flat, depth
        self.name = " ** ".join(s.name for s in flat)

    def __pow__(self, other: Stage) -> FeatureUnion:
        return FeatureUnion(self, other, depth=self.depth)

    def rerank(self, topics: list[Topic], run: Rankings) -> Rankings:
        depth = self.depth or max((len(hits) for hits in run.values()), default=0)
        wanted = [t for t in topics if run.get(t.qid)]
        scored = [stage.search(wanted, depth) if wanted and depth else {} for stage in self.stages]
        out: Rankings = {}
        for qid, hits in run.items():
            by_stage = [{h.docid: h.score for h in found.get(qid, [])} for found in scored]
            out[qid] = [dataclasses.replace(h, extra={**h.extra, UNION_KEY: [s.get(h.docid) for s in by_stage]})
                        for h in hits]
        return out


def tail_below(head: list[Hit], tail: Iterable[Hit]) -> list[Hit]:
    """See :meth:`Reranker.keep_tail` (a function too, for rerankers that are not stages)."""
    floor = min((h.score for h in head), default=0.0)
    return list(head) + [dataclasses.replace(h, score=floor - 1.0 - i) for i, h in enumerate(tail)]
