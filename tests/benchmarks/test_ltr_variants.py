"""The pure helpers of benchmarks/ltr_variants.py: per-query z-scores, judged-only training lists
(condensed runs: tests/hybrid/evaluation/test_judged.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.matrix import FeatureMatrix


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("ltr_variants")


def matrix() -> FeatureMatrix:
    qids = np.array(["q1", "q1", "q1", "q2", "q2"])
    docids = np.array(["a", "b", "c", "a", "d"])
    X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [10.0, 0.0], [20.0, 1.0]], dtype=np.float32)
    return FeatureMatrix(qids, docids, X, ["f", "g"], np.zeros(5), np.full((5, 2), -1), np.array([1, 0, 0, 0, 1]))


def test_query_zscores_are_relative_to_each_list(script):
    m = matrix()
    z = script.query_zscores(m, m.X.astype(np.float64))
    np.testing.assert_allclose(z[:3, 0], [-1.224745, 0.0, 1.224745], atol=1e-6)
    np.testing.assert_allclose(z[:3, 1], 0.0)  # constant inside q1: 0, not a division by zero
    np.testing.assert_allclose(z[3:, 0], [-1.0, 1.0])
    np.testing.assert_allclose(z[3:, 1], [-1.0, 1.0])


def test_judged_only_drops_unlabelled_candidates_outside_the_judged_sentences(script):
    kept = script.judged_only(matrix(), validated={"a"})
    # q1: a (judged), b and c (unjudged, no qrel) dropped; q2: a (judged), d (relevant, kept though unjudged)
    assert list(zip(kept.qids.tolist(), kept.docids.tolist(), strict=True)) == [("q1", "a"), ("q2", "a"), ("q2", "d")]
    assert kept.labels.tolist() == [1, 0, 1]
    assert kept.X.shape == (3, 2)


def test_every_variant_run_is_written_under_its_own_file_name(script, tmp_path):
    from hybrid.core.formats.runs import read_run
    from hybrid.core.records import Hit

    runs = {"reference (the recipe's model)": {"q1": [Hit(docid="a", score=2.0), Hit(docid="b", score=1.0)]},
            "diagnostic (gold annotation): trained on judged candidates only": {"q1": [Hit(docid="b", score=3.0)]}}
    files = script.write_runs(runs, tmp_path / "runs")
    assert files == {"reference (the recipe's model)": "reference-the-recipe-s-model.trec",
                     "diagnostic (gold annotation): trained on judged candidates only":
                         "diagnostic-gold-annotation-trained-on-judged-candidates-only.trec"}
    back = read_run(tmp_path / "runs" / "reference-the-recipe-s-model.trec")
    assert [h.docid for h in back["q1"]] == ["a", "b"]
    with pytest.raises(ValueError, match="one file name"):
        script.write_runs({"seed 1": {}, "seed-1": {}}, tmp_path / "clash")
