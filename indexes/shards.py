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
search of :mod:`indexes.sharded_index` equals the search of one index.

Documents go to the shard with the fewest passages so far when first seen (ties: the lower shard), which
keeps shards balanced to within one document and is deterministic given the corpus order.

The build runs on an :class:`~hybrid.core.ray_engine.Engine`: annotation is a batch job over whole
documents (Ray Data on Ray, a loop in-process otherwise), then one Lucene build per shard (a Ray task
each). The whole directory is built in a temporary sibling and renamed into place when complete, so an
interrupted build leaves the previous index or nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from features.annotate import AnnotationConfig, Annotator
from features.units import Unit
from hybrid.core.atomic import atomic_directory, atomic_write, remove_stale_builds
from hybrid.core.backend import backend_device
from hybrid.core.errors import ConfigError, IndexMissingError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.lines import SkipReport
from hybrid.core.provenance import produced_by, verify_mode
from hybrid.core.ray_engine import get_engine
from hybrid.core.records import KIND_CODES, Mention, Passage
from indexes.faiss_index import (
    DENSE_DIR,
    DENSE_METADATA,
    PASSAGE_TABLE,
    ROWS,
    VECTORS,
    _FlatFill,
    _new_faiss,
    dense_file_records,
    iter_index_passages,
    row_bound,
    source_record,
)
from indexes.faiss_index import FORMAT_VERSION as DENSE_FORMAT
from indexes.lucene import (
    FORMAT_VERSION,
    MENTION_INDEX_FIELDS,
    MENTIONS,
    METADATA,
    PASSAGES,
    SHARDS_MANIFEST,
    IndexConfig,
    _mention_json,
    _passage_json,
    _run_anserini,
    check_index_target,
    file_sha256,
)
from indexes.sparse_index import SparseIndex

log = logging.getLogger(__name__)

MANIFEST = SHARDS_MANIFEST
MANIFEST_FORMAT = 1
COLLECTIONS = "_collections"
SPLIT = "_split"
ASSIGNMENT = "least-loaded shard (by passages) when a document is first seen; ties to the lower shard"
COUNT_KEYS = ("passages", "documents", "mentions", "gold_mentions", "auto_mentions")


def shard_name(i: int) -> str:
    return f"shard-{i:05d}"


def is_sharded(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def open_one_index(path: str | Path, command: str) -> SparseIndex:
    """One (unsharded) hybrid index, for a command that has no sharded path yet: a sharded index is refused by
    name instead of failing somewhere inside. Commands that do search shards open indexes with
    :func:`indexes.sharded_index.open_index`."""
    if is_sharded(path):
        raise ConfigError(path, None, f"{command} works on one index, and this is a sharded index; run it on an "
                                      "unsharded build of the corpus (python -m hybrid.index without --shards)")
    return SparseIndex(path)


def read_manifest(path: str | Path, verify: str | None = None) -> dict[str, Any]:
    """The manifest of a sharded index, verified (see :func:`read_manifest_and_digest`)."""
    return read_manifest_and_digest(path, verify)[0]


def read_manifest_and_digest(path: str | Path, verify: str | None = None) -> tuple[dict[str, Any], str]:
    """The manifest and the sha256 of the bytes it was read from (what a run records: the index it read, even
    when the index is rebuilt while it runs).

    The manifest of a sharded index, verified against the shards on disk before anything uses them.

    Always: the manifest's shape, shard names that stay inside the folder, the shard set (as many as the
    config says, no shard folder the manifest does not list), every shard's counts against its own
    ``hybrid-index.json`` and the totals, and the size of every file the manifest lists (a truncated or
    replaced segment). ``verify="full"`` (or ``HYBRID_VERIFY=full``) also re-hashes every file
    (:func:`verify_shards`). A problem is one :class:`IndexMissingError` naming the shard and the file.
    """
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise IndexMissingError(f"{path} is not a sharded hybrid index (no {MANIFEST})")
    where = path / MANIFEST
    try:
        raw = where.read_bytes()
        manifest = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad_manifest(where, f"unreadable ({type(exc).__name__}: {exc})") from None
    _check_manifest(path, manifest)
    for shard in manifest["shards"]:
        folder = path / shard["name"]
        for part in (METADATA, PASSAGES, MENTIONS):
            if not (folder / part).exists():
                raise IndexMissingError(f"shard {folder} lacks {part}; rebuild the sharded index")
        _check_shard(folder, shard)
    if verify_mode(verify) == "full":
        problems = verify_shards(path, manifest)
        if problems:
            raise _bad_manifest(where, f"{len(problems)} file(s) differ from their recorded sha256: "
                                       f"{'; '.join(problems[:3])}")
    return manifest, hashlib.sha256(raw).hexdigest()


def _bad_manifest(where: Path, problem: str) -> IndexMissingError:
    return IndexMissingError(f"{where}: damaged sharded index ({problem}); rebuild it with "
                             f"`python -m hybrid.index --shards N --index {where.parent} --overwrite`")


def _check_manifest(path: Path, manifest: Any) -> None:
    """The manifest's shape and its shard set (see :func:`read_manifest`)."""
    where = path / MANIFEST
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards"), list) or not manifest["shards"]:
        raise _bad_manifest(where, "not an object with a non-empty 'shards' list")
    names = []
    for i, shard in enumerate(manifest["shards"]):
        if not isinstance(shard, dict) or not isinstance(shard.get("name"), str):
            raise _bad_manifest(where, f"shards[{i}] is not an object with a 'name'")
        name = shard["name"]
        if Path(name).name != name or name in ("", ".", "..") or "\\" in name:
            raise _bad_manifest(where, f"shard name {name!r} leads outside the index folder")
        if not all(isinstance(shard.get(key), int) and not isinstance(shard.get(key), bool) for key in COUNT_KEYS):
            raise _bad_manifest(where, f"shards[{i}] lacks integer counts {', '.join(COUNT_KEYS)}")
        if not isinstance(shard.get("files", {}), dict):
            raise _bad_manifest(where, f"shards[{i}].files is not an object")
        names.append(name)
    if len(set(names)) != len(names):
        raise _bad_manifest(where, "a shard is listed twice")
    config = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
    if config.get("shards") is not None and config["shards"] != len(names):
        raise _bad_manifest(where, f"{len(names)} shards listed, the config says {config['shards']}")
    extra = sorted(p.name for p in path.glob("shard-*") if p.is_dir() and p.name not in names)
    if extra:
        raise _bad_manifest(where, f"shard folder(s) {', '.join(extra)} not in the manifest")
    totals = manifest.get("counts")
    if isinstance(totals, dict):
        for key in COUNT_KEYS:
            if totals.get(key) is not None and totals[key] != sum(s[key] for s in manifest["shards"]):
                raise _bad_manifest(where, f"the total {key} {totals[key]} is not the sum over the shards")


def _check_shard(folder: Path, shard: dict[str, Any]) -> None:
    """One shard against its manifest entry: its own counts and the size of every file listed."""
    meta_file = folder / METADATA
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad_manifest(meta_file, f"unreadable shard metadata ({type(exc).__name__})") from None
    counts = meta.get("counts") if isinstance(meta, dict) else None
    if not isinstance(counts, dict) or any(counts.get(k) != shard[k] for k in COUNT_KEYS):
        raise _bad_manifest(meta_file, f"the shard's counts differ from those {MANIFEST} records for {shard['name']}")
    for rel, record in shard.get("files", {}).items():
        file = folder / rel
        if not isinstance(record, dict) or ".." in Path(rel).parts or Path(rel).is_absolute():
            raise _bad_manifest(folder.parent / MANIFEST, f"bad file entry {rel!r} of {shard['name']}")
        if not file.is_file():
            raise _bad_manifest(file, "missing")
        if file.stat().st_size != record.get("bytes"):
            raise _bad_manifest(file, f"{file.stat().st_size} bytes, {record.get('bytes')} recorded (truncated or "
                                      "replaced)")


# -- passages through files: the split format --------------------------------------------------------------


def passage_to_json(passage: Passage) -> dict[str, Any]:
    return asdict(passage)


def passage_from_json(obj: dict[str, Any]) -> Passage:
    mentions = obj.get("mentions")
    return Passage(
        id=obj["id"], doc_id=obj["doc_id"], text=obj["text"], sent_id=obj.get("sent_id"), meta=obj.get("meta") or {},
        mentions=None if mentions is None else [Mention(**m) for m in mentions],
    )


def split_corpus(config: IndexConfig, n_shards: int, folder: Path, report: SkipReport | None,
                 digest: Any = None) -> list[Path]:
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
            config.corpus, skip_bad=report, empty_means_unannotated=config.annotation.empty_means_unannotated,
            digest=digest,
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


def verify_shards(path: str | Path, manifest: dict[str, Any] | None = None) -> list[str]:
    """Problems found re-hashing every shard against the manifest (empty when intact)."""
    path = Path(path)
    manifest = manifest if manifest is not None else read_manifest(path)
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
    overwrite_all: bool = False,
) -> dict[str, Any]:
    """Annotate the corpus and build ``n_shards`` complete hybrid indexes plus the manifest; returns it."""
    if n_shards < 1:
        raise ConfigError(None, None, f"--shards must be >= 1, got {n_shards}")
    check_index_target(output, config.corpus, overwrite, overwrite_all)
    engine = get_engine(engine)
    output = Path(output).resolve()  # workers may run in another directory
    remove_stale_builds(output.parent, output.name)
    sources = Annotator(config.annotation).sources()  # fail fast on a bad annotation config, before any worker starts
    started = time.time()
    timings: dict[str, float] = {}
    report = SkipReport() if skip_bad else None
    with atomic_directory(output, overwrite=overwrite) as tmp:
        # a pipe or FIFO cannot be read twice: hash what is read (a regular file is hashed as a file, as before)
        streamed = None if Path(config.corpus).is_file() else hashlib.sha256()
        doc_files = split_corpus(config, n_shards, tmp / SPLIT, report, streamed)
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
        corpus_sha = streamed.hexdigest() if streamed is not None else file_sha256(config.corpus)
        made = produced_by(("ray",))
        shards = []
        for i in range(n_shards):
            metadata = {
                "format": FORMAT_VERSION,
                "kind": "hybrid-sparse-index",
                "config": config.to_json(),
                "annotation_sources": sources,
                "corpus_sha256": corpus_sha,
                "shard": {"index": i, "of": n_shards, "assignment": ASSIGNMENT},
                "counts": counts[i],
                "max_doc_passages": max_doc[i],
                "fields": list(MENTION_INDEX_FIELDS),
                **made,
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
            **made,
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


# -- dense shards: encoding as a batch job ------------------------------------------------------------------


class EncodeBatch:
    """Ray Data UDF: passage vectors (one per candidate mention) for a batch of passages of any shards.

    Loads the encoder once per worker, on the GPU Ray assigned when there is one. Returns the vectors as
    float32 bytes per passage (their row count varies), keyed by shard and passage number, so the driver
    can add them to each shard's FAISS index in passage order.
    """

    def __init__(self, encoder: str, config: dict[str, Any], batch_size: int, device: str | None = None,
                 precision: str = "fp32", backend: str = "torch"):
        from features.encoder import BiEncoder, EncoderConfig  # deferred: importing it loads torch

        self.encoder = BiEncoder.load(encoder, config=EncoderConfig.from_json(config),
                                      device=backend_device(backend, precision, device))
        self.encoder.set_inference(precision, backend)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        items = [json.loads(line) for line in batch["text"]]
        units = [Unit(item["text"], [(s, e) for s, e in item["spans"]]) for item in items]
        vectors = self.encoder.encode_units(units, "passage", batch_size=self.batch_size)
        sizes = [max(len(item["spans"]), 1) for item in items]
        bounds = np.cumsum([0, *sizes])
        return {
            "shard": np.array([item["shard"] for item in items], dtype=np.int64),
            "number": np.array([item["number"] for item in items], dtype=np.int64),
            "vectors": np.array([vectors[a:b].tobytes() for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
                                dtype=object),
        }


def build_dense_shards(path: str | Path, encoder: str = "minilm", engine: Any = "local", index_type: str = "flat",
                       batch_size: int = 64, chunk: int = 512, overwrite: bool = False,
                       progress: bool = True, precision: str = "fp32", backend: str = "torch") -> dict[str, Any]:
    """Add ``dense/`` (see :mod:`indexes.faiss_index`) to every shard of a sharded index; update the manifest.

    Encoding is one batch job over all shards' passages (``chunk`` passages per batch, GPU workers when the
    engine has GPUs and the backend runs on them); each shard's FAISS index is written atomically, then the manifest
    (new checksums). ``precision`` and ``backend``: the workers' encoder's (:mod:`hybrid.core.precision`,
    :mod:`hybrid.core.backend`), recorded in every shard's metadata and the manifest.
    """
    import faiss

    from features.encoder import BiEncoder  # deferred: importing it loads torch

    backend_device(backend, precision, None)  # refused before anything is read or encoded
    path = Path(path).resolve()
    engine = get_engine(engine)
    manifest = read_manifest(path)
    model = BiEncoder.load(encoder, device="cpu")  # describe()/dim for the metadata; workers load their own
    started = time.time()
    tables, files, bounds = [], [], []
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".encoding", dir=path.parent))
    try:
        for i, shard in enumerate(manifest["shards"]):
            if (path / shard["name"] / DENSE_DIR).exists() and not overwrite:
                raise FileExistsError(f"{path / shard['name'] / DENSE_DIR} already exists (pass --overwrite)")
            sparse = SparseIndex(path / shard["name"])
            passages = iter_index_passages(sparse)
            tables.append(passages)
            bounds.append(row_bound(sparse))
            files.append(work / f"{shard['name']}.jsonl")
            with open(files[-1], "w", encoding="utf-8") as out:
                for number, p in enumerate(passages):
                    spans = [[s, e] for s, e, _ in p.mentions]
                    out.write(json.dumps({"shard": i, "number": number, "text": p.text, "spans": spans},
                                         ensure_ascii=False) + "\n")
        try:  # allocated before any encoding: too little memory is said now
            fills = [_FlatFill(_new_faiss(index_type, model.dim, 32, 200), bound) for bound in bounds]
        except MemoryError:
            need = sum(bounds) * model.dim * 4 / 2**30
            raise ConfigError(path, None, f"its shards' dense indexes need ~{need:.1f} GiB of memory ({sum(bounds):,} "
                                          f"vectors of {model.dim} floats at most) and this machine cannot allocate "
                                          "it; build them on a machine with more memory") from None
        expected = [0] * len(tables)
        gpus = engine.gpus() if backend == "torch" else 0  # onnx workers run on the CPU
        mark = time.time()
        outputs = engine.map_batches(
            files, EncodeBatch, {"encoder": model.source, "config": asdict(model.config), "batch_size": batch_size,
                                 "precision": precision, "backend": backend},
            batch_size=chunk, num_gpus=1 if gpus else 0, progress=progress, desc="encode",
        )
        for out in outputs:
            for shard, number, blob in zip(out["shard"], out["number"], out["vectors"], strict=True):
                if number != expected[shard]:
                    raise RuntimeError(f"encoded passages of shard {shard} arrived out of order")
                expected[shard] += 1
                fills[shard].add(np.frombuffer(blob, dtype=np.float32).reshape(-1, model.dim))
        encode_seconds = time.time() - mark
        indexes = [fill.close() for fill in fills]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    made = produced_by()
    for i, (shard, passages) in enumerate(zip(manifest["shards"], tables, strict=True)):
        doc_numbers: dict[str, int] = {}
        rows: list[tuple[int, int, int, int]] = []
        for number, p in enumerate(passages):
            doc_numbers.setdefault(p.doc_id, len(doc_numbers))
            if p.mentions:
                rows.extend((number, s, e, KIND_CODES.get(kind, 0)) for s, e, kind in p.mentions)
            else:
                rows.append((number, -1, -1, 0))
        if indexes[i].ntotal != len(rows):
            raise RuntimeError(f"{shard['name']}: {indexes[i].ntotal} vectors for {len(rows)} mention rows")
        with atomic_directory(path / shard["name"] / DENSE_DIR, overwrite=overwrite) as tmp:
            faiss.write_index(indexes[i], str(tmp / VECTORS))
            np.save(tmp / ROWS, np.asarray(rows, dtype=np.int32).reshape(-1, 4))
            table = {"ids": [p.id for p in passages], "doc": [doc_numbers[p.doc_id] for p in passages],
                     "docs": list(doc_numbers)}
            (tmp / PASSAGE_TABLE).write_text(json.dumps(table, ensure_ascii=False) + "\n", encoding="utf-8")
            metadata = {
                "format": DENSE_FORMAT, "kind": "hybrid-dense-index", "encoder": model.describe(),
                "faiss": {"type": index_type, "dim": model.dim, "metric": "inner_product",
                          **({"hnsw_m": 32, "ef_construction": 200} if index_type == "hnsw" else {})},
                "source_index": source_record(path / shard["name"]),
                "shard": {"index": i, "of": len(tables)},
                "counts": {"passages": len(passages), "documents": len(doc_numbers), "vectors": len(rows),
                           "passages_without_mentions": sum(1 for p in passages if not p.mentions)},
                "limit": None, "files": dense_file_records(tmp, (VECTORS, ROWS, PASSAGE_TABLE)),
                "batch_size": batch_size, "engine": engine.name, "gpus": gpus, "precision": precision,
                "backend": backend, "encode_seconds": round(encode_seconds, 2), **made,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            (tmp / DENSE_METADATA).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        manifest["shards"][i].update(checksum_tree(path / shard["name"]))
    manifest["dense"] = {"encoder": model.describe(), "faiss": index_type, "engine": engine.name, "gpus": gpus,
                         "precision": precision, "backend": backend, "vectors": sum(int(ix.ntotal) for ix in indexes),
                         "encode_seconds": round(encode_seconds, 2),
                         "build_seconds": round(time.time() - started, 2)}
    with atomic_write(path / MANIFEST) as out:
        out.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest
