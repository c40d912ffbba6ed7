"""Mention (passage) runs aggregated to documents, so this project's mention retrieval can be compared
with the event-collection rankers on the same document judgments."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from hybrid.core.records import Hit, Rankings


def to_documents(hits: list[Hit], doc_of: Callable[[str], str | None], how: str = "max",
                 exclude: Iterable[str] = ()) -> list[Hit]:
    """Passage hits -> document hits: the best passage's score (``max``) or the sum over passages (``sum``).

    ``doc_of`` gives a passage's document as the collection records it (the index's ``doc_id``); a passage id is
    never parsed for it (``<doc>:<n>`` is one collection's convention, not the engine's)."""
    if how not in ("max", "sum"):
        raise ValueError(f"aggregation must be max or sum, got {how!r}")
    excluded = set(exclude)
    scores: dict[str, float] = {}
    for hit in hits:
        doc = doc_of(hit.docid)
        if doc is None:
            raise ValueError(f"passage {hit.docid!r} of a run has no document in the collection")
        if doc in excluded:
            continue
        if how == "max":
            scores[doc] = max(scores.get(doc, float("-inf")), hit.score)
        else:
            scores[doc] = scores.get(doc, 0.0) + hit.score
    return sorted((Hit(docid=d, score=s) for d, s in scores.items()), key=lambda h: (-h.score, h.docid))


def combsum(runs: list[list[Hit]], k: int = 1000) -> list[Hit]:
    """CombSUM of max-normalised document runs (one per seed mention of a k-seed query)."""
    total: dict[str, float] = {}
    for hits in runs:
        if not hits:
            continue
        best = max(h.score for h in hits)
        for h in hits:
            total[h.docid] = total.get(h.docid, 0.0) + (h.score / best if best > 0 else 0.0)
    return sorted((Hit(docid=d, score=s) for d, s in total.items()), key=lambda h: (-h.score, h.docid))[:k]


def documents_run(passage_runs: Mapping[str, list[list[Hit]]], exclude: Mapping[str, set[str]],
                  doc_of: Callable[[str], str | None], how: str = "max", k: int = 1000) -> Rankings:
    """qid -> one passage run per seed -> one document run per qid (aggregated by ``doc_of``, then CombSUM over
    seeds)."""
    return {qid: combsum([to_documents(h, doc_of, how, exclude=exclude.get(qid, ())) for h in runs], k)
            for qid, runs in passage_runs.items()}
