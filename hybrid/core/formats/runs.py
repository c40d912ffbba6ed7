"""TREC run files: ``qid Q0 docid rank score tag``.

Writing sorts every query's hits by score (rounded to the printed precision) and then by docid, so
the order in the file is exactly the order any evaluator re-derives from the scores: ties are broken
deterministically, never by hash or thread order. Writes are atomic: an interrupted job leaves the
previous run file or none, never half of one. Reading re-sorts the same way and ignores the rank
column's values (trec_eval does too) but requires it to be an integer.

**Run sets.** A run, its spans JSONL and its ``<run>.meta.json`` are published as one unit by
:func:`write_run_set`: an ``flock`` on ``.<run>.lock`` (next to the run, removed when released) is held while
the set is written, so two jobs writing the same ``--output`` take turns; the previous set's meta and spans are
removed first and the meta is written last, holding the sha256 of the run (and of the spans) it
describes. A job killed half-way leaves a run without meta, never a run with another run's spans or
meta; :func:`read_run_meta` checks the hashes and says so when a meta does not describe the run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import (
    control_character,
    iter_lines,
    optional,
    parse_json_object,
    require,
    split_columns,
)
from hybrid.core.records import Hit, Rankings

log = logging.getLogger(__name__)
SCORE_DECIMALS = 6
RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")


def sorted_hits(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-round(h.score, SCORE_DECIMALS), h.docid))


def _check_token(what: str, value: str) -> None:
    if value and value.isascii() and value.isprintable() and " " not in value:
        return  # the common case at once: printable ASCII holds no control character and, but for " ", no blank
    if not value or any(c.isspace() for c in value) or control_character(value) is not None:
        raise ValueError(f"{what} {value!r} cannot be written to a TREC run: it must be non-empty with no whitespace")


def check_run(run: Rankings, tag: str = "hybrid") -> None:
    """Refuse runs a TREC file cannot represent faithfully (whitespace in ids, NaN scores, duplicates)."""
    _check_token("run tag", tag)
    for qid, hits in run.items():
        _check_token("query id", qid)
        seen: set[str] = set()
        for hit in hits:
            _check_token(f"docid (query {qid})", hit.docid)
            if not math.isfinite(hit.score):
                raise ValueError(f"score {hit.score} of ({qid}, {hit.docid}) is not a finite number")
            if hit.docid in seen:
                raise ValueError(f"docid {hit.docid!r} appears twice for query {qid!r}")
            seen.add(hit.docid)


def write_run(run: Rankings, path: str | Path, tag: str = "hybrid", spans_path: str | Path | None = None) -> None:
    """Write a TREC run (and optionally a JSONL of the best mention span of every hit), atomically.

    A run someone will read back with its meta or spans is published with :func:`write_run_set` instead.
    """
    check_run(run, tag)
    with atomic_write(path) as out:
        for qid in sorted(run):
            for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                out.write(f"{qid} Q0 {hit.docid} {rank} {hit.score:.{SCORE_DECIMALS}f} {tag}\n")
    if spans_path is not None:
        write_spans(run, spans_path)


def write_spans(run: Rankings, path: str | Path) -> None:
    """JSONL ``{qid, docid, rank, score, start, end, mention}``, one row per hit in run order, atomically."""
    with atomic_write(path) as out:
        for qid in sorted(run):
            for rank, hit in enumerate(sorted_hits(run[qid]), start=1):
                record = {
                    "qid": qid, "docid": hit.docid, "rank": rank, "score": round(hit.score, SCORE_DECIMALS),
                    "start": hit.mention_start, "end": hit.mention_end, "mention": hit.mention_text,
                }
                out.write(json.dumps(record, ensure_ascii=False) + "\n")


# -- run sets: run + spans + meta as one unit --------------------------------------------------------------------


def meta_path(run_path: str | Path) -> Path:
    return Path(f"{run_path}.meta.json")


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def run_set_lock(run_path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``.<run>.lock`` next to the run (released by the kernel if we die).

    The lock file exists only while someone holds or waits for it: the holder unlinks it before
    releasing, so no empty ``.<run>.lock`` is left beside the run. A waiter that then gets the lock of
    the unlinked file sees that the path no longer names its file (another inode, or none) and starts
    over on a fresh one, so two holders never overlap. A holder killed with ``-9`` leaves the file
    behind; the next writer takes it over (the kernel released its lock) and removes it.
    """
    path = Path(run_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.parent / f".{path.name}.lock"
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            break
        os.close(fd)  # its holder removed it while we waited: lock the file now at the path
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


def write_run_set(run: Rankings, path: str | Path, tag: str = "hybrid", meta: dict[str, Any] | None = None,
                  spans_path: str | Path | None = None,
                  spans_writer: Callable[[Rankings, str | Path], None] | None = None) -> dict[str, Any]:
    """Publish a run, its spans (optional) and ``<run>.meta.json`` as one unit; returns the meta written.

    The meta is written last and records ``run_sha256`` (and ``spans_sha256``); the previous set's meta and
    spans are removed before the new run replaces the old one, so no interruption can pair a run with
    another run's spans or meta. Writers of the same run take turns on ``.<run>.lock``.
    """
    check_run(run, tag)
    path = Path(path)
    with run_set_lock(path):
        if spans_path is None:  # the previous set's spans would otherwise stay beside a run they do not describe
            old_spans = _recorded_spans(path)
            if old_spans is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(old_spans)
        for stale in (meta_path(path), spans_path):
            if stale is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
        write_run(run, path, tag)
        if spans_path is not None:
            (spans_writer or write_spans)(run, spans_path)
        record = dict(meta or {})
        record.update(run=str(path), run_sha256=sha256_file(path),
                      spans=None if spans_path is None else str(spans_path),
                      spans_sha256=None if spans_path is None else sha256_file(spans_path))
        with atomic_write(meta_path(path)) as out:
            out.write(json.dumps(record, indent=2, default=str) + "\n")
    return record


def _recorded_spans(run_path: Path) -> Path | None:
    """The spans file the run's current meta records, when it still holds exactly what the meta says (a file
    someone replaced since is theirs, not the set's)."""
    try:
        meta = json.loads(meta_path(run_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("spans"), str) or not meta.get("spans_sha256"):
        return None
    spans = Path(meta["spans"])
    if not spans.is_absolute():
        spans = Path.cwd() / spans
    try:
        if not spans.is_file() or sha256_file(spans) != meta["spans_sha256"]:
            return None
    except OSError:
        return None
    return spans


def read_run_meta(run_path: str | Path, spans_path: str | Path | None = None) -> dict[str, Any] | None:
    """The meta of a run (None when it has none), checked against the run (and the spans file given).

    An :class:`InputError` says when the meta does not describe the run (the run was rewritten after its
    meta, by another job, or by hand), or when ``spans_path`` is not the spans file the meta records.
    """
    run_path, meta_file = Path(run_path), meta_path(run_path)
    if not meta_file.is_file():
        return None
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(meta_file, None, f"is not valid JSON ({exc}); re-run the command that wrote "
                                          f"{run_path}") from None
    if not isinstance(meta, dict):
        raise InputError(meta_file, None, f"is not a run meta (a JSON object); re-run the command that wrote "
                                          f"{run_path}")
    recorded = meta.get("run_sha256")
    if recorded is None:
        log.warning("%s records no sha256 of %s (written before run sets were checked): ignored", meta_file,
                    run_path.name)
        return None
    if sha256_file(run_path) != recorded:
        raise InputError(meta_file, None, f"does not describe {run_path.name}: the run's sha256 differs from the "
                                          "one recorded (the run was rewritten after its meta, by another job or by "
                                          f"hand); re-run the command that wrote {run_path}")
    if spans_path is not None and meta.get("spans_sha256") is None and "spans_sha256" in meta:
        raise InputError(spans_path, None, f"is not the spans file of {run_path.name}: {meta_file.name} records "
                                           f"that {run_path.name} was written without spans; re-run the command "
                                           f"that wrote {run_path} with --spans")
    if spans_path is not None and meta.get("spans_sha256") is not None:
        if sha256_file(spans_path) != meta["spans_sha256"]:
            raise InputError(spans_path, None, f"is not the spans file of {run_path.name}: its sha256 differs from "
                                               f"the one {meta_file.name} records for {meta.get('spans')}")
    return meta


def read_spans(path: str | Path) -> dict[tuple[str, str], tuple[int, int, str | None]]:
    """(qid, docid) -> (start, end, mention) from a spans JSONL (``hybrid.search --spans``); rows without a
    span are skipped; a malformed line is an InputError naming the file and line."""
    spans: dict[tuple[str, str], tuple[int, int, str | None]] = {}
    for number, line in iter_lines(path):
        row = parse_json_object(path, number, line)
        qid, docid = require(path, number, row, "qid", str), require(path, number, row, "docid", str)
        start, end = optional(path, number, row, "start", int), optional(path, number, row, "end", int)
        if start is None and end is None:
            continue
        if start is None or end is None or not 0 <= start < end:
            raise InputError(path, number, f"span [{start}, {end}) is not a character span (0 <= start < end)")
        spans[qid, docid] = (start, end, optional(path, number, row, "mention", str))
    return spans


def read_run(path: str | Path) -> Rankings:
    """Read a TREC run; an empty file is an empty run (no query has results).

    A run that has a meta (``<run>.meta.json``, written with it by :func:`write_run_set`) must be the run the meta
    describes (:func:`read_run_meta`): a run cut short at a line end, emptied or rewritten after its meta parses
    cleanly, and would otherwise be evaluated, fused or reranked as if complete."""
    path = Path(path)
    if path.is_file():
        read_run_meta(path)
    run: Rankings = {}
    first: dict[tuple[str, str], int] = {}
    for number, line in iter_lines(path):
        qid, _, docid, rank, score, _ = split_columns(path, number, line, RUN_COLUMNS)
        try:
            int(rank)
        except ValueError:
            raise InputError(path, number, f"rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise InputError(path, number, f"score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise InputError(path, number, f"score {score!r} is not a finite number")
        if (qid, docid) in first:
            raise InputError(
                path, number, f"docid {docid!r} appears twice for query {qid!r} (first on line {first[qid, docid]})"
            )
        first[qid, docid] = number
        run.setdefault(qid, []).append(Hit(docid=docid, score=value))
    for qid in run:
        run[qid] = sorted_hits(run[qid])
    return run


def attach_spans(run: Mapping[str, list[Hit]], path: str | Path) -> int:
    """Give the hits of ``run`` the spans of a spans JSONL (``hybrid.search --spans``); returns how many got one.

    A malformed line is an :class:`~hybrid.core.errors.InputError` naming the file and line."""
    spans = read_spans(path)
    given = 0
    for qid, hits in run.items():
        for hit in hits:
            found = spans.get((qid, hit.docid))
            if found is not None:
                hit.mention_start, hit.mention_end, hit.mention_text = found
                given += 1
    return given
