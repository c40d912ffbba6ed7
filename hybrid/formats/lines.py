"""Line-oriented reading shared by every parser: UTF-8 checked per line, 1-based line numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid.errors import InputError


@dataclass
class SkipReport:
    """Collects the lines a ``--skip-bad`` reader dropped, so they can be reported, never silently lost."""

    errors: list[InputError] = field(default_factory=list)

    def add(self, error: InputError) -> None:
        self.errors.append(error)

    def __len__(self) -> int:
        return len(self.errors)

    def summary(self, limit: int = 10) -> str:
        lines = [f"skipped {len(self.errors)} bad line(s):"]
        lines += [f"  {e}" for e in self.errors[:limit]]
        if len(self.errors) > limit:
            lines.append(f"  ... and {len(self.errors) - limit} more")
        return "\n".join(lines)


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for non-blank lines; invalid UTF-8 is an error naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, "file does not exist")
    if path.is_dir():
        raise InputError(path, None, "is a directory, expected a file")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, number, f"invalid UTF-8 at byte {exc.start}") from None
            text = text.rstrip("\r\n")
            if text.strip():
                yield number, text


def parse_json_object(path: str | Path, number: int, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, number, f"broken JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise InputError(path, number, f"expected a JSON object, got {type(value).__name__}")
    return value


def require(path: str | Path, number: int, obj: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise InputError(path, number, f"missing required field '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(path, number, f"field '{key}' must be {names}, got {type(value).__name__}")
    return value


def optional(path: str | Path, number: int, obj: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if obj.get(key) is None:
        return None
    return require(path, number, obj, key, kind)
