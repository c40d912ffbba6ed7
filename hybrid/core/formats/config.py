"""Configuration files: TOML parsed as data (``tomllib``), checked against a dataclass schema.

Configs are never executed (no ``eval``, no pickle, no YAML tags). Every key must be a field of
the target dataclass: a misspelt key (``k_1`` for ``k1``) would otherwise be silently ignored and
the run would use a default the user thinks they changed. Unknown keys, wrong types and missing
required keys are :class:`~hybrid.core.errors.ConfigError`\\ s naming the file and (where the key is found
in the text) the line.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

from hybrid.core.errors import ConfigError, InputError
from hybrid.core.formats.lines import check_file, near_miss

T = TypeVar("T")


def key_line(text: str, key: str, section: str = "") -> int | None:
    """1-based line on which ``key`` is assigned (inside ``[section]`` when given); None if not found."""
    in_section = not section
    assign = re.compile(rf'^\s*(?:"{re.escape(key)}"|\'{re.escape(key)}\'|{re.escape(key)})\s*=')
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]+", line)
        if header:
            in_section = header.group(1).strip().strip('"') == section
            continue
        if in_section and assign.match(line):
            return number
    return None


def read_config_text(path: str | Path) -> str:
    """A config file's text; a missing file, a directory or invalid UTF-8 is a ConfigError naming the line."""
    path = Path(path)
    try:
        check_file(path)
    except InputError as error:
        raise ConfigError(path, None, error.reason) from None
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(path, line, "invalid UTF-8") from None


#: How deep tables and arrays of a config may nest (recipes use 3-4 levels): deeper is refused before anything
#: walks it (Python's TOML parser recurses per level and would die with a RecursionError).
MAX_TOML_DEPTH = 32


def toml_loads(text: str, path: str | Path | None = None) -> dict[str, Any]:
    """``tomllib.loads`` for every config the project reads: TOMLDecodeError passes through (each caller names the
    line its way); absurd nesting is a ConfigError naming the file instead of a RecursionError."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise ConfigError(path, None, f"invalid TOML: nested too deeply (more than {MAX_TOML_DEPTH} levels of "
                                      "tables or arrays)") from None
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_TOML_DEPTH:
            raise ConfigError(path, None, f"invalid TOML: nested too deeply (more than {MAX_TOML_DEPTH} levels of "
                                          "tables or arrays)")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return data


def load_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed table and the raw text (for line numbers); syntax errors name the line."""
    path = Path(path)
    text = read_config_text(path)
    try:
        return toml_loads(text, path), text
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "invalid TOML"
        line = int(match.group(1)) if match else None
        raise ConfigError(path, line, f"invalid TOML: {reason}") from None


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def _convert(value: Any, kind: Any, fail: typing.Callable[[str], ConfigError], path: Path, text: str,
             section: str) -> Any:
    """Check ``value`` against the annotation ``kind`` (no silent coercion beyond int -> float)."""
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        for option in options:
            try:
                return _convert(value, option, fail, path, text, section)
            except ConfigError:
                continue
        raise fail(f"must be {' or '.join(_type_name(o) for o in options if o is not type(None))}, got {value!r}")
    if kind is type(None):
        raise fail("cannot be null")
    if origin is Literal:
        if value not in typing.get_args(kind):
            raise fail(f"must be one of {list(typing.get_args(kind))}, got {value!r}")
        return value
    if origin in (list, tuple) or kind in (list, tuple):
        if not isinstance(value, list):
            raise fail(f"must be a list, got {type(value).__name__}")
        args = typing.get_args(kind)
        item = args[0] if args else Any
        items = [_convert(v, item, fail, path, text, section) for v in value]
        return tuple(items) if (origin or kind) is tuple else items
    if origin is dict or kind is dict:
        if not isinstance(value, dict):
            raise fail(f"must be a table, got {type(value).__name__}")
        return value
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise fail(f"must be a table, got {type(value).__name__}")
        return from_dict(kind, value, path, text, section)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind in (bool, int, float, str):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise fail(f"must be {kind.__name__}, got {type(value).__name__} {value!r}")
        return value
    raise fail(f"has an unsupported type {_type_name(kind)}")


def from_dict(cls: type[T], data: dict[str, Any], path: str | Path | None = None, text: str = "",
              section: str = "") -> T:
    """Build dataclass ``cls`` from a TOML table; unknown keys, bad types and missing keys are errors."""
    path = Path(path) if path is not None else None
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    prefix = f"{section}." if section else ""
    values: dict[str, Any] = {}
    for key, value in data.items():
        line = key_line(text, key, section) if text else None
        if key not in fields:
            guess = near_miss(key, fields)
            hint = f"; did you mean {guess!r}?" if guess else f"; known keys: {', '.join(sorted(fields))}"
            raise ConfigError(path, line, f"unknown key {prefix + key!r}{hint}")

        def fail(reason: str, key: str = key, line: int | None = line) -> ConfigError:
            return ConfigError(path, line, f"{prefix}{key} {reason}")

        values[key] = _convert(value, hints[key], fail, path, text, f"{prefix}{key}")
    missing = [name for name, f in fields.items() if name not in values and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ConfigError(path, None, f"missing required key(s) {', '.join(prefix + m for m in missing)}")
    try:
        return cls(**values)
    except InputError as exc:  # the dataclass's own validation (__post_init__) naming no file
        raise ConfigError(path, exc.line, f"{section or cls.__name__}: {exc.reason}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(path, None, f"{section or cls.__name__}: {exc}") from None


def load_config(path: str | Path, cls: type[T], section: str | None = None) -> T:
    """Read ``path`` (TOML) into dataclass ``cls``; ``section`` picks one table of the file."""
    data, text = load_toml(path)
    if section is not None:
        if section not in data or not isinstance(data[section], dict):
            raise ConfigError(path, None, f"no [{section}] table")
        data = data[section]
    return from_dict(cls, data, path, text, section or "")
