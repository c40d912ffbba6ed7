"""Dense mention retrieval: FAISS over one vector per candidate mention, best mention per passage.

A query (marked mention in its sentence) is encoded once; the nearest mention vectors are grouped by
passage, and a passage scores as its best mention ("best mention wins", as in the sparse
:class:`~hybrid.retrieval.sparse.MultiFieldBM25`), keeping that mention's span. As on the sparse side,
the query's own document is excluded and, with ``same_kind``, candidates must be of the query's kind
(or of unknown kind). Both filters are applied after FAISS: the nearest ``k * overfetch`` mentions are
fetched, and the fetch grows fourfold for the queries that still lack ``k`` passages.

Passage vectors (dense indexes built with them, see :mod:`indexes.faiss_index`): the query sentence is
also encoded without markers, mean-pooled (what the off-the-shelf sentence encoder does), and a passage
scores ``best mention score + passage_weight * cos(query sentence, passage)`` (``combine="sum"``, the
default) or ``max(best mention score, passage_weight * cos(...))`` (``combine="max"``). A passage none of whose
mentions was detected (or whose mentions are all of the other kind) is then still retrievable by its
passage vector; passage vectors have no kind, so they are always eligible, and the own document is still
excluded. The candidates are the top ``k`` passages of each side; for ``max`` that is exactly the top ``k``
of the combination. Every candidate is re-scored exactly on both sides (its best eligible mention over all
its rows, its passage vector), so the result does not depend on how much was fetched; ties go by passage
id. A hit keeps its best mention's span (with ``max``: when that mention gives its score; none when the
passage vector does). ``passage_weight=0``, or an index without passage vectors,
is the mention-only retriever exactly.

``combine="sum"`` (the default: measured better than ``max`` on ECB+ dev, raw text) scores ``best mention +
passage_weight * passage`` over the same candidates (a passage with no eligible mention counts its passage
part only); the union of the two top-``k`` lists is then a close approximation of the top ``k`` of the sum,
not an exact one (a passage outside both lists cannot be in the top ``k`` of ``max``, but can of ``sum``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from features.encoder import BiEncoder, EncoderConfig
from hybrid.core.params import DENSE_BATCH_SIZE, DENSE_COMBINE, DENSE_COMBINES, DENSE_OVERFETCH, DENSE_PASSAGE_WEIGHT
from hybrid.core.progress import progress as progress_bar
from hybrid.core.ranking import top_k
from hybrid.core.records import KIND_CODES, Hit, Rankings, Topic
from hybrid.core.stage import Retriever
from indexes.faiss_index import DenseIndex, best_mention_of_passages, best_mention_per_passage

#: Weight of the passage-vector score against the best mention score, and how the two combine: ``sum``
#: (CombSUM of the two cosines, equal weights) beat ``max`` by +0.02-0.03 AP@100 on ECB+ dev with the untrained
#: MiniLM on raw text, and w in 0.75-1.25 are within 0.002 of each other (benchmarks/results/dense-raw.md).
PASSAGE_WEIGHT = DENSE_PASSAGE_WEIGHT
COMBINE = DENSE_COMBINES
DEFAULT_COMBINE = DENSE_COMBINE


def load_query_encoder(index: DenseIndex, encoder: str | Path | BiEncoder | None, device: str | None = None
                       ) -> BiEncoder:
    """The encoder recorded in the index (or the one given), loaded with the index's pooling config."""
    if isinstance(encoder, BiEncoder):
        index.check_encoder(encoder)
        return encoder
    config = EncoderConfig.from_json(index.encoder_info["config"])
    loaded = BiEncoder.load(encoder or index.encoder_info["path"], config=config, device=device)
    index.check_encoder(loaded)
    return loaded


class DenseRetriever(Retriever):
    """Topics -> run over a dense index (see :mod:`indexes.faiss_index`)."""

    def __init__(self, index: str | Path | DenseIndex, encoder: str | Path | BiEncoder | None = None, k: int = 100,
                 same_kind: bool = True, overfetch: int = DENSE_OVERFETCH, batch_size: int = DENSE_BATCH_SIZE,
                 progress: bool = False, device: str | None = None, name: str = "dense",
                 passage_weight: float = PASSAGE_WEIGHT, combine: str = DEFAULT_COMBINE, precision: str | None = None,
                 backend: str | None = None):
        self.index = index if isinstance(index, DenseIndex) else DenseIndex(index)
        self.encoder = load_query_encoder(self.index, encoder, device)
        self.encoder.set_inference(precision, backend)  # None: an encoder given as an object keeps its own
        if passage_weight < 0:
            raise ValueError(f"passage_weight must be >= 0, got {passage_weight}")
        if combine not in COMBINE:
            raise ValueError(f"combine must be one of {COMBINE}, got {combine!r}")
        self.combine = combine
        #: > 0 and the index has passage vectors: passages also score by them (see the module docstring)
        self.passage_weight = float(passage_weight)
        self.uses_passage_vectors = self.passage_weight > 0 and self.index.has_passage_vectors
        self.k, self.same_kind, self.overfetch = k, same_kind, max(1, overfetch)
        self.batch_size, self.progress, self.name = batch_size, progress, name
        self.last_timing: dict[str, float] = {}  # seconds spent encoding / searching in the last search()

    def own_doc(self, topic: Topic) -> str | None:
        if topic.doc_id:
            return topic.doc_id
        return self.index.doc_of_passage(topic.passage_id) if topic.passage_id else None

    def query_kind(self, topic: Topic) -> str | None:
        if topic.kind:
            return topic.kind
        return self.index.kind_of(topic.passage_id, topic.start, topic.end) if topic.passage_id else None

    def search(self, topics: list[Topic], k: int) -> Rankings:
        if not topics:
            return {}
        started = time.perf_counter()
        vectors = self.encoder.encode_queries(topics, batch_size=self.batch_size, progress=self.progress)
        self.last_query_vectors = vectors
        sentences = self.query_sentences(topics) if self.uses_passage_vectors else None
        encoded = time.perf_counter()
        owns = np.array([self.index.doc_number.get(self.own_doc(t) or "", -1) for t in topics])
        kinds = [KIND_CODES.get(self.query_kind(t)) if self.same_kind else None for t in topics]
        mentions: dict[int, list[tuple[str, float, int, int]]] = {}  # per topic: best mention per passage
        pending = list(range(len(topics)))
        fetch = k * self.overfetch
        bar = progress_bar(desc=f"{self.name} search", unit="query", total=len(topics), enabled=self.progress)
        while pending:
            fetch = min(fetch, self.index.size)
            _, rows = self.index.search(vectors[pending], fetch)
            still = []
            for j, qi in enumerate(pending):
                found = best_mention_per_passage(self.index, vectors[qi], rows[j], int(owns[qi]), kinds[qi] or None, k)
                if len(found) < k and fetch < self.index.size:
                    still.append(qi)
                    continue
                mentions[qi] = found
                bar.update(1)
            pending, fetch = still, fetch * 4
        bar.close()
        # qids in the order their searches finished, as before (the writers keep a run's order)
        run: Rankings = {topics[qi].qid: _as_hits(found) if sentences is None else [] for qi, found in mentions.items()}
        if sentences is not None:
            # own document: at most max_doc_passages of the nearest passages are dropped
            _, nearest = self.index.search_passages(sentences, k + self.index.max_doc_passages)
            for qi, topic in enumerate(topics):
                run[topic.qid] = self._with_passages(vectors[qi], sentences[qi], [m[0] for m in mentions[qi]],
                                                     int(owns[qi]), kinds[qi] or None, k, nearest[qi])
        self.last_timing = {"encode": encoded - started, "search": time.perf_counter() - encoded}
        return run

    def query_sentences(self, topics: list[Topic]) -> np.ndarray:
        """The unmarked query sentences' vectors (compared with the passage vectors).

        A sentence that is the text of an indexed passage (query by example: the topic names its passage and the
        text hash matches) takes that passage's stored vector: with one model for both sides it is the same
        forward pass over the same tokens, so encoding it again would only repeat the work (the two agree to
        float rounding, ~1e-7). Other sentences, or an encoder with separate query and passage models, are encoded.
        """
        index, encoder = self.index, self.encoder
        if index.passage_vectors.d != encoder.hidden:
            raise ValueError(f"{index.path}: passage vectors have {index.passage_vectors.d} dimensions, "
                             f"the encoder's sentences {encoder.hidden}")
        out = np.zeros((len(topics), encoder.hidden), dtype=np.float32)
        stored = {}
        if encoder.query_model is encoder.passage_model:
            stored = {i: n for i, t in enumerate(topics)
                      if (n := index.stored_passage_number(t.passage_id, t.text)) is not None}
        if stored:
            out[list(stored)] = index.passage_vectors.reconstruct_batch(np.fromiter(stored.values(), dtype=np.int64))
        rest = [i for i in range(len(topics)) if i not in stored]
        if rest:
            out[rest] = encoder.encode_texts([topics[i].text for i in rest], "query", batch_size=self.batch_size)
        return out

    def _with_passages(self, query: np.ndarray, sentence: np.ndarray, mention_ids: list[str], own: int,
                       kind: int | None, k: int, nearest: np.ndarray | None = None) -> list[Hit]:
        """Top ``k`` by ``max(best mention, passage_weight * passage vector)`` (see the module docstring).

        ``mention_ids``: the passages the mention vectors found. ``nearest``: the passage numbers FAISS found
        nearest to ``sentence`` (``k + max_doc_passages`` of them).
        """
        index = self.index
        if nearest is None:  # own document: at most max_doc_passages of the nearest passages are dropped
            nearest = index.search_passages(sentence[None, :], k + index.max_doc_passages)[1][0]
        numbers = nearest[nearest >= 0]
        if own >= 0:
            numbers = numbers[index.passage_doc[numbers] != own]
        numbers = numbers[:k]
        candidates = sorted(set(numbers.tolist()) | {index.passage_number[pid] for pid in mention_ids})
        if not candidates:
            return []
        numbers = np.asarray(candidates, dtype=np.int64)
        plain = self.passage_weight * index.passage_exact_scores(sentence, numbers)
        bests = best_mention_of_passages(index, query, numbers, kind)
        has = np.fromiter((best is not None for best in bests), dtype=bool, count=len(bests))
        mention = np.array([best[0] if best is not None else 0.0 for best in bests], dtype=np.float64)
        if self.combine == "sum":  # a passage with no eligible mention counts its passage part only
            scores, spans = plain + mention, has
        else:  # the best mention when it gives the score (ties: the mention), else the passage vector
            spans = has & (mention >= plain)
            scores = np.where(spans, mention, plain)
        ids, values = index.passage_ids, scores.tolist()
        hits = []
        for i in top_k(scores, lambda i: ids[numbers[i]], k):
            span = (bests[i][1], bests[i][2]) if spans[i] else (-1, -1)
            hits.append(_hit(ids[numbers[i]], values[i], *span))
        return hits


def _hit(pid: str, score: float, start: int, end: int) -> Hit:
    """A passage hit with the span of its best mention (``start`` < 0: none)."""
    if start < 0:
        return Hit(docid=pid, score=score)
    return Hit(docid=pid, score=score, mention_start=start, mention_end=end, mention_id=f"{pid}#{start}-{end}")


def _as_hits(found: list[tuple[str, float, int, int]]) -> list[Hit]:
    """:func:`~indexes.faiss_index.best_mention_per_passage`'s ``(passage id, score, start, end)`` as hits."""
    return [_hit(pid, score, start, end) for pid, score, start, end in found]
