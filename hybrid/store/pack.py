"""One file that carries a model set to another machine, verified before anything is placed.

A pack is a plain tar: ``pack.json`` first, then the set's files under their paths in the set::

    pack.json   {"kind": "hybrid-model-pack", "format": 1, "key", "name",
                 "set": <the set's model-set.json: training provenance, config, code>,
                 "files": {"dense/encoder/model.safetensors": {"sha256", "bytes"}, ...},
                 "exported_at", "exported_by": {code version, versions}}

Import reads ``pack.json``, then extracts every member into a temporary folder beside the target
(:func:`hybrid.core.atomic.atomic_directory`), hashing as it goes; only when every file is a regular file the
manifest lists, at a plain relative path, with the recorded size and sha256, and no listed file is absent, is
the folder renamed into the store as ``<name>-<key>``. Anything else (not a tar, a foreign kind, a changed
byte, an extra or missing file, a link, ``..``) is refused with one line and leaves the store as it was.
Work files of a training in progress (``.work/``, encoder checkpoints) are not packed.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from hybrid.core.atomic import atomic_directory, atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.provenance import produced_by
from hybrid.store.models import MANIFEST, ModelSet, set_folder

PACK_MANIFEST = "pack.json"
PACK_KIND = "hybrid-model-pack"
PACK_FORMAT = 1
SKIPPED = (".work",)  # folders of a set that are not packed
CHUNK = 1 << 20


def packed_files(model_set: ModelSet) -> list[str]:
    """The set's files that a pack carries (relative POSIX paths, sorted)."""
    files = []
    for path in sorted(model_set.path.rglob("*")):
        rel = path.relative_to(model_set.path)
        if path.is_dir() or rel.parts[0] in SKIPPED or any(p.endswith("-checkpoint") for p in rel.parts[:-1]):
            continue
        if path.is_symlink() or not path.is_file():
            raise ConfigError(path, None, "is not a regular file; a model set packs regular files only")
        files.append(rel.as_posix())
    return files


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def export_set(model_set: ModelSet, output: str | Path) -> dict[str, Any]:
    """Write ``model_set`` as one pack file at ``output`` (atomically); returns the pack manifest."""
    files = {}
    for rel in packed_files(model_set):
        sha, size = _sha256(model_set.path / rel)
        files[rel] = {"sha256": sha, "bytes": size}
    if MANIFEST not in files:
        raise ConfigError(model_set.path / MANIFEST, None, "does not exist: not a model set")
    manifest = {"kind": PACK_KIND, "format": PACK_FORMAT, "key": model_set.key, "name": model_set.name,
                "set": model_set.manifest, "files": files,
                "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "exported_by": produced_by()}
    payload = json.dumps(manifest, indent=2, sort_keys=True, default=str).encode("utf-8")
    with atomic_write(output, "wb") as handle, tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(PACK_MANIFEST)
        info.size, info.mtime, info.mode = len(payload), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(payload))
        for rel in files:
            tar.add(model_set.path / rel, arcname=rel, recursive=False)
    return manifest


def read_pack_manifest(pack: str | Path) -> dict[str, Any]:
    """The ``pack.json`` of a pack file (checked: kind, format, a file table)."""
    pack = Path(pack)
    try:
        with tarfile.open(pack, mode="r:") as tar:
            first = tar.next()
            starts = first is not None and first.name == PACK_MANIFEST and first.isfile()
            manifest = json.loads(tar.extractfile(first).read().decode("utf-8")) if starts else None
    except (tarfile.TarError, OSError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(pack, None, f"is not a model-set pack ({type(exc).__name__}); export it again with "
                                      "python -m hybrid.artifacts export") from None
    if not starts:
        raise ConfigError(pack, None, f"is not a model-set pack: it does not start with {PACK_MANIFEST}")
    if not isinstance(manifest, dict) or manifest.get("kind") != PACK_KIND:
        raise ConfigError(pack, None, f"is not a model-set pack (kind {manifest.get('kind')!r})"
                          if isinstance(manifest, dict) else "is not a model-set pack")
    if manifest.get("format") != PACK_FORMAT:
        raise ConfigError(pack, None, f"is a pack of format {manifest.get('format')!r}; this version reads format "
                                      f"{PACK_FORMAT}")
    if not isinstance(manifest.get("files"), dict) or MANIFEST not in manifest["files"]:
        raise ConfigError(pack, None, "is a pack without a file table or without the set's manifest")
    return manifest


def _plain(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def import_set(pack: str | Path, root: str | Path) -> tuple[ModelSet, bool]:
    """Verify and place the pack's set in the store ``root``; returns the set and whether it was new (an identical
    set already there is kept as it is)."""
    pack = Path(pack)
    manifest = read_pack_manifest(pack)
    folder = set_folder(root, str(manifest.get("name")), str(manifest.get("key")))
    existing = ModelSet.open(folder) if folder.is_dir() else None
    if existing is not None:
        if existing.key == manifest["key"] and all(
                (folder / rel).is_file() and _sha256(folder / rel)[0] == entry["sha256"]
                for rel, entry in manifest["files"].items() if rel != MANIFEST):
            return existing, False
        raise ConfigError(folder, None, f"holds another set of key {existing.key} than the pack {pack} "
                                        f"({manifest['key']}); remove it or import into another store")
    expected = dict(manifest["files"])
    with atomic_directory(folder) as building:
        with tarfile.open(pack, mode="r:") as tar:
            for number, member in enumerate(tar):
                if number == 0:  # pack.json, read above
                    continue
                name = member.name
                if not _plain(name) or not member.isfile():
                    raise ConfigError(pack, None, f"holds {name!r}, which is not a plain file at a relative path; "
                                                  "refusing the pack")
                entry = expected.pop(name, None)
                if entry is None:
                    raise ConfigError(pack, None, f"holds {name}, which its manifest does not list; refusing the pack")
                target = building / name
                target.parent.mkdir(parents=True, exist_ok=True)
                digest, size = hashlib.sha256(), 0
                source = tar.extractfile(member)
                with open(target, "wb") as out:
                    while block := source.read(CHUNK):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
                if digest.hexdigest() != entry.get("sha256") or size != entry.get("bytes"):
                    raise ConfigError(pack, None, f"{name}: sha256 or size differs from the pack's manifest: the file "
                                                  "is damaged or was altered; refusing the pack")
        if expected:
            raise ConfigError(pack, None, f"lacks {sorted(expected)[0]}, which its manifest lists; refusing the pack")
        placed = json.loads((building / MANIFEST).read_text(encoding="utf-8"))
        if placed != manifest.get("set") or placed.get("key") != manifest.get("key"):
            raise ConfigError(pack, None, "the set's manifest differs from the one the pack describes; refusing "
                                          "the pack")
    return ModelSet.open(folder), True
