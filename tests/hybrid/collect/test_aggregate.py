"""Passage runs aggregated to documents by the collection's own passage -> document map, never by parsing ids."""

from __future__ import annotations

import pytest

from hybrid.collect.aggregate import documents_run, to_documents
from hybrid.core.records import Hit

#: Passage ids that do not follow ECB+'s ``<doc>:<n>``: "x:1" is in document "b", not "x".
DOCS = {"p1": "a", "p2": "a", "x:1": "b", "p3": "c"}


def test_documents_come_from_the_collection_not_the_id():
    hits = [Hit("p1", 3.0), Hit("x:1", 2.5), Hit("p2", 2.0), Hit("p3", 1.0)]
    assert [(h.docid, h.score) for h in to_documents(hits, DOCS.get)] == [("a", 3.0), ("b", 2.5), ("c", 1.0)]
    assert [(h.docid, h.score) for h in to_documents(hits, DOCS.get, "sum", exclude={"c"})] == [("a", 5.0),
                                                                                               ("b", 2.5)]
    with pytest.raises(ValueError, match="'zz' of a run has no document"):
        to_documents([Hit("zz", 1.0)], DOCS.get)


def test_documents_run_combines_the_seeds():
    runs = {"q": [[Hit("p1", 2.0), Hit("x:1", 1.0)], [Hit("p3", 4.0), Hit("p2", 2.0)]]}
    (hits,) = documents_run(runs, {"q": {"c"}}, DOCS.get).values()
    assert [(h.docid, round(h.score, 3)) for h in hits] == [("a", 2.0), ("b", 0.5)]
