"""Context similarity (group ``context``): do the two sentences and the two documents talk about the same thing?

TF-IDF cosine at sentence and document level, and how much of one mention's wording (IDF-weighted)
the other side's context contains. Documents matter in ECB+: each topic holds two similar events
(two earthquakes, two rehab check-ins), and the whole document separates them better than one
sentence does. Term statistics come from the index (:class:`ltr.resources.LuceneTermStats`,
Anserini's English analyzer and the passage index's document frequencies).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from features.pairs.base import FeatureGroup, PairContext
from features.pairs.views import DocumentView, RecordView, TermStats, cosine, memo, tfidf_vector

GROUP = FeatureGroup("context", "TF-IDF similarity of the two contexts and documents, mention words in context")

#: TermStats -> {context text: its TF-IDF vector under those stats}, the first :data:`CONTEXTS_KEPT` texts of each
#: (first in, first out). The records of one sentence share it as their context, and a passage is a candidate of many
#: queries, each for one of its mentions: 3,159 distinct contexts among the 12,342 records of the 300 ECB+ dev queries'
#: pairs. Keyed weakly by the stats object the vectors were made with: they go with it.
_CONTEXT_VECTORS: WeakKeyDictionary[TermStats, dict[str, dict[str, float]]] = WeakKeyDictionary()
CONTEXTS_KEPT = 65_536


def context_vector(view: RecordView, stats: TermStats) -> dict[str, float]:
    return memo(view, "context_tfidf", lambda: text_vector(stats, view.record.context))


def text_vector(stats: TermStats, text: str) -> dict[str, float]:
    """``tfidf_vector(stats, text)``, made once per text under each stats object (a vector is read, never changed)."""
    vectors = _CONTEXT_VECTORS.get(stats)
    if vectors is None:
        vectors = _CONTEXT_VECTORS[stats] = {}
    vector = vectors.get(text)
    if vector is None:
        if len(vectors) >= CONTEXTS_KEPT:
            del vectors[next(iter(vectors))]
        vector = vectors[text] = tfidf_vector(stats, text)
    return vector


def document_vector(doc: DocumentView, stats: TermStats) -> dict[str, float]:
    return memo(doc, "tfidf", lambda: tfidf_vector(stats, doc.text))


def document_terms(doc: DocumentView, stats: TermStats) -> frozenset[str]:
    return memo(doc, "terms", lambda: frozenset(document_vector(doc, stats)))


def mention_terms(view: RecordView, stats: TermStats) -> dict[str, float]:
    """Analyzed mention terms -> IDF."""
    return memo(view, "mention_idf", lambda: {t: stats.idf(t) for t in stats.analyze(view.mention)})


def idf_coverage(terms: dict[str, float], present: frozenset[str] | dict) -> float:
    total = sum(terms.values())
    return sum(w for t, w in terms.items() if t in present) / total if total > 0 else 0.0


@GROUP.feature
def context_cosine(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """TF-IDF cosine between the query mention's context and the candidate's context."""
    stats = ctx.query.stats
    return cosine(context_vector(q, stats), context_vector(c, stats))


@GROUP.feature
def document_cosine(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """TF-IDF cosine between the query's document and the candidate's document."""
    # Once per (query, candidate document view): a query's candidates share a few documents, and both vectors are
    # memoised on their views, so the cosine of the same two views is the same float.
    key = ("document_cosine", id(ctx.doc))  # the pairs of the query's batch keep the view (and its id) alive
    try:
        return ctx.query.memo[key]
    except KeyError:
        stats = ctx.query.stats
        value = ctx.query.memo[key] = cosine(document_vector(ctx.query.doc, stats), document_vector(ctx.doc, stats))
        return value


@GROUP.feature
def mention_in_context(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """IDF-weighted share of the query mention's terms that occur in the candidate's context."""
    stats = ctx.query.stats
    return idf_coverage(mention_terms(q, stats), context_vector(c, stats))


@GROUP.feature
def mention_in_document(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """IDF-weighted share of the query mention's terms that occur anywhere in the candidate's document."""
    stats = ctx.query.stats
    return idf_coverage(mention_terms(q, stats), document_terms(ctx.doc, stats))


@GROUP.feature
def candidate_in_query_document(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """IDF-weighted share of the candidate mention's terms that occur in the query's document."""
    stats = ctx.query.stats
    return idf_coverage(mention_terms(c, stats), document_terms(ctx.query.doc, stats))


@GROUP.feature
def candidate_mention_idf(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """Mean IDF of the candidate mention's terms (rare names are stronger evidence than ``said``)."""
    terms = mention_terms(c, ctx.query.stats)
    return sum(terms.values()) / len(terms) if terms else 0.0
