"""The candidate's neighbours in its own list (group ``neighbours``): the cluster hypothesis as features.

Every other group scores a candidate against the query alone. But the passages that mention the query's
event or entity mention the *same* thing, so they resemble each other: a candidate that the other
top-ranked candidates resemble is more likely relevant than an equally scored one that stands apart (van
Rijsbergen's cluster hypothesis; score regularisation in Diaz 2005). On raw text this matters most where
annotation is weakest: a passage whose coreferring mention was missed or mis-typed still has the wording
of the event's other passages.

All features are computed inside one query's candidate list (first-stage order), from raw text and the
matched mention only, so they need no annotation beyond what the first stage used:

* ``nb_passage_top5`` / ``nb_passage_top20``: mean TF-IDF cosine of the candidate's passage to the
  passages of the 5 / 20 best *other* candidates;
* ``nb_document_top5``: mean TF-IDF cosine of the candidate's document to the documents of the 5 best
  candidates from other documents;
* ``nb_mention_top10``: IDF-weighted share of the candidate mention's terms that the matched mentions of
  the 10 best other candidates contain, averaged over them;
* ``nb_document_hits``: log(1 + the other candidates of the same document in the list);
* ``nb_document_rr``: 1 / the list rank of the document's best passage.

Candidates are compared with the first stage's order, so the values do not depend on the order in which
queries are batched or on the learner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from features.pairs.base import Feature, FeatureProvider, PairBatch, PairContext
from features.pairs.context import document_vector, idf_coverage, mention_terms
from features.pairs.views import PassageView, TermStats, cosine, memo, tfidf_vector

#: How many of the best other candidates each similarity feature averages over.
PASSAGE_NEAR, PASSAGE_FAR, DOCUMENT_NEAR, MENTION_NEAR = 5, 20, 5, 10

_DOCS = {
    "nb_passage_top5": f"mean TF-IDF cosine of the candidate passage to the {PASSAGE_NEAR} best other candidates' "
                       "passages",
    "nb_passage_top20": f"mean TF-IDF cosine of the candidate passage to the {PASSAGE_FAR} best other candidates' "
                        "passages",
    "nb_document_top5": (f"mean TF-IDF cosine of the candidate's document to the documents of the {DOCUMENT_NEAR} best "
                         "candidates from other documents"),
    "nb_mention_top10": (f"IDF-weighted share of the candidate mention's terms found in the matched mentions of the "
                         f"{MENTION_NEAR} best other candidates, averaged over them"),
    "nb_document_hits": "log(1 + the other candidates of the candidate's document in the list)",
    "nb_document_rr": "1 / the list rank of the best candidate of the candidate's document",
}


def passage_vector(passage: PassageView, stats: TermStats) -> dict[str, float]:
    return memo(passage, "tfidf", lambda: tfidf_vector(stats, passage.text))


def _best_others(n: int, k: int) -> list[list[int]]:
    """For each of ``n`` list positions, the ``k`` best other positions (list order is best first)."""
    return [[j for j in range(min(n, k + 1)) if j != i][:k] for i in range(n)]


def support(vectors: np.ndarray, k: int) -> np.ndarray:
    """For each row of a candidate list's ``(n, d)`` vectors (best first), the mean inner product with the
    ``k`` best other rows: the dense form of the passage features, for providers that hold vectors."""
    vectors = np.asarray(vectors, dtype=np.float64)
    sims = vectors @ vectors.T
    return np.array([sims[i, others].mean() if others else 0.0
                     for i, others in enumerate(_best_others(len(vectors), k))])


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class NeighboursProvider(FeatureProvider):
    """Features of a candidate relative to the other candidates of its query's list (see module docs)."""

    group = "neighbours"
    description = "how much the other top candidates resemble the candidate (the cluster hypothesis)"

    def features(self) -> dict[str, Feature]:
        return {name: Feature(name, self.group, doc) for name, doc in _DOCS.items()}

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        columns = list(_DOCS)
        out = np.zeros((len(batch.pairs), len(columns)), dtype=np.float32)
        for q, query in enumerate(batch.queries):
            lo, hi = batch.offsets[q], batch.offsets[q + 1]
            if hi > lo:
                out[lo:hi] = self._one_list(batch.pairs[lo:hi], query.stats)
        return out[:, [columns.index(n) for n in names]]

    @staticmethod
    def _one_list(pairs: list[PairContext], stats: TermStats) -> np.ndarray:
        n = len(pairs)
        passages = [passage_vector(p.passage, stats) for p in pairs]
        docs = [p.doc.id for p in pairs]
        mention_idf = [mention_terms(p.candidate, stats) for p in pairs]
        mention_sets = [frozenset(m) for m in mention_idf]
        first_of_doc: dict[str, int] = {}
        per_doc: dict[str, int] = {}
        for i, d in enumerate(docs):
            first_of_doc.setdefault(d, i)
            per_doc[d] = per_doc.get(d, 0) + 1
        far = _best_others(n, PASSAGE_FAR)
        mentions = _best_others(n, MENTION_NEAR)
        # each document's best candidate, in list order; one per document, so excluding the candidate's own
        # document drops at most one of the first DOCUMENT_NEAR + 1
        leaders = sorted(first_of_doc.values())[:DOCUMENT_NEAR + 1]
        out = np.zeros((n, len(_DOCS)), dtype=np.float32)
        for i, p in enumerate(pairs):
            sims = [cosine(passages[i], passages[j]) for j in far[i]]
            out[i, 0] = _mean(sims[:PASSAGE_NEAR])
            out[i, 1] = _mean(sims)
            other_docs = [j for j in leaders if docs[j] != docs[i]][:DOCUMENT_NEAR]
            own = document_vector(p.doc, stats)
            out[i, 2] = _mean([cosine(own, document_vector(pairs[j].doc, stats)) for j in other_docs])
            out[i, 3] = _mean([idf_coverage(mention_idf[i], mention_sets[j]) for j in mentions[i]])
            out[i, 4] = math.log1p(per_doc[docs[i]] - 1)
            out[i, 5] = 1.0 / (first_of_doc[docs[i]] + 1)
        return out


PROVIDER = NeighboursProvider()
