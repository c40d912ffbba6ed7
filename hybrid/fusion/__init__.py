"""Fusion of runs from several retrievers: one algorithm per module, plus the ``Fuse`` stage.

* :func:`~hybrid.fusion.rrf.rrf` - reciprocal rank fusion (k = 60)
* :func:`~hybrid.fusion.combsum.combsum` - weighted CombSUM over normalised scores
* :func:`~hybrid.fusion.combmnz.combmnz` - weighted CombMNZ
* :mod:`~hybrid.fusion.score_methods` / :mod:`~hybrid.fusion.rank_methods` - ranx's and Pyserini's methods
  under their names (wsum, wmnz, max, min, anz, isr, log_isr, bordafuse, interpolation, average)
* :mod:`~hybrid.fusion.registry` - the one registry of method names and their declared parameters
* :mod:`~hybrid.fusion.normalize` - minmax / zscore / rank normalisation
* :func:`~hybrid.fusion.tune.tune_weights` - weights tuned for an ir_measures metric
* :class:`~hybrid.fusion.fuse.Fuse` - the stage that runs retrievers and fuses their runs

All are mention-aware: a fused passage keeps the span of the run that contributed most to it.
"""

from hybrid.fusion.combmnz import combmnz
from hybrid.fusion.combsum import combsum
from hybrid.fusion.fuse import METHODS, Fuse, fuse_runs, parse_fusion_weights, parse_weights
from hybrid.fusion.normalize import NORMALISATIONS
from hybrid.fusion.registry import FUSIONS, FusionMethod
from hybrid.fusion.rrf import rrf
from hybrid.fusion.tune import TuneResult, tune_weights

__all__ = ["FUSIONS", "METHODS", "NORMALISATIONS", "Fuse", "FusionMethod", "TuneResult", "combmnz", "combsum",
           "fuse_runs", "parse_fusion_weights", "parse_weights", "rrf", "tune_weights"]
