"""Errors a user can meet, each naming the file, the line and the problem."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Malformed user input: carries the file, 1-based line number and a reason."""

    def __init__(self, path: str | Path | None, line: int | None, reason: str):
        self.path = str(path) if path is not None else None
        self.line = line
        self.reason = reason
        where = self.path or "<input>"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {reason}")


class OutputExistsError(InputError, FileExistsError):
    """An output exists and may not be replaced (no ``--overwrite``): one line naming it, and still the
    ``FileExistsError`` that library callers of the writers caught before the output policy."""


class ConfigError(InputError):
    """A configuration file or option is invalid (unknown key, bad value)."""


class IndexMissingError(FileNotFoundError):
    """An index directory does not exist or is not a complete hybrid index."""
