"""ECB+ only: the usual topic split, and the converter from the public ECB+ 1.0 release to a labelled collection.

Nothing in the engine reads ECB+ ids; this module is the one place that knows ECB+'s conventions, and
only ``python -m hybrid.data ecbplus`` and the bundled training set's builder use it.
"""

from __future__ import annotations

#: The usual ECB+ split (Cybulska & Vossen 2015): dev topics, test topics 36-45, train the rest.
DEV_TOPICS = frozenset({2, 5, 12, 18, 21, 23, 34, 35})
TEST_TOPICS = frozenset(range(36, 46))


def split_of(topic: int) -> str:
    """``train``, ``dev`` or ``test`` for an ECB+ topic number."""
    return "test" if topic in TEST_TOPICS else "dev" if topic in DEV_TOPICS else "train"
