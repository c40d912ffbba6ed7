"""Opening a hybrid index: metadata, the two Lucene searchers, passage lookup, query records."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from dataclasses import fields
from functools import cached_property, lru_cache
from pathlib import Path

from features.annotate import AnnotationConfig, Annotator, MentionRecord
from hybrid.core.anserini import LuceneSearcher
from hybrid.core.errors import ConfigError, IndexMissingError, InputError
from hybrid.core.formats.topics import read_topics
from hybrid.core.java import require
from hybrid.core.params import BM25_B, BM25_K1
from hybrid.core.provenance import verify_mode
from hybrid.core.records import Passage, Topic
from indexes.lucene import MENTIONS, METADATA, PASSAGES, docref
from indexes.lucene_access import exact_bm25_searcher, term_documents

log = logging.getLogger(__name__)


def check_metadata_shape(where: Path, metadata: object) -> None:
    """Refuse a ``hybrid-index.json`` of the wrong shape (what opening and searching read from it) up front, with
    one line naming it, instead of a KeyError or TypeError at the first query."""
    fix = f"rebuild the index with `python -m hybrid.index --index {where.parent} --overwrite`"
    if not isinstance(metadata, dict):
        raise IndexMissingError(f"{where}: not a hybrid index description (a JSON object); {fix}")
    config = metadata.get("config")
    annotation = config.get("annotation") if isinstance(config, dict) else None
    if not isinstance(annotation, dict):
        raise IndexMissingError(f"{where}: no 'config.annotation' object; {fix}")
    known = {f.name for f in fields(AnnotationConfig)}
    unknown = sorted(set(annotation) - known)
    if unknown:
        raise IndexMissingError(f"{where}: unknown annotation option(s) {', '.join(map(repr, unknown))} in "
                                f"'config.annotation'; {fix}")
    counts = metadata.get("counts")
    if counts is not None and (not isinstance(counts, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values())):
        raise IndexMissingError(f"{where}: 'counts' is not an object of counts; {fix}")
    most = metadata.get("max_doc_passages")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or not 0 < most < 2**31):
        raise IndexMissingError(f"{where}: 'max_doc_passages' must be a positive 32-bit integer, got {most!r}; {fix}")


class SparseIndex:
    """A built hybrid index directory (see :mod:`indexes.lucene`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        meta = self.path / METADATA
        if not self.path.is_dir():
            raise IndexMissingError(f"index {self.path} does not exist; build it with `python -m hybrid.index`")
        if not meta.is_file():
            raise IndexMissingError(
                f"{self.path} is not a complete hybrid index (no {METADATA}); rebuild it with `python -m hybrid.index`"
            )
        try:
            raw = meta.read_bytes()
            #: sha256 of the manifest as read when the index was opened: the index a run really searched, even
            #: when a rebuild replaces the folder while the run goes on (its open Lucene files stay the old ones)
            self.manifest_sha256 = hashlib.sha256(raw).hexdigest()
            self.metadata = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise IndexMissingError(
                f"{meta} is corrupt ({exc}); {self.path} is not a complete hybrid index, rebuild it"
            ) from None
        check_metadata_shape(meta, self.metadata)
        for part in (PASSAGES, MENTIONS):
            if not (self.path / part).is_dir():
                raise IndexMissingError(f"{self.path} lacks its {part}/ Lucene index; rebuild it")
        self.passages = self._open_lucene(PASSAGES)
        self.mentions = self._open_lucene(MENTIONS)
        if verify_mode() == "full":
            for part in (PASSAGES, MENTIONS):
                self._check_integrity(part)
        self._passage_cache = lru_cache(maxsize=65536)(self._load_passage)
        self._doc_passages = lru_cache(maxsize=8192)(self._load_document_passage_ids)
        self._topic_records: dict[tuple, MentionRecord] = {}
        self._stored_searcher = None  # a plain Lucene searcher on passages/, opened on first use

    def _check_integrity(self, part: str) -> None:
        """Every file of one Lucene index against its checksum footer (Lucene's ``checkIntegrity``): a byte changed
        in postings or stored fields is otherwise only found, if ever, by the query that reads it."""
        from jnius import autoclass

        paths = autoclass("java.nio.file.Paths")
        directory = autoclass("org.apache.lucene.store.FSDirectory").open(paths.get(str(self.path / part)))
        try:
            reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
            try:
                for leaf in reader.leaves().toArray():
                    leaf.reader().checkIntegrity()
            finally:
                reader.close()
        except Exception as exc:  # noqa: BLE001 - jnius.JavaException: a checksum or structure mismatch
            problem = (getattr(exc, "innermessage", None) or str(exc)).strip().splitlines()
            problem = problem[0].removeprefix("JVM exception occurred: ")[:300] if problem else type(exc).__name__
            corpus = self.metadata.get("config", {}).get("corpus", "CORPUS")
            raise IndexMissingError(
                f"index {self.path} is damaged: its {part}/ fails Lucene's checksum check ({problem}); rebuild it "
                f"with `python -m hybrid.index --corpus {corpus} --index {self.path} --overwrite`") from None
        finally:
            directory.close()

    def _open_lucene(self, part: str) -> LuceneSearcher:
        """Open one Lucene index; a damaged one (CorruptIndexException, EOF, ...) says which and how to rebuild."""
        try:
            return LuceneSearcher(str(self.path / part))
        except Exception as exc:  # jnius.JavaException: Lucene found the files unreadable
            problem = (getattr(exc, "innermessage", None) or str(exc)).strip().splitlines()
            problem = problem[0].removeprefix("JVM exception occurred: ") if problem else type(exc).__name__
            corpus = self.metadata.get("config", {}).get("corpus", "CORPUS")
            raise IndexMissingError(
                f"index {self.path} is damaged: Lucene cannot open its {part}/ ({problem}); rebuild it with "
                f"`python -m hybrid.index --corpus {corpus} --index {self.path} --overwrite`"
            ) from None

    @cached_property
    def annotation_config(self) -> AnnotationConfig:
        try:
            return AnnotationConfig(**self.metadata["config"]["annotation"])
        except InputError as exc:
            if exc.path is not None:
                raise
            raise ConfigError(self.path / METADATA, None, f"config.annotation: {exc.reason}") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(self.path / METADATA, None, f"config.annotation is not a valid annotation config "
                                                          f"({exc}); rebuild the index with `python -m hybrid.index "
                                                          f"--index {self.path} --overwrite`") from None

    @cached_property
    def annotator(self) -> Annotator:
        return Annotator(self.annotation_config)

    @property
    def kinds_detected(self) -> bool:
        """Whether the indexed mentions' kinds (event / entity) come from the detector: an index built from raw
        text (``--annotation auto``, recorded in ``hybrid-index.json``) rather than from the corpus's annotation
        (``--annotation corpus``). Sparse mention-level retrieval filters by kind only when they do not."""
        return self.annotation_config.annotation != "corpus"

    @property
    def max_doc_passages(self) -> int:
        return int(self.metadata.get("max_doc_passages", 100))

    def _load_passage(self, passage_id: str) -> dict | None:
        doc = self.passages.doc(passage_id)
        if doc is None:
            return None
        raw = doc.raw()
        return json.loads(raw) if raw else None

    def passage_json(self, passage_id: str) -> dict | None:
        return self._passage_cache(passage_id)

    def passage_text(self, passage_id: str) -> str | None:
        found = self.passage_json(passage_id)
        return None if found is None else found["contents"]

    def passage(self, passage_id: str) -> Passage | None:
        found = self.passage_json(passage_id)
        if found is None:
            return None
        return Passage(id=found["id"], doc_id=found["doc_id"], text=found["contents"], sent_id=found.get("sent_id"))

    def mention_records(self, passage_id: str) -> list[MentionRecord]:
        found = self.passage_json(passage_id)
        return [] if found is None else [MentionRecord.from_json(m) for m in found["mentions"]]

    def document_passage_ids(self, doc_id: str) -> list[str]:
        """Passage ids of one document (a term lookup on the ``docref`` field, cached)."""
        return list(self._doc_passages(doc_id))

    def document_passages(self, doc_id: str) -> list[tuple[str, dict | None]]:
        """Each passage of one document with its stored JSON, by passage id: ``(pid, passage_json(pid))`` for
        every ``pid`` of :meth:`document_passage_ids`, read in one pass over the document's stored fields (a
        search on ``docref`` that reads each hit's id and JSON) instead of a search and a lookup by id per
        passage. Falls back to those when that pass cannot stand for them (more hits than ``max_doc_passages``,
        a repeated id)."""
        stored = self._document_stored(doc_id)
        if stored is None:
            return [(pid, self.passage_json(pid)) for pid in self.document_passage_ids(doc_id)]
        return [(pid, json.loads(raw) if raw else None) for pid, raw in stored]

    def _document_stored(self, doc_id: str) -> list[tuple[str, str | None]] | None:
        """(id, raw JSON) of each passage of ``doc_id``, sorted by id, or None (see :meth:`document_passages`)."""
        if self._stored_searcher is None:
            self._stored_searcher = exact_bm25_searcher(self.path / PASSAGES, BM25_K1, BM25_B)
        found = term_documents(self._stored_searcher, "docref", docref(doc_id), ("id", "raw"),
                               max(self.max_doc_passages, 1))
        if found is None or len({pid for pid, _ in found}) != len(found):
            return None
        return sorted(found, key=lambda hit: hit[0])

    def _load_document_passage_ids(self, doc_id: str) -> tuple[str, ...]:
        from jnius import autoclass

        term_query = autoclass("org.apache.lucene.search.TermQuery")(
            autoclass("org.apache.lucene.index.Term")("docref", docref(doc_id))
        )
        hits = self.passages.search(term_query, k=max(self.max_doc_passages, 1))
        return tuple(sorted(h.docid for h in hits))

    def query_record(self, topic: Topic) -> MentionRecord:
        """The query's mention record: the indexed one when the query points into the corpus
        (query by example: its ner/coref fields come from its own document), else a fresh annotation."""
        candidates: list[str] = []
        if topic.passage_id:
            candidates = [topic.passage_id]
        elif topic.doc_id:
            candidates = self.document_passage_ids(topic.doc_id)
        for pid in candidates:
            if self.passage_text(pid) != topic.text:
                continue
            # the stored mention of the topic's span made a record (not every mention of the passage: ~20 of them)
            for mention in self.passage_json(pid)["mentions"]:
                if mention["start"] == topic.start and mention["end"] == topic.end:
                    record = MentionRecord.from_json(mention)
                    if topic.kind and not record.kind:
                        record.kind = topic.kind
                    return record
            # The passage is indexed but this span was not a detected mention: annotate in place.
            record = self.annotated_topic(topic)
            record.passage_id, record.doc_id = pid, self.passage_json(pid)["doc_id"]
            return record
        return self.annotated_topic(topic)

    #: Annotated query records kept (:meth:`annotated_topic`).
    TOPIC_RECORDS = 4096

    def annotated_topic(self, topic: Topic) -> MentionRecord:
        """``annotator.annotate_topic(topic)``, parsed once per topic id, text, span, kind and tag (what it reads): the
        LTR stage asks for each query's record twice (its pairs, and BM25F's query plan), and a record is not
        stored for a span the detector did not find. Each call gets its own copy: callers fill in its fields."""
        key = (topic.qid, topic.text, topic.start, topic.end, topic.kind, topic.tag)
        record = self._topic_records.get(key)
        if record is None:
            if len(self._topic_records) >= self.TOPIC_RECORDS:
                self._topic_records.pop(next(iter(self._topic_records)))
            record = self._topic_records[key] = self.annotator.annotate_topic(topic)
        return copy.deepcopy(record)

    def passages_with_text(self, texts: list[str], depth: int = 20) -> list[list[str]]:
        """For each text, the ids of the indexed passages whose text is exactly it (best BM25 first; empty when none).

        A BM25 search of the text on the passages (its best ``depth`` hits, one batch), then an exact string
        comparison with each hit's stored text: cheap, and never a near match."""
        if not texts:
            return []
        qids = [str(i) for i in range(len(texts))]
        try:
            found = self.passages.batch_search(texts, qids, k=depth, threads=1)
        except Exception:  # jnius.JavaException: e.g. a text with more distinct terms than Lucene's clause limit
            found = {}
        return [[h.docid for h in found.get(qid, []) if self.passage_text(h.docid) == text]
                for qid, text in zip(qids, texts, strict=True)]

    def own_documents(self, topics: list[Topic]) -> int:
        """Give each topic that names neither its document nor its passage (a two-column TSV topic, a JSONL topic
        with only ``text``) the document it comes from, when its unmarked text is exactly an indexed passage of
        one document (the topic is then what a three-column TSV topic is): its own document is excluded.
        Returns how many were found; the others (no such passage, or the same text in several documents) are
        warned about once: their own-document exclusion is off."""
        unknown = [t for t in topics if not t.doc_id and not t.passage_id]
        if not unknown:
            return 0
        missing, ambiguous = [], []
        for topic, matches in zip(unknown, self.passages_with_text([t.text for t in unknown]), strict=True):
            documents = {self.passage_json(pid)["doc_id"] for pid in matches}
            if len(documents) == 1:  # the document only, as a third TSV column (query_record finds the passage)
                topic.doc_id = documents.pop()
            else:
                (ambiguous if documents else missing).append(topic.qid)
        if missing or ambiguous:
            reasons = []
            if missing:
                reasons.append(f"{len(missing)} whose text is not a passage of the index {self.path} (e.g. "
                               f"{', '.join(missing[:5])})")
            if ambiguous:
                reasons.append(f"{len(ambiguous)} whose text is a passage of several documents (e.g. "
                               f"{', '.join(ambiguous[:5])})")
            log.warning("own-document exclusion is off for %d of %d topics: they name no document (third TSV "
                        "column or JSONL doc_id), and passages of the documents they come from may be returned: %s",
                        len(missing) + len(ambiguous), len(topics), "; ".join(reasons))
        return len(unknown) - len(missing) - len(ambiguous)

    def exclude_doc(self, topic: Topic, record: MentionRecord | None = None) -> str | None:
        """The document to exclude for a query (its own), when known."""
        if topic.doc_id:
            return topic.doc_id
        if record is not None and not record.doc_id.startswith("query:"):
            return record.doc_id
        if topic.passage_id:
            found = self.passage_json(topic.passage_id)
            return found["doc_id"] if found else None
        return None


def open_for_timing(index_path: str | Path, topics_path: str | Path, limit: int = 0) -> tuple[SparseIndex, list[Topic]]:
    """The index and its topics (the first ``limit``; 0 = all) with every query record already computed.

    For benchmarks: a query's record (its indexed mention, chain and context entities) is read and parsed
    on first use, so computing them all up front keeps that one-off cost out of every timed search.
    """
    index = SparseIndex(index_path)
    require()
    topics = read_topics(topics_path, resolve=index.passage_text)
    if limit:
        topics = topics[:limit]
    for topic in topics:
        index.query_record(topic)
    return index, topics
