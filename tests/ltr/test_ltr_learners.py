"""Learners on a toy set: one perfectly predictive feature must give a perfect ranking; models round-trip."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid.core.errors import ConfigError
from ltr.featureset import parse_featureset
from ltr.learners import LEARNERS, SCORERS, make_learner
from ltr.matrix import FeatureMatrix
from ltr.metrics import fast_ap
from ltr.model import train_model

FEATURES = ["mention_exact", "mention_char3_dice", "chain_word_jaccard", "fs_score"]


def toy_matrix(n_queries: int = 30, per_query: int = 20, seed: int = 0, predictive: int = 0) -> FeatureMatrix:
    """Random features except column ``predictive``, which equals the label (plus nothing else)."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    labels = np.zeros(n, dtype=np.int64)
    for q in range(n_queries):
        pos = rng.choice(per_query, size=rng.integers(1, 5), replace=False)
        labels[q * per_query + pos] = 1
    X = rng.normal(size=(n, len(FEATURES))).astype(np.float32)
    X[:, predictive] = labels
    qids = np.repeat([f"q{q:03d}" for q in range(n_queries)], per_query)
    docids = np.array([f"d{i}" for i in range(n)])
    return FeatureMatrix(qids, docids, X, list(FEATURES), rng.normal(size=n), np.full((n, 2), -1), labels)


def featureset(normalisation: str = "none"):
    return parse_featureset({"name": "toy", "groups": {
        "a": {"features": FEATURES[:2], "normalisation": normalisation},
        "b": {"features": FEATURES[2:], "normalisation": normalisation},
    }})


SMALL = {"lambdamart": {"num_boost_round": 30, "min_data_in_leaf": 5, "num_threads": 1},
         "gbt": {"max_iter": 30, "min_samples_leaf": 5}, "logistic": {}, "ridge": {}}


@pytest.mark.parametrize("learner", sorted(LEARNERS))
@pytest.mark.parametrize("normalisation", ["none", "zscore", "query_minmax"])
def test_one_perfect_feature_gives_a_perfect_ranking(learner, normalisation):
    train, test = toy_matrix(seed=1), toy_matrix(seed=2)
    model = train_model(learner, SMALL[learner], featureset(normalisation), train, seed=0)
    scores = model.score(test)
    n_rel = np.array([test.labels[lo:hi].sum() for lo, hi in zip(test.offsets, test.offsets[1:], strict=False)])
    ap = fast_ap(scores, test.labels, test.offsets, n_rel)
    assert ap.min() == 1.0, f"{learner}: worst AP {ap.min()}"
    # and the run derived from the scores puts every relevant passage first
    run = test.to_run(scores)
    for lo, hi in zip(test.offsets, test.offsets[1:], strict=False):
        qid, k = str(test.qids[lo]), int(test.labels[lo:hi].sum())
        top = {h.docid for h in run[qid][:k]}
        assert top == set(test.docids[lo:hi][test.labels[lo:hi] > 0])


def test_a_random_feature_alone_does_not_rank_perfectly():
    """Guards the test above against a metric that cannot fail."""
    train, test = toy_matrix(seed=1), toy_matrix(seed=2)
    fs = parse_featureset({"name": "noise", "groups": {"b": {"features": FEATURES[2:]}}})
    model = train_model("logistic", {}, fs, train, seed=0)
    n_rel = np.array([test.labels[lo:hi].sum() for lo, hi in zip(test.offsets, test.offsets[1:], strict=False)])
    assert fast_ap(model.score(test.columns(FEATURES[2:])), test.labels, test.offsets, n_rel).mean() < 0.8


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_training_is_deterministic_given_the_seed(learner):
    train = toy_matrix(seed=3, predictive=1)
    train.X[:, 1] += np.random.default_rng(9).normal(scale=0.8, size=len(train)).astype(np.float32)
    a = train_model(learner, SMALL[learner], featureset(), train, seed=7).score(train)
    b = train_model(learner, SMALL[learner], featureset(), train, seed=7).score(train)
    np.testing.assert_array_equal(a, b)


def test_unknown_learner_and_parameter_are_config_errors():
    with pytest.raises(ConfigError, match="unknown learner"):
        make_learner("svm")
    with pytest.raises(ConfigError, match="unknown parameter 'num_leafs' for learner 'lambdamart'; allowed: .*did you "
                                          "mean 'num_leaves'"):
        make_learner("lambdamart", {"num_leafs": 3})
    with pytest.raises(ConfigError, match="'feature_fraction' must be a number between 0 and 1, got 2"):
        make_learner("lambdamart", {"feature_fraction": 2})


def test_every_learner_declares_its_parameters_once():
    for name, component in LEARNERS.items():
        assert component.target.name == name and component.doc
        assert component.scorer is SCORERS[name] and component.scorer.from_payload
        assert make_learner(name).params == component.defaults()
        assert all(param.desc for param in component.params.values())
