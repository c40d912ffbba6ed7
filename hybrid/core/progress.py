"""One progress-bar style for every command: :func:`progress` (tqdm underneath).

Every bar names what it counts (``query``, ``passage``, ``step``... never tqdm's ``it``), shows a total
when one is known, and prints to stderr in one format, so the commands' bars read alike. Commands turn
bars off with ``--quiet`` (:func:`hybrid.cli.common.add_quiet`), which reaches here as ``enabled=False``.

Nested bars (a recipe's bar around its retriever's bar, a command's bar around an encoder's) are the
case tqdm gets wrong in a log file: an inner bar moves the cursor with ``ESC [A`` escape codes, which a
file or a pipe shows as ``[A`` garbage. So a bar opened while another is open is shown only when stderr
is a terminal, and then it is cleared when it closes (``leave=False``); in a log only the outermost bar
prints, and it refreshes at most every :data:`LOG_INTERVAL` seconds instead of many times a second.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

#: The one format: what, how far of how many, the unit, time spent and left, the rate.
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}]"
#: The format when the total is not known in advance (no percentage, no time left).
OPEN_FORMAT = "{desc}: {n_fmt} {unit} [{elapsed}, {rate_fmt}]"
#: Seconds between refreshes when stderr is not a terminal (a log file grows by one line per refresh).
LOG_INTERVAL = 30.0

_lock = threading.Lock()
_open = 0


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


class Bar(tqdm):
    """A tqdm bar that counts how many bars are open, so that nested bars can be told apart."""

    def __init__(self, *args: Any, **kwargs: Any):
        global _open
        with _lock:
            self._counted = not kwargs.get("disable", False)
            if self._counted:
                _open += 1
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        global _open
        with _lock:
            if getattr(self, "_counted", False):
                self._counted = False
                _open -= 1

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._release()


def open_bars() -> int:
    """How many shown bars are open now (for tests and for deciding whether a new bar is nested)."""
    return _open


def progress(iterable: Iterable | None = None, *, desc: str, unit: str, total: int | None = None,
             enabled: bool = True, initial: int = 0) -> Bar:
    """A progress bar over ``iterable`` (or updated by hand with ``.update(n)``) in the commands' one style.

    ``unit`` names what one step is (singular: ``"query"``); ``total`` defaults to ``len(iterable)`` when it
    has one. ``enabled=False`` (a command's ``--quiet``) shows nothing.
    """
    if total is None and iterable is not None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    terminal = _stderr_is_terminal()
    nested = open_bars() > 0
    disable = not enabled or (nested and not terminal)
    return Bar(iterable, desc=desc, unit=unit, total=total, initial=initial, disable=disable, leave=not nested,
               file=sys.stderr, dynamic_ncols=terminal, mininterval=0.1 if terminal else LOG_INTERVAL,
               bar_format=BAR_FORMAT if total is not None else OPEN_FORMAT)


def count_records(path: str, limit_bytes: int = 1 << 34) -> int | None:
    """Non-blank lines of a JSONL/TSV file: the total of a bar over its records (None if it is not a readable
    file or is larger than ``limit_bytes``, where counting would cost more than the bar is worth). A pipe or FIFO
    is never opened: it can be read once only, and that read belongs to the command."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            if handle.tell() > limit_bytes:
                return None
            handle.seek(0)
            return sum(1 for line in handle if line.strip())
    except (OSError, TypeError):
        return None
