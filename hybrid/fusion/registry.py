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
from hybrid.core.normalize import DEFAULT_NORMALISATION, NORMALISATIONS
from hybrid.core.params import RRF_K, Param
from hybrid.core.records import Rankings
from hybrid.core.registry import Component, Registry
from hybrid.fusion import rank_methods, score_methods
from hybrid.fusion.combmnz import combmnz
from hybrid.fusion.combsum import combsum
from hybrid.fusion.rrf import rrf

NORM = Param("norm", str, DEFAULT_NORMALISATION, "per-query score normalisation before fusing",
             choices=tuple(NORMALISATIONS))
RRF_K_PARAM = Param("rrf_k", int, RRF_K, "RRF's constant k of w / (k + rank)", minimum=1)


@dataclass(frozen=True)
class FusionMethod(Component):
    """One fusion method: ``target(runs, weights, k=..., **params)`` returns the fused run (spans kept)."""

    weighted: bool = True  # takes one weight per run; otherwise every run counts alike
    reference: str = ""  # the library whose method of this name it reproduces

    @property
    def function(self) -> Callable[..., Rankings]:
        return self.target

    @property
    def desc(self) -> str:
        return self.doc

    def notes(self) -> list[str]:
        weights = "one weight per run (weights = ...)" if self.weighted else "no weights: every run counts alike"
        return [f"Takes {weights}."] + ([f"Reproduces {self.reference}."] if self.reference else [])

    def fuse(self, runs: Sequence[Rankings], weights: Sequence[float] | None, k: int | None, **options) -> Rankings:
        if not self.weighted and weights is not None and len(set(weights)) > 1:
            raise ConfigError(None, None, f"fusion method {self.name} takes no weights (every run counts alike); "
                                          f"got {list(weights)}")
        given = {name: options.get(name, p.default) for name, p in self.params.items()}
        if self.weighted:
            return self.function(runs, weights, k=k, **given)
        return self.function(runs, k=k, **given)


#: The fusion methods by name (ranx's ``fuse`` table in the project's one registry style).
FUSIONS: Registry[FusionMethod] = Registry("fusion method", FusionMethod,
                                           describe="How a fuse recipe (method = NAME), python -m hybrid.fuse "
                                                    "--method and python -m hybrid.search --fusion combine runs.")
FUSIONS.add("rrf", rrf, [RRF_K_PARAM], "reciprocal rank fusion: sum of w / (rrf_k + rank)",
            reference="ranx rrf, pyserini.fusion reciprocal_rank_fusion")
FUSIONS.add("combsum", combsum, [NORM],
            "CombSUM of normalised scores; a run that missed a passage gives it its floor")
FUSIONS.add("combmnz", combmnz, [NORM], "CombSUM times the number of runs that returned the passage")
FUSIONS.add("wsum", score_methods.wsum, [NORM], "weighted sum of normalised scores (missing: 0)",
            reference="ranx wsum")
FUSIONS.add("wmnz", score_methods.wmnz, [NORM],
            "normalised scores summed, times the weights of the runs that returned it summed", reference="ranx wmnz")
FUSIONS.add("max", score_methods.comb_max, [NORM], "CombMAX: the best normalised score a run gave",
            weighted=False, reference="ranx max")
FUSIONS.add("min", score_methods.comb_min, [NORM],
            "CombMIN: the worst normalised score among the runs that returned it", weighted=False,
            reference="ranx min")
FUSIONS.add("anz", score_methods.comb_anz, [NORM], "CombANZ: the mean normalised score over the runs that returned it",
            weighted=False, reference="ranx anz")
FUSIONS.add("isr", rank_methods.isr, [], "inverse square rank: n(d) * sum of 1 / rank^2", weighted=False,
            reference="ranx isr")
FUSIONS.add("log_isr", rank_methods.log_isr, [], "log(n(d)) * sum of 1 / rank^2", weighted=False,
            reference="ranx log_isr")
FUSIONS.add("bordafuse", rank_methods.bordafuse, [], "Borda count over the union of the runs' passages",
            weighted=False, reference="ranx bordafuse")
FUSIONS.add("interpolation", score_methods.interpolation, [],
            "alpha * raw score of run 1 + (1 - alpha) * raw score of run 2 (weights alpha,1-alpha)",
            reference="pyserini.fusion interpolation")
FUSIONS.add("average", score_methods.average, [], "mean of the runs' raw scores (missing: 0)", weighted=False,
            reference="pyserini.fusion average")
METHODS = tuple(FUSIONS)
#: The method a Fuse stage, a fuse recipe and ``python -m hybrid.fuse`` use when none is named.
METHOD = Param("method", str, "rrf", "fusion method", choices=METHODS)


def fusion_method(name: str) -> FusionMethod:
    return FUSIONS.lookup(name)


def uses(name: str, param: str) -> bool:
    """Whether method ``name`` reads parameter ``param`` (e.g. ``norm``: rank-based methods do not)."""
    return param in fusion_method(name).params
