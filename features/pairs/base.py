"""Pair features: the unit of learning to rank is (query mention, candidate mention, retrieval context).

A *feature* is a named, documented function ``f(query, candidate, ctx) -> float`` over two
:class:`~features.pairs.views.RecordView` s and a :class:`PairContext` (the hit, its first-stage
rank and score, the candidate's passage and document, the query's own passage and document, term
statistics). Features live in *groups* (one module per group); a group is a
:class:`FeatureProvider`, the interface every source of features implements, so the per-field
sparse scores of the Java extractor, dense/fusion scores and the neural reader plug in as groups
beside the hand-written ones. Providers compute a whole batch at once (``compute`` returns a
``(n_pairs, n_features)`` array), which lets batch back-ends (a JVM call, a GPU forward pass) do one
call per batch rather than one per pair.

Missing values are ``NaN`` (e.g. a provider that has no score for a pair); tree learners route
them, the linear learner imputes 0 after normalisation.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from features.pairs.views import DocumentView, PassageView, RecordView, TermStats
from hybrid.core.errors import ConfigError
from hybrid.core.params import Param
from hybrid.core.records import Hit, Topic
from hybrid.core.registry import resolve


@dataclass(eq=False)
class QueryContext:
    """Everything known about one query while its candidates are scored."""

    topic: Topic
    record: RecordView
    passage: PassageView | None  # the query's own passage when it points into the corpus
    doc: DocumentView  # the query's document (or its text alone)
    hits: list[Hit]  # the first-stage run at the rerank depth, best first
    stats: TermStats
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def top_score(self) -> float:
        return self.hits[0].score if self.hits else 0.0


@dataclass(eq=False)
class PairContext:
    """The retrieval context of one (query, candidate) pair."""

    query: QueryContext
    hit: Hit
    rank: int  # 1-based first-stage rank
    candidate: RecordView  # the candidate mention the first stage matched (or the best guess)
    passage: PassageView
    doc: DocumentView


PairFunction = Callable[[RecordView, RecordView, PairContext], float]


@dataclass(frozen=True)
class Feature:
    """One named feature: its group, function, one-line doc and implementation version.

    ``version`` is part of a feature set's fingerprint: bump it when the function's meaning
    changes, and models trained with the old meaning refuse to score.
    """

    name: str
    group: str
    doc: str
    version: int = 1
    fn: PairFunction | None = None


@dataclass
class PairBatch:
    """Queries and their candidate pairs, flattened: ``pairs[offsets[i]:offsets[i+1]]`` belong to query i."""

    queries: list[QueryContext]
    pairs: list[PairContext]
    offsets: list[int]
    resources: Any = None  # the resources that built the batch (index access for batch providers)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def qids(self) -> list[str]:
        return [p.query.topic.qid for p in self.pairs]

    @property
    def docids(self) -> list[str]:
        return [p.hit.docid for p in self.pairs]


class FeatureProvider(ABC):
    """A source of features (one group). Implement ``features`` and ``compute``.

    ``available`` returns ``None`` when the provider can run here, else a one-line reason (a missing
    module, an index without the fields it needs); feature sets naming an unavailable provider's
    features fail with that reason.
    """

    group: str = "group"
    description: str = ""
    #: The options a feature set may give it (``[providers.<group>]``), declared once: :meth:`configure` checks a
    #: set's options against them and fills in their defaults; ``python -m hybrid.recipes types`` lists them.
    OPTIONS: tuple[Param, ...] = ()

    @abstractmethod
    def features(self) -> dict[str, Feature]: ...

    def available(self) -> str | None:
        return None

    def configure(self, options: dict[str, Any]) -> FeatureProvider:
        """A provider set up with a feature set's ``[providers.<group>]`` options: a group without declared
        :attr:`OPTIONS` takes none; one with them is made anew from :meth:`option_values` (constructor arguments
        named as the options)."""
        if not self.OPTIONS:
            if options:
                raise ConfigError(None, None, f"feature group {self.group!r} takes no options, got {sorted(options)}")
            return self
        return type(self)(**self.option_values(options))

    def option_values(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` checked against :attr:`OPTIONS` (an unknown option, a value of the wrong type or range is a
        ConfigError naming ``[providers.<group>]``), every default filled in."""
        where = f"[providers.{self.group}]"
        return resolve(self.OPTIONS, options, what=where, prefix=f"{where} ", noun="option")

    def identity(self) -> dict[str, Any]:
        """What, beyond the options, fixes this provider's values (e.g. a checkpoint's checksum); fingerprinted."""
        return {}

    @abstractmethod
    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        """``(len(batch), len(names))`` float32 values for the named features of this provider."""

    def start_early(self, resources: Any, topics: Sequence[Topic],
                    names: Sequence[str]) -> Callable[[PairBatch], Callable[[], np.ndarray]] | None:
        """Start the part of :meth:`compute` that needs the queries alone (a search of ``topics`` over the index of
        ``resources``) before the batch's pairs are built, and return what, given the batch built from these
        ``resources`` and ``topics``, gives the function that waits for its values; or None (the default: nothing
        started, :meth:`start` at extraction). :func:`ltr.pipeline.extract_matrix` calls it before
        :func:`ltr.batch.build_batch`, so a Java search runs beside the building of the pairs (Python, one core)
        rather than beside the other groups. The values must equal :meth:`compute`'s."""
        return None

    def start(self, batch: PairBatch, names: Sequence[str]) -> Callable[[], np.ndarray] | None:
        """Start :meth:`compute` in the background and return what waits for its values, or None (the default:
        nothing started, call :meth:`compute`). A provider whose values come mostly from Java (pyjnius releases
        the GIL during a call) can search beside the pure-Python groups; :func:`ltr.matrix.extract` starts such
        providers first and computes the others meanwhile. The returned values must equal :meth:`compute`'s."""
        return None


def first_doc_line(fn: Callable) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip().split("\n")[0]


class FeatureGroup(FeatureProvider):
    """A provider made of pure-Python pair functions, registered with the ``@group.feature`` decorator."""

    def __init__(self, group: str, description: str):
        self.group, self.description = group, description
        self._features: dict[str, Feature] = {}

    def feature(self, fn: PairFunction | None = None, *, name: str | None = None, version: int = 1):
        """Register ``fn`` under its own name (or ``name``); its docstring's first line is the doc."""

        def register(f: PairFunction) -> PairFunction:
            self.add(name or f.__name__, f, first_doc_line(f), version)
            return f

        return register(fn) if fn is not None else register

    def add(self, name: str, fn: PairFunction, doc: str, version: int = 1) -> None:
        if name in self._features:
            raise ValueError(f"feature {name!r} registered twice in group {self.group!r}")
        if not doc:
            raise ValueError(f"feature {name!r} has no documentation")
        self._features[name] = Feature(name, self.group, doc, version, fn)

    def features(self) -> dict[str, Feature]:
        return dict(self._features)

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        fns = [self._features[n].fn for n in names]
        out = np.empty((len(batch.pairs), len(names)), dtype=np.float32)
        for i, ctx in enumerate(batch.pairs):
            q, c = ctx.query.record, ctx.candidate
            out[i] = [fn(q, c, ctx) for fn in fns]
        return out

    def value(self, name: str, query: RecordView, candidate: RecordView, ctx: PairContext | None) -> float:
        """One feature on one pair (for tests and debugging)."""
        return float(self._features[name].fn(query, candidate, ctx))


def jaccard(a: set | frozenset, b: set | frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def dice(a: set | frozenset, b: set | frozenset) -> float:
    if not a or not b:
        return 0.0
    return 2.0 * len(a & b) / (len(a) + len(b))


def overlap_coefficient(a: set | frozenset, b: set | frozenset) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))

