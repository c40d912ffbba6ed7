"""Readers and writers for the file formats users bring: corpus JSONL, topics, qrels, TREC runs."""

from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.formats.topics import parse_marked, read_topics

__all__ = ["read_corpus", "read_qrels", "read_run", "write_run", "read_topics", "parse_marked"]
