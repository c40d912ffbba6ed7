"""Line-oriented reading shared by every parser: UTF-8 checked per line, 1-based line numbers.

Everything a user can get wrong about the bytes of a file is caught here, once, with the file and
line in the message: invalid UTF-8, a gzip file passed as text, a line too long to hold in memory,
JSON that is broken, nested too deeply, carries the same key twice, holds ``NaN`` or a lone UTF-16
surrogate (which would crash the index writer much later, far from its cause). A UTF-8 byte-order
mark on the first line is accepted and removed (spreadsheet exports write one).
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid.core.errors import InputError

log = logging.getLogger("hybrid.core.formats")

#: Longest line read into memory; beyond it the line is an error (a passage is a sentence or paragraph).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: With ``--skip-bad``, how much of an over-long line is read (in 1 MiB chunks) looking for its end before
#: reading stops for good (``/dev/zero``, a binary file, an endless pipe never end a line).
MAX_SKIP_BYTES = 4 * MAX_LINE_BYTES
BOM = "\ufeff"
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"

OnError = Callable[[InputError], None]


@dataclass
class SkipReport:
    """Collects the lines a ``--skip-bad`` reader dropped, so they can be reported, never silently lost.

    ``warnings`` holds lines that were kept but changed (e.g. a truncated over-long passage).
    """

    errors: list[InputError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, error: InputError) -> None:
        self.errors.append(error)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def __len__(self) -> int:
        return len(self.errors)

    def summary(self, limit: int = 10) -> str:
        lines = [f"skipped {len(self.errors)} bad line(s):"]
        lines += [f"  {e}" for e in self.errors[:limit]]
        if len(self.errors) > limit:
            lines.append(f"  ... and {len(self.errors) - limit} more")
        if self.warnings:
            lines.append(f"changed {len(self.warnings)} line(s):")
            lines += [f"  {w}" for w in self.warnings[:limit]]
            if len(self.warnings) > limit:
                lines.append(f"  ... and {len(self.warnings) - limit} more")
        return "\n".join(lines)


def check_file(path: Path) -> None:
    if not path.exists():
        raise InputError(path, None, "file does not exist")
    if path.is_dir():
        raise InputError(path, None, "is a directory, expected a file")


def _raise(error: InputError) -> None:
    raise error


def iter_lines(path: str | Path, on_error: OnError | None = None, digest: Any = None) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for non-blank lines.

    ``digest`` (a ``hashlib`` object) is fed every byte read, so a caller reading a pipe or FIFO, which cannot
    be read twice, learns the sha256 of what it read (for a regular file read to its end, its file sha256).

    A line that cannot be read (invalid UTF-8, longer than :data:`MAX_LINE_BYTES`) raises
    :class:`InputError`, or is passed to ``on_error`` and skipped when one is given (``--skip-bad``).
    Only ``\\n`` ends a line (with an optional ``\\r`` before it), as in every JSONL/TREC reader.
    """
    path = Path(path)
    check_file(path)
    report = on_error or _raise
    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if digest is not None:
                digest.update(raw)
            number += 1
            if number == 1:
                if raw.startswith(GZIP_MAGIC):
                    raise InputError(path, None, "file is gzip-compressed; decompress it first (gunzip)")
                if raw.startswith(UTF8_BOM):
                    raw = raw[len(UTF8_BOM) :]
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                too_long = InputError(path, number, f"line is longer than {MAX_LINE_BYTES} bytes")
                if on_error is None:
                    raise too_long  # stop at the limit: never read on to the end of an endless line
                skipped = 0
                while rest := handle.readline(1 << 20):
                    if digest is not None:
                        digest.update(rest)
                    if rest.endswith(b"\n"):
                        break
                    skipped += len(rest)
                    if skipped > MAX_SKIP_BYTES:
                        raise InputError(path, number, f"line is longer than {MAX_LINE_BYTES} bytes and has no end "
                                                       f"within {MAX_LINE_BYTES + MAX_SKIP_BYTES} bytes; stopped "
                                                       "reading (is this a text file?)")
                report(too_long)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                reason = f"invalid UTF-8 byte 0x{raw[exc.start]:02X} at offset {exc.start} of the line"
                report(InputError(path, number, reason))
                continue
            if text.startswith(BOM):  # where a concatenated file begins; inside a line U+FEFF is text (ZWNBSP)
                report(InputError(path, number, "byte-order mark (U+FEFF) at character 0 of the line: only "
                                                "the very start of a file may carry one (were files concatenated?)"))
                continue
            if text.endswith("\n"):
                text = text[:-1]
                if text.endswith("\r"):
                    text = text[:-1]
            if text.strip():
                yield number, text


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding an unpaired UTF-16 surrogate, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"\\u{ord(item[exc.start]):04x}"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def parse_json_object(path: str | Path | None, number: int | None, text: str) -> dict[str, Any]:
    """One JSON object per line; every way JSON can be wrong becomes an :class:`InputError`."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        raise InputError(path, number, f"key {exc.key!r} appears twice in one JSON object") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, number, f"broken JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # NaN/Infinity, or an integer with too many digits
        raise InputError(path, number, f"broken JSON ({exc})") from None
    except RecursionError:
        raise InputError(path, number, "broken JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise InputError(path, number, f"expected a JSON object, got {type(value).__name__}")
    if "\\u" in text or "\\U" in text:  # lone surrogates can only come from \u escapes
        bad = _lone_surrogate(value)
        if bad is not None:
            raise InputError(path, number, f"invalid Unicode: unpaired surrogate {bad} (not encodable as UTF-8)")
    return value


def require(path: str | Path | None, number: int | None, obj: dict[str, Any], key: str,
            kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise InputError(path, number, f"missing required field '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(path, number, f"field '{key}' must be {names}, got {type(value).__name__}")
    return value


def optional(path: str | Path | None, number: int | None, obj: dict[str, Any], key: str,
             kind: type | tuple[type, ...]) -> Any:
    if obj.get(key) is None:
        return None
    return require(path, number, obj, key, kind)


def _normalised(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def near_miss(key: str, known: Iterable[str]) -> str | None:
    """The schema key that ``key`` looks like a misspelling of (case, ``-``/``_``, one or two letters)."""
    return _near_miss(key, frozenset(known))


@functools.lru_cache(maxsize=4096)
def _near_miss(key: str, known: frozenset[str]) -> str | None:
    for candidate in sorted(known):
        if _normalised(candidate) == _normalised(key):
            return candidate
    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.85)
    return close[0] if close else None


def check_keys(path: str | Path | None, number: int | None, obj: dict[str, Any], known: set[str], where: str = "",
               free: bool = True) -> None:
    """Reject keys outside a fixed schema (``free=False``) or, where free metadata is allowed, keys that
    look like a misspelt schema key (``"mention"`` for ``"mentions"``) and would otherwise be silently
    ignored."""
    for key in obj:
        if key in known:
            continue
        guess = near_miss(key, known)
        if not free:
            hint = f"; did you mean {guess!r}?" if guess else f"; known keys: {', '.join(sorted(known))}"
            raise InputError(path, number, f"unknown key {where + key!r}{hint}")
        if guess is not None:
            raise InputError(path, number, f"unknown key {where + key!r} looks like a misspelling of {guess!r}")


def invisible_only(text: str) -> str | None:
    """When ``text`` has characters but none visible (only blanks and zero-width/format characters such as
    U+200B, U+200D, U+2060, U+FEFF, U+00AD), the code points of the invisible ones; else None."""
    if not text.strip() or any(not c.isspace() and unicodedata.category(c) != "Cf" for c in text):
        return None
    return ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in text if not c.isspace()))


def control_character(text: str, allowed: str = "") -> str | None:
    """The first control or line/paragraph-separator character in ``text`` (as ``U+XXXX``), if any."""
    for char in text:
        if char in allowed:
            continue
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            return f"U+{ord(char):04X}"
    return None


_COLUMN_SPLIT = re.compile(r"[ \t]+")


def split_columns(path: str | Path, number: int, line: str, names: tuple[str, ...]) -> list[str]:
    """Split a whitespace-separated TREC line (spaces/tabs, as trec_eval does) into exactly ``names``.

    Any other whitespace or control character inside a column is an error: Python's ``str.split``
    would split on it (e.g. a no-break space) while trec_eval would not, so the file would mean
    different things to different tools.
    """
    cols = _COLUMN_SPLIT.split(line.strip(" \t"))
    if len(cols) != len(names):
        raise InputError(path, number, f"expected '{' '.join(names)}', found {len(cols)} column(s)")
    for name, col in zip(names, cols, strict=True):
        bad = next((c for c in col if c.isspace() or unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)
        if bad is not None:
            raise InputError(path, number, f"{name} {col!r} contains the character U+{ord(bad):04X}")
    return cols
