"""The event-collection stage: event topics in, a run of *documents* out (plus per-event evidence).

:class:`EventCollector` is a :class:`~hybrid.core.stage.Retriever` so recipes and
``hybrid.experiment`` run it like any stage; its topics carry an :class:`~hybrid.collect.events.EventQuery`
(:meth:`EventQuery.to_topic`), its hits are document ids. One ranker scores the documents, or a
``combiner`` (the LambdaMART model of :mod:`hybrid.collect.ltr`, injected by whoever builds the stage)
re-scores the candidates from every ranker's scores.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from hybrid.collect.collection import Collection
from hybrid.collect.events import event_of
from hybrid.collect.features import DEPTH, candidates, feature_matrix
from hybrid.collect.kb import KnowledgeBase
from hybrid.collect.rankers import EMBEDDING_RANKERS, RANKERS, EventScores, matches, ranking, score_event
from hybrid.collect.related import rank_entities
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import Retriever

Combiner = Callable[[np.ndarray], np.ndarray]  # feature matrix -> scores

_COLLECTIONS: dict[tuple[str, str], Collection] = {}


def collection_of(index, kb: KnowledgeBase | None = None, entities_cache: str | Path | None = None,
                  progress: bool = True) -> Collection:
    """The annotated collection of a hybrid index's passages, built once per process (and index, KB)."""
    key = (str(Path(index.path).resolve()), (kb.path or str(id(kb))) if kb else "")
    if key not in _COLLECTIONS:
        collection = Collection.from_index(index)
        if entities_cache and Path(entities_cache).is_file():
            collection.load_entities(entities_cache)
        else:
            collection.annotate(kb=kb, progress=progress)
            if entities_cache:
                collection.save_entities(entities_cache)
        _COLLECTIONS[key] = collection
    return _COLLECTIONS[key]


def load_encoder(name: str = "minilm"):
    """The sentence encoder of the embedding rankers (torch and transformers load only when asked)."""
    import torch

    from features.encoder import BiEncoder  # deferred: importing it loads torch

    torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    return BiEncoder.load(name, device="cpu")


class EventCollector(Retriever):
    """Documents for event queries: one ranker, or a combiner over every ranker's features."""

    def __init__(self, collection: Collection | Callable[[], Collection], ranker: str = "emb-ent+pass",
                 kb: KnowledgeBase | None = None, encoder=None, combiner: Combiner | None = None,
                 rankers: tuple[str, ...] = RANKERS, depth: int = DEPTH, k: int = 100, progress: bool = False):
        if combiner is None and ranker not in RANKERS:
            raise ValueError(f"unknown ranker {ranker!r}; known: {list(RANKERS)}")
        self._collection = collection
        self.ranker, self.kb, self.combiner, self.rankers = ranker, kb, combiner, rankers
        self.depth, self.k, self.progress = depth, k, progress
        self._encoder = encoder
        self.evidence: dict[str, dict] = {}
        self.name = "eventcoll-full" if combiner else f"eventcoll-{ranker}"

    @property
    def collection(self) -> Collection:
        if not isinstance(self._collection, Collection):
            self._collection = self._collection()
        return self._collection

    @property
    def encoder(self):
        needed = self.rankers if self.combiner else (self.ranker,)
        if self._encoder is None and any(r in EMBEDDING_RANKERS for r in needed):
            self._encoder = load_encoder()
        return self._encoder

    def scores(self, topic: Topic) -> EventScores:
        event = event_of(topic)
        evidence = rank_entities(self.collection, event, self.kb)
        rankers = self.rankers if self.combiner else (self.ranker,)
        return score_event(self.collection, evidence, rankers, encoder=self.encoder)

    def search(self, topics: list[Topic], k: int) -> Rankings:
        run: Rankings = {}
        for topic in progress_bar(topics, desc=self.name, unit="event", enabled=self.progress):
            scored = self.scores(topic)
            if self.combiner is None:
                hits = ranking(self.collection, scored.scores[self.ranker], k)
            else:
                rows = candidates(scored, self.depth)
                values = np.full(len(self.collection.doc_ids), -np.inf)
                if len(rows):
                    values[rows] = self.combiner(feature_matrix(scored, rows, self.rankers))
                hits = ranking(self.collection, values, k)
            run[topic.qid] = hits
            self.evidence[topic.qid] = evidence_record(self.collection, scored, hits)
        return run


def evidence_record(collection: Collection, scored: EventScores, hits: list[Hit]) -> dict:
    """What the run rests on, for one event: its related entities and place, and per returned document the
    related entities detected in it with their passages."""
    evidence = scored.evidence
    return {"qid": evidence.event.qid, "place": evidence.place,
            "evidence_passages": [collection.passages[r].id for r in evidence.evidence_rows],
            "related": [e.to_json() for e in evidence.top],
            "documents": [{"docid": h.docid, "rank": n, "score": round(h.score, 6),
                           "matches": matches(collection, evidence, h.docid)} for n, h in enumerate(hits, start=1)]}
