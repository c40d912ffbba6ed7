import pytest
from scipy import stats

from hybrid.evaluation.significance import holm, paired_test


def test_holm_matches_hand_computation():
    # p sorted: 0.01 (x3) -> 0.03, 0.02 (x2) -> 0.04, 0.04 (x1) -> 0.04 (monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_paired_test_against_scipy_and_identical_runs():
    a = {"q1": 0.9, "q2": 0.8, "q3": 0.7, "q4": 0.95, "q5": 0.6, "q6": 0.85}
    b = {"q1": 0.5, "q2": 0.6, "q3": 0.65, "q4": 0.5, "q5": 0.61, "q6": 0.4}
    result = paired_test(a, b)
    qs = sorted(a)
    assert result.t_p == pytest.approx(stats.ttest_rel([a[q] for q in qs], [b[q] for q in qs]).pvalue)
    assert result.wilcoxon_p == pytest.approx(stats.wilcoxon([a[q] for q in qs], [b[q] for q in qs]).pvalue)
    assert result.mean_delta == pytest.approx(sum(a[q] - b[q] for q in qs) / 6) and result.n == 6
    same = paired_test(a, a)
    assert (same.t_p, same.wilcoxon_p, same.mean_delta) == (1.0, 1.0, 0.0)
