"""Readers and writers for the file formats users bring: corpus JSONL, topics, qrels, TREC runs."""

from hybrid.formats.corpus import read_corpus
from hybrid.formats.qrels import read_qrels
from hybrid.formats.runs import read_run, write_run
from hybrid.formats.topics import parse_marked, read_topics

__all__ = ["read_corpus", "read_qrels", "read_run", "write_run", "read_topics", "parse_marked"]
