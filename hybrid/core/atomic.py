"""Atomic writes: build in a temporary place next to the target, then rename into place.

An interrupted job (even ``kill -9``) leaves either the previous complete artifact or nothing, and
the next job cleans up after it:

* :func:`atomic_write` (files: runs, models, metadata) writes ``.<name>.<random>.<host>-<pid>.tmp``,
  fsyncs it and renames it over the target. Temporaries of dead processes on this host are removed
  by the next write of the same target.
* :func:`atomic_directory` (indexes) builds in ``.<name>.<token>.building``, guarded by an
  ``flock`` on ``.<name>.<token>.building.lock`` that the kernel releases when the builder dies.
  :func:`remove_stale_builds` deletes builds whose lock is free (their builder is gone) and never
  touches a live one, so two builds may run side by side. Replacing an existing directory takes two
  renames (``name -> .<name>.<token>.old``, ``building -> name``); a builder killed between them is
  repaired by restoring the ``.old`` copy.

Files and directories get the permissions a plain ``open``/``mkdir`` would give (umask), not the
0600/0700 of ``tempfile``. POSIX only (``fcntl``), like Anserini's own index locking.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_HOST = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()) or "host"


def _umask() -> int:
    """The process umask without changing it (``os.umask`` would race with other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(path: str | Path) -> list[Path]:
    """Delete ``atomic_write`` temporaries of ``path`` left by dead processes of this host."""
    path = Path(path)
    removed = []
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[A-Za-z0-9_]+\.{re.escape(_HOST)}-(\d+)\.tmp")
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        match = pattern.fullmatch(stale.name)
        if match and not _pid_alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
                removed.append(stale)
    return removed


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``path`` only if the block completes.

    ``mode`` is ``"w"`` (text, UTF-8) or ``"wb"``. An existing target keeps its permission bits.
    """
    if mode not in ("w", "wt", "wb"):
        raise ValueError(f"atomic_write supports modes 'w' and 'wb', not {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{_HOST}-{os.getpid()}.tmp", dir=path.parent)
    try:
        try:
            permissions = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            permissions = 0o666 & ~_umask()
        os.fchmod(fd, permissions)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            fd = -1
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class _Build:
    """The temporaries of one directory build, all named after one random token."""

    def __init__(self, target: Path, token: str):
        self.target, self.token = target, token
        stem = target.parent / f".{target.name}.{token}"
        self.lock = Path(f"{stem}.building.lock")
        self.building = Path(f"{stem}.building")
        self.old = Path(f"{stem}.old")
        self.trash = Path(f"{stem}.trash")


def _locked_new_build(target: Path) -> tuple[_Build, int]:
    """Create and lock a fresh lock file; retry if a concurrent sweeper removed it before we locked it."""
    while True:
        fd, lock = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".building.lock", dir=target.parent)
        token = Path(lock).name[len(target.name) + 2 : -len(".building.lock")]
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except (BlockingIOError, FileNotFoundError):
            same = False
        if same and _TOKEN.fullmatch(token):
            build = _Build(target, token)
            try:
                os.mkdir(build.building)
                os.chmod(build.building, 0o777 & ~_umask())
            except BaseException:
                os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    build.lock.unlink()
                raise
            return build, fd
        os.close(fd)


def _commit(build: _Build, overwrite: bool) -> None:
    target = build.target
    if target.exists() or target.is_symlink():
        if not overwrite:
            raise FileExistsError(f"{target} already exists (another build finished first; pass --overwrite)")
        if not target.is_dir() or target.is_symlink():
            raise FileExistsError(f"{target} exists and is not a directory; remove it first")
        os.replace(target, build.old)
        os.replace(build.building, target)
        os.replace(build.old, build.trash)
        shutil.rmtree(build.trash, ignore_errors=True)
    else:
        try:
            os.replace(build.building, target)
        except OSError as exc:  # created by a concurrent build since the check above
            raise FileExistsError(f"{target} appeared while building (another build finished first)") from exc
    _fsync_dir(target.parent)


@contextlib.contextmanager
def atomic_directory(path: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary directory that becomes ``path`` only if the block completes.

    An existing complete ``path`` is replaced only after the new one is finished (``overwrite``),
    so a crash never destroys the previous artifact. Stale builds of ``path`` are cleaned first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_builds(path.parent, path.name)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise FileExistsError(f"{path} already exists (pass --overwrite to replace it)")
    build, fd = _locked_new_build(path)
    try:
        yield build.building
        _commit(build, overwrite)
    except BaseException:
        if build.old.is_dir() and not path.exists():  # failed between the two renames of _commit
            os.replace(build.old, path)
        shutil.rmtree(build.building, ignore_errors=True)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            build.lock.unlink()
        os.close(fd)


@contextlib.contextmanager
def _lock_if_dead(lock: Path) -> Iterator[bool]:
    """Hold ``lock`` when its owner is gone (True); False while a live build holds it."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        yield True  # no lock file: a build from before locks existed, or its lock was removed
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False  # another sweeper got there first
        yield same
    finally:
        os.close(fd)


def remove_stale_builds(parent: str | Path, name: str) -> list[Path]:
    """Delete leftovers of builds of ``name`` whose builder died; returns the paths removed.

    A live build (its lock held) is never touched. If a builder died between moving the previous
    artifact aside and moving the new one in, the previous artifact is restored.
    """
    parent, removed = Path(parent), []
    target = parent / name
    tokens = set()
    for suffix in (".building.lock", ".building", ".old", ".trash"):
        for found in parent.glob(f".{glob.escape(name)}.*{suffix}"):
            token = found.name[len(name) + 2 : -len(suffix)]
            if _TOKEN.fullmatch(token):
                tokens.add(token)
    for token in sorted(tokens):
        build = _Build(target, token)
        with _lock_if_dead(build.lock) as dead:
            if not dead:
                continue
            if build.old.is_dir():
                if not target.exists():
                    os.replace(build.old, target)
                    log.warning("restored %s from %s (its replacement was interrupted)", target, build.old)
                else:
                    shutil.rmtree(build.old, ignore_errors=True)
                    removed.append(build.old)
            for leftover in (build.building, build.trash):
                if leftover.exists():
                    shutil.rmtree(leftover, ignore_errors=True)
                    removed.append(leftover)
            with contextlib.suppress(FileNotFoundError):
                build.lock.unlink()
    if removed:
        log.warning("removed %d stale build(s) of %s: %s", len(removed), name, ", ".join(p.name for p in removed))
    return removed
