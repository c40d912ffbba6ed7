"""The one registry of fusion methods: name -> function, declared parameters, whether it takes weights.

Every fusion entry point (``hybrid.fuse --method``, ``hybrid.search --fusion``, a ``fuse`` recipe's
``method``, the LTR fusion provider, weight tuning) reads the names from :data:`FUSIONS`, and
:func:`fuse_runs` hands each method only the parameters it declares (``norm`` for score-based methods,
``rrf_k`` for RRF), with their defaults from the same :class:`~hybrid.core.params.Param` objects.
Names follow ranx (``wsum``, ``wmnz``, ``max``, ``min``, ``anz``, ``isr``, ``log_isr``, ``bordafuse``) and
Pyserini (``interpolation``, ``average``) where the method is theirs; ``tests/hybrid/test_fusion_reference.py``
compares the scores with ranx and Pyserini on the same runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hybrid.core.errors import ConfigError
from hybrid.core.normalize import NORMALISATIONS
from hybrid.core.params import RRF_K, Param
from hybrid.core.records import Run
from hybrid.fusion import rank_methods, score_methods
from hybrid.fusion.combmnz import combmnz
from hybrid.fusion.combsum import combsum
from hybrid.fusion.rrf import rrf

NORM = Param("norm", str, "minmax", "per-query score normalisation before fusing", choices=tuple(NORMALISATIONS))
RRF_K_PARAM = Param("rrf_k", int, RRF_K, "RRF's constant k of w / (k + rank)", minimum=1)


@dataclass(frozen=True)
class FusionMethod:
    """One fusion method: ``function(runs, weights, k=..., **params)`` returns the fused run (spans kept)."""

    name: str
    function: Callable[..., Run]
    desc: str
    params: tuple[Param, ...] = ()
    weighted: bool = True  # takes one weight per run; otherwise every run counts alike
    reference: str = ""  # the library whose method of this name it reproduces

    def fuse(self, runs: Sequence[Run], weights: Sequence[float] | None, k: int | None, **options) -> Run:
        if not self.weighted and weights is not None and len(set(weights)) > 1:
            raise ConfigError(None, None, f"fusion method {self.name} takes no weights (every run counts alike); "
                                          f"got {list(weights)}")
        given = {p.name: options.get(p.name, p.default) for p in self.params}
        if self.weighted:
            return self.function(runs, weights, k=k, **given)
        return self.function(runs, k=k, **given)


FUSIONS: dict[str, FusionMethod] = {m.name: m for m in (
    FusionMethod("rrf", rrf, "reciprocal rank fusion: sum of w / (rrf_k + rank)", (RRF_K_PARAM,),
                 reference="ranx rrf, pyserini.fusion reciprocal_rank_fusion"),
    FusionMethod("combsum", combsum, "CombSUM of normalised scores; a run that missed a passage gives it its floor",
                 (NORM,)),
    FusionMethod("combmnz", combmnz, "CombSUM times the number of runs that returned the passage", (NORM,)),
    FusionMethod("wsum", score_methods.wsum, "weighted sum of normalised scores (missing: 0)", (NORM,),
                 reference="ranx wsum"),
    FusionMethod("wmnz", score_methods.wmnz,
                 "normalised scores summed, times the weights of the runs that returned it summed", (NORM,),
                 reference="ranx wmnz"),
    FusionMethod("max", score_methods.comb_max, "CombMAX: the best normalised score a run gave", (NORM,),
                 weighted=False, reference="ranx max"),
    FusionMethod("min", score_methods.comb_min, "CombMIN: the worst normalised score among the runs that returned it",
                 (NORM,), weighted=False, reference="ranx min"),
    FusionMethod("anz", score_methods.comb_anz, "CombANZ: the mean normalised score over the runs that returned it",
                 (NORM,), weighted=False, reference="ranx anz"),
    FusionMethod("isr", rank_methods.isr, "inverse square rank: n(d) * sum of 1 / rank^2", weighted=False,
                 reference="ranx isr"),
    FusionMethod("log_isr", rank_methods.log_isr, "log(n(d)) * sum of 1 / rank^2", weighted=False,
                 reference="ranx log_isr"),
    FusionMethod("bordafuse", rank_methods.bordafuse, "Borda count over the union of the runs' passages",
                 weighted=False, reference="ranx bordafuse"),
    FusionMethod("interpolation", score_methods.interpolation,
                 "alpha * raw score of run 1 + (1 - alpha) * raw score of run 2 (weights alpha,1-alpha)",
                 reference="pyserini.fusion interpolation"),
    FusionMethod("average", score_methods.average, "mean of the runs' raw scores (missing: 0)", weighted=False,
                 reference="pyserini.fusion average"),
)}
METHODS = tuple(FUSIONS)


def fusion_method(name: str) -> FusionMethod:
    if name not in FUSIONS:
        raise ConfigError(None, None, f"unknown fusion method {name!r}; choose from {', '.join(METHODS)}")
    return FUSIONS[name]


def uses(name: str, param: str) -> bool:
    """Whether method ``name`` reads parameter ``param`` (e.g. ``norm``: rank-based methods do not)."""
    return any(p.name == param for p in fusion_method(name).params)
