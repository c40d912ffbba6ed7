"""The query plan every mention-level sparse search shares: which record stands for the topic, which kinds
of candidates it may match, which document it must not return.

Multi-field BM25 (its Java path, its pyjnius path, the sharded path) and BM25F build different queries
from the same plan, so the kind filter and the own-document exclusion are written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from features.annotate import MentionRecord, type_tokens
from hybrid.core.records import Topic
from indexes.lucene import docref


@dataclass(frozen=True)
class QueryPlan:
    """One topic's plan: its mention record (indexed, or annotated when the topic is not in the index), the
    kind to match and the document to exclude (the query's own, when the topic points into the corpus)."""

    topic: Topic
    record: MentionRecord
    exclude_doc: str | None

    @classmethod
    def of(cls, index, topic: Topic) -> QueryPlan:
        """The plan of ``topic`` on a (plain or sharded) hybrid index."""
        record = index.query_record(topic)
        return cls(topic, record, index.exclude_doc(topic, record))

    @property
    def kind(self) -> str | None:
        return self.topic.kind or self.record.kind

    def kind_tokens(self, same_kind: bool) -> tuple[str, ...]:
        """``type`` tokens a candidate may carry: the query's kind and ``kind_unknown`` (none: any kind)."""
        return (type_tokens(self.kind, None)[0], "kind_unknown") if same_kind and self.kind else ()

    def kind_filter(self, same_kind: bool) -> str:
        """:meth:`kind_tokens` as the space-separated filter the Java searchers take ("" = no filter)."""
        return " ".join(self.kind_tokens(same_kind))

    @property
    def exclude_docref(self) -> str:
        """The ``docref`` token of the excluded document ("" = none), as the Java searchers take it."""
        return docref(self.exclude_doc) if self.exclude_doc else ""
