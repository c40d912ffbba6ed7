"""ltr.feature_scaling: per-query normalisation rescales inside each candidate list (offsets of the matrix)."""

from __future__ import annotations

import numpy as np

from ltr.feature_scaling import Normaliser

# two queries: rows 0-2 and rows 3-4; feature g is constant inside the first query
X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [10.0, 0.0], [20.0, 1.0]])
OFFSETS = np.array([0, 3, 5])


def test_query_zscores_are_relative_to_each_list():
    z = Normaliser.fit(X, ["query_zscore", "query_zscore"]).transform(X, OFFSETS)
    np.testing.assert_allclose(z[:3, 0], [-1.224745, 0.0, 1.224745], atol=1e-6)
    np.testing.assert_allclose(z[:3, 1], 0.0)  # constant inside q1: 0, not a division by zero
    np.testing.assert_allclose(z[3:, 0], [-1.0, 1.0])
    np.testing.assert_allclose(z[3:, 1], [-1.0, 1.0])


def test_query_minmax_and_global_methods_side_by_side():
    out = Normaliser.fit(X, ["query_minmax", "zscore"]).transform(X, OFFSETS)
    np.testing.assert_allclose(out[:, 0], [0.0, 0.5, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(out[:, 1], (X[:, 1] - X[:, 1].mean()) / X[:, 1].std())
