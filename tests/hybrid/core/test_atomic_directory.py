"""atomic_directory / remove_stale_builds: previous artifact or nothing, stale builds cleaned, live ones spared."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hybrid.core.atomic import atomic_directory, remove_stale_builds


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def build(path: Path, content: str, overwrite: bool = False) -> None:
    with atomic_directory(path, overwrite=overwrite) as tmp:
        (tmp / "data.txt").write_text(content)


def test_success_failure_and_overwrite(tmp_path):
    idx = tmp_path / "idx"
    build(idx, "v1")
    assert (idx / "data.txt").read_text() == "v1" and hidden(tmp_path) == []
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        build(idx, "v2")
    with pytest.raises(RuntimeError), atomic_directory(idx, overwrite=True) as tmp:
        (tmp / "data.txt").write_text("v2, half")
        assert (idx / "data.txt").read_text() == "v1"  # the old one stays readable while building
        raise RuntimeError("crash")
    assert (idx / "data.txt").read_text() == "v1" and hidden(tmp_path) == []
    build(idx, "v3", overwrite=True)
    assert (idx / "data.txt").read_text() == "v3" and hidden(tmp_path) == []


def test_directory_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        build(tmp_path / "idx", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "idx").stat().st_mode) == 0o755  # not mkdtemp's 0700


def test_a_concurrent_build_that_finishes_first_is_not_overwritten(tmp_path):
    idx = tmp_path / "idx"
    with pytest.raises(FileExistsError, match="another build finished first"), atomic_directory(idx) as tmp:
        (tmp / "data.txt").write_text("slow")
        build(idx, "fast")  # a second build of the same index, started later, done earlier
    assert (idx / "data.txt").read_text() == "fast" and hidden(tmp_path) == []


BUILDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hybrid.core.atomic import atomic_directory
    target, ready = Path(sys.argv[1]), Path(sys.argv[2])
    with atomic_directory(target, overwrite=True) as tmp:
        (tmp / "part").write_text("half")
        ready.write_text("building")
        time.sleep(120)
""")


def test_live_build_is_spared_dead_build_is_removed(tmp_path):
    idx, ready = tmp_path / "idx", tmp_path / "ready"
    build(idx, "previous")
    proc = subprocess.Popen([sys.executable, "-c", BUILDER, str(idx), str(ready)])
    try:
        wait_for(ready.exists)
        leftovers = hidden(tmp_path)
        assert len(leftovers) == 2 and leftovers[0].endswith(".building")  # dir + its lock
        assert remove_stale_builds(tmp_path, "idx") == []  # alive: its lock is held
        assert hidden(tmp_path) == leftovers
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (idx / "data.txt").read_text() == "previous" and hidden(tmp_path) == leftovers
    removed = remove_stale_builds(tmp_path, "idx")
    assert [p.name for p in removed] == [leftovers[0]] and hidden(tmp_path) == []
    assert (idx / "data.txt").read_text() == "previous"


def test_interrupted_replacement_restores_the_previous_artifact(tmp_path):
    """A builder killed between 'idx -> .idx.<t>.old' and '.idx.<t>.building -> idx' left no idx."""
    previous = tmp_path / ".idx.abc123.old"
    previous.mkdir()
    (previous / "data.txt").write_text("previous")
    (tmp_path / ".idx.abc123.building").mkdir()
    assert remove_stale_builds(tmp_path, "idx") == [tmp_path / ".idx.abc123.building"]
    assert (tmp_path / "idx" / "data.txt").read_text() == "previous" and hidden(tmp_path) == []


def test_old_copy_is_dropped_once_the_new_artifact_is_in_place(tmp_path):
    build(tmp_path / "idx", "new")
    (tmp_path / ".idx.abc123.old").mkdir()
    (tmp_path / ".idx.abc123.trash").mkdir()
    assert len(remove_stale_builds(tmp_path, "idx")) == 2
    assert (tmp_path / "idx" / "data.txt").read_text() == "new" and hidden(tmp_path) == []


def test_builds_of_other_names_are_not_touched(tmp_path):
    for name in (".idx.v2.abc123.building", ".idx-old.abc123.building", ".idx.abc123.building"):
        (tmp_path / name).mkdir()
    assert [p.name for p in remove_stale_builds(tmp_path, "idx")] == [".idx.abc123.building"]
    assert hidden(tmp_path) == [".idx-old.abc123.building", ".idx.v2.abc123.building"]
