"""hybrid: coreferent mention retrieval on Lucene (Pyserini).

The Python front door (:mod:`hybrid.api`), for notebooks::

    import hybrid
    index = hybrid.open_index("sample")
    system = hybrid.system("multifield-net", index)
    run = system.search(hybrid.topics("sample"))
    hybrid.evaluate(run, "sample")          # as python -m hybrid.search --topics sample prints it
    run.to_dataframe()                      # qid, docno, rank, score, start, end, mention (PyTerrier's columns)
    run.to_dict()                           # {qid: {docno: score}} for ir_measures / ranx

Importing this package is cheap: the names below load :mod:`hybrid.api` on first use, and no JVM starts
and no torch is imported until an index is opened.
"""

from __future__ import annotations

import os

#: OpenMP threads (torch's intra-op pool, FAISS's search) sleep when idle instead of spinning (libgomp's default
#: spins ~300,000 turns before it sleeps). On shared cores a spinning thread burns the time slice its partner
#: needs, and every parallel region (each layer's ops, each of FAISS's 1,024-vector blocks) waits for a thread
#: that is not running: dense-net's 300 ECB+ dev queries on 2 cores with one other busy process encoded in 6-7 s
#: instead of 2.7 s and searched 288k mention vectors in 3.4-5.7 s instead of 1.4 s. The same threads split the
#: same work, so every value is the same bits. libgomp reads it once, when torch or faiss is first imported (after
#: this package); a value already set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["Run", "System", "attach_spans", "evaluate", "list_recipes", "open_index", "qrels", "system", "topics"]


def __getattr__(name: str):
    if name in __all__:
        from hybrid import api  # deferred: `import hybrid` stays cheap (no JVM, no torch) until the API is used

        return getattr(api, name)
    raise AttributeError(f"module 'hybrid' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
