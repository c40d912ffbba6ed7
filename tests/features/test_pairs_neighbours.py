"""Neighbour (cluster-hypothesis) features on a hand-made candidate list."""

from __future__ import annotations

import math

import pytest

from features.annotate import MentionRecord
from features.pairs.base import PairBatch, PairContext
from features.pairs.neighbours import PROVIDER
from features.pairs.views import CountingTermStats, DocumentView, PassageView, RecordView
from hybrid.core.records import Hit
from ltr.batch import standalone_pair

QUERY = "A strong earthquake struck Yushu in Qinghai province on Wednesday."
#: (passage id, document id, text, matched mention): three passages about the Yushu quake (two of one document)
#: and one about a football final that the first stage ranked in between.
CANDIDATES = [
    ("a:1", "a", "The Yushu earthquake killed hundreds in Qinghai.", "earthquake"),
    ("b:3", "b", "The team won the football final on Sunday.", "won"),
    ("a:2", "a", "Rescuers searched Yushu after the earthquake.", "earthquake"),
    ("c:0", "c", "Qinghai officials said the Yushu quake destroyed schools.", "quake"),
]


def record(pid: str, doc: str, text: str, mention: str) -> MentionRecord:
    start = text.find(mention)
    return MentionRecord(id=f"{pid}#0", passage_id=pid, doc_id=doc, start=start, end=start + len(mention),
                         mention=mention, kind="event", tag=None, source="auto", chain=None, context=text)


def candidate_list() -> PairBatch:
    stats = CountingTermStats([QUERY] + [c[2] for c in CANDIDATES] + ["Stocks fell.", "Rain is expected."])
    query = standalone_pair(record("q:0", "q", QUERY, "earthquake"), record(*CANDIDATES[0]), stats=stats).query
    passages = {pid: PassageView(pid, doc, text, [RecordView(record(pid, doc, text, m))])
                for pid, doc, text, m in CANDIDATES}
    docs = {d: DocumentView(d, [p for p in passages.values() if p.doc_id == d]) for d in "abc"}
    pairs = []
    for rank, (pid, doc, _, _) in enumerate(CANDIDATES, start=1):
        passage = passages[pid]
        hit = Hit(docid=pid, score=10.0 - rank)
        pairs.append(PairContext(query, hit, rank, passage.records[0], passage, docs[doc]))
    query.hits = [p.hit for p in pairs]
    return PairBatch([query], pairs, [0, len(pairs)])


def values() -> dict[str, list[float]]:
    names = list(PROVIDER.features())
    matrix = PROVIDER.compute(candidate_list(), names)
    return {n: matrix[:, i].tolist() for i, n in enumerate(names)}


def test_every_feature_is_documented_and_finite():
    v = values()
    assert set(v) == set(PROVIDER.features())
    assert all(PROVIDER.features()[n].doc for n in v)
    assert all(math.isfinite(x) for col in v.values() for x in col)


def test_the_off_topic_candidate_has_the_least_support():
    v = values()
    for name in ("nb_passage_top5", "nb_passage_top20"):
        assert v[name][1] == min(v[name]), name
        assert v[name][1] < v[name][3], name  # the lower-ranked quake passage is better supported
    assert v["nb_mention_top10"][1] == 0.0


def test_mention_support_counts_other_mentions_only():
    v = values()
    # "earthquake" (a:1) is matched by a:2 only, among three others; "quake" is matched by nobody.
    assert v["nb_mention_top10"][0] == pytest.approx(1 / 3)
    assert v["nb_mention_top10"][3] == 0.0


def test_document_features():
    v = values()
    assert v["nb_document_hits"] == pytest.approx([math.log(2), 0.0, math.log(2), 0.0])
    assert v["nb_document_rr"] == pytest.approx([1.0, 0.5, 1.0, 0.25])
    # b's document resembles none of the others; a and c are about the same quake
    assert v["nb_document_top5"][1] < min(v["nb_document_top5"][0], v["nb_document_top5"][3])


def test_columns_follow_the_requested_names_and_lists_stay_apart():
    batch = candidate_list()
    both = PairBatch(batch.queries * 2, batch.pairs * 2, [0, 4, 8])
    names = ["nb_document_rr", "nb_passage_top5"]
    one, two = PROVIDER.compute(batch, names), PROVIDER.compute(both, names)
    assert two.shape == (8, 2)
    assert (two[:4] == one).all() and (two[4:] == one).all()
