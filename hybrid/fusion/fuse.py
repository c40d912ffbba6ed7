"""The ``Fuse`` stage: run several retrievers on the same topics and fuse their runs.

``Fuse([MultiFieldBM25(idx), DenseRetriever(dense_dir)], method="combsum", weights=[0.4, 0.6])`` is a
:class:`~hybrid.core.stage.Retriever` like any other, so it composes with rerankers
(``Fuse(...) >> reranker``). Each component fetches ``depth`` hits (default ``k``; a deeper pool
lets a passage that one side ranks 120th still be lifted by the other) and the fused list is cut to
``k``. The component runs of the last search stay in ``component_runs``, and ``on_component(name, run)``
is called as each finishes, so a CLI can write them.
Weights may differ by query kind (``weights_by_kind``), since events and entities prefer different
mixes; the kind is the topic's own (``Topic.kind``), never a label.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from hybrid.core.errors import ConfigError
from hybrid.core.normalize import DEFAULT_NORMALISATION
from hybrid.core.params import RRF_K, split_per_kind
from hybrid.core.records import Rankings, Topic
from hybrid.core.stage import Retriever
from hybrid.fusion.registry import METHOD, METHODS, fusion_method

__all__ = ["METHODS", "Fuse", "fuse_runs", "parse_fusion_weights", "parse_weights"]


def fuse_runs(runs: Sequence[Rankings], method: str = METHOD.default, weights: Sequence[float] | None = None,
              norm: str = DEFAULT_NORMALISATION, k: int | None = None, rrf_k: int = RRF_K) -> Rankings:
    """Fuse ``runs`` with the registered method ``method`` (:mod:`hybrid.fusion.registry`); each method reads
    only the options it declares (``norm``, ``rrf_k``)."""
    return fusion_method(method).fuse(runs, weights, k, norm=norm, rrf_k=rrf_k)


def parse_weights(spec: str | None, n: int, option: str = "fusion weights", unit: str = "retriever",
                  order: str = "the fused retrievers") -> list[float] | None:
    """``"0.3,0.7"`` -> [0.3, 0.7]: one finite number >= 0 per ``unit`` (``n`` of them), not all 0;
    ``None``/``""`` -> equal weights. The one parser of weight lists: ``hybrid.fuse --weights`` (``option``
    ``--weights``, ``unit`` run) and a fuse recipe's or ``hybrid.search --fusion-weights`` (fusion weights of
    retrievers); an error names ``option`` and says the weights follow ``order``."""
    if not spec:
        return None
    try:
        weights = [float(x) for x in spec.split(",")]
    except ValueError:
        weights = []
    if not weights or any(not (w >= 0 and w != float("inf")) for w in weights) or not any(weights):
        raise ConfigError(None, None, f"{option} {spec!r}: give one number >= 0 per {unit}, comma separated, "
                                      "not all 0")
    if len(weights) != n:
        raise ConfigError(None, None, f"{option}: {len(weights)} weight(s) for {n} {unit}(s); give one per {unit}, "
                                      f"in the order of {order}")
    return weights


def parse_fusion_weights(spec: str | None, n: int) -> tuple[list[float] | None, dict[str, list[float]]]:
    """Global and per-kind weights: ``"0.4,0.6"`` or ``"event=0.3,0.7;entity=0.5,0.5"`` (both may be mixed:
    ``"0.5,0.5;event=0.3,0.7"``; a kind without its own weights uses the global ones)."""
    default, by_kind = split_per_kind(spec, "fusion weights")
    return parse_weights(default, n), {kind: parse_weights(values, n) or [] for kind, values in by_kind.items()}


class Fuse(Retriever):
    """Fuses the runs of several retrievers; keeps the best mention span of each passage."""

    def __init__(self, retrievers: Sequence[Retriever], method: str = METHOD.default,
                 weights: Sequence[float] | None = None, normalisation: str = DEFAULT_NORMALISATION, k: int = 100,
                 depth: int | None = None, rrf_k: int = RRF_K,
                 weights_by_kind: Mapping[str, Sequence[float]] | None = None, name: str | None = None,
                 on_component: Callable[[str, Rankings], None] | None = None):
        if not retrievers:
            raise ConfigError(None, None, "Fuse needs at least one retriever")
        fusion_method(method)  # an unknown name is refused here, before any search
        self.retrievers = list(retrievers)
        self.method, self.normalisation, self.k, self.depth, self.rrf_k = method, normalisation, k, depth, rrf_k
        self.weights = list(weights) if weights is not None else None
        self.weights_by_kind = {kind: list(w) for kind, w in (weights_by_kind or {}).items()}
        for w in [self.weights, *self.weights_by_kind.values()]:
            if w is not None and len(w) != len(self.retrievers):
                raise ConfigError(None, None, f"{len(w)} fusion weight(s) for {len(self.retrievers)} retriever(s)")
        self.names = unique_names([r.name for r in self.retrievers])
        self.name = name or f"{method}({'+'.join(self.names)})"
        self.component_runs: dict[str, Rankings] = {}
        self.on_component = on_component  # called with (name, run) as each component finishes

    def weights_for(self, topic: Topic) -> list[float] | None:
        return self.weights_by_kind.get(topic.kind or "", self.weights)

    def fuse(self, topics: list[Topic], runs: Sequence[Rankings], k: int) -> Rankings:
        """Fuse given component runs (one per retriever, same order), grouping topics by their weights."""
        groups: dict[tuple[float, ...] | None, list[str]] = {}
        for t in topics:
            w = self.weights_for(t)
            groups.setdefault(tuple(w) if w is not None else None, []).append(t.qid)
        fused: Rankings = {}
        for weights, qids in groups.items():
            part = [{q: run.get(q, []) for q in qids} for run in runs]
            fused.update(fuse_runs(part, self.method, weights, self.normalisation, k, self.rrf_k))
        return fused

    def search(self, topics: list[Topic], k: int,
               on_component: Callable[[str, Rankings], None] | None = None) -> Rankings:
        depth = max(self.depth or k, k)
        on_component = on_component or self.on_component
        runs = []
        self.component_runs = {}
        for name, retriever in zip(self.names, self.retrievers, strict=True):
            run = retriever.search(topics, depth)
            self.component_runs[name] = run
            runs.append(run)
            if on_component is not None:
                on_component(name, run)
        return self.fuse(topics, runs, k)


def unique_names(names: list[str]) -> list[str]:
    out, seen = [], {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if names.count(name) == 1 else f"{name}{seen[name]}")
    return out
