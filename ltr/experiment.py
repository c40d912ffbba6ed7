"""Training and scoring recipes shared by the CLI, ablations and benchmarks.

Two protocols: *holdout* (train on one labelled matrix, score another, e.g. ECB+ train -> dev) and
*cross-validation* (out-of-fold scores over one labelled matrix, folds grouped by topic).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr.cv import assert_disjoint, grouped_folds
from ltr.featureset import FeatureSet
from ltr.matrix import FeatureMatrix
from ltr.model import TrainedModel, train_model

log = logging.getLogger(__name__)


def holdout_scores(featureset: FeatureSet, learner: str, params: dict[str, Any] | None, train: FeatureMatrix,
                   test: FeatureMatrix, seed: int = 0) -> tuple[TrainedModel, np.ndarray]:
    model = train_model(learner, params, featureset, train, seed)
    return model, model.score(test.columns(featureset.feature_names))


def cv_scores(featureset: FeatureSet, learner: str, params: dict[str, Any] | None, matrix: FeatureMatrix,
              groups: Mapping[str, str], k: int = 5, seed: int = 0) -> tuple[np.ndarray, list[dict]]:
    """Out-of-fold scores for every row; each fold's model never saw the fold's topics."""
    folds = grouped_folds(matrix.query_ids, groups, k, seed)
    assert_disjoint(folds, groups)
    scores = np.full(len(matrix), np.nan)
    info = []
    for i, (train_q, test_q) in enumerate(folds):
        train, test = matrix.queries(train_q), matrix.queries(test_q)
        model = train_model(learner, params, featureset, train, seed)
        mask = np.isin(matrix.qids, np.array(test_q, dtype=matrix.qids.dtype))
        scores[mask] = model.score(test.columns(featureset.feature_names))
        info.append({"fold": i, "train_queries": len(train_q), "test_queries": len(test_q),
                     "test_topics": sorted({groups[q] for q in test_q})})
        log.info("fold %d/%d: %d train / %d test queries", i + 1, k, len(train_q), len(test_q))
    return scores, info
