"""Model sets: collection-independent trained models, keyed by what they were trained on and with which code.

A model set is a folder laid out like the artifacts folder the recipes have always named (``dense/encoder``,
``ltr/hybrid-dense-net``, ``reader/model``: the paths a recipe gives, relative to the set) plus a manifest,
``model-set.json``::

    {"kind": "hybrid-model-set", "format": 1, "key": "3f2a...", "name": "ecbplus-train",
     "training": {"name", "fingerprint", "passages", "queries", ...},   what the models learnt from
     "config": {...},                                                   how (steps, batch size, seeds, ...)
     "code": {"package": "0.1.0", "store_format": 1, "git_commit": ...},
     "models": {"dense/encoder": {"what": "encoder", "fingerprint": ..., "built_at": ...}, ...},
     "dense_indexes": {"dense/index": {"encoder": "dense/encoder"}}}

``key`` is the sha256 of the training fingerprint, the config and the code's compatibility version (the
package version and the store format), so the same training on another machine gives the same key and an
imported set is used instead of training again; the exact commit is recorded, not keyed.

Dense indexes are not collection-independent: ``dense_indexes`` only says which encoder makes the one a recipe
calls ``dense/index``, and the index itself lives with its sparse index, at
``<index>/dense-by-encoder/<encoder fingerprint>/`` (:func:`bound_dense_dir`). An artifacts folder of the
older layout that holds ``dense/index`` itself keeps working as it is.

Artifacts were once named after the benchmark they were first built for (``dense/ecbplus``, ``reader/ecbplus``);
the recipes now name them by what they are. :data:`OLDER_NAMES` is the one place that maps a name to the one it
had: an artifacts folder or a model set made before still answers to the new name (:func:`artifact_in`,
:meth:`ModelSet.dense_encoder`).

Where sets live: ``--artifacts DIR`` (a set, or an older artifacts folder), else ``$HYBRID_ARTIFACTS``, else
the index's link (``<index>/model-set-link.json``, written by ``python -m hybrid.prepare``) into the store
``$HYBRID_CACHE/models`` (default ``~/.cache/hybrid/models``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.outputs import Kind
from hybrid.core.provenance import code_version

ARTIFACTS_ENV = "HYBRID_ARTIFACTS"
CACHE_ENV = "HYBRID_CACHE"
MANIFEST = "model-set.json"
KIND = "hybrid-model-set"
STORE_FORMAT = 1
#: In a hybrid index: the model set ``python -m hybrid.prepare`` prepared it with.
INDEX_LINK = "model-set-link.json"
#: In a hybrid index: its dense indexes, one folder per encoder fingerprint.
BOUND_DIR = "dense-by-encoder"
ENCODER_META = "hybrid-encoder.json"  # written by features.encoder.BiEncoder.save, with the encoder's fingerprint
#: A model set folder, for the output policy (hybrid.core.outputs): ``hybrid.prepare`` fills only this.
MODEL_SET = Kind("model set", manifests=(MANIFEST,), format=("kind", KIND))
#: Artifact name -> the name recipes gave it before it was named by what it is. Only read, never written: what is
#: made now is made under the new name.
OLDER_NAMES = {"dense/index": "dense/ecbplus", "reader/model": "reader/ecbplus",
               "reader/judged": "reader/ecbplus-judged"}
_SET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def names_of(name: str) -> tuple[str, ...]:
    """``name`` and, when it had one, its older name (:data:`OLDER_NAMES`), in the order they are looked for."""
    older = OLDER_NAMES.get(name)
    return (name, older) if older else (name,)


def artifact_in(root: str | Path, name: str) -> Path:
    """``root / name``, or ``root / <older name>`` when only that exists (a folder made before the rename)."""
    for candidate in names_of(name):
        if (Path(root) / candidate).exists():
            return Path(root) / candidate
    return Path(root) / name


def cache_root() -> Path:
    """``$HYBRID_CACHE`` or ``~/.cache/hybrid`` (where the bundled sample's index is cached too)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "hybrid")
    return Path(root)


def store_root() -> Path:
    """The model store: ``$HYBRID_CACHE/models``."""
    return cache_root() / "models"


def code_key() -> dict[str, Any]:
    """The code's compatibility version a set is keyed by: the package version and the store format."""
    try:
        package = version("hybrid-cmr")
    except PackageNotFoundError:
        package = "unknown"
    return {"package": package, "store_format": STORE_FORMAT}


def set_key(training_fingerprint: str, config: Mapping[str, Any]) -> str:
    """The key of the models trained on ``training_fingerprint`` with ``config`` by this code."""
    payload = json.dumps({"training": training_fingerprint, "config": config, "code": code_key()}, sort_keys=True,
                         default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def encoder_fingerprint(folder: str | Path) -> str | None:
    """The fingerprint a saved encoder records (None when the folder holds none)."""
    meta = Path(folder) / ENCODER_META
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None


def bound_dense_dir(index_path: str | Path, fingerprint: str) -> Path:
    """Where the dense index of the sparse index at ``index_path`` made by the encoder ``fingerprint`` lives."""
    return Path(index_path) / BOUND_DIR / fingerprint[:16]


@dataclass
class ModelSet:
    """A model set's folder and manifest."""

    path: Path
    manifest: dict[str, Any]

    @property
    def key(self) -> str:
        return str(self.manifest.get("key", ""))

    @property
    def name(self) -> str:
        return str(self.manifest.get("name", self.path.name))

    @classmethod
    def open(cls, path: str | Path) -> ModelSet | None:
        """The set at ``path``; None when the folder has no manifest (an artifacts folder of the older layout)."""
        path = Path(path)
        manifest = path / MANIFEST
        if not manifest.is_file():
            return None
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(manifest, None, f"is not a readable model-set manifest ({exc}); import or prepare the "
                                              "set again") from None
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ConfigError(manifest, None, f"is not a model-set manifest (kind {data.get('kind')!r}, want {KIND!r})"
                              if isinstance(data, dict) else "is not a model-set manifest")
        return cls(path, data)

    @classmethod
    def create(cls, path: str | Path, name: str, key: str, training: Mapping[str, Any],
               config: Mapping[str, Any]) -> ModelSet:
        """Open the set at ``path``, creating its manifest when there is none yet."""
        existing = cls.open(path)
        if existing is not None:
            return existing
        manifest = {"kind": KIND, "format": STORE_FORMAT, "key": key, "name": name, "training": dict(training),
                    "config": dict(config), "code": {**code_key(), **code_version()},
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "models": {},
                    "dense_indexes": {}}
        made = cls(Path(path), manifest)
        made.save()
        return made

    def save(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.path / MANIFEST) as handle:
            handle.write(json.dumps(self.manifest, indent=2, sort_keys=True, default=str) + "\n")

    def model(self, relpath: str) -> dict[str, Any] | None:
        return (self.manifest.get("models") or {}).get(relpath)

    def record_model(self, relpath: str, what: str, **info: Any) -> None:
        """Record a model the set now holds (``what``: encoder, ltr, reader) with what made it."""
        self.manifest.setdefault("models", {})[relpath] = {
            "what": what, **info, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.save()

    def record_dense(self, name: str, encoder: str) -> None:
        """Declare that the recipes' dense index ``name`` is the index-bound one made by the set's ``encoder``."""
        self.manifest.setdefault("dense_indexes", {})[name] = {"encoder": encoder}
        self.save()

    def dense_encoder(self, name: str) -> str | None:
        """The encoder (relative path in the set) whose index-bound dense index a recipe's ``name`` means."""
        declared = self.manifest.get("dense_indexes") or {}
        entry = next((declared[n] for n in names_of(name) if n in declared), None)
        return entry.get("encoder") if isinstance(entry, dict) else None

    def encoder_fingerprint(self, relpath: str) -> str | None:
        """The fingerprint of the set's encoder at ``relpath`` (recorded in the manifest, else by the encoder)."""
        recorded = (self.model(relpath) or {}).get("fingerprint")
        return recorded or encoder_fingerprint(self.path / relpath)


def set_folder(root: str | Path, name: str, key: str) -> Path:
    """Where the set ``name``/``key`` lives in a store."""
    if not _SET_NAME.fullmatch(name):
        raise ConfigError(None, None, f"model-set name {name!r} must be letters, digits, '.', '_' and '-'")
    return Path(root) / f"{name}-{key}"


def list_sets(root: str | Path | None = None) -> list[ModelSet]:
    """The sets in a store (default: :func:`store_root`), by name."""
    root = Path(root) if root is not None else store_root()
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            model_set = ModelSet.open(folder)
        except ConfigError:
            continue
        if model_set is not None:
            found.append(model_set)
    return found


def find_set(key_or_path: str, root: str | Path | None = None) -> ModelSet:
    """A set by folder, or by its key (or a unique prefix of it, or its folder name) in the store."""
    path = Path(key_or_path).expanduser()
    if path.is_dir():
        found = ModelSet.open(path)
        if found is None:
            raise ConfigError(path / MANIFEST, None, "does not exist: this folder is not a model set")
        return found
    sets = list_sets(root)
    matches = [s for s in sets if s.key.startswith(key_or_path) or s.path.name == key_or_path]
    if len(matches) == 1:
        return matches[0]
    where = Path(root) if root is not None else store_root()
    if not matches:
        raise ConfigError(None, None, f"no model set {key_or_path!r} in {where} (python -m hybrid.artifacts list "
                                      "shows them; import one with python -m hybrid.artifacts import FILE)")
    raise ConfigError(None, None, f"{key_or_path!r} matches {len(matches)} model sets in {where}: "
                                  f"{', '.join(s.key for s in matches)}; give more of the key")


def read_link(index_path: str | Path | None) -> dict[str, Any] | None:
    """The model set an index was prepared with (None when it was not)."""
    if index_path is None:
        return None
    link = Path(index_path) / INDEX_LINK
    if not link.is_file():
        return None
    try:
        data = json.loads(link.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(link, None, f"is not readable ({exc}); run python -m hybrid.prepare again") from None
    return data if isinstance(data, dict) else None


def linked_set(index_path: str | Path | None) -> ModelSet | None:
    """The set an index's link names; a link to a set that is gone is an error naming both."""
    link = read_link(index_path)
    if not link:
        return None
    folder = Path(str(link.get("path", "")))
    found = ModelSet.open(folder) if folder.is_dir() else None
    if found is None:
        raise ConfigError(Path(index_path) / INDEX_LINK, None, f"names the model set {folder}, which does not exist; "
                                                               "run python -m hybrid.prepare again or pass --artifacts")
    return found


def write_link(index_path: str | Path, model_set: ModelSet) -> Path:
    """Record in the index which set it was prepared with (recipes run on it resolve their models there)."""
    link = Path(index_path) / INDEX_LINK
    with atomic_write(link) as handle:
        handle.write(json.dumps({"path": str(model_set.path.resolve()), "key": model_set.key,
                                 "name": model_set.name}, indent=2) + "\n")
    return link
