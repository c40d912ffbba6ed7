"""Work handed to a worker thread while this thread goes on: for Java calls, which pyjnius makes without the GIL.

A batch search or feature extraction in Java (``hybrid.core.java``) holds no Python lock while it runs, so Python
work done meanwhile in the calling thread runs beside it, on another core when there is one. The worker must touch
no Python state that the calling thread changes meanwhile: hand it the prepared inputs (query texts, candidate ids),
not objects whose caches the caller fills.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def in_background(fn: Callable[..., T], *args: Any, name: str = "background") -> Callable[[], T]:
    """Start ``fn(*args)`` in a worker thread; the returned function waits for its result (raising its error)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    try:
        future = pool.submit(_detaching, fn, *args)
    finally:
        pool.shutdown(wait=False)  # the submitted call still runs; the thread ends with it
    return future.result


def _detaching(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, then the worker thread detached from the JVM if it made Java calls: a thread that pyjnius
    attached and that ends attached leaves a Java thread behind for the rest of the process (one per worker; a
    dense build of a million passages starts ~250). Detaching a thread that never called Java does nothing."""
    try:
        return fn(*args)
    finally:
        jnius = sys.modules.get("jnius")
        if jnius is not None:
            jnius.detach()
