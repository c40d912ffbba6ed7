"""kill -9 of ``python -m hybrid.index`` mid-build: the previous index survives byte for byte (or no index
appears), and the next build cleans up and finishes.

The build runs in a subprocess on a generated 3,000-passage corpus (about 10 s to build here), and is
killed at a phase seen on disk: while annotating (the collection JSONL is being written, no Lucene
index yet) and while Anserini is indexing (the ``passages/`` Lucene index exists, ``mentions/`` not yet).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic_corpus import write_corpus

from hybrid.core.atomic import remove_stale_builds
from indexes.lucene import METADATA

N_PASSAGES = 3000


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def builds(parent: Path, name: str) -> list[Path]:
    return sorted(parent.glob(f".{name}.*.building"))


def annotating(build: Path) -> bool:
    part = build / "_collections" / "passages" / "part-0.jsonl"
    return part.is_file() and part.stat().st_size > 0 and not (build / "passages").exists()


def anserini_indexing(build: Path) -> bool:
    return (build / "passages").is_dir() and not (build / "mentions").exists()


def start(corpus: Path, index: Path, overwrite: bool) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hybrid.index", "--corpus", str(corpus), "--index", str(index), "--quiet",
           "--annotation", "corpus"]
    return subprocess.Popen(cmd + (["--overwrite"] if overwrite else []), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_when(proc: subprocess.Popen, parent: Path, name: str, phase, timeout: float = 180.0) -> None:
    """SIGKILL the builder as soon as ``phase`` holds for its build directory; fail if it never does."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            if any(phase(b) for b in builds(parent, name)):
                proc.send_signal(signal.SIGKILL)
                break
            if proc.poll() is not None:
                pytest.fail(f"build ended (rc {proc.returncode}) before {phase.__name__}: {proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {phase.__name__} phase within {timeout} s")
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "synthetic.jsonl", N_PASSAGES)


def test_killed_rebuilds_keep_the_previous_index_and_a_rerun_finishes(tiny_index, big_corpus, tmp_path):
    index = tmp_path / "idx"
    shutil.copytree(tiny_index, index)
    before = tree_digest(index)

    kill_when(start(big_corpus, index, overwrite=True), tmp_path, "idx", annotating)
    assert tree_digest(index) == before
    (first,) = builds(tmp_path, "idx")  # the killed build's leftovers

    kill_when(start(big_corpus, index, overwrite=True), tmp_path, "idx", anserini_indexing)
    assert tree_digest(index) == before
    (second,) = builds(tmp_path, "idx")  # the second build removed the first one's leftovers on start
    assert second != first

    done = subprocess.run([sys.executable, "-m", "hybrid.index", "--corpus", str(big_corpus), "--index",
                           str(index), "--quiet", "--overwrite", "--annotation", "corpus"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"removed 1 stale build(s) of idx: {second.name}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    meta = json.loads((index / METADATA).read_text())
    assert meta["counts"]["passages"] == N_PASSAGES and meta["counts"]["gold_mentions"] == 3 * N_PASSAGES

    from indexes.sparse_index import SparseIndex

    rebuilt = SparseIndex(index)
    assert rebuilt.passages.num_docs == N_PASSAGES and rebuilt.mentions.num_docs == 3 * N_PASSAGES


def test_killed_first_build_leaves_no_index(big_corpus, tmp_path):
    index = tmp_path / "fresh"
    kill_when(start(big_corpus, index, overwrite=False), tmp_path, "fresh", annotating)
    assert not index.exists()
    (stale,) = builds(tmp_path, "fresh")
    assert remove_stale_builds(tmp_path, "fresh") == [stale]
    assert list(tmp_path.iterdir()) == []
