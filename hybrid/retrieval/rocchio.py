"""Rocchio query expansion on a multi-field BM25 system (the CMR paper's ``qe`` system).

Sankepally et al. (2018) run the ``doc`` system twice: the field terms of the top candidates of the
first pass are added to the query, down-weighted (original terms 0.9, expansion terms 0.1), and the
expanded query is searched again. :class:`RocchioBM25` is a :class:`~hybrid.retrieval.sparse.MultiFieldBM25`
that does exactly that, so the first pass, the query of the original terms (kind filter, own-document
exclusion, one required SHOULD clause) and the exact search + best-mention collapse are the parent's own
code; this module only adds the feedback vector:

* each of the top ``fb_docs`` candidates of the first pass is the *mention* that matched (not its whole
  passage); its ``fb_fields`` texts are analysed with the index's analyzer into (field, term) counts,
  weighted by the term's idf in that field and L2-normalised per candidate (so a long context does not
  outvote a short mention);
* the centroid of those vectors keeps its ``fb_terms`` heaviest entries, scaled so the heaviest has
  weight 1 and multiplied by the system's own weight for that field (a context term counts as much as
  the ``doc`` system lets the context field count: 10%);
* the second pass scores ``original_weight`` x (original query) + ``expansion_weight`` x (expansion
  terms), with the same filter and exclusion: expansion terms may retrieve new candidates.

The second pass goes through the parent's pyjnius :meth:`search_one` (the batch Java searcher takes
query texts, not weighted term vectors); it costs a few milliseconds per query more than the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from features.annotate import FIELDS
from hybrid.core.errors import ConfigError
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.retrieval.query_plan import QueryPlan
from hybrid.retrieval.sparse import DEFAULT_CLAUSES, Clause, MultiFieldBM25, count_terms
from indexes.lucene import parse_mention_doc_id
from indexes.sparse_index import SparseIndex

DEFAULT_FB_FIELDS = ("mention", "context")
#: Feedback passages, expansion terms, and the weights of the original query and of the expansion terms.
FB_DOCS, FB_TERMS, ORIGINAL_WEIGHT, EXPANSION_WEIGHT = 10, 20, 0.9, 0.1


@dataclass(frozen=True)
class ExpansionTerm:
    field: str
    term: str  # as the index stores it (analysed)
    weight: float  # boost in the second pass, expansion_weight already applied


class RocchioBM25(MultiFieldBM25):
    """Two-pass Rocchio expansion over the clauses of a :class:`MultiFieldBM25` system."""

    def __init__(self, index: SparseIndex, clauses: list[Clause] | str = DEFAULT_CLAUSES, same_kind: bool = True,
                 k1: float = BM25_K1, b: float = BM25_B, fb_docs: int = FB_DOCS, fb_terms: int = FB_TERMS,
                 fb_fields: tuple[str, ...] | list[str] = DEFAULT_FB_FIELDS, original_weight: float = ORIGINAL_WEIGHT,
                 expansion_weight: float = EXPANSION_WEIGHT, k: int = 100, threads: int = 1, progress: bool = False):
        super().__init__(index, clauses, same_kind=same_kind, k1=k1, b=b, k=k, threads=threads, progress=progress)

        if fb_docs < 1 or fb_terms < 0:
            raise ConfigError(None, None, f"Rocchio needs fb_docs >= 1 and fb_terms >= 0, got {fb_docs}, {fb_terms}")
        if not (original_weight > 0 and expansion_weight >= 0):
            raise ConfigError(None, None, "Rocchio needs original_weight > 0 and expansion_weight >= 0")
        unknown = [f for f in fb_fields if f not in FIELDS]
        if unknown or not fb_fields:
            raise ConfigError(None, None, f"unknown feedback field(s) {unknown}; fields are {FIELDS}")
        self.fb_docs, self.fb_terms, self.fb_fields = fb_docs, fb_terms, tuple(fb_fields)
        self.original_weight, self.expansion_weight = original_weight, expansion_weight
        self.expansions: dict[str, list[ExpansionTerm]] = {}  # of the last search, by qid
        self._df: dict[tuple[str, str], int] = {}
        self.name = "rocchio"

    # -- feedback ---------------------------------------------------------------------------------------

    def field_weight(self, field: str) -> float:
        """How much the system lets ``field`` count: the largest weight of a clause into it (1 if none)."""
        weights = [c.weight for c in self.clauses if c.field == field and c.weight > 0]
        return max(weights) if weights else 1.0

    def _idf(self, field: str, term: str) -> float:
        key = (field, term)
        if key not in self._df:
            reader = self._exact_searcher().getIndexReader()
            self._df[key] = int(reader.docFreq(self.lucene.Term(field, term)))
        n = self._exact_searcher().getIndexReader().numDocs()
        df = self._df[key]
        return math.log(1 + (n - df + 0.5) / (df + 0.5))  # Lucene's BM25 idf

    def feedback_vector(self, hits: list[Hit]) -> dict[tuple[str, str], float]:
        """Centroid of the L2-normalised tf-idf vectors of the hits' matched mentions (feedback fields)."""
        centroid: dict[tuple[str, str], float] = {}
        used = 0
        for hit in hits[: self.fb_docs]:
            record = self._record_of(hit)
            if record is None:
                continue
            vector: dict[tuple[str, str], float] = {}
            for field in self.fb_fields:
                for term, tf in count_terms(self.lucene.analyze(record.field_text(field))).items():
                    vector[(field, term)] = tf * self._idf(field, term)
            norm = math.sqrt(sum(v * v for v in vector.values()))
            if norm == 0:
                continue
            used += 1
            for key, value in vector.items():
                centroid[key] = centroid.get(key, 0.0) + value / norm
        return {key: value / used for key, value in centroid.items()} if used else {}

    def _record_of(self, hit: Hit):
        """The mention record behind a hit (its matched span), or None for a passage-level hit."""
        if hit.mention_id:
            passage_id, start, end = parse_mention_doc_id(hit.mention_id)
        elif hit.mention_start is not None:
            passage_id, start, end = hit.docid, hit.mention_start, hit.mention_end
        else:
            return None
        for record in self.index.mention_records(passage_id):
            if record.start == start and record.end == end:
                return record
        return None

    def expansion_terms(self, hits: list[Hit]) -> list[ExpansionTerm]:
        """The ``fb_terms`` heaviest centroid entries as second-pass boosts (heaviest = expansion_weight x field
        weight); ties broken by field and term so the expansion is deterministic."""
        if self.expansion_weight == 0 or self.fb_terms == 0:
            return []
        centroid = self.feedback_vector(hits)
        top = sorted(centroid.items(), key=lambda kv: (-kv[1], kv[0]))[: self.fb_terms]
        if not top:
            return []
        heaviest = top[0][1]
        return [ExpansionTerm(field, term, self.expansion_weight * self.field_weight(field) * value / heaviest)
                for (field, term), value in top]

    # -- the second pass ---------------------------------------------------------------------------------

    def build_query(self, plan: QueryPlan):
        """``original_weight`` x the parent's query + the topic's expansion terms, under the parent's filter and
        exclusion (copied from the parent's query, so the two can never disagree)."""
        original = super().build_query(plan)
        expansion = self.expansions.get(plan.topic.qid)
        if original is None or not expansion:
            return original
        lucene = self.lucene
        builder = lucene.Builder()
        builder.add(lucene.BoostQuery(original, float(self.original_weight)), lucene.SHOULD)
        for term in expansion:
            builder.add(lucene.BoostQuery(lucene.term(term.field, term.term), float(term.weight)), lucene.SHOULD)
        for clause in original.clauses().toArray():
            if clause.getOccur().name() in ("FILTER", "MUST_NOT"):
                builder.add(clause.getQuery(), clause.getOccur())
        builder.setMinimumNumberShouldMatch(1)
        return builder.build()

    def search(self, topics: list[Topic], k: int) -> Rankings:
        self.expansions = {}
        first = super().search(topics, max(self.fb_docs, 1))
        self.expansions = {t.qid: self.expansion_terms(first.get(t.qid, [])) for t in topics}
        bar = progress_bar(topics, desc=self.name, unit="query", enabled=self.progress)
        return {t.qid: self.search_one(t, k) for t in bar}
