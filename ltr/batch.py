"""Turning (topics, first-stage run) into a :class:`~features.pairs.base.PairBatch`.

Every hit is a passage; the pair's candidate *mention* is the one the first stage matched (hits of
:class:`~hybrid.retrieval.sparse.MultiFieldBM25` carry its span) or, for passage-level first stages
such as plain BM25, the passage mention most like the query mention (same kind, exact string first,
then trigram overlap, then head word). A passage without any mention gets an empty mention record
so that its context and document features still count.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from features.annotate import MentionRecord
from features.pairs.base import PairBatch, PairContext, QueryContext, dice
from features.pairs.strings import mention_strings
from features.pairs.views import CountingTermStats, DocumentView, PassageView, RecordView, TermStats
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from ltr.resources import IndexResources

log = logging.getLogger(__name__)


def empty_record(passage: PassageView) -> RecordView:
    return RecordView(MentionRecord(id=f"{passage.id}#none", passage_id=passage.id, doc_id=passage.doc_id, start=0,
                                    end=0, mention="", kind=None, tag=None, source="none", chain=None,
                                    context=passage.text))


def select_candidate(query: RecordView, passage: PassageView, start: int | None = None,
                     end: int | None = None) -> RecordView:
    """The candidate mention of a hit: the matched span when given, else the passage's most query-like mention."""
    if start is not None:
        for r in passage.records:
            if r.record.start == start and r.record.end == end:
                return r
    pool = [r for r in passage.records if query.kind is None or r.kind in (query.kind, None)] or passage.records
    if not pool:
        return empty_record(passage)
    q = mention_strings(query)

    def likeness(r: RecordView) -> tuple[float, float, float, int]:
        c = mention_strings(r)
        return (float(bool(q.phrase) and q.phrase == c.phrase), dice(q.trigrams, c.trigrams),
                float(q.head_stem == c.head_stem), -r.record.start)

    return max(pool, key=likeness)


def build_batch(resources: IndexResources, topics: Sequence[Topic], run: Rankings, depth: int = 100,
                progress: bool = False) -> PairBatch:
    """Pairs for the top ``depth`` hits of every topic (topics absent from the run get no pairs)."""
    queries, pairs, offsets = [], [], [0]
    missing = 0
    for topic in progress_bar(topics, desc="pairs", unit="query", enabled=progress):
        hits = run.get(topic.qid, [])[:depth]
        qctx = resources.query_context(topic, hits)
        kept = []
        for rank, hit in enumerate(hits, start=1):
            passage = resources.passage(hit.docid)
            if passage is None:
                missing += 1
                continue
            candidate = select_candidate(qctx.record, passage, hit.mention_start, hit.mention_end)
            pairs.append(PairContext(qctx, hit, rank, candidate, passage, resources.document(passage.doc_id)))
            kept.append(hit)
        qctx.hits = kept
        queries.append(qctx)
        offsets.append(len(pairs))
    if missing:
        log.warning("%d run hits name passages that are not in the index %s (skipped)", missing,
                    resources.index.path)
    return PairBatch(queries, pairs, offsets, resources)


def standalone_pair(query: MentionRecord, candidate: MentionRecord, *, query_doc: Sequence[str] = (),
                    candidate_doc: Sequence[str] = (), candidate_passage: Sequence[MentionRecord] = (),
                    score: float = 1.0, rank: int = 1, top_score: float | None = None,
                    stats: TermStats | None = None) -> PairContext:
    """A pair built from records alone, without an index: for explaining or testing features on ad-hoc pairs.

    ``query_doc``/``candidate_doc`` are the *other* passages of each side's document (texts);
    ``candidate_passage`` the other mentions of the candidate's passage; ``stats`` defaults to document
    frequencies counted over every text given.
    """
    q_view, c_view = RecordView(query), RecordView(candidate)
    q_passage = PassageView(query.passage_id, query.doc_id, query.context, [q_view])
    c_passage = PassageView(candidate.passage_id, candidate.doc_id, candidate.context,
                            [c_view, *(RecordView(r) for r in candidate_passage)])

    def doc(own: PassageView, others: Sequence[str]) -> DocumentView:
        extra = [PassageView(f"{own.doc_id}:x{i}", own.doc_id, t, []) for i, t in enumerate(others)]
        return DocumentView(own.doc_id, [own, *extra])

    q_doc, c_doc = doc(q_passage, query_doc), doc(c_passage, candidate_doc)
    if stats is None:
        stats = CountingTermStats([query.context, candidate.context, *query_doc, *candidate_doc])
    hit = Hit(docid=candidate.passage_id, score=score, mention_start=candidate.start, mention_end=candidate.end)
    top = Hit(docid="top", score=score if top_score is None else top_score)
    topic = Topic(qid=f"q:{query.id}", text=query.context, start=query.start, end=query.end, doc_id=query.doc_id,
                  passage_id=query.passage_id, kind=query.kind, tag=query.tag)
    qctx = QueryContext(topic, q_view, q_passage, q_doc, [top, hit] if rank > 1 else [hit], stats)
    return PairContext(qctx, hit, rank, c_view, c_passage, c_doc)
