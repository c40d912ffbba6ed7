"""Read-only views of mention records, passages and documents, with memoised derived data.

Pair features are cheap set operations once each record's token sets, trigrams, arguments and so
on are known; computing those once per record (not once per pair) is what makes batch extraction
over 100 candidates x thousands of queries affordable in Python. A view wraps one
:class:`~features.annotate.MentionRecord` (or a passage / document) and lets each feature module
memoise what it derives under its own key (:func:`memo`), so modules stay independent.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from features.annotate import MentionRecord
from features.strings import FUNCTION_WORDS, tokens

T = TypeVar("T")


@dataclass(eq=False)
class RecordView:
    """A mention record plus a memo of derived data (token sets, arguments, ...)."""

    record: MentionRecord
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def mention(self) -> str:
        return self.record.mention

    @property
    def kind(self) -> str | None:
        return self.record.kind

    @property
    def tag(self) -> str | None:
        return self.record.tag


@dataclass(eq=False)
class PassageView:
    """A passage of the index with its mention records (as views)."""

    id: str
    doc_id: str
    text: str
    records: list[RecordView]
    memo: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class DocumentView:
    """All passages of one document (or the query text alone when the query is not in the corpus)."""

    id: str
    passages: list[PassageView]
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.passages)

    @property
    def records(self) -> list[RecordView]:
        return [r for p in self.passages for r in p.records]


def memo(view: RecordView | PassageView | DocumentView, key: str, compute: Callable[[], T]) -> T:
    """``view.memo[key]``, computed on first use."""
    try:
        return view.memo[key]
    except KeyError:
        value = view.memo[key] = compute()
        return value


# -- term statistics --------------------------------------------------------------------------


class TermStats(Protocol):
    """Analysis and collection statistics for TF-IDF style context similarities."""

    def analyze(self, text: str) -> list[str]: ...

    def idf(self, term: str) -> float: ...


WORD_RE = re.compile(r"\w+")


def simple_terms(text: str) -> list[str]:
    """Lower-cased word tokens without function words (the analyzer of :class:`CountingTermStats`)."""
    return [w for w in (t.lower() for t in tokens(text)) if w not in FUNCTION_WORDS]


class CountingTermStats:
    """Document frequencies counted over a given list of texts, with :func:`simple_terms` analysis.

    For small in-memory collections (and hand-made test pairs); indexes use
    :class:`ltr.resources.LuceneTermStats`, which reads Lucene's statistics instead.
    """

    def __init__(self, texts: Iterable[str]):
        self.df: Counter[str] = Counter()
        self.n_docs = 0
        for text in texts:
            self.n_docs += 1
            self.df.update(set(simple_terms(text)))

    def analyze(self, text: str) -> list[str]:
        return simple_terms(text)

    def idf(self, term: str) -> float:
        return math.log(1.0 + (self.n_docs - self.df.get(term, 0) + 0.5) / (self.df.get(term, 0) + 0.5))


def tfidf_vector(stats: TermStats, text: str) -> dict[str, float]:
    """L2-normalised log-TF x IDF vector of ``text``."""
    counts = Counter(stats.analyze(text))
    vec = {t: (1.0 + math.log(c)) * stats.idf(t) for t, c in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {t: v / norm for t, v in vec.items()} if norm > 0 else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Dot product of two L2-normalised sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b[t] for t, v in a.items() if t in b)


def normalise_phrase(text: str) -> str:
    """Case-folded content words joined by spaces: ``The Promises  Center`` -> ``promises center``."""
    words = [w.lower() for w in tokens(text)]
    content = [w for w in words if w not in FUNCTION_WORDS]
    return " ".join(content or words)
