"""SVMlight/LETOR export: one line per pair, integer qids, original ids in the comment, readable by sklearn."""

from __future__ import annotations

import numpy as np
from test_ltr_learners import FEATURES, featureset, toy_matrix

from ltr.export import export_svmlight


def test_export_round_trips_through_sklearn(tmp_path):
    from sklearn.datasets import load_svmlight_file

    matrix = toy_matrix(n_queries=3, per_query=4)
    out = tmp_path / "toy.letor"
    assert export_svmlight(matrix, featureset(), out) == 12
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# feature set toy fingerprint ")
    first = lines[1]
    assert first.startswith(f"{matrix.labels[0]} qid:1 1:")
    assert first.endswith("# qid=q000 docid=d0 rank=1")
    assert lines[-1].split()[1] == "qid:3"
    X, y, qid = load_svmlight_file(str(out), query_id=True, zero_based=False, n_features=len(FEATURES))
    np.testing.assert_allclose(X.toarray(), matrix.X, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y, matrix.labels)
    np.testing.assert_array_equal(qid, np.repeat([1, 2, 3], 4))
    sidecar = (tmp_path / "toy.letor.features.tsv").read_text().splitlines()
    assert sidecar[0] == "number\tname\tgroup\tdoc"
    assert sidecar[1].startswith("1\tmention_exact\ta\t")
