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

__all__ = ["Run", "System", "attach_spans", "evaluate", "list_recipes", "open_index", "qrels", "system", "topics"]


def __getattr__(name: str):
    if name in __all__:
        from hybrid import api  # deferred: `import hybrid` stays cheap (no JVM, no torch) until the API is used

        return getattr(api, name)
    raise AttributeError(f"module 'hybrid' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
