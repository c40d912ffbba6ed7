"""Learners: pointwise linear models, gradient-boosted trees (scikit-learn) and LambdaMART (LightGBM).

Every learner returns a :class:`Scorer` that can be saved as plain text and loaded without pickle
(loading a pickle runs arbitrary code, so a model file from someone else would be a program):

* ``logistic`` / ``ridge``: coefficients, intercept and the standardisation they apply, as JSON;
* ``gbt``: :class:`~sklearn.ensemble.HistGradientBoostingClassifier`; its trees (feature, threshold,
  missing-value direction, children, leaf values) are exported to JSON and evaluated by this module
  in numpy. The export is checked against scikit-learn's own ``decision_function`` at training
  time, so a change in scikit-learn's internals fails loudly then, never silently at scoring;
* ``lambdamart``: LightGBM ``lambdarank``, saved in LightGBM's own text model format.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hybrid.core.params import Param
from hybrid.core.registry import Component, Registry


class Scorer(ABC):
    learner: str = "scorer"

    @abstractmethod
    def predict(self, X: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def payload(self) -> dict[str, str]:
        """File name -> text content, enough to rebuild the scorer with :meth:`from_payload`."""

    @classmethod
    @abstractmethod
    def from_payload(cls, files: dict[str, str]) -> Scorer: ...

    def importance(self) -> np.ndarray | None:
        """The learner's own importance per feature (gain, |standardised coefficient|), when it has one."""
        return None


# -- linear ---------------------------------------------------------------------------------------


@dataclass
class LinearScorer(Scorer):
    coef: np.ndarray
    intercept: float
    mean: np.ndarray
    scale: np.ndarray
    learner: str = "logistic"

    def predict(self, X: np.ndarray) -> np.ndarray:
        Z = (np.nan_to_num(np.asarray(X, dtype=np.float64)) - self.mean) / self.scale
        return Z @ self.coef + self.intercept

    def payload(self) -> dict[str, str]:
        return {"linear.json": json.dumps({"learner": self.learner, "coef": self.coef.tolist(),
                                           "intercept": self.intercept, "mean": self.mean.tolist(),
                                           "scale": self.scale.tolist()})}

    @classmethod
    def from_payload(cls, files: dict[str, str]) -> LinearScorer:
        obj = json.loads(files["linear.json"])
        return cls(np.array(obj["coef"], dtype=np.float64), float(obj["intercept"]),
                   np.array(obj["mean"], dtype=np.float64), np.array(obj["scale"], dtype=np.float64), obj["learner"])

    def importance(self) -> np.ndarray:
        return np.abs(self.coef)


# -- gradient-boosted trees (scikit-learn) -----------------------------------------------------------


@dataclass
class TreeEnsembleScorer(Scorer):
    """Sum of regression trees plus a baseline; trees are dicts of equal-length node arrays."""

    baseline: float
    trees: list[dict[str, np.ndarray]]
    n_features: int
    learner: str = "gbt"

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[1] != self.n_features:
            raise ValueError(f"tree model expects {self.n_features} features, got {X.shape[1]}")
        out = np.full(len(X), self.baseline, dtype=np.float64)
        rows = np.arange(len(X))
        for tree in self.trees:
            node = np.zeros(len(X), dtype=np.int64)
            leaf = tree["is_leaf"]
            active = ~leaf[node]
            while active.any():
                n = node[active]
                x = X[rows[active], tree["feature"][n]]
                left = np.where(np.isnan(x), tree["missing_left"][n], x <= tree["threshold"][n])
                node[active] = np.where(left, tree["left"][n], tree["right"][n])
                active = ~leaf[node]
            out += tree["value"][node]
        return out

    def payload(self) -> dict[str, str]:
        trees = [{k: v.tolist() for k, v in t.items()} for t in self.trees]
        return {"trees.json": json.dumps({"learner": self.learner, "baseline": self.baseline,
                                          "n_features": self.n_features, "trees": trees})}

    @classmethod
    def from_payload(cls, files: dict[str, str]) -> TreeEnsembleScorer:
        obj = json.loads(files["trees.json"])
        dtypes = {"feature": np.int64, "threshold": np.float64, "missing_left": bool, "left": np.int64,
                  "right": np.int64, "is_leaf": bool, "value": np.float64, "gain": np.float64}
        trees = [{k: np.asarray(t[k], dtype=dtypes[k]) for k in dtypes} for t in obj["trees"]]
        return cls(float(obj["baseline"]), trees, int(obj["n_features"]), obj["learner"])

    def importance(self) -> np.ndarray:
        imp = np.zeros(self.n_features)
        for t in self.trees:
            split = ~t["is_leaf"]
            np.add.at(imp, t["feature"][split], t["gain"][split])
        return imp


def export_hist_gbt(model: Any, n_features: int) -> TreeEnsembleScorer:
    """Export a fitted binary HistGradientBoostingClassifier's trees (numeric features only)."""
    trees = []
    for iteration in model._predictors:
        (predictor,) = iteration  # binary classification: one tree per iteration
        nodes = predictor.nodes
        if nodes["is_categorical"].any():
            raise ValueError("categorical splits cannot be exported")
        trees.append({
            "feature": nodes["feature_idx"].astype(np.int64), "threshold": nodes["num_threshold"].astype(np.float64),
            "missing_left": nodes["missing_go_to_left"].astype(bool), "left": nodes["left"].astype(np.int64),
            "right": nodes["right"].astype(np.int64), "is_leaf": nodes["is_leaf"].astype(bool),
            "value": nodes["value"].astype(np.float64), "gain": np.maximum(nodes["gain"].astype(np.float64), 0.0),
        })
    baseline = float(np.ravel(model._baseline_prediction)[0])
    return TreeEnsembleScorer(baseline, trees, n_features)


# -- LightGBM LambdaMART -----------------------------------------------------------------------------


@dataclass
class LightGBMScorer(Scorer):
    model_text: str
    learner: str = "lambdamart"
    _booster: Any = field(default=None, repr=False)

    @property
    def booster(self):
        if self._booster is None:
            import lightgbm as lgb

            self._booster = lgb.Booster(model_str=self.model_text)
        return self._booster

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.booster.predict(np.asarray(X, dtype=np.float64), num_threads=1)

    def payload(self) -> dict[str, str]:
        return {"lightgbm.txt": self.model_text}

    @classmethod
    def from_payload(cls, files: dict[str, str]) -> LightGBMScorer:
        return cls(files["lightgbm.txt"])

    def importance(self) -> np.ndarray:
        return self.booster.feature_importance(importance_type="gain")


# -- learners ----------------------------------------------------------------------------------------


#: The learners by name, each with its hyper-parameters declared once (``python -m hybrid.recipes types`` lists
#: them): a recipe's ``{type = "ltr", learner = NAME, params = {...}}`` and ``python -m hybrid.ltr --learner NAME
#: --param KEY=VALUE`` are checked against the declaration, which also fills in every default.
@dataclass(frozen=True)
class LearnerType(Component):
    """A learner: ``target`` is its class, ``scorer`` the class that loads the models it trains."""

    scorer: type[Scorer] | None = None


LEARNERS: Registry[LearnerType] = Registry("learner", LearnerType, noun="parameter",
                                         describe="The model an ltr reranker is trained with: learner = NAME, "
                                                  "params = {PARAMETER = VALUE, ...} in a recipe, --learner NAME "
                                                  "--param PARAMETER=VALUE to python -m hybrid.ltr.")


class Learner(ABC):
    name: str = "learner"  # the name it is registered under (a test holds them equal)

    def __init__(self, **params: Any):
        self.params = LEARNERS.resolve(self.name, params)

    @abstractmethod
    def fit(self, X: np.ndarray, y: np.ndarray, group_sizes: np.ndarray, seed: int) -> Scorer: ...


def _standardise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.nan_to_num(np.asarray(X, dtype=np.float64))
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return (X - mean) / scale, mean, scale


@LEARNERS.register("logistic", [
    Param("C", float, 1.0, "inverse of the L2 regularisation strength", minimum=0.0),
    Param("max_iter", int, 2000, "solver iterations at most", minimum=1),
    Param("class_weight", (str, dict), None, "'balanced' (weights inverse to the label frequencies) or a table "
                                             "{label = weight}; unset: every pair weighs 1",
          what="'balanced' or a table {label = weight}")], scorer=LinearScorer)
class LogisticLearner(Learner):
    """Pointwise logistic regression on standardised features (relevant vs not)."""

    name = "logistic"

    def fit(self, X, y, group_sizes, seed):
        from sklearn.linear_model import LogisticRegression

        Z, mean, scale = _standardise(X)
        model = LogisticRegression(C=self.params["C"], max_iter=self.params["max_iter"],
                                   class_weight=self.params["class_weight"], random_state=seed)
        model.fit(Z, (np.asarray(y) > 0).astype(int))
        return LinearScorer(model.coef_[0].astype(np.float64), float(model.intercept_[0]), mean, scale, self.name)


@LEARNERS.register("ridge", [Param("alpha", float, 1.0, "L2 regularisation strength", minimum=0.0)],
                   scorer=LinearScorer)
class RidgeLearner(Learner):
    """Pointwise least-squares regression of the relevance label (ridge) on standardised features."""

    name = "ridge"

    def fit(self, X, y, group_sizes, seed):
        from sklearn.linear_model import Ridge

        Z, mean, scale = _standardise(X)
        model = Ridge(alpha=self.params["alpha"], random_state=seed).fit(Z, np.asarray(y, dtype=np.float64))
        return LinearScorer(np.ravel(model.coef_).astype(np.float64), float(model.intercept_), mean, scale, self.name)


@LEARNERS.register("gbt", [
    Param("max_iter", int, 300, "boosting iterations (trees)", minimum=1),
    Param("learning_rate", float, 0.1, "shrinkage of each tree", minimum=0.0),
    Param("max_leaf_nodes", int, 31, "leaves per tree at most", minimum=2),
    Param("min_samples_leaf", int, 50, "training pairs per leaf at least", minimum=1),
    Param("l2_regularization", float, 0.0, "L2 regularisation of the leaf values", minimum=0.0),
    Param("max_bins", int, 255, "bins a feature's values are put in", minimum=2, maximum=255)],
    scorer=TreeEnsembleScorer)
class GBTLearner(Learner):
    """Pointwise gradient-boosted trees (scikit-learn HistGradientBoostingClassifier), exported to JSON."""

    name = "gbt"

    def fit(self, X, y, group_sizes, seed):
        from sklearn.ensemble import HistGradientBoostingClassifier

        labels = (np.asarray(y) > 0).astype(int)
        if labels.min() == labels.max():
            raise ValueError("gbt needs both relevant and non-relevant training pairs")
        model = HistGradientBoostingClassifier(early_stopping=False, random_state=seed, **self.params)
        X = np.asarray(X, dtype=np.float64)
        model.fit(X, labels)
        scorer = export_hist_gbt(model, X.shape[1])
        sample = X[:: max(1, len(X) // 2000)]
        if not np.allclose(scorer.predict(sample), model.decision_function(sample), atol=1e-6):
            raise RuntimeError("exported trees disagree with scikit-learn's predictions; the export needs updating "
                               "for this scikit-learn version")
        return scorer


@LEARNERS.register("lambdamart", [
    Param("num_boost_round", int, 400, "boosting rounds (trees)", minimum=1),
    Param("learning_rate", float, 0.05, "shrinkage of each tree", minimum=0.0),
    Param("num_leaves", int, 31, "leaves per tree at most", minimum=2),
    Param("min_data_in_leaf", int, 50, "training pairs per leaf at least", minimum=1),
    Param("feature_fraction", float, 0.8, "features each tree may use (a fraction)", minimum=0.0, maximum=1.0),
    Param("bagging_fraction", float, 0.8, "training pairs each bagging round samples (a fraction)", minimum=0.0,
          maximum=1.0),
    Param("bagging_freq", int, 1, "bag every N rounds (0: no bagging)", minimum=0),
    Param("lambda_l2", float, 1.0, "L2 regularisation of the leaf values", minimum=0.0),
    Param("lambdarank_truncation_level", int, 100, "ranks of each list the lambdas are computed over", minimum=1),
    Param("num_threads", int, 2, "LightGBM threads", minimum=1)], scorer=LightGBMScorer)
class LambdaMARTLearner(Learner):
    """Listwise LambdaMART: LightGBM's ``lambdarank`` objective over each query's candidate list."""

    name = "lambdamart"

    def fit(self, X, y, group_sizes, seed):
        import lightgbm as lgb

        params = dict(self.params)
        rounds = params.pop("num_boost_round")
        params.update({"objective": "lambdarank", "metric": "map", "eval_at": [100], "seed": seed,
                       "deterministic": True, "force_row_wise": True, "verbosity": -1})
        data = lgb.Dataset(np.asarray(X, dtype=np.float64), label=np.asarray(y), group=np.asarray(group_sizes),
                           free_raw_data=True)
        booster = lgb.train(params, data, num_boost_round=rounds)
        return LightGBMScorer(booster.model_to_string())


#: learner name -> the scorer class that loads its models (from the declarations).
SCORERS: dict[str, type[Scorer]] = {name: learner.scorer for name, learner in LEARNERS.items()}
#: The learner the commands train with when none is named (``python -m hybrid.ltr``, ``hybrid.collect train``).
LEARNER = Param("learner", str, "lambdamart", "the learner", choices=tuple(LEARNERS))


def make_learner(name: str, params: dict[str, Any] | None = None) -> Learner:
    """The learner ``name`` with ``params`` (checked against its declaration, defaults filled in)."""
    return LEARNERS.lookup(name).target(**(params or {}))
