"""atomic_write: the target is the old file or the complete new one, even after kill -9 of the writer."""

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

from hybrid.core.atomic import atomic_write, remove_stale_temps


def wait_for(condition, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def temps(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))


def test_complete_block_replaces_failed_block_keeps_previous(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_write(path) as out:
        out.write("one\n")
    assert path.read_text() == "one\n"
    with pytest.raises(RuntimeError), atomic_write(path) as out:
        out.write("two, half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "one\n" and not temps(path)
    with atomic_write(path, "wb") as out:
        out.write(b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="modes"), atomic_write(path, "a"):
        pass


def test_permissions_follow_umask_or_the_previous_file(tmp_path):
    old = os.umask(0o022)
    try:
        new = tmp_path / "new.txt"
        with atomic_write(new) as out:
            out.write("x")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644  # not tempfile's 0600
        private = tmp_path / "private.txt"
        private.write_text("secret")
        private.chmod(0o600)
        with atomic_write(private) as out:
            out.write("still secret")
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    finally:
        os.umask(old)


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hybrid.core.atomic import atomic_write
    target, ready = Path(sys.argv[1]), Path(sys.argv[2])
    with atomic_write(target) as out:
        out.write("new content, first half\\n")
        out.flush()
        ready.write_text("writing")
        time.sleep(120)
        out.write("second half\\n")
""")


def test_kill_9_mid_write_keeps_previous_and_next_write_cleans_up(tmp_path):
    target, ready = tmp_path / "run.trec", tmp_path / "ready"
    target.write_text("previous complete run\n")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(ready)])
    try:
        wait_for(ready.exists, what="the writer to start")
        (temp,) = temps(target)
        assert temp.read_text() == "new content, first half\n"
        assert target.read_text() == "previous complete run\n"
        assert remove_stale_temps(target) == []  # the writer is alive: its temporary is not stale
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert target.read_text() == "previous complete run\n"
    assert temps(target) == [temp]  # kill -9 cannot clean up ...
    with atomic_write(target) as out:  # ... the next write of the same file does
        out.write("rerun\n")
    assert target.read_text() == "rerun\n" and temps(target) == []


def test_foreign_temporaries_are_left_alone(tmp_path):
    target = tmp_path / "a.txt"
    other = tmp_path / ".a.txt.backup.tmp"  # not named like ours: never touched
    other.write_text("x")
    assert remove_stale_temps(target) == [] and other.exists()


RUN_WRITER = textwrap.dedent("""
    import sys
    from hybrid.core.formats.runs import write_run
    from hybrid.core.records import Hit
    run = {f"q{i}": [Hit(f"d{i}:{j}", float(j)) for j in range(50)] for i in range(12000)}
    write_run(run, sys.argv[1], tag="big")
""")


def test_kill_9_during_write_run_keeps_the_previous_run(tmp_path):
    """A real, long write_run (600k lines) killed as soon as its temporary file has data."""
    target = tmp_path / "big.trec"
    target.write_text("q0 Q0 d 1 1.000000 old\n")
    proc = subprocess.Popen([sys.executable, "-c", RUN_WRITER, str(target)])
    try:
        wait_for(lambda: any(t.stat().st_size > 0 for t in temps(target)) or proc.poll() is not None,
                 what="write_run to start writing")
        assert proc.poll() is None, "write_run finished before it could be interrupted"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert target.read_text() == "q0 Q0 d 1 1.000000 old\n"
    assert len(temps(target)) == 1
    assert remove_stale_temps(target) and temps(target) == []
