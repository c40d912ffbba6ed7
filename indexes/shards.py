"""Sharded hybrid index: the corpus split by document into N shards, each a complete hybrid index.

Layout::

    hybrid-shards.json    manifest: shards (counts, bytes, sha256 of every file), configs, versions,
                          merged counts, how documents were assigned, build timings
    shard-00000/          a complete hybrid index (hybrid-index.json, passages/, mentions/), openable alone
    shard-00001/
    ...

Why split by document: annotation works on whole documents (coreference chains, context windows), and
retrieval excludes the query's own document and collapses a passage's mentions to its best one; with every
document (so every passage and mention) in exactly one shard, all of that stays shard-local and the merged
search of :mod:`hybrid.scale.sharded_search` equals the search of one index.

Documents go to the shard with the fewest passages so far when first seen (ties: the lower shard), which
keeps shards balanced to within one document and is deterministic given the corpus order.

The build runs on an :class:`~hybrid.scale.ray_engine.Engine`: annotation is a batch job over whole
documents (Ray Data on Ray, a loop in-process otherwise), then one Lucene build per shard (a Ray task
each). The whole directory is built in a temporary sibling and renamed into place when complete, so an
interrupted build leaves the previous index or nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from features.annotate import AnnotationConfig, Annotator
from hybrid.atomic import atomic_directory, remove_stale_builds
from hybrid.errors import ConfigError, IndexMissingError
from hybrid.formats.corpus import read_corpus
from hybrid.formats.lines import SkipReport
from hybrid.records import Mention, Passage
from indexes.lucene import (
    FORMAT_VERSION,
    MENTION_INDEX_FIELDS,
    MENTIONS,
    METADATA,
    PASSAGES,
    IndexConfig,
    _mention_json,
    _passage_json,
    _run_anserini,
    file_sha256,
    versions,
)

log = logging.getLogger(__name__)

MANIFEST = "hybrid-shards.json"
MANIFEST_FORMAT = 1
COLLECTIONS = "_collections"
SPLIT = "_split"
ASSIGNMENT = "least-loaded shard (by passages) when a document is first seen; ties to the lower shard"
COUNT_KEYS = ("passages", "documents", "mentions", "gold_mentions", "auto_mentions")


def shard_name(i: int) -> str:
    return f"shard-{i:05d}"


def is_sharded(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise IndexMissingError(f"{path} is not a sharded hybrid index (no {MANIFEST})")
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    for shard in manifest["shards"]:
        where = path / shard["name"]
        for part in (METADATA, PASSAGES, MENTIONS):
            if not (where / part).exists():
                raise IndexMissingError(f"shard {where} lacks {part}; rebuild the sharded index")
    return manifest


# -- passages through files: the split format --------------------------------------------------------------


def passage_to_json(passage: Passage) -> dict[str, Any]:
    return asdict(passage)


def passage_from_json(obj: dict[str, Any]) -> Passage:
    mentions = obj.get("mentions")
    return Passage(
        id=obj["id"], doc_id=obj["doc_id"], text=obj["text"], sent_id=obj.get("sent_id"), meta=obj.get("meta") or {},
        mentions=None if mentions is None else [Mention(**m) for m in mentions],
    )


def split_corpus(config: IndexConfig, n_shards: int, folder: Path, report: SkipReport | None) -> list[Path]:
    """Validate the corpus (one streaming pass) and write each shard's documents, one document per line.

    Returns the per-shard document files. Memory: the document -> shard map, then one shard's lines at a time.
    """
    folder.mkdir(parents=True, exist_ok=True)
    passage_files = [folder / f"{shard_name(i)}.passages.jsonl" for i in range(n_shards)]
    loads = [0] * n_shards
    assigned: dict[str, int] = {}
    handles = [open(p, "w", encoding="utf-8") for p in passage_files]
    try:
        passages = read_corpus(
            config.corpus, skip_bad=report, empty_means_unannotated=config.annotation.empty_means_unannotated
        )
        for passage in passages:
            shard = assigned.get(passage.doc_id)
            if shard is None:
                shard = min(range(n_shards), key=lambda s: (loads[s], s))
                assigned[passage.doc_id] = shard
            loads[shard] += 1
            # "<doc_id>\t<json>": ids contain no whitespace, so grouping below needs no JSON parsing
            handles[shard].write(f"{passage.doc_id}\t{json.dumps(passage_to_json(passage), ensure_ascii=False)}\n")
    finally:
        for handle in handles:
            handle.close()
    if not assigned:
        raise ConfigError(config.corpus, None, "no passages to index")
    if len(assigned) < n_shards:
        raise ConfigError(
            config.corpus, None, f"{len(assigned)} documents cannot fill {n_shards} shards (a document is never split)"
        )
    doc_files = []
    for i, passage_file in enumerate(passage_files):
        docs: dict[str, list[str]] = {}
        with open(passage_file, encoding="utf-8") as handle:
            for line in handle:
                doc_id, _, obj = line.rstrip("\n").partition("\t")
                docs.setdefault(doc_id, []).append(obj)
        doc_file = folder / f"{shard_name(i)}.documents.jsonl"
        with open(doc_file, "w", encoding="utf-8") as out:
            for lines in docs.values():
                out.write(f'{{"shard": {i}, "passages": [{", ".join(lines)}]}}\n')
        os.remove(passage_file)
        doc_files.append(doc_file)
    return doc_files


# -- annotation: a batch job over whole documents ----------------------------------------------------------


class AnnotateBatch:
    """Ray Data UDF: annotate a batch of documents and write their Anserini collection lines.

    Each batch writes its own part files into each shard's collection folders (names derived from the
    batch's first document, so a retried batch overwrites its own output) and returns only counts, so
    the driver never holds annotated text. Constructed once per worker: the annotator (spaCy models)
    loads once.
    """

    def __init__(self, annotation: dict[str, Any], root: str):
        self.annotator = Annotator(AnnotationConfig(**annotation))
        self.root = Path(root)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        per_shard: dict[int, dict[str, Any]] = {}
        for line in batch["text"]:
            doc = json.loads(line)
            shard = int(doc["shard"])
            passages = [passage_from_json(p) for p in doc["passages"]]
            out = per_shard.setdefault(
                shard, {"first": passages[0].doc_id, "lines": {PASSAGES: [], MENTIONS: []}, "max_doc": 0,
                        **dict.fromkeys(COUNT_KEYS, 0)},
            )
            out["documents"] += 1
            out["max_doc"] = max(out["max_doc"], len(passages))
            for passage, records in self.annotator.annotate(passages):
                out["lines"][PASSAGES].append(json.dumps(_passage_json(passage, records), ensure_ascii=False))
                for record in records:
                    out["lines"][MENTIONS].append(json.dumps(_mention_json(record), ensure_ascii=False))
                    out["gold_mentions" if record.source == "gold" else "auto_mentions"] += 1
        rows: dict[str, list] = {"shard": [], "max_doc": [], **{key: [] for key in COUNT_KEYS}}
        for shard, out in sorted(per_shard.items()):
            part = "part-" + hashlib.sha1(out["first"].encode("utf-8")).hexdigest()[:16] + ".jsonl"
            for kind in (PASSAGES, MENTIONS):
                _write_lines(self.root / shard_name(shard) / COLLECTIONS / kind / part, out["lines"][kind])
            rows["shard"].append(shard)
            rows["max_doc"].append(out["max_doc"])
            rows["passages"].append(len(out["lines"][PASSAGES]))
            rows["mentions"].append(len(out["lines"][MENTIONS]))
            for key in ("documents", "gold_mentions", "auto_mentions"):
                rows[key].append(out[key])
        return {key: np.array(value, dtype=np.int64) for key, value in rows.items()}


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")
    os.replace(tmp, path)


# -- Lucene: one build per shard ---------------------------------------------------------------------------


def index_shard(shard_dir: str, threads: int) -> dict[str, float]:
    """Build ``passages/`` and ``mentions/`` of one shard from its collection files (a Ray task on Ray)."""
    shard = Path(shard_dir)
    started = time.time()
    collections = shard / COLLECTIONS
    _run_anserini(collections / PASSAGES, shard / PASSAGES, ("docref",), threads, store_raw=True)
    _run_anserini(collections / MENTIONS, shard / MENTIONS, MENTION_INDEX_FIELDS, threads, store_raw=False)
    for kind in (PASSAGES, MENTIONS):
        for part in (collections / kind).iterdir():
            part.unlink()
        (collections / kind).rmdir()
    collections.rmdir()
    return {"seconds": round(time.time() - started, 2), "pid": os.getpid()}


# -- checksums ---------------------------------------------------------------------------------------------


def checksum_tree(root: Path) -> dict[str, Any]:
    """sha256 and size of every file under ``root`` plus one digest over them (sorted relative paths)."""
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        files[rel] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    digest = hashlib.sha256("".join(f"{rel}\t{f['sha256']}\n" for rel, f in files.items()).encode()).hexdigest()
    return {"bytes": sum(f["bytes"] for f in files.values()), "sha256": digest, "files": files}


def verify_shards(path: str | Path) -> list[str]:
    """Problems found re-hashing every shard against the manifest (empty when intact)."""
    path = Path(path)
    manifest = read_manifest(path)
    problems = []
    for shard in manifest["shards"]:
        found = checksum_tree(path / shard["name"])
        for rel, expected in shard["files"].items():
            got = found["files"].get(rel)
            if got is None:
                problems.append(f"{shard['name']}/{rel}: missing")
            elif got["sha256"] != expected["sha256"]:
                problems.append(f"{shard['name']}/{rel}: sha256 differs")
        for rel in sorted(set(found["files"]) - set(shard["files"])):
            problems.append(f"{shard['name']}/{rel}: not in the manifest")
    return problems


# -- the build ---------------------------------------------------------------------------------------------


def build_sharded_index(
    config: IndexConfig,
    output: str | Path,
    n_shards: int,
    engine: Any = "local",
    overwrite: bool = False,
    skip_bad: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Annotate the corpus and build ``n_shards`` complete hybrid indexes plus the manifest; returns it."""
    from hybrid.scale.ray_engine import get_engine

    if n_shards < 1:
        raise ConfigError(None, None, f"--shards must be >= 1, got {n_shards}")
    engine = get_engine(engine)
    output = Path(output).resolve()  # workers may run in another directory
    remove_stale_builds(output.parent, output.name)
    Annotator(config.annotation)  # fail fast on a bad annotation config, before any worker starts
    started = time.time()
    timings: dict[str, float] = {}
    report = SkipReport() if skip_bad else None
    with atomic_directory(output, overwrite=overwrite) as tmp:
        doc_files = split_corpus(config, n_shards, tmp / SPLIT, report)
        timings["split"] = round(time.time() - started, 2)

        mark = time.time()
        counts = [dict.fromkeys(COUNT_KEYS, 0) for _ in range(n_shards)]
        max_doc = [0] * n_shards
        outputs = engine.map_batches(
            doc_files, AnnotateBatch, {"annotation": asdict(config.annotation), "root": str(tmp)},
            batch_size=config.batch_docs, progress=progress, desc="annotate",
        )
        for out in outputs:
            for row, shard in enumerate(out["shard"]):
                for key in COUNT_KEYS:
                    counts[shard][key] += int(out[key][row])
                max_doc[shard] = max(max_doc[shard], int(out["max_doc"][row]))
        for path in doc_files:
            os.remove(path)
        (tmp / SPLIT).rmdir()
        timings["annotate"] = round(time.time() - mark, 2)

        mark = time.time()
        shard_dirs = [str(tmp / shard_name(i)) for i in range(n_shards)]
        indexed = engine.map_tasks(index_shard, [(d, config.threads) for d in shard_dirs], num_cpus=config.threads)
        timings["index"] = round(time.time() - mark, 2)

        mark = time.time()
        corpus_sha = file_sha256(config.corpus)
        env = versions()
        env["ray"] = _ray_version()
        shards = []
        for i in range(n_shards):
            metadata = {
                "format": FORMAT_VERSION,
                "kind": "hybrid-sparse-index",
                "config": config.to_json(),
                "corpus_sha256": corpus_sha,
                "shard": {"index": i, "of": n_shards, "assignment": ASSIGNMENT},
                "counts": counts[i],
                "max_doc_passages": max_doc[i],
                "fields": list(MENTION_INDEX_FIELDS),
                "versions": env,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "index_seconds": indexed[i]["seconds"],
            }
            shard_dir = tmp / shard_name(i)
            (shard_dir / METADATA).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
            shards.append({"name": shard_name(i), **counts[i], "max_doc_passages": max_doc[i],
                           **checksum_tree(shard_dir)})
        timings["checksum"] = round(time.time() - mark, 2)
        manifest = {
            "format": MANIFEST_FORMAT,
            "kind": "hybrid-sharded-index",
            "config": {**config.to_json(), "shards": n_shards, "engine": engine.name},
            "corpus_sha256": corpus_sha,
            "assignment": ASSIGNMENT,
            "counts": {key: sum(c[key] for c in counts) for key in COUNT_KEYS},
            "max_doc_passages": max(max_doc),
            "fields": list(MENTION_INDEX_FIELDS),
            "versions": env,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - started, 2),
            "timings": timings,
            "skipped_lines": [str(e) for e in report.errors] if report else [],
            "shards": shards,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if report:
        log.warning(report.summary())
    return manifest


def _ray_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ray")
    except PackageNotFoundError:
        return "not installed"
