"""Every artifact loader against truncation, garbage and wrong shapes: one line naming the file, never a traceback,
never a silently used damaged file.

The tiny artifacts are built once per module; each case damages a copy. A case passes when loading raises one of
the errors the CLIs turn into one line and exit 2 (InputError / ConfigError / IndexMissingError), naming the file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from features.encoder import BiEncoder, EncoderConfig
from hybrid.core.errors import IndexMissingError, InputError
from hybrid.core.provenance import VERIFY_ENV
from indexes.faiss_index import (
    DENSE_METADATA,
    PASSAGE_TABLE,
    PASSAGE_VECTORS,
    ROWS,
    VECTORS,
    DenseIndex,
    build_dense_index,
)

USER_ERRORS = (InputError, IndexMissingError)  # ConfigError is an InputError


@pytest.fixture(scope="module")
def dense_dir(tmp_path_factory, sparse_index, tiny_bert) -> Path:
    encoder = BiEncoder.load(tiny_bert, EncoderConfig(mark_query=False), device="cpu")
    out = tmp_path_factory.mktemp("dense") / "dense"
    build_dense_index(sparse_index, encoder, out, progress=False)
    return out


def refused(load: Callable[[], object], where: Path) -> str:
    """Loading fails with a user error whose one-line message names ``where``; returns the message."""
    with pytest.raises(USER_ERRORS) as caught:
        load()
    message = str(caught.value)
    assert str(where) in message and "\n" not in message, message
    return message


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage(path: Path) -> None:
    path.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, max(path.stat().st_size, 64), dtype=np.uint8)))


def empty(path: Path) -> None:
    path.write_bytes(b"")


DAMAGE = {"truncated": truncate, "garbage": garbage, "empty": empty}


def test_the_build_records_sizes_and_checksums(dense_dir):
    files = json.loads((dense_dir / DENSE_METADATA).read_text())["files"]
    assert set(files) == {VECTORS, ROWS, PASSAGE_TABLE, PASSAGE_VECTORS}
    assert all(files[name]["bytes"] == (dense_dir / name).stat().st_size for name in files)


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("part", [VECTORS, ROWS, PASSAGE_TABLE, PASSAGE_VECTORS, DENSE_METADATA])
def test_a_damaged_dense_file_is_refused(dense_dir, tmp_path, part, damage):
    copy = shutil.copytree(dense_dir, tmp_path / "dense")
    DAMAGE[damage](copy / part)
    refused(lambda: DenseIndex(copy), copy / part)


@pytest.mark.parametrize("part", [VECTORS, ROWS, PASSAGE_TABLE, PASSAGE_VECTORS])
def test_a_damaged_file_of_an_old_index_without_checksums_is_still_refused(dense_dir, tmp_path, part):
    """Built before sizes were recorded: what the loaders themselves check (FAISS's header, numpy's shape, the
    table's types, rows naming real passages) still refuses a truncated or garbled file."""
    copy = shutil.copytree(dense_dir, tmp_path / "dense")
    meta = json.loads((copy / DENSE_METADATA).read_text())
    del meta["files"]
    (copy / DENSE_METADATA).write_text(json.dumps(meta))
    assert DenseIndex(copy).size > 0  # an old index opens
    garbage(copy / part)
    refused(lambda: DenseIndex(copy), copy / part)


def test_a_same_size_corruption_is_caught_by_the_full_check(dense_dir, tmp_path, monkeypatch):
    """A flipped byte in the vectors keeps every size: the fast check cannot see it, the full one must."""
    copy = shutil.copytree(dense_dir, tmp_path / "dense")
    data = bytearray((copy / VECTORS).read_bytes())
    data[-8] ^= 0xFF  # inside the last vector's floats
    (copy / VECTORS).write_bytes(bytes(data))
    monkeypatch.setenv(VERIFY_ENV, "full")
    message = refused(lambda: DenseIndex(copy), copy / VECTORS)
    assert "sha256 differs" in message


@pytest.mark.parametrize("change", [
    lambda m: m.update(faiss="flat"), lambda m: m.pop("encoder"), lambda m: m["faiss"].update(type="ivf"),
    lambda m: m["encoder"].update(fingerprint=None), lambda m: m.update(files={"../x": {"bytes": 1}}),
    lambda m: m.update(files=[1])])
def test_a_dense_metadata_of_the_wrong_shape_is_refused(dense_dir, tmp_path, change):
    copy = shutil.copytree(dense_dir, tmp_path / "dense")
    meta = json.loads((copy / DENSE_METADATA).read_text())
    change(meta)
    (copy / DENSE_METADATA).write_text(json.dumps(meta))
    refused(lambda: DenseIndex(copy), copy / DENSE_METADATA)


def test_rows_naming_passages_that_do_not_exist_are_refused(dense_dir, tmp_path):
    copy = shutil.copytree(dense_dir, tmp_path / "dense")
    rows = np.load(copy / ROWS)
    rows[0, 0] = 10_000
    np.save(copy / ROWS, rows)  # same size: only the content check sees it
    refused(lambda: DenseIndex(copy), copy / ROWS)
