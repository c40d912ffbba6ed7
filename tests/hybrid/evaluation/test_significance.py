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


def _scipy_randomization(a, b, n_resamples, rng=None):
    """scipy's paired permutation test of the mean difference (permutation_type='samples'), two-sided."""
    import numpy as np

    return stats.permutation_test((np.asarray(a), np.asarray(b)), lambda x, y: np.mean(x - y),
                                  permutation_type="samples", n_resamples=n_resamples, alternative="two-sided",
                                  random_state=rng).pvalue


def test_randomization_test_is_scipys_exact_test_on_few_queries():
    """Issue 38, item 9: with 2^n <= permutations every sign pattern is enumerated, as scipy does (exact)."""
    import numpy as np

    from hybrid.evaluation.significance import randomization_test

    rng = np.random.default_rng(7)
    for n in (5, 9, 12, 13):
        a, b = rng.random(n), rng.random(n)
        a[:2] = b[:2] + 0.3  # a real difference on some queries, ties elsewhere too
        a[2] = b[2]
        assert randomization_test(a, b, permutations=10_000) == pytest.approx(
            _scipy_randomization(a, b, n_resamples=10_000), abs=1e-12)
    same = rng.random(8)
    assert randomization_test(same, same) == 1.0


def test_randomization_test_agrees_with_scipy_when_sampled():
    """Many queries: 10,000 seeded random sign patterns; scipy's own sample of 100,000 agrees within Monte-Carlo
    error (0.01 absolute), and the same seed gives the same p."""
    import numpy as np

    from hybrid.evaluation.significance import randomization_test

    rng = np.random.default_rng(3)
    base = rng.random(60)
    for shift in (0.0, 0.03, 0.06, 0.2):
        system = np.clip(base + shift + rng.normal(0, 0.15, 60), 0, 1)
        mine = randomization_test(system, base)
        assert mine == randomization_test(system, base)  # seeded
        reference = _scipy_randomization(system, base, n_resamples=100_000, rng=np.random.default_rng(0))
        assert mine == pytest.approx(reference, abs=0.01), shift
        assert 1 / 10_001 <= mine <= 1


def test_paired_test_reports_the_randomization_p():
    a = {f"q{i}": 0.5 + 0.04 * i for i in range(10)}
    b = {f"q{i}": 0.5 + 0.01 * (i % 3) for i in range(10)}
    result = paired_test(a, b)
    qs = sorted(a)
    assert result.randomization_p == pytest.approx(_scipy_randomization([a[q] for q in qs], [b[q] for q in qs],
                                                                        n_resamples=10_000))
    assert result.randomization_p < 0.01


def test_corrections_are_selectable():
    from hybrid.evaluation.significance import CORRECTIONS, correct

    p = [0.04, 0.01, 0.02]
    assert correct(p, "none") == p
    assert correct(p, "bonferroni") == pytest.approx([0.12, 0.03, 0.06])
    assert correct(p, "holm") == pytest.approx([0.04, 0.03, 0.04])
    assert correct([0.5, 0.6], "bonferroni") == [1.0, 1.0]
    assert set(CORRECTIONS) == {"none", "bonferroni", "holm"}
    with pytest.raises(ValueError, match="unknown correction"):
        correct(p, "sidak")
