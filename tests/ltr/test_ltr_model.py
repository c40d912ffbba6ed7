"""Model persistence: exact round trip, no pickle, and refusal to score with a different feature set."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_ltr_learners import FEATURES, SMALL, featureset, toy_matrix

from hybrid.core.errors import ConfigError, InputError
from ltr.featureset import parse_featureset
from ltr.learners import LEARNERS
from ltr.model import MODEL_FILE, TrainedModel, train_model


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_save_load_round_trip_scores_identically(tmp_path, learner):
    train = toy_matrix(seed=1)
    train.X[:, 0] += np.random.default_rng(0).normal(scale=0.5, size=len(train)).astype(np.float32)
    model = train_model(learner, SMALL[learner], featureset("zscore"), train, seed=0, config={"note": "toy"})
    path = model.save(tmp_path / "model")
    files = sorted(p.name for p in path.iterdir())
    assert MODEL_FILE in files and not any(f.endswith((".pkl", ".pickle", ".joblib")) for f in files)
    meta = json.loads((path / MODEL_FILE).read_text())
    assert meta["featureset"]["groups"][0]["features"] == FEATURES[:2]
    assert meta["config"]["note"] == "toy" and meta["config"]["seed"] == 0
    assert "scikit-learn" in meta["versions"] and "lightgbm" in meta["versions"]
    loaded = TrainedModel.load(path)
    test = toy_matrix(seed=5)
    np.testing.assert_allclose(loaded.score(test), model.score(test), rtol=1e-9, atol=1e-9)
    loaded.check_featureset(featureset("zscore"))  # the same set is accepted


def test_model_refuses_a_different_feature_set(tmp_path):
    model = train_model("logistic", {}, featureset("none"), toy_matrix(), seed=0)
    with pytest.raises(ConfigError, match="different normalisation of mention_exact"):
        model.check_featureset(featureset("zscore"))
    fewer = parse_featureset({"name": "fewer", "groups": {"a": {"features": FEATURES[:2]}}})
    with pytest.raises(ConfigError, match=r"missing 2 feature\(s\): chain_word_jaccard, fs_score"):
        model.check_featureset(fewer)
    reordered = parse_featureset({"name": "toy", "groups": {"b": {"features": FEATURES[2:]},
                                                            "a": {"features": FEATURES[:2]}}})
    with pytest.raises(ConfigError, match="different order"):
        model.check_featureset(reordered)


def test_model_refuses_a_matrix_with_other_columns():
    model = train_model("logistic", {}, featureset(), toy_matrix(), seed=0)
    other = toy_matrix()
    other.names = ["mention_exact", "mention_head", "chain_word_jaccard", "fs_score"]
    with pytest.raises(ConfigError, match="missing \\['mention_char3_dice'\\]"):
        model.score(other)


def test_tampered_or_foreign_model_directories_are_rejected(tmp_path):
    model = train_model("gbt", SMALL["gbt"], featureset(), toy_matrix(), seed=0)
    path = model.save(tmp_path / "m")
    (path / "trees.json").write_text((path / "trees.json").read_text().replace("0.", "1.", 1))
    with pytest.raises(InputError, match="checksum"):
        TrainedModel.load(path)
    with pytest.raises(InputError, match="not an LTR model"):
        TrainedModel.load(tmp_path)
    with pytest.raises(FileExistsError):
        model.save(path)


def test_changed_feature_implementation_is_detected(tmp_path, monkeypatch):
    from features.pairs import strings
    from features.pairs.base import Feature

    model = train_model("logistic", {}, featureset(), toy_matrix(), seed=0)
    loaded = TrainedModel.load(model.save(tmp_path / "m"))
    loaded.verify_features()
    old = strings.GROUP._features["mention_exact"]
    monkeypatch.setitem(strings.GROUP._features, "mention_exact",
                        Feature(old.name, old.group, old.doc, old.version + 1, old.fn))
    with pytest.raises(ConfigError, match="fingerprint mismatch"):
        loaded.verify_features()
