"""Fusion of runs from several retrievers: one algorithm per module, plus the ``Fuse`` stage.

* :func:`~hybrid.fusion.rrf.rrf` - reciprocal rank fusion (k = 60)
* :func:`~hybrid.fusion.combsum.combsum` - weighted CombSUM over normalised scores
* :func:`~hybrid.fusion.combmnz.combmnz` - weighted CombMNZ
* :mod:`~hybrid.fusion.score_methods` / :mod:`~hybrid.fusion.rank_methods` - ranx's and Pyserini's methods
  under their names (wsum, wmnz, max, min, anz, isr, log_isr, bordafuse, interpolation, average)
* :mod:`~hybrid.fusion.registry` - the one registry of method names and their declared parameters
* :mod:`~hybrid.core.normalize` - minmax / zscore / rank normalisation
* :func:`~hybrid.fusion.tune.tune_weights` - weights tuned for an ir_measures metric
* :class:`~hybrid.fusion.fuse.Fuse` - the stage that runs retrievers and fuses their runs

All are mention-aware: a fused passage keeps the span of the run that contributed most to it.
"""

from hybrid.core.normalize import NORMALISATIONS
from hybrid.fusion.combmnz import combmnz
from hybrid.fusion.combsum import combsum
from hybrid.fusion.fuse import METHODS, Fuse, fuse_runs, parse_fusion_weights, parse_weights
from hybrid.fusion.registry import FUSIONS, FusionMethod
from hybrid.fusion.rrf import rrf

__all__ = ["FUSIONS", "METHODS", "NORMALISATIONS", "Fuse", "FusionMethod", "TuneResult", "combmnz", "combsum",
           "fuse_runs", "parse_fusion_weights", "parse_weights", "rrf", "tune_weights"]


def __getattr__(name: str):
    """``tune``'s names on first use (PEP 562): it imports ir_measures, which fusing runs does not need, so
    importing the package (or ``hybrid.fusion.fuse`` for a recipe's Fuse stage) stays free of it."""
    if name in ("TuneResult", "tune_weights"):
        from hybrid.fusion import tune  # deferred: importing it loads ir_measures

        return getattr(tune, name)
    raise AttributeError(f"module 'hybrid.fusion' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
