"""Phase 6 of the paper: document rankers, one per query representation, all over whole documents.

Each ranker scores every document of the collection (the collections this targets are sub-corpora:
ranking all documents costs one sparse product or one matrix-vector product per query); a document a
ranker does not retrieve scores ``-inf``. The representations:

================  ===========================================================================
ranker            query -> score
================  ===========================================================================
event-name        the name's words, TF-IDF cosine, only documents containing *every* word (the
                  paper's event-name filter); without a name, the seed sentences, unfiltered
name-any          the same query, TF-IDF cosine over all documents (no filter)
place             the event's place (given, or the best related place entity), TF-IDF cosine
entities          the top-10 related entities' words, TF-IDF cosine
ent+pass          the words of their contextual passages, TF-IDF cosine
emb-ent           MiniLM vector of the top-10 entities, cosine with the document's mean MiniLM vector
emb-ent+pass      mean MiniLM vector of the contextual passages, same cosine (*our-light*)
bm25-name, bm25-entities, bm25-ent+pass   BM25 of the same texts over whole documents
ent-match         detected related entities in the document: sum of their CheapEntRel scores present,
                  over the sum of all ten (the mentions as relevance indicators)
================  ===========================================================================

The seeds' own documents (and any ``exclude``) are never retrieved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybrid.collect.collection import Collection
from hybrid.collect.related import EventEvidence, name_documents
from hybrid.core.records import Hit

TFIDF_RANKERS = ("event-name", "name-any", "place", "entities", "ent+pass")
EMBEDDING_RANKERS = ("emb-ent", "emb-ent+pass")
BM25_RANKERS = ("bm25-name", "bm25-entities", "bm25-ent+pass")
RANKERS = (*TFIDF_RANKERS, *EMBEDDING_RANKERS, *BM25_RANKERS, "ent-match")
LIGHT = "emb-ent+pass"


@dataclass
class EventScores:
    """Every ranker's document scores for one event (``-inf``: not retrieved), rows in ``doc_ids`` order."""

    evidence: EventEvidence
    scores: dict[str, np.ndarray]


def _texts(evidence: EventEvidence) -> dict[str, str]:
    top = evidence.top
    return {"name": evidence.event.name or evidence.name_query,
            "entities": " ; ".join(e.text for e in top),
            "ent+pass": " ".join(e.passage for e in top)}


def _retrieved(scores: np.ndarray) -> np.ndarray:
    return np.where(scores > 0, scores, -np.inf)


def score_event(collection: Collection, evidence: EventEvidence, rankers: tuple[str, ...] = RANKERS,
                encoder=None, embeddings: np.ndarray | None = None) -> EventScores:
    """The scores of the named rankers (module docs); embedding rankers need ``encoder`` (and the
    collection's document vectors, computed once and cached on the collection)."""
    unknown = [r for r in rankers if r not in RANKERS]
    if unknown:
        raise ValueError(f"unknown ranker(s) {unknown}; known: {list(RANKERS)}")
    event = evidence.event
    texts = _texts(evidence)
    out: dict[str, np.ndarray] = {}
    for ranker in rankers:
        if ranker == "event-name":
            if event.name:
                mask, scores = name_documents(collection, event.name, event.excluded)
                out[ranker] = np.where(mask, np.maximum(scores, 1e-9), -np.inf)
            else:
                out[ranker] = _retrieved(collection.tfidf_scores(evidence.name_query))
        elif ranker == "name-any":
            out[ranker] = _retrieved(collection.tfidf_scores(texts["name"]))
        elif ranker == "place":
            out[ranker] = _retrieved(collection.tfidf_scores(evidence.place or ""))
        elif ranker in ("entities", "ent+pass"):
            out[ranker] = _retrieved(collection.tfidf_scores(texts[ranker]))
        elif ranker.startswith("bm25-"):
            out[ranker] = _retrieved(collection.bm25_scores(texts[ranker.removeprefix("bm25-")]))
        elif ranker == "ent-match":
            out[ranker] = _retrieved(entity_match(collection, evidence))
        else:
            if encoder is None:
                raise ValueError(f"ranker {ranker!r} needs a sentence encoder")
            docs = embeddings if embeddings is not None else collection.embeddings(encoder)
            if ranker == "emb-ent":
                query = encoder.encode_texts([texts["entities"] or texts["name"]], side="passage")[0]
            else:
                passages = [e.passage for e in evidence.top] or [texts["name"]]
                vectors = encoder.encode_texts(passages, side="passage")
                query = vectors.mean(axis=0)
            query = query / max(float(np.linalg.norm(query)), 1e-12)
            out[ranker] = (docs @ query).astype(np.float64)
    for scores in out.values():
        for doc in event.excluded:
            if doc in collection.row_of:
                scores[collection.row_of[doc]] = -np.inf
    return EventScores(evidence, out)


def entity_match(collection: Collection, evidence: EventEvidence) -> np.ndarray:
    """Share of the top related entities' CheapEntRel mass detected in each document."""
    top = evidence.top
    total = sum(e.score for e in top)
    scores = np.zeros(len(collection.doc_ids), dtype=np.float64)
    if total <= 0:
        return scores
    for i, found in enumerate(collection.doc_entities):
        scores[i] = sum(e.score for e in top if e.key in found) / total
    return scores


def ranking(collection: Collection, scores: np.ndarray, k: int) -> list[Hit]:
    """The top ``k`` retrieved documents (finite scores), best first, ties by document id."""
    finite = np.isfinite(scores)
    rows = np.flatnonzero(finite)
    ids = np.array(collection.doc_ids, dtype=object)[rows]
    order = sorted(range(len(rows)), key=lambda i: (-round(float(scores[rows[i]]), 9), ids[i]))[:k]
    return [Hit(docid=ids[i], score=float(scores[rows[i]])) for i in order]


def matches(collection: Collection, evidence: EventEvidence, doc_id: str) -> dict[str, list[str]]:
    """Which of the top related entities were detected in a document, and in which passages."""
    found = collection.doc_entities[collection.row_of[doc_id]]
    return {e.text: [collection.passages[r].id for r in found[e.key]] for e in evidence.top if e.key in found}
