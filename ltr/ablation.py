"""Feature-group ablation: retrain without each group, compare per-query metrics with the full set.

For every group of the feature set a model is trained on the same data without that group's
features and evaluated on the same queries (holdout or cross-validation). The table reports mean
metrics by query kind, the delta against the full feature set, and two paired tests over queries:
Student's paired t-test and the Wilcoxon signed-rank test (which does not assume normal
differences; per-query AP differences are far from normal).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from hybrid.core.formats.qrels import Qrels
from ltr.experiment import cv_scores, holdout_scores
from ltr.featureset import FeatureSet
from ltr.matrix import FeatureMatrix
from ltr.metrics import REPORT_MEASURES, by_kind, per_query_metrics

log = logging.getLogger(__name__)


@dataclass
class AblationRow:
    label: str  # "full" or "-<group>"
    n_features: int
    means: dict[str, dict[str, float]]  # measure -> kind -> mean
    delta: dict[str, float] = field(default_factory=dict)  # measure -> mean(variant - full) over all queries
    p_ttest: dict[str, float] = field(default_factory=dict)
    p_wilcoxon: dict[str, float] = field(default_factory=dict)


def paired_tests(a: list[float], b: list[float]) -> tuple[float, float]:
    """(t-test p, Wilcoxon p) for paired samples; 1.0 when the two are identical."""
    diff = np.asarray(a) - np.asarray(b)
    if len(diff) < 2 or np.allclose(diff, 0):
        return 1.0, 1.0
    t = stats.ttest_rel(a, b).pvalue
    w = stats.wilcoxon(diff, zero_method="wilcox").pvalue
    return float(t) if not math.isnan(t) else 1.0, float(w) if not math.isnan(w) else 1.0


def ablate(featureset: FeatureSet, learner: str, params: dict[str, Any] | None, qrels: Qrels,
           kinds: Mapping[str, str], train: FeatureMatrix, test: FeatureMatrix | None = None,
           groups: Mapping[str, str] | None = None, k: int = 5, seed: int = 0,
           measures: tuple[str, ...] = REPORT_MEASURES) -> list[AblationRow]:
    """Holdout when ``test`` is given (train -> test), else ``k``-fold CV over ``train`` grouped by ``groups``."""
    if test is None and groups is None:
        raise ValueError("cross-validation needs topic groups")
    evaluated = test if test is not None else train

    def scores_for(fs: FeatureSet) -> np.ndarray:
        if test is not None:
            return holdout_scores(fs, learner, params, train, test, seed)[1]
        return cv_scores(fs, learner, params, train, groups, k, seed)[0]

    def evaluate(fs: FeatureSet) -> dict[str, dict[str, float]]:
        run = evaluated.to_run(scores_for(fs))
        return per_query_metrics(qrels, run, measures, evaluated.query_ids)

    variants = [("full", featureset)] + [(f"-{g}", featureset.without_group(g)) for g in featureset.group_names]
    rows: list[AblationRow] = []
    full_pq: dict[str, dict[str, float]] | None = None
    for label, fs in variants:
        log.info("ablation: %s (%d features)", label, len(fs.feature_names))
        pq = evaluate(fs)
        row = AblationRow(label, len(fs.feature_names), {m: by_kind(pq[m], kinds) for m in measures})
        if full_pq is None:
            full_pq = pq
        else:
            for m in measures:
                qids = sorted(pq[m])
                a, b = [pq[m][q] for q in qids], [full_pq[m][q] for q in qids]
                row.delta[m] = float(np.mean(np.asarray(a) - np.asarray(b))) if qids else 0.0
                row.p_ttest[m], row.p_wilcoxon[m] = paired_tests(a, b)
        rows.append(row)
    return rows


def format_ablation(rows: list[AblationRow], measures: tuple[str, ...] = ("AP@100", "RR@10"),
                    kinds: tuple[str, ...] = ("event", "entity", "all")) -> str:
    """A markdown table: metric means by kind, delta vs full (all queries), paired-test p-values."""
    head = ["variant", "#f"]
    for m in measures:
        head += [f"{m} {k}" for k in kinds] + [f"Δ{m}", "p(t)", "p(W)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.label, str(r.n_features)]
        for m in measures:
            cells += [f"{r.means[m].get(k, float('nan')):.4f}" for k in kinds]
            if r.delta:
                cells += [f"{r.delta[m]:+.4f}", f"{r.p_ttest[m]:.3g}", f"{r.p_wilcoxon[m]:.3g}"]
            else:
                cells += ["", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
