"""Reader + first stage: ``(1 - w) * norm(first-stage score) + w * norm(reader score)`` over the reranked hits.

Why: the reader (a cross-encoder trained on a few thousand queries) and the first stage (lexical and
dense matching over the whole annotated mention record: chain, arguments, trigrams) see different
evidence, so a weighted sum of the two usually beats either alone - the interpolation monoBERT-style
rerankers are reported with. ``w = 1`` is the reader alone (CoreSearch's E2E ranking), ``w = 0`` the
first stage.

The input is a run written by :func:`ltr.reader.infer.rerank_run`: its reranked hits carry
``reader_score`` and ``first_stage_score`` in ``extra``; both are normalised per query over those
hits (z-score by default, :mod:`hybrid.core.normalize`). Hits below the rerank depth keep their
first-stage order under the interpolated ones, as in ``rerank_run``. Spans stay the reader's.

``tune_weight`` picks ``w`` on a grid for one measure; ``cross_fit`` tunes it on the other folds of
a query partition (e.g. ECB+ topics) and applies it to each held-out fold, so every query is scored
with a weight that was tuned without it.

The weight may differ by the query's kind (:class:`KindWeights`, written ``"event=0.35;entity=0.65"``
as fusion weights are): on ECB+ dev the best event weight is about half the best entity weight,
because the reader is relatively weaker on events, whose coreference hinges on arguments that a
single sentence often lacks.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import Qrels
from hybrid.core.formats.runs import sorted_hits
from hybrid.core.judged import judged_only, with_judged
from hybrid.core.measures import per_query
from hybrid.core.normalize import normaliser
from hybrid.core.params import split_per_kind
from hybrid.core.records import KINDS, Hit, Rankings
from hybrid.core.stage import tail_below

GRID = tuple(step / 20 for step in range(21))  # 0, 0.05, ..., 1


def check_weight(weight: float) -> float:
    """The interpolation weight, refused unless in [0, 1] (checked before any reranking work is done)."""
    if not 0.0 <= weight <= 1.0:
        raise ConfigError(None, None, f"interpolation weight must be in [0, 1], got {weight}")
    return weight



@dataclass(frozen=True)
class KindWeights:
    """Interpolation weights by query kind; ``default`` serves a kind without its own weight (None: error)."""

    default: float | None = None
    by_kind: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        if self.default is None and not self.by_kind:
            raise ConfigError(None, None, "interpolation weights: give a weight or per-kind weights")
        unknown = sorted(set(self.by_kind) - set(KINDS))
        if unknown:
            raise ConfigError(None, None, f"interpolation weights: unknown kind {unknown[0]!r} (event or entity)")
        for weight in [self.default, *self.by_kind.values()]:
            if weight is not None:
                check_weight(weight)

    @classmethod
    def of(cls, weights: KindWeights | float | Mapping[str, float] | str) -> KindWeights:
        """From a number, a ``{kind: weight}`` mapping (key ``default`` allowed) or a string (:meth:`parse`)."""
        if isinstance(weights, KindWeights):
            return weights
        if isinstance(weights, str):
            return cls.parse(weights)
        if isinstance(weights, Mapping):
            rest = {k: _as_weight(v, k) for k, v in weights.items() if k != "default"}
            default = weights.get("default")
            return cls(None if default is None else _as_weight(default, "default"), rest)
        return cls(_as_weight(weights, "weight"))

    @classmethod
    def parse(cls, text: str) -> KindWeights:
        """``"0.4"``, ``"event=0.35;entity=0.65"`` or both (``"0.5;event=0.35"``: entities use 0.5)."""
        default, by_kind = split_per_kind(text, "interpolation weights")
        return cls(None if default is None else _as_weight(default, "weight"),
                   {kind: _as_weight(value, kind) for kind, value in by_kind.items()})

    def weight(self, qid: str, kind: str | None) -> float:
        if kind in self.by_kind:
            return self.by_kind[kind]
        if self.default is None:
            raise ConfigError(None, None, f"query {qid!r} has kind {kind!r}, which has no interpolation weight "
                                          f"(weights are given for {sorted(self.by_kind)}; add a default)")
        return self.default

    def __str__(self) -> str:
        parts = [] if self.default is None else [f"{self.default:g}"]
        return ";".join(parts + [f"{k}={w:g}" for k, w in sorted(self.by_kind.items())])


def _as_weight(value, name: str) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        raise ConfigError(None, None, f"interpolation weight {name!r}: not a number: {value!r}") from None
    if isinstance(value, bool):
        raise ConfigError(None, None, f"interpolation weight {name!r}: not a number: {value!r}")
    return check_weight(weight)


def _with_score(hits: list[Hit], key: str) -> list[Hit]:
    return [Hit(docid=h.docid, score=float(h.extra[key])) for h in hits]


def interpolate(reranked: Rankings, weight: float | KindWeights | Mapping[str, float] | str, norm: str = "zscore",
                kinds: Mapping[str, str | None] | None = None) -> Rankings:
    """Each query's reader-scored hits re-sorted by the weighted sum of normalised first-stage and reader scores.

    ``weight``: one weight, or per-kind weights (:class:`KindWeights`), which need ``kinds`` (qid -> kind).
    """
    weights = KindWeights.of(weight)
    normalise = normaliser(norm)
    out: Rankings = {}
    for qid, hits in reranked.items():
        w = weights.weight(qid, (kinds or {}).get(qid))
        top = [h for h in hits if "reader_score" in h.extra]
        rest = [h for h in hits if "reader_score" not in h.extra]
        if any("first_stage_score" not in h.extra for h in top):
            raise ConfigError(None, None, f"query {qid!r}: reranked hits lack 'first_stage_score' (not a run "
                                          "written by rerank_run?)")
        first = normalise(_with_score(top, "first_stage_score"))
        reader = normalise(_with_score(top, "reader_score"))
        fused = [Hit(docid=h.docid, score=(1 - w) * first[h.docid] + w * reader[h.docid],
                     mention_start=h.mention_start, mention_end=h.mention_end, mention_text=h.mention_text,
                     mention_id=h.mention_id, extra=dict(h.extra, interpolation_weight=w)) for h in top]
        rest.sort(key=lambda h: h.extra.get("first_stage_rank", 0))
        out[qid] = tail_below(sorted_hits(fused), rest)
    return out


def tune_weight(qrels: Qrels, reranked: Rankings, measure: str = "RR@10", grid: tuple[float, ...] = GRID,
                norm: str = "zscore", judged: Collection[str] | None = None) -> tuple[float, dict[float, float]]:
    """The grid weight with the best mean ``measure`` over the judged queries of ``reranked`` (ties: the smaller
    weight, i.e. closer to the first stage), and the whole curve.

    ``judged``: passages judged for every query (:mod:`hybrid.core.judged`). With it, ``measure`` is read on
    condensed lists - each query's unjudged passages removed after interpolation - so that where a collection
    is judged in part, the weight is not chosen for where the reader puts the passages nobody judged.
    """
    queries = sorted(q for q in reranked if q in qrels)
    if not queries:
        raise ConfigError(None, None, "no judged query to tune the interpolation weight on")
    sub_qrels = {q: qrels[q] for q in queries}
    sub_run = {q: reranked[q] for q in queries}
    if judged is not None:
        sub_qrels = with_judged(sub_qrels, judged, sub_run)  # the reranked hits are the ones any weight ranks
    curve = {}
    for weight in grid:
        ranked = interpolate(sub_run, weight, norm)
        if judged is not None:
            ranked = judged_only(ranked, sub_qrels)
        scores = per_query(sub_qrels, ranked, (measure,))[measure]
        curve[weight] = statistics.fmean(scores.get(q, 0.0) for q in queries)
    best = max(curve, key=lambda w: (curve[w], -w))
    return best, curve


@dataclass
class CrossFit:
    run: Rankings  # every query scored with the weight tuned on the other folds
    weights: dict[str, float]  # fold -> weight applied to it
    curves: dict[str, dict[float, float]] = field(default_factory=dict)  # fold -> tuning curve on the other folds


def cross_fit(qrels: Qrels, reranked: Rankings, fold_of: Mapping[str, str], measure: str = "RR@10",
              grid: tuple[float, ...] = GRID, norm: str = "zscore", judged: Collection[str] | None = None) -> CrossFit:
    """Tune on all folds but one, apply to that one, for every fold of ``fold_of`` (qid -> fold).
    ``judged``: tune on condensed lists (:func:`tune_weight`)."""
    missing = sorted(q for q in reranked if q not in fold_of)
    if missing:
        raise ConfigError(None, None, f"{len(missing)} queries have no fold, e.g. {missing[:3]}")
    folds = sorted({fold_of[q] for q in reranked})
    if len(folds) < 2:
        raise ConfigError(None, None, f"cross-fitting needs at least 2 folds, got {len(folds)}")
    result = CrossFit(run={}, weights={})
    for fold in folds:
        train = {q: hits for q, hits in reranked.items() if fold_of[q] != fold}
        weight, curve = tune_weight(qrels, train, measure, grid, norm, judged)
        held_out = {q: hits for q, hits in reranked.items() if fold_of[q] == fold}
        result.run.update(interpolate(held_out, weight, norm))
        result.weights[fold], result.curves[fold] = weight, curve
    return result
