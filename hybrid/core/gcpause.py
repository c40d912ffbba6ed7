"""Keeping Python's cyclic garbage collector off the long-lived objects of feature extraction.

Feature extraction keeps millions of acyclic objects alive (passage and record views, decoded mention records,
memoised sets, cached for the process's life): each time they grow by a quarter, CPython ran a full collection over
the whole heap, which on 300 ECB+ dev queries found under 50 unreachable objects a pass but took 3.8 s of the LTR
stage's 14 s, and merely pausing the collector moves that cost to the first collections after the pause, which
must scan every object made during it once more.

:func:`paused_collector` therefore (1) makes no automatic collection inside the block, by setting the collector's
first threshold to 0 rather than calling ``gc.disable()`` (libraries re-enable the collector on their own: srsly,
which loads spaCy's pipelines, calls ``gc.enable()`` after every read; none of them touch the thresholds), and
(2) on leaving, moves every tracked object into the permanent generation (``gc.freeze()``), which later collections
skip. Reference counting still frees every object that is not in a cycle, frozen or not; what is given up is the
collection of reference cycles among objects alive at that moment that die later (``gc.unfreeze()`` hands them back
to the collector; until then even ``gc.collect()`` skips them). Values computed are the same either way. Measured
cost of that trade: four hybrid-dense-net searches of the same 100 ECB+ dev topics in one process (Python API)
left nothing for ``gc.collect()`` to find after each, and peak memory grew alike with and without the freeze
(3.5 -> 5.0 GB and 4.0 -> 5.0 GB: the process's memoised values, not leaked cycles).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()  # the thresholds the outermost pause replaced


@contextmanager
def paused_collector() -> Iterator[None]:
    """No automatic cyclic collection inside the block; on leaving it, the objects alive are frozen out of later
    collections and the thresholds found on entering are restored. Nested or concurrent blocks share one pause,
    ended by the last to leave."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(0)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                gc.set_threshold(*_saved)
