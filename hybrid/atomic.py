"""Atomic writes: build in a temporary place next to the target, then rename into place.

An interrupted job (even ``kill -9``) leaves either the previous complete artifact or nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[TextIO]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(path: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary directory that becomes ``path`` only if the block completes.

    An existing complete ``path`` is replaced only after the new one is finished (``overwrite``),
    so a crash never destroys the previous artifact.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists (pass --overwrite to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".building", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_stale_builds(parent: str | Path, name: str) -> list[Path]:
    """Delete leftovers of builds of ``name`` that were killed before they could clean up."""
    removed = []
    for stale in Path(parent).glob(f".{name}.*.building"):
        shutil.rmtree(stale, ignore_errors=True)
        removed.append(stale)
    return removed
