"""Context and first-stage pair features on hand-made pairs."""

from __future__ import annotations

import math

import pytest

from features.annotate import MentionRecord
from features.pairs import context as X
from features.pairs import first_stage as F
from ltr.batch import standalone_pair


def rec(mention: str, context: str, rid: str = "q:0#0") -> MentionRecord:
    pid = rid.split("#")[0]
    start = context.find(mention)
    return MentionRecord(id=rid, passage_id=pid, doc_id=pid.split(":")[0], start=start, end=start + len(mention),
                         mention=mention, kind="event", tag="ACTION_OCCURRENCE", source="gold", chain=None,
                         context=context)


def value(group, name: str, q: MentionRecord, c: MentionRecord, **kw) -> float:
    ctx = standalone_pair(q, c, **kw)
    return group.value(name, ctx.query.record, ctx.candidate, ctx)


BACKGROUND = ["Stocks fell on Monday.", "The team won the final.", "Rain is expected.", "The earthquake shook Chile."]


def test_context_cosine():
    q = rec("earthquake", "A strong earthquake struck Yushu in Qinghai.")
    same = rec("quake", "A strong earthquake struck Yushu in Qinghai.", "c:0#0")
    other = rec("won", "The team won the final.", "c:0#0")
    assert value(X.GROUP, "context_cosine", q, same, candidate_doc=BACKGROUND) == pytest.approx(1.0)
    assert value(X.GROUP, "context_cosine", q, other, candidate_doc=BACKGROUND) == 0.0


def test_mention_terms_in_context_and_document():
    q = rec("Yushu earthquake", "The Yushu earthquake destroyed the town.")
    c = rec("quake", "The quake destroyed homes.", "c:0#0")
    assert value(X.GROUP, "mention_in_context", q, c) == 0.0
    with_doc = value(X.GROUP, "mention_in_document", q, c, candidate_doc=["Yushu lies in Qinghai."] + BACKGROUND[:3])
    assert 0.0 < with_doc < 1.0
    both = value(X.GROUP, "mention_in_document", q, c, candidate_doc=["A Yushu earthquake."] + BACKGROUND)
    assert both == pytest.approx(1.0)
    assert value(X.GROUP, "candidate_in_query_document", q, c, query_doc=["The quake was strong."]) == 1.0


def test_document_cosine_prefers_the_same_event():
    q = rec("earthquake", "The earthquake destroyed the town.")
    c = rec("quake", "The quake destroyed homes.", "c:0#0")
    near = value(X.GROUP, "document_cosine", q, c, query_doc=["Yushu Qinghai April"],
                 candidate_doc=["Yushu Qinghai rescue"])
    far = value(X.GROUP, "document_cosine", q, c, query_doc=["Yushu Qinghai April"],
                candidate_doc=["Sichuan Wenchuan May"])
    assert near > far


def test_rarer_candidate_mentions_have_higher_idf():
    q = rec("earthquake", "The earthquake destroyed the town.")
    rare = value(X.GROUP, "candidate_mention_idf", q, rec("Qinghai", "Qinghai was hit.", "c:0#0"),
                 candidate_doc=BACKGROUND)
    common = value(X.GROUP, "candidate_mention_idf", q, rec("The", "The town was hit.", "c:0#0"),
                   candidate_doc=BACKGROUND)
    assert rare > common


def test_first_stage_features():
    q, c = rec("earthquake", "An earthquake."), rec("quake", "A quake.", "c:0#0")
    kw = dict(score=5.0, rank=4, top_score=10.0)
    assert value(F.GROUP, "fs_score", q, c, **kw) == 5.0
    assert value(F.GROUP, "fs_reciprocal_rank", q, c, **kw) == 0.25
    assert value(F.GROUP, "fs_log_rank", q, c, **kw) == pytest.approx(math.log(4))
    assert value(F.GROUP, "fs_score_ratio", q, c, **kw) == 0.5
    assert value(F.GROUP, "fs_score_gap", q, c, **kw) == 5.0


def test_document_cosine_is_remembered_per_query_and_candidate_document_view():
    """document_cosine is computed once per (query, candidate document view): pairs of one query sharing a document
    get the cosine of their own documents, and another document view is never answered from the memo."""
    from dataclasses import replace

    from features.pairs.views import cosine

    q = rec("earthquake", "The earthquake shook Chile on Monday.")
    near = standalone_pair(q, rec("quake", "A quake shook Chile.", rid="c:0#0"),
                           candidate_doc=["Chile counted the dead on Monday."], query_doc=BACKGROUND)
    far = standalone_pair(q, rec("won", "The team won the final.", rid="d:0#0"), candidate_doc=BACKGROUND[:2],
                          query_doc=BACKGROUND)
    far = replace(far, query=near.query)  # one query, two candidate documents
    stats = near.query.stats

    def direct(ctx) -> float:
        return cosine(X.document_vector(ctx.query.doc, stats), X.document_vector(ctx.doc, stats))

    for ctx in (near, far, near, far):
        assert X.GROUP.value("document_cosine", ctx.query.record, ctx.candidate, ctx) == direct(ctx)
    assert direct(near) != direct(far)


def test_context_vectors_made_once_per_text_and_stats():
    # the mentions of one sentence share its context: one vector per text under one stats object, another under other
    # stats (document frequencies differ), equal to tfidf_vector's
    from features.pairs.views import CountingTermStats, RecordView, tfidf_vector

    text = "A strong earthquake struck Yushu in Qinghai."
    stats, other = CountingTermStats([text, *BACKGROUND]), CountingTermStats([text, text, "Yushu."])
    quake, struck = RecordView(rec("earthquake", text)), RecordView(rec("struck", text, "q:0#1"))
    vector = X.context_vector(quake, stats)
    assert vector == tfidf_vector(stats, text) and X.context_vector(struck, stats) is vector
    elsewhere = X.context_vector(RecordView(rec("Yushu", text, "q:0#2")), other)
    assert elsewhere == tfidf_vector(other, text) and elsewhere != vector
