"""A trained ranking model on disk: learner payload + the exact feature set, config and versions.

Layout of a model directory (written atomically: complete or absent)::

    ltr-model.json    format, learner, feature set (expanded) + fingerprint, normaliser statistics,
                      training config, metrics, versions, payload file names and their sha256
    linear.json | trees.json | lightgbm.txt   the learner payload (text; see ltr.learners)

Nothing is unpickled: loading parses JSON and LightGBM's text format only. A model refuses to score
a matrix or a feature set that differs from the one it was trained with (names, order,
normalisations or feature implementation versions): the error says what differs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hybrid.core.atomic import atomic_directory
from hybrid.core.errors import ConfigError, InputError
from hybrid.core.outputs import Kind
from hybrid.core.provenance import file_sha256, produced_by, versions
from ltr.feature_scaling import Normaliser
from ltr.featureset import FeatureSet
from ltr.learners import SCORERS, Scorer, make_learner
from ltr.matrix import FeatureMatrix

MODEL_FILE = "ltr-model.json"
#: An LTR model folder, for the output policy (hybrid.core.outputs): ``--overwrite`` replaces only this.
LTR_MODEL = Kind("LTR model", manifests=(MODEL_FILE,))
FORMAT = "hybrid-ltr-model"
FORMAT_VERSION = 1


#: The learners' packages, which shape a trained model beside the engine's.
LEARNER_PACKAGES = ("scikit-learn", "lightgbm", "numpy", "scipy")


def ltr_versions() -> dict[str, str]:
    """Package versions that shape a trained model (hybrid.core.provenance.versions plus the learners')."""
    return versions(LEARNER_PACKAGES)


@dataclass
class TrainedModel:
    featureset: FeatureSet
    fingerprint: str
    learner: str
    params: dict[str, Any]
    normaliser: Normaliser
    scorer: Scorer
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    created: str = ""
    #: Where it was loaded from and the sha256 of its ltr-model.json (empty for a model trained in this process).
    source: str = ""
    manifest_sha256: str = ""

    def artifact_record(self) -> dict[str, Any]:
        """What a run's meta records of this model (see :func:`hybrid.core.provenance.used_artifacts`)."""
        return {"kind": "ltr_model", "path": self.source or None, "fingerprint": self.manifest_sha256 or None,
                "featureset_fingerprint": self.fingerprint}

    # -- scoring ------------------------------------------------------------------------------------
    def check_featureset(self, featureset: FeatureSet) -> None:
        """Refuse a feature set that is not the one this model was trained with."""
        theirs = featureset.fingerprint()
        if theirs != self.fingerprint:
            raise ConfigError(
                featureset.source, None,
                f"feature set {featureset.name!r} (fingerprint {theirs[:12]}) is not the one this model was trained "
                f"with ({self.featureset.name!r}, fingerprint {self.fingerprint[:12]}): "
                f"{self.featureset.describe_difference(featureset)}. Retrain, or rerank with the model's own "
                "feature set (omit --featureset).",
            )

    def check_matrix(self, matrix: FeatureMatrix) -> None:
        expected = self.featureset.feature_names
        if matrix.names != expected:
            missing = [f for f in expected if f not in matrix.names]
            extra = [f for f in matrix.names if f not in expected]
            raise ConfigError(None, None, f"feature matrix does not match the model's feature set "
                                          f"{self.featureset.name!r}: missing {missing[:8]}, extra {extra[:8]}"
                                          + ("" if missing or extra else ", different order"))

    def score(self, matrix: FeatureMatrix) -> np.ndarray:
        self.check_matrix(matrix)
        return self.scorer.predict(self.normaliser.transform(matrix.X, matrix.offsets))

    # -- persistence --------------------------------------------------------------------------------
    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        path = Path(path)
        files = self.scorer.payload()
        meta = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "created": self.created or _now(),
            "learner": self.learner, "params": self.params,
            "featureset": self.featureset.to_json(), "fingerprint": self.fingerprint,
            "normaliser": self.normaliser.to_json(), "config": self.config, "metrics": self.metrics,
            "versions": self.versions or ltr_versions(),
        }
        write_model_dir(path, MODEL_FILE, meta, files, overwrite)
        return path

    @classmethod
    def load(cls, path: str | Path) -> TrainedModel:
        """A saved model; an ``ltr-model.json`` of the wrong shape (a key missing, a value of the wrong type) is one
        InputError naming it, as a broken payload is."""
        path = Path(path)
        meta_path, meta = read_model_meta(path, MODEL_FILE, f"not an LTR model directory (no {MODEL_FILE})")
        if not isinstance(meta, dict):
            raise InputError(meta_path, None, "is not an LTR model description (a JSON object); train the model again")
        try:
            return cls._from_meta(path, meta_path, meta)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            problem = f"{type(exc).__name__}: {exc}"[:200]
            raise InputError(meta_path, None, f"is not a valid LTR model description ({problem}); restore it or "
                                              "train the model again") from None

    @classmethod
    def _from_meta(cls, path: Path, meta_path: Path, meta: dict) -> TrainedModel:
        if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
            raise InputError(meta_path, None, f"unsupported model format {meta.get('format')!r} "
                                              f"version {meta.get('format_version')!r}")
        learner = meta["learner"]
        if learner not in SCORERS:
            raise InputError(meta_path, None, f"unknown learner {learner!r}")
        files = read_payload(path, meta_path, meta["payload"])
        featureset = FeatureSet.from_json(meta["featureset"], source=str(meta_path))
        return cls(featureset=featureset, fingerprint=meta["fingerprint"], learner=learner, params=meta["params"],
                   normaliser=Normaliser.from_json(meta["normaliser"]), scorer=SCORERS[learner].from_payload(files),
                   config=meta.get("config", {}), metrics=meta.get("metrics", {}), versions=meta.get("versions", {}),
                   created=meta.get("created", ""), source=str(path), manifest_sha256=file_sha256(meta_path))

    def verify_features(self) -> None:
        """The features still exist and their implementations have the versions the model was trained with."""
        try:
            current = self.featureset.fingerprint()
        except ConfigError as exc:
            raise ConfigError(exc.path, exc.line,
                              f"model's feature set cannot be computed here: {exc.reason}") from None
        if current != self.fingerprint:
            raise ConfigError(None, None, f"feature implementations changed since model {self.featureset.name!r} was "
                                          "trained (fingerprint mismatch); retrain it")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def train_model(learner_name: str, params: dict[str, Any] | None, featureset: FeatureSet, matrix: FeatureMatrix,
                seed: int = 0, config: dict[str, Any] | None = None) -> TrainedModel:
    """Fit normaliser + learner on a labelled matrix whose columns are the feature set's, in order."""
    if matrix.labels is None:
        raise ValueError("training matrix has no labels")
    matrix = matrix.columns(featureset.feature_names)
    learner = make_learner(learner_name, params)
    normaliser = Normaliser.fit(matrix.X, featureset.normalisations())
    X = normaliser.transform(matrix.X, matrix.offsets)
    scorer = learner.fit(X, matrix.labels, matrix.group_sizes, seed)
    return TrainedModel(featureset=featureset, fingerprint=featureset.fingerprint(), learner=learner_name,
                        params=learner.params, normaliser=normaliser, scorer=scorer,
                        config=dict(config or {}, seed=seed), created=_now())


def write_model_dir(path: str | Path, meta_file: str, meta: dict, files: dict[str, str], overwrite: bool) -> None:
    """A model directory written atomically: the learner's payload files and ``meta_file`` (``meta`` plus the
    sha256 of every payload file under ``payload``, which :func:`read_payload` checks on load)."""
    meta = {**produced_by(LEARNER_PACKAGES), **meta,
            "payload": {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}}
    with atomic_directory(path, overwrite=overwrite) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / meta_file).write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")


def read_model_meta(path: Path, meta_file: str, missing: str) -> tuple[Path, dict]:
    """``(path of meta_file, its JSON)`` of a model directory; ``missing`` is the error when there is none."""
    meta_path = path / meta_file
    if not meta_path.is_file():
        raise InputError(path, None, missing)
    try:
        return meta_path, json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(meta_path, exc.lineno, f"broken JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise InputError(meta_path, None, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_payload(path: Path, meta_path: Path, payload: dict[str, str]) -> dict[str, str]:
    """The learner's payload files of a model directory (name -> text), each checked against the sha256 its
    metadata recorded, so a file changed after training is an error, never a silently different model."""
    files = {}
    for name, digest in payload.items():
        if "/" in name or "\\" in name or name.startswith("."):
            raise InputError(meta_path, None, f"invalid payload file name {name!r}")
        if not (path / name).is_file():
            raise InputError(path / name, None, f"payload file missing (listed in {meta_path.name}); restore it or "
                                                "train the model again")
        try:
            text = (path / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError(path / name, None, "payload checksum mismatch (file changed after training)") from None
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
            raise InputError(path / name, None, "payload checksum mismatch (file changed after training)")
        files[name] = text
    return files
