"""Build the sparse side of a hybrid index with Pyserini/Anserini.

A hybrid index directory holds::

    hybrid-index.json   config, versions, counts and corpus checksum that built it
    passages/           Lucene index, one document per passage (``contents`` = passage text,
                        ``raw`` = the annotated passage): plain Pyserini BM25 runs on this
    mentions/           Lucene index, one document per mention, fields of :mod:`features.annotate`
                        plus ``docref`` (own-document exclusion); id = ``<passage_id>#<start>-<end>``

Two Lucene indexes rather than one because Anserini drops documents with an empty ``contents``
field, and padding mention documents into the passage index would change the collection statistics
of the plain BM25 baseline. The whole directory is built in a temporary sibling and renamed into
place only when complete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from features.annotate import FIELDS, AnnotationConfig, Annotator, MentionRecord
from hybrid.core.atomic import atomic_directory, remove_stale_builds
from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.lines import SkipReport
from hybrid.core.jvm import start_jvm
from hybrid.core.outputs import Input, Kind, Output, Writes
from hybrid.core.progress import count_records
from hybrid.core.progress import progress as progress_bar
from hybrid.core.provenance import METADATA, file_sha256, produced_by
from hybrid.core.records import Passage

log = logging.getLogger(__name__)

PASSAGES, MENTIONS = "passages", "mentions"
#: The manifest of a sharded index (written by indexes.shards).
SHARDS_MANIFEST = "hybrid-shards.json"
FORMAT_VERSION = 1
MENTION_INDEX_FIELDS = (*FIELDS, "docref")


def docref(doc_id: str) -> str:
    """A single analyzer-proof token naming a document (letters+digits survive the English analyzer)."""
    return "doc" + str(int(hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:15], 16))


def mention_doc_id(record: MentionRecord) -> str:
    return f"{record.passage_id}#{record.start}-{record.end}"


def parse_mention_doc_id(docid: str) -> tuple[str, int, int]:
    passage_id, span = docid.rsplit("#", 1)
    start, end = span.split("-")
    return passage_id, int(start), int(end)


@dataclass(frozen=True)
class IndexConfig:
    corpus: str
    annotation: AnnotationConfig
    threads: int = 1
    batch_docs: int = 256  # documents per annotation batch

    def to_json(self) -> dict:
        return {"corpus": self.corpus, "annotation": asdict(self.annotation), "threads": self.threads}


def _passage_json(passage: Passage, records: list[MentionRecord]) -> dict:
    return {
        "id": passage.id,
        "contents": passage.text,
        "docref": docref(passage.doc_id),
        "doc_id": passage.doc_id,
        "sent_id": passage.sent_id,
        "annotated": passage.mentions is not None,
        "mentions": [r.to_json() for r in records],
    }


def _mention_json(record: MentionRecord) -> dict:
    doc = {"id": mention_doc_id(record), "contents": record.mention, "docref": docref(record.doc_id)}
    for name in FIELDS:
        doc[name] = record.field_text(name)
    return doc


def _run_anserini(input_dir: Path, index_dir: Path, fields: tuple[str, ...], threads: int, store_raw: bool) -> None:
    start_jvm()
    from jnius import autoclass

    args = [
        "-collection", "JsonCollection", "-input", str(input_dir), "-index", str(index_dir),
        "-threads", str(threads), "-storePositions", "-storeDocvectors", "-quiet",
    ]
    if fields:
        args += ["-fields", *fields]
    if store_raw:
        args.append("-storeRaw")
    autoclass("io.anserini.index.IndexCollection").main(args)


def _own_index_entry(name: str) -> bool:
    """The entries a hybrid index build writes: its manifest and Lucene indexes, or a sharded index's shards."""
    return name in (METADATA, SHARDS_MANIFEST, PASSAGES, MENTIONS) or re.fullmatch(r"shard-\d{5}", name) is not None


#: A hybrid index folder, one or sharded, for the output policy (hybrid.core.outputs): ``--overwrite``
#: replaces only this, and deletes nothing else inside it (a dense index, notes) unless asked.
HYBRID_INDEX = Kind("hybrid index", manifests=(METADATA, SHARDS_MANIFEST), own=_own_index_entry)


def index_writes(output: str | Path, corpus: str | Path | None, overwrite: bool, overwrite_all: bool = False,
                 command: str = "hybrid.index") -> Writes:
    """What an index build writes (``--index``) and reads (``--corpus``), for the output policy."""
    return Writes(command, [Output("--index", output, HYBRID_INDEX)], [Input("--corpus", corpus)], overwrite,
                  overwrite_all)


def check_index_target(output: str | Path, corpus: str | Path | None, overwrite: bool,
                       overwrite_all: bool = False) -> None:
    """Refuse an index directory whose replacement would destroy other data, before any work starts.

    ``--overwrite`` replaces only a hybrid index (``hybrid-index.json``, or ``hybrid-shards.json`` for a
    sharded one) or an empty directory, never a folder of other files, and deletes nothing inside the index
    that the build did not write (a dense index, notes) unless ``overwrite_all``; and the index never
    contains the corpus it is built from (replacing the folder would delete the corpus).
    """
    index_writes(output, corpus, overwrite, overwrite_all).check()


def build_index(
    config: IndexConfig,
    output: str | Path,
    overwrite: bool = False,
    skip_bad: bool = False,
    progress: bool = True,
    overwrite_all: bool = False,
) -> dict:
    """Annotate the corpus and build ``passages/`` + ``mentions/``; returns the metadata written."""
    output = Path(output)
    check_index_target(output, config.corpus, overwrite, overwrite_all)
    remove_stale_builds(output.parent, output.name)
    started = time.time()
    annotator = Annotator(config.annotation)
    report = SkipReport() if skip_bad else None
    with atomic_directory(output, overwrite=overwrite) as tmp:
        collections = tmp / "_collections"
        (collections / PASSAGES).mkdir(parents=True)
        (collections / MENTIONS).mkdir(parents=True)
        # a pipe or FIFO cannot be read twice: hash what is read (a regular file is hashed as a file, as before)
        streamed = None if Path(config.corpus).is_file() else hashlib.sha256()
        passages = read_corpus(
            config.corpus, skip_bad=report, empty_means_unannotated=config.annotation.empty_means_unannotated,
            digest=streamed,
        )
        counts = {"passages": 0, "documents": 0, "mentions": 0, "gold_mentions": 0, "auto_mentions": 0}
        doc_sizes: dict[str, int] = {}
        bar = progress_bar(desc="annotate", unit="passage", total=count_records(config.corpus), enabled=progress)
        with (
            open(collections / PASSAGES / "part-0.jsonl", "w", encoding="utf-8") as pout,
            open(collections / MENTIONS / "part-0.jsonl", "w", encoding="utf-8") as mout,
        ):
            for passage, records in annotator.annotate(passages):
                pout.write(json.dumps(_passage_json(passage, records), ensure_ascii=False) + "\n")
                for record in records:
                    mout.write(json.dumps(_mention_json(record), ensure_ascii=False) + "\n")
                    counts["gold_mentions" if record.source == "gold" else "auto_mentions"] += 1
                counts["passages"] += 1
                counts["mentions"] += len(records)
                doc_sizes[passage.doc_id] = doc_sizes.get(passage.doc_id, 0) + 1
                bar.update(1)
        bar.close()
        if counts["passages"] == 0:
            raise InputError(config.corpus, None, "no passages to index")
        counts["documents"] = len(doc_sizes)
        log.info("indexing %d passages and %d mentions", counts["passages"], counts["mentions"])
        _run_anserini(collections / PASSAGES, tmp / PASSAGES, ("docref",), config.threads, store_raw=True)
        _run_anserini(collections / MENTIONS, tmp / MENTIONS, MENTION_INDEX_FIELDS, config.threads, store_raw=False)
        for part in (PASSAGES, MENTIONS):
            os.remove(collections / part / "part-0.jsonl")
            (collections / part).rmdir()
        collections.rmdir()
        metadata = {
            "format": FORMAT_VERSION,
            "kind": "hybrid-sparse-index",
            "config": config.to_json(),
            "annotation_sources": annotator.sources(),
            "corpus_sha256": streamed.hexdigest() if streamed is not None else file_sha256(config.corpus),
            "counts": counts,
            "max_doc_passages": max(doc_sizes.values()),
            "fields": list(MENTION_INDEX_FIELDS),
            **produced_by(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - started, 2),
            "skipped_lines": [str(e) for e in report.errors] if report else [],
        }
        (tmp / METADATA).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if report:
        log.warning(report.summary())
    return metadata
