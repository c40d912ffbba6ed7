"""Kind/type agreement and DiscK-style type-paired features (group ``type``).

Sankepally et al.'s DiscK pairs the mention type with every other feature, because a feature's
value depends on the type: an acronym match is strong evidence for organisations, weak for places.
A linear model cannot learn that interaction by itself, so ``disck_<type>_<feature>`` is the base
string feature when the query's coarse type is ``<type>`` and 0 otherwise (trees can learn the
interaction, but get the query type one-hot features to split on).

Fine tags come from two vocabularies (ECB+ gold tags such as ``HUMAN_PART_PER``/``LOC_GEO`` and the
annotator's ``AUTO_NAME``/``AUTO_DATE``/``AUTO_EVENT``; spaCy labels for spaCy NER). Both are mapped
to one coarse vocabulary. A *generic* class (``name``, ``other``, ``unknown``) agrees with every
class it may hide: agreement means "not known to disagree". That choice keeps the features from
telling annotated passages from unannotated ones (which, in ECB+, would leak relevance: only
annotated sentences are ever judged relevant).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from features.pairs import strings as S
from features.pairs.base import FeatureGroup, PairBatch, PairContext, PairFunction
from features.pairs.views import RecordView

#: feature name -> (the query's coarse type it is about, the string feature it pairs with, or None for the query-type
#: indicator): the features whose value for a query of another type is a constant.
BY_QUERY_TYPE: dict[str, tuple[str, PairFunction | None]] = {}


class TypeGroup(FeatureGroup):
    """The group's features, pair by pair, with the query's coarse type read once per pair: of the query-type
    indicators and DiscK pairs only the pairs of the query's own type call a function (5 of the 30 DiscK features;
    the other 25 are 0 and the indicators 0 or 1 for every candidate of the query). The values are those of the
    features' own functions."""

    def compute(self, batch: PairBatch, names: Sequence[str]) -> np.ndarray:
        out = np.empty((len(batch.pairs), len(names)), dtype=np.float32)
        plans: dict[str, tuple[list[float], list[tuple[int, PairFunction]]]] = {}
        for i, ctx in enumerate(batch.pairs):
            q, c = ctx.query.record, ctx.candidate
            qtype = record_type(q)
            plan = plans.get(qtype)
            if plan is None:
                plan = plans[qtype] = self.plan(names, qtype)
            row, calls = plan
            for j, fn in calls:
                row[j] = fn(q, c, ctx)
            out[i] = row
        return out

    def plan(self, names: Sequence[str], qtype: str) -> tuple[list[float], list[tuple[int, PairFunction]]]:
        """For a query of coarse type ``qtype``: a row holding the values that are the same for every candidate, and
        (column, function) of the others."""
        row, calls = [0.0] * len(names), []
        for j, name in enumerate(names):
            about, base = BY_QUERY_TYPE.get(name, (None, None))
            if about is None:
                calls.append((j, self._features[name].fn))
            elif base is None:
                row[j] = float(qtype == about)
            elif qtype == about:
                calls.append((j, base))
        return row, calls


GROUP = TypeGroup("type", "kind/type agreement and DiscK-style query-type x string-feature pairs")

COARSE_TYPES = ("event", "person", "org", "place", "time", "thing", "number", "name", "other", "unknown")
GENERIC_TYPES = frozenset({"name", "other", "unknown"})
NAME_LIKE = frozenset({"person", "org", "place", "thing"})

#: (prefix of the upper-cased tag without ``AUTO_``, coarse type), first match wins.
TAG_PREFIXES: tuple[tuple[str, str], ...] = (
    ("NEG_ACTION", "event"), ("ACTION", "event"), ("EVENT", "event"),
    ("HUMAN_PART_GPE", "place"), ("HUMAN_PART_FAC", "place"), ("HUMAN_PART_ORG", "org"),
    ("HUMAN_PART_MET", "org"), ("HUMAN_PART_VEH", "thing"), ("HUMAN_PART", "person"),
    ("PERSON", "person"), ("PER", "person"), ("NORP", "org"), ("ORG", "org"),
    ("LOC", "place"), ("GPE", "place"), ("FAC", "place"), ("PLACE", "place"),
    ("TIME", "time"), ("DATE", "time"),
    ("NON_HUMAN", "thing"), ("PRODUCT", "thing"), ("WORK_OF_ART", "thing"), ("LAW", "thing"),
    ("NUMBER", "number"), ("CARDINAL", "number"), ("QUANTITY", "number"), ("MONEY", "number"),
    ("PERCENT", "number"), ("ORDINAL", "number"),
    ("NAME", "name"),
)


@lru_cache(maxsize=4096)
def coarse_type(kind: str | None, tag: str | None) -> str:
    """Coarse type of a mention from its fine tag (any vocabulary) and kind (cached: a pure function of two strings,
    asked once per argument phrase of every document)."""
    t = (tag or "").upper()
    if t.startswith("AUTO_"):
        t = t[5:]
    if t.startswith("ARG") and "_" in t:  # an event argument's role before its entity label: ARG0_PERSON
        t = t.split("_", 1)[1]
    for prefix, coarse in TAG_PREFIXES:
        if t.startswith(prefix):
            return coarse
    if kind == "event":
        return "event"
    return "other" if kind == "entity" else "unknown"


def record_type(view: RecordView) -> str:
    try:  # memo(view, "coarse_type", ...) written out: about a million calls a run
        return view.memo["coarse_type"]
    except KeyError:
        value = view.memo["coarse_type"] = coarse_type(view.kind, view.tag)
        return value


def types_agree(a: str, b: str) -> bool:
    """Same coarse type, or one side generic and the other a type it may hide."""
    if a == b:
        return True
    if "event" in (a, b):
        return {a, b} <= {"event", "unknown"}
    return a in GENERIC_TYPES or b in GENERIC_TYPES


@GROUP.feature
def type_kind_match(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if both mentions are events or both entities (unknown kinds count as matching)."""
    return float(q.kind is None or c.kind is None or q.kind == c.kind)


@GROUP.feature
def type_agree(q: RecordView, c: RecordView, ctx: PairContext) -> float:
    """1 if the coarse types agree (person/org/place/time/thing/number/event; generic classes agree)."""
    return float(types_agree(record_type(q), record_type(c)))


def _query_type_indicator(coarse: str) -> PairFunction:
    def indicator(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        return float(record_type(q) == coarse)

    return indicator


QUERY_TYPES = ("event", "person", "org", "place", "time", "thing")
for _coarse in QUERY_TYPES:
    GROUP.add(f"type_query_{_coarse}", _query_type_indicator(_coarse),
              f"1 if the query mention's coarse type is {_coarse} (lets trees condition on the query type)")
    BY_QUERY_TYPE[f"type_query_{_coarse}"] = (_coarse, None)

#: The string features DiscK pairs with the query type.
DISCK_BASE: dict[str, PairFunction] = {
    "exact": S.mention_exact,
    "containment": S.mention_token_containment,
    "char3": S.mention_char3_dice,
    "head_stem": S.mention_head_stem,
    "acronym": S.mention_acronym,
}


def _paired(coarse: str, base: PairFunction) -> PairFunction:
    def paired(q: RecordView, c: RecordView, ctx: PairContext) -> float:
        return base(q, c, ctx) if record_type(q) == coarse else 0.0

    return paired


for _coarse in QUERY_TYPES:
    for _short, _base in DISCK_BASE.items():
        GROUP.add(f"disck_{_coarse}_{_short}", _paired(_coarse, _base),
                  f"{_base.__name__} when the query is of coarse type {_coarse}, else 0 (DiscK type pairing)")
        BY_QUERY_TYPE[f"disck_{_coarse}_{_short}"] = (_coarse, _base)
