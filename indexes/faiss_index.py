"""The dense side of a hybrid index: one FAISS vector per candidate mention.

A dense index directory (by default ``<hybrid index>/dense/``) holds::

    dense-index.json   encoder (path, sha256 fingerprint of weights+tokenizer+config, pooling config),
                       FAISS type, counts, the hybrid index it was built from, versions, timings
    vectors.faiss      faiss.write_index of IndexFlatIP (default) or IndexHNSWFlat (inner product)
    rows.npy           int32 [n, 4]: passage number, mention start, end (-1 = whole passage), kind code
    passages.json      passage ids, their document numbers and the document ids (and, since issue 39, a
                       short hash of every passage's text, ``text_hash``: a query sentence that is an
                       indexed passage's text then takes that passage's stored vector instead of a forward
                       pass; indexes without it encode every query sentence, as before)
    passages.faiss     optional: one *passage vector* per passage, row i = passage i of passages.json
                       (IndexFlatIP): the passage text without markers, mean-pooled by the same encoder,
                       i.e. what the off-the-shelf sentence encoder gives the passage; recorded under
                       ``passage_vectors`` in dense-index.json (absent in indexes built before them, which
                       load and search exactly as before)

Passage vectors keep a passage retrievable when no candidate mention of it was detected (a new domain, a
new kind of mention): :class:`~hybrid.retrieval.dense.DenseRetriever` compares them with the query
sentence encoded the same way (no markers). They live in their own FAISS index because they are not
mention rows: another pooling and dimension (``hidden``, not the mention vectors' ``2 * hidden`` of
``span+mean``), no span, no kind.

The candidate mentions are exactly the mention records of the sparse mention index (gold where the
corpus has them, detected elsewhere), so a dense hit and a sparse hit name the same span and fusion can
keep it. Passages are read back from the sparse index (its ``raw`` passage JSON), not from the corpus,
so the two sides cannot disagree. Vectors are unit length: inner product = cosine.

Loading memory-maps the FAISS codes and the row table (``IO_FLAG_MMAP_IFC``), so several processes
share one copy in the page cache. A query encoder whose fingerprint differs from the one recorded at
build time is refused: vectors of two different encoders are not comparable, and the mistake would
otherwise only show as silently bad rankings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from features.units import Unit
from hybrid.core.atomic import atomic_directory, remove_stale_builds
from hybrid.core.errors import ConfigError, IndexMissingError
from hybrid.core.gcpause import paused_collector
from hybrid.core.outputs import Kind
from hybrid.core.progress import progress as progress_bar
from hybrid.core.provenance import METADATA as SPARSE_METADATA
from hybrid.core.provenance import file_digest, produced_by, verify_mode
from hybrid.core.records import KIND_CODES, KIND_NAMES
from indexes.lucene import PASSAGES
from indexes.lucene_access import passage_span_reader

if TYPE_CHECKING:
    from features.encoder import BiEncoder
    from indexes.sparse_index import SparseIndex

log = logging.getLogger(__name__)

DENSE_METADATA = "dense-index.json"
VECTORS, ROWS, PASSAGE_TABLE = "vectors.faiss", "rows.npy", "passages.json"
PASSAGE_VECTORS = "passages.faiss"
DENSE_DIR = "dense"
#: A dense index folder, for the output policy (hybrid.core.outputs): ``--overwrite`` replaces only this.
DENSE_INDEX = Kind("dense index", manifests=(DENSE_METADATA,))
INDEX_TYPES = ("flat", "hnsw")
FORMAT_VERSION = 1


@dataclass
class IndexedPassage:
    id: str
    doc_id: str
    text: str
    mentions: list[tuple[int, int, str | None]]  # (start, end, kind), deduplicated, in index order


#: Passages read from a sparse index at a time (one call into the Java reader; the dense build's encode chunk).
READ_CHUNK = 4096


def index_passage_chunks(index: SparseIndex, size: int = READ_CHUNK, limit: int | None = None
                         ) -> Iterator[list[IndexedPassage]]:
    """Every passage of a hybrid index (the first ``limit`` with ``limit``) with its candidate mentions, repeated
    ones dropped, in Lucene document order, ``size`` passages at a time.

    Read by the project jar's ``PassageSpans``, which parses each passage's stored JSON on the Java side and hands
    over only the id, document id, text and mention spans: the stored JSON is ~10 KB a passage, ~95% of it mention
    annotation a dense build never reads, and decoding it in Python cost ~80 us a passage (81 s for a million).
    A JVM without the class (an older project jar) reads document by document in Python: the same passages.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    total = index.passages.num_docs if limit is None else min(limit, index.passages.num_docs)
    reader = passage_span_reader(index.path / PASSAGES)
    # a chunk's passages and mention tuples are many small acyclic objects: made with the cyclic collector paused
    # (100,000 ECB+-like raw passages: 3.46 -> 3.04 s, read chunk by chunk as a dense build does)
    if reader is None:
        for lo in range(0, total, size):
            with paused_collector():
                part = [_stored_passage(index, number) for number in range(lo, min(total, lo + size))]
            yield part
        return
    try:
        for lo in range(0, total, size):
            try:
                chunk = reader.read(lo, min(total, lo + size))
            except Exception as e:  # noqa: BLE001 - jnius.JavaException: the reader's IOException names the passage
                problem = (getattr(e, "innermessage", None) or str(e)).strip().splitlines()
                raise _damaged_passages(index, problem[0] if problem else type(e).__name__) from None
            with paused_collector():
                part = _chunk_passages(chunk)
            yield part
    finally:
        reader.close()


def iter_index_passages(index: SparseIndex) -> list[IndexedPassage]:
    """Every passage of a hybrid index with its candidate mentions, in Lucene document order
    (:func:`index_passage_chunks`, all of them)."""
    return [p for chunk in index_passage_chunks(index) for p in chunk]


def _chunk_passages(chunk: Any) -> list[IndexedPassage]:
    """The passages of one ``PassageSpans.Chunk``: its per-passage arrays, and the mentions' flat arrays cut by
    the per-passage counts (kind code -1: no kind)."""
    names = [None, *chunk.kindNames]
    starts, ends, kinds = chunk.starts, chunk.ends, [names[code + 1] for code in chunk.kinds]
    out, at = [], 0
    for pid, doc_id, text, count in zip(chunk.ids, chunk.docIds, chunk.texts, chunk.counts, strict=True):
        out.append(IndexedPassage(pid, doc_id, text, list(zip(starts[at : at + count], ends[at : at + count],
                                                               kinds[at : at + count], strict=True))))
        at += count
    return out


def _stored_passage(index: SparseIndex, number: int) -> IndexedPassage:
    """Passage ``number`` read and decoded in Python (a JVM without ``PassageSpans``)."""
    stored = index.passages.doc(number)
    if stored is None:  # Anserini answers None where Lucene cannot read the stored fields (a damaged .fdt)
        raise _damaged_passages(index, f"the stored document of passage number {number} cannot be read")
    return passage_of_raw(stored.raw())


def passage_of_raw(raw: str) -> IndexedPassage:
    """A passage from its stored JSON: what ``PassageSpans`` reads on the Java side, decoded in Python."""
    obj = json.loads(raw)
    seen: set[tuple[int, int, str | None]] = set()
    mentions = []
    for m in obj["mentions"]:
        key = (int(m["start"]), int(m["end"]), m.get("kind"))
        if key not in seen:
            seen.add(key)
            mentions.append(key)
    return IndexedPassage(obj["id"], obj["doc_id"], obj["contents"], mentions)


def _damaged_passages(index: SparseIndex, problem: str) -> IndexMissingError:
    corpus = index.metadata.get("config", {}).get("corpus", "CORPUS")
    return IndexMissingError(
        f"index {index.path} is damaged: {problem}; check every Lucene file with HYBRID_VERIFY=full (checksums "
        f"verified on open) or rebuild it with `python -m hybrid.index --corpus {corpus} --index {index.path} "
        "--overwrite`")


# -- binding: a dense index belongs to the hybrid index it was built from -----------------------------------

#: The sharded index's manifest (indexes.shards.MANIFEST; named here because shards imports this module).
SHARDS_MANIFEST = "hybrid-shards.json"
#: The counts that must agree: another passage or mention set means other rows.
BOUND_COUNTS = ("passages", "documents", "mentions")
_warned_unbound: set[str] = set()


def sparse_content(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What decides a hybrid index's passages and candidate mentions, i.e. a dense index's rows: the corpus
    (its sha256), the annotation options (worker count aside) and the counts. Not its path nor its build time:
    the same corpus indexed again the same way keeps its dense index (a sharded build of it too)."""
    config = metadata.get("config") if isinstance(metadata.get("config"), Mapping) else {}
    annotation = config.get("annotation") if isinstance(config.get("annotation"), Mapping) else {}
    counts = metadata.get("counts") if isinstance(metadata.get("counts"), Mapping) else {}
    return {"corpus_sha256": metadata.get("corpus_sha256"),
            "annotation": {k: v for k, v in sorted(annotation.items()) if k != "n_process"},
            "counts": {k: counts.get(k) for k in BOUND_COUNTS}}


def content_sha256(metadata: Mapping[str, Any]) -> str:
    """sha256 of :func:`sparse_content` (canonical JSON)."""
    text = json.dumps(sparse_content(metadata), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sparse_manifest(index: Any) -> tuple[Path, Path, dict[str, Any]]:
    """(folder, manifest file, metadata) of a SparseIndex / ShardedIndex, or of a hybrid index folder."""
    if hasattr(index, "metadata") and hasattr(index, "path"):
        folder = Path(index.path)
        manifest = folder / SPARSE_METADATA
        if not manifest.is_file() and (folder / SHARDS_MANIFEST).is_file():
            manifest = folder / SHARDS_MANIFEST
        return folder, manifest, dict(index.metadata)
    folder = Path(index)
    manifest = folder / SPARSE_METADATA
    if not manifest.is_file():
        manifest = folder / SHARDS_MANIFEST
    if not manifest.is_file():
        raise IndexMissingError(f"{folder} is not a hybrid index (no {SPARSE_METADATA}); build it with "
                                "`python -m hybrid.index`")
    try:
        metadata = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(manifest, None, f"unreadable index manifest ({exc}); rebuild the index with "
                                          "`python -m hybrid.index`") from None
    if not isinstance(metadata, dict):
        raise ConfigError(manifest, None, "the index manifest is not a JSON object; rebuild the index with "
                                          "`python -m hybrid.index`")
    return folder, manifest, metadata


def source_record(index: Any) -> dict[str, Any]:
    """The ``source_index`` block of a dense index's metadata: which hybrid index it was built from (path,
    corpus sha256, counts, the sha256 of its manifest file, and :func:`content_sha256`, the one
    :func:`check_bound` compares)."""
    folder, manifest, metadata = _sparse_manifest(index)
    return {"path": str(folder), "corpus_sha256": metadata.get("corpus_sha256"), "counts": metadata.get("counts"),
            "manifest_sha256": file_digest(manifest), "content_sha256": content_sha256(metadata)}


def check_bound(dense: DenseIndex | Mapping[str, Any] | str | Path, sparse: Any) -> None:
    """Refuse a dense index that was not built from the hybrid index ``sparse`` (its rows would name another
    collection's passages and spans); raises :class:`ConfigError` naming both.

    ``dense``: a :class:`DenseIndex`, its folder, or its ``dense-index.json`` content; ``sparse``: a
    SparseIndex / ShardedIndex or a hybrid index folder. A dense index built before the binding was recorded
    opens with a one-line warning (still refused when its recorded corpus sha256 or counts disagree).
    """
    if isinstance(dense, DenseIndex):
        meta, where = dense.metadata, dense.path
    elif isinstance(dense, Mapping):
        meta, where = dense, None
    else:
        where = resolve_dense_dir(dense)
        meta = _read_dense_metadata(where)
    folder, _, sparse_meta = _sparse_manifest(sparse)
    source = meta.get("source_index") if isinstance(meta.get("source_index"), Mapping) else {}
    built_from = source.get("path") or "an unrecorded index"
    name = str(where) if where is not None else f"the dense index built from {built_from}"
    meta_file = Path(where) / DENSE_METADATA if where is not None else None
    fix = (f"give the dense index built from {folder} (--dense-index), or build one for it with "
           f"`python -m hybrid.index_dense --index {folder}`")
    recorded = source.get("content_sha256")
    if recorded is not None:
        found = content_sha256(sparse_meta)
        if recorded != found:
            raise ConfigError(meta_file, None,
                              f"dense index {name} was built from the hybrid index {built_from} (content "
                              f"{str(recorded)[:12]}), not from {folder} (content {found[:12]}); {fix}")
        return
    corpus = source.get("corpus_sha256")
    counts = source.get("counts") if isinstance(source.get("counts"), Mapping) else {}
    ours = sparse_content(sparse_meta)
    differs = [f"corpus sha256 {str(corpus)[:12]} vs {str(ours['corpus_sha256'])[:12]}"
               for _ in [0] if corpus and ours["corpus_sha256"] and corpus != ours["corpus_sha256"]]
    differs += [f"{key} {counts[key]} vs {ours['counts'][key]}" for key in BOUND_COUNTS
                if counts.get(key) is not None and ours["counts"][key] is not None
                and counts[key] != ours["counts"][key]]
    if differs:
        raise ConfigError(meta_file, None,
                          f"dense index {name} was built from the hybrid index {built_from}, not from {folder} "
                          f"({'; '.join(differs)}); {fix}")
    key = str(where or built_from)
    if key not in _warned_unbound:
        _warned_unbound.add(key)
        log.warning("dense index %s records no binding to the hybrid index it was built from (built before "
                    "bindings were recorded); using it with %s unchecked: rebuild it with "
                    "`python -m hybrid.index_dense --index %s --overwrite` to bind it", name, folder, folder)


def text_hash(text: str) -> str:
    """A short hash of a passage's text (blake2b, 8 bytes, hex): equal texts, equal hashes."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def faiss_has_gpu() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def exact_copy(index):
    """A flat (exact) FAISS index holding the same vectors as ``index``, with the same metric.

    Why: FAISS has no GPU HNSW; on a GPU an HNSW index is searched exactly instead (brute force on the GPU is
    faster than the graph on the CPU at the sizes this project meets, and finds at least what the graph finds).
    """
    import faiss

    if not hasattr(index, "hnsw"):
        return index
    flat = faiss.IndexFlat(index.d, index.metric_type)
    if index.ntotal:
        flat.add(index.reconstruct_n(0, index.ntotal))
    return flat


def gpu_searcher(index):
    """``index`` copied onto every visible GPU for searching (an HNSW index as its exact copy, see
    :func:`exact_copy`). Reconstruction (exact re-scoring) keeps using the CPU index, memory-mapped."""
    import faiss

    if not faiss_has_gpu():
        raise ConfigError(None, None, "a GPU search was asked for, but FAISS sees no GPU: install the gpu extra "
                                      "(faiss-gpu) on a machine with a CUDA device, or search on the CPU")
    return faiss.index_cpu_to_all_gpus(exact_copy(index))


#: FAISS's GPU k-selection handles at most this many neighbours per query; larger fetches search on the CPU.
GPU_MAX_K = 2048


def _new_faiss(index_type: str, dim: int, hnsw_m: int, ef_construction: int):
    import faiss

    if index_type == "flat":
        return faiss.IndexFlatIP(dim)
    if index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        return index
    raise ConfigError(None, None, f"unknown dense index type {index_type!r}; choose from {INDEX_TYPES}")


class _FlatFill:
    """Vectors added to an empty flat FAISS index through its code buffer, sized once to an upper bound of the rows
    and filled in place; :meth:`close` cuts it to the rows added and sets the count. Another index type (HNSW)
    takes its vectors through ``add``.

    Why: ``IndexFlat.add`` grows its code vector by reallocation, and at every doubling the old and the new buffer
    are alive together. Building the dense index of 100,000 ECB+-like raw passages (1.83M vectors x 768, 5.6 GB)
    peaked at 10.0 GB resident, so a million passages (56 GB of vectors) would need ~100 GB. The buffer's bytes and
    the index written are what ``add`` makes (IndexFlatIP stores the float32 vectors as they are). A bound that
    proves too small grows the buffer as ``add`` would have.
    """

    def __init__(self, index: Any, bound: int):
        import faiss

        self.index = index  # the caller's object owns the C++ index; a downcast wrapper does not
        self.flat = faiss.downcast_index(index)
        self.fill = isinstance(self.flat, faiss.IndexFlat) and self.flat.code_size == 4 * self.flat.d
        self.rows = 0
        self._buffer = np.zeros((0, self.flat.d), dtype=np.float32)
        if self.fill:
            if self.flat.ntotal:
                raise ValueError("_FlatFill needs an empty index")
            self._resize(max(bound, 0))

    def _resize(self, rows: int) -> None:
        """The code buffer holds ``rows`` vectors; :attr:`_buffer` views it (a resize may move it)."""
        import faiss

        self.flat.codes.resize(rows * self.flat.code_size)
        self._buffer = (faiss.rev_swig_ptr(self.flat.get_xb(), rows * self.flat.d).reshape(rows, self.flat.d)
                        if rows else np.zeros((0, self.flat.d), dtype=np.float32))

    def add(self, vectors: np.ndarray) -> None:
        if not self.fill or not len(vectors):
            if len(vectors):
                self.flat.add(vectors)
            return
        end = self.rows + len(vectors)
        if end > len(self._buffer):
            self._resize(max(end, 2 * len(self._buffer)))
        self._buffer[self.rows : end] = vectors
        self.rows = end

    def close(self) -> Any:
        """The index, holding exactly the vectors added."""
        if self.fill:
            self._buffer = np.zeros((0, self.flat.d), dtype=np.float32)  # no view outlives the cut
            self.flat.codes.resize(self.rows * self.flat.code_size)
            self.flat.ntotal = self.rows
        return self.index


def row_bound(index: SparseIndex, limit: int | None = None) -> int:
    """At most how many rows (vectors) the dense index of ``index`` has: a passage gives one per candidate mention,
    or one without any, so the mention index's documents plus the passages; 0 with a ``limit`` (the first passages'
    mentions are not counted anywhere)."""
    return index.mentions.num_docs + index.passages.num_docs if limit is None else 0


def build_dense_index(index: SparseIndex, encoder: BiEncoder, output: str | Path, index_type: str = "flat",
                      hnsw_m: int = 32, ef_construction: int = 200, batch_size: int = 64, chunk: int = 4096,
                      overwrite: bool = False, progress: bool = True, limit: int | None = None,
                      passage_vectors: bool = True) -> dict:
    """Encode every passage of ``index`` once (a vector per candidate mention) and write a dense index.

    ``passage_vectors``: also store one unmarked, mean-pooled vector per passage (``passages.faiss``), taken
    from the same forward pass where it can be. ``limit`` keeps only the first N passages (tests and quick
    experiments; recorded in the metadata). Passages are encoded ``chunk`` at a time, each chunk's sequences
    sorted by length into batches: the larger the chunk, the less padding (on ECB+ 512 padded 21% more tokens
    than there are, 4096 about 3%), at the cost of holding a chunk's token ids and vectors in memory. The next
    chunk is read from the index (:func:`index_passage_chunks`), tokenised and batched on a worker thread while
    the model encodes this one (:meth:`BiEncoder.encode_chunks`); what the build keeps of the passages is their
    ids, document numbers and text hashes, and a chunk's mention rows as an int32 array (ECB+ dev raw: 7 MB where
    the whole passage list and a row tuple per mention took 52 MB, ~3.3 GB for a million passages).
    """
    import faiss

    output = Path(output)
    remove_stale_builds(output.parent, output.name)
    total = index.passages.num_docs if limit is None else min(limit, index.passages.num_docs)
    if total <= 0:
        raise ValueError(f"{index.path}: no passages to encode")

    started = time.time()
    with atomic_directory(output, overwrite=overwrite) as tmp:
        bound = row_bound(index, limit)
        try:  # the buffers are allocated here, before any encoding: too little memory is said now, not hours later
            vectors = _FlatFill(_new_faiss(index_type, encoder.dim, hnsw_m, ef_construction), bound)
            plain = _FlatFill(faiss.IndexFlatIP(encoder.hidden), total) if passage_vectors else None
        except MemoryError:
            need = (bound * encoder.dim + (total * encoder.hidden if passage_vectors else 0)) * 4 / 2**30
            raise ConfigError(index.path, None, f"its dense index needs ~{need:.1f} GiB of memory ({bound:,} "
                                                f"vectors of {encoder.dim} floats at most: one per candidate mention, "
                                                f"{total:,} passages) and this machine cannot allocate it; build it "
                                                "on a machine with more memory") from None
        doc_numbers: dict[str, int] = {}
        row_parts: list[np.ndarray] = []
        ids: list[str] = []
        docs_of: list[int] = []
        hashes: list[str] = []
        without_mentions = 0
        encode_seconds = 0.0
        bar = progress_bar(desc="encode passages", unit="passage", total=total, enabled=progress)
        # the passages are read chunk by chunk, and the next chunk read, tokenised and batched on a worker thread
        # while this one runs through the model (encode_chunks); the parts wait here for their vectors, in order
        parts: deque[list[IndexedPassage]] = deque()

        def units() -> Iterator[list[Unit]]:
            for part in index_passage_chunks(index, chunk, limit):
                parts.append(part)
                yield [Unit(p.text, [(s, e) for s, e, _ in p.mentions]) for p in part]

        encoded = encoder.encode_chunks(units(), "passage", batch_size=batch_size, passages=plain is not None)
        lo = 0
        while True:
            t0 = time.time()
            result = next(encoded, None)
            encode_seconds += time.time() - t0
            if result is None:
                break
            part = parts.popleft()
            if plain is not None:
                vecs, passage_vecs = result
                plain.add(passage_vecs)
            else:
                vecs = result
            vectors.add(vecs)
            rows: list[tuple[int, int, int, int]] = []
            for number, p in enumerate(part, start=lo):
                docs_of.append(doc_numbers.setdefault(p.doc_id, len(doc_numbers)))
                ids.append(p.id)
                hashes.append(text_hash(p.text))
                if p.mentions:
                    rows.extend((number, s, e, KIND_CODES.get(kind, 0)) for s, e, kind in p.mentions)
                else:
                    rows.append((number, -1, -1, 0))
                    without_mentions += 1
            row_parts.append(np.asarray(rows, dtype=np.int32).reshape(-1, 4))
            lo += len(part)
            bar.update(len(part))
            bar.set_postfix(passages_per_s=f"{lo / max(encode_seconds, 1e-9):.1f}")
        bar.close()
        rows_table = np.concatenate(row_parts)
        vectors = vectors.close()
        plain = plain.close() if plain is not None else None
        if lo != total:
            raise RuntimeError(f"read {lo} passages of {total}")
        if vectors.ntotal != len(rows_table):
            raise RuntimeError(f"encoded {vectors.ntotal} vectors for {len(rows_table)} mention rows")
        faiss.write_index(vectors, str(tmp / VECTORS))
        if plain is not None:
            if plain.ntotal != total:
                raise RuntimeError(f"encoded {plain.ntotal} passage vectors for {total} passages")
            faiss.write_index(plain, str(tmp / PASSAGE_VECTORS))
        np.save(tmp / ROWS, rows_table)
        docs = list(doc_numbers)
        table = {"ids": ids, "doc": docs_of, "docs": docs, "text_hash": hashes}
        (tmp / PASSAGE_TABLE).write_text(json.dumps(table, ensure_ascii=False) + "\n", encoding="utf-8")
        files = dense_file_records(tmp, (VECTORS, ROWS, PASSAGE_TABLE, PASSAGE_VECTORS))
        metadata = {
            "format": FORMAT_VERSION,
            "kind": "hybrid-dense-index",
            "encoder": encoder.describe(),
            "faiss": {"type": index_type, "dim": encoder.dim, "metric": "inner_product",
                      **({"hnsw_m": hnsw_m, "ef_construction": ef_construction} if index_type == "hnsw" else {})},
            "source_index": source_record(index),
            "counts": {"passages": total, "documents": len(docs), "vectors": len(rows_table),
                       "passages_without_mentions": without_mentions},
            **({"passage_vectors": {"file": PASSAGE_VECTORS, "count": total, "dim": encoder.hidden,
                                    "faiss": "flat", "metric": "inner_product", "pooling": "mean", "marked": False,
                                    "max_tokens": encoder.config.passage_max_tokens,
                                    "query": "the query sentence, unmarked, encoded the same way"}}
               if plain is not None else {}),
            "limit": limit,
            "files": files,
            "encode_seconds": round(encode_seconds, 2),
            "passages_per_second": round(total / encode_seconds, 2) if encode_seconds else None,
            "batch_size": batch_size,
            "device": encoder.device,
            "precision": getattr(encoder, "precision", "fp32"),
            "backend": getattr(encoder, "backend", "torch"),
            **produced_by(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - started, 2),
        }
        (tmp / DENSE_METADATA).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    return metadata


def resolve_dense_dir(path: str | Path) -> Path:
    """A dense index directory, or a hybrid index directory holding one in ``dense/``."""
    path = Path(path)
    if (path / DENSE_METADATA).is_file():
        return path
    if (path / DENSE_DIR / DENSE_METADATA).is_file():
        return path / DENSE_DIR
    raise IndexMissingError(f"{path} is not a dense index (no {DENSE_METADATA}, nor {DENSE_DIR}/{DENSE_METADATA}); "
                            "build one with `python -m hybrid.index_dense`")


def _read_dense_metadata(folder: Path) -> dict[str, Any]:
    """``dense-index.json`` of a dense index folder, refused (ConfigError naming it) when it is not a JSON object
    with the keys loading needs."""
    where = folder / DENSE_METADATA
    fix = "rebuild the dense index with `python -m hybrid.index_dense --overwrite`"
    try:
        meta = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(where, None, f"unreadable dense index metadata ({type(exc).__name__}: {exc}); "
                                       f"{fix}") from None
    if not isinstance(meta, dict):
        raise ConfigError(where, None, f"dense index metadata is not a JSON object; {fix}")
    for key, kind in (("faiss", dict), ("encoder", dict)):
        if not isinstance(meta.get(key), kind):
            raise ConfigError(where, None, f"dense index metadata lacks the {key!r} object; {fix}")
    if meta["faiss"].get("type") not in INDEX_TYPES:
        raise ConfigError(where, None, f"dense index metadata: faiss.type must be one of {INDEX_TYPES}; {fix}")
    if not isinstance(meta["encoder"].get("fingerprint"), str) or not isinstance(meta["encoder"].get("path"), str):
        raise ConfigError(where, None, f"dense index metadata: encoder.path and encoder.fingerprint must be "
                                       f"strings; {fix}")
    return meta


# -- damaged files: sizes and checksums recorded at build time, checked on open ---------------------------

def dense_file_records(folder: Path, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``{file: {"bytes", "sha256"}}`` of a dense index's data files (recorded in its metadata at build time)."""
    return {name: {"bytes": (folder / name).stat().st_size, "sha256": file_digest(folder / name)}
            for name in names if (folder / name).is_file()}


def verify_dense_files(folder: Path, metadata: Mapping[str, Any], verify: str | None = None) -> None:
    """Refuse a dense index whose data files differ from the sizes (and, ``full``, sha256) recorded when it was
    built. An index built before they were recorded (no ``files``) is not checked."""
    files = metadata.get("files")
    if files is None:
        return
    if not isinstance(files, Mapping):
        raise _damaged(folder / DENSE_METADATA, "'files' is not an object")
    full = verify_mode(verify) == "full"
    for name, record in files.items():
        where = folder / str(name)
        if not isinstance(record, Mapping) or Path(str(name)).name != name:
            raise _damaged(folder / DENSE_METADATA, f"bad 'files' entry {name!r}")
        if not where.is_file():
            raise IndexMissingError(f"{folder} lacks {name}; rebuild it with `python -m hybrid.index_dense`")
        size = where.stat().st_size
        if size != record.get("bytes"):
            raise _damaged(where, f"{size} bytes, {record.get('bytes')} when it was built (truncated or replaced)")
        if full and file_digest(where) != record.get("sha256"):
            raise _damaged(where, "its sha256 differs from the one recorded when it was built")


def _damaged(where: Path, problem: str) -> IndexMissingError:
    folder = where.parent
    return IndexMissingError(f"{where}: damaged dense index file ({problem}); rebuild it with "
                             f"`python -m hybrid.index_dense --output {folder} --overwrite`")


def _read_part(where: Path, read: Any) -> Any:
    """``read(where)``, with the failure of a damaged file (FAISS's RuntimeError, numpy's ValueError, broken
    JSON, a wrong shape) turned into one line naming the file."""
    try:
        return read(where)
    except IndexMissingError:
        raise
    except (RuntimeError, ValueError, OSError, EOFError, KeyError, TypeError, UnicodeDecodeError) as exc:
        problem = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise _damaged(where, f"{type(exc).__name__}: {problem}") from None


def _read_passage_table(where: Path) -> dict[str, Any]:
    table = json.loads(where.read_text(encoding="utf-8"))
    if not isinstance(table, dict) or not all(isinstance(table.get(k), list) for k in ("ids", "doc", "docs")):
        raise ValueError("expected an object with the lists 'ids', 'doc' and 'docs'")
    ids, doc, docs = table["ids"], table["doc"], table["docs"]
    if len(ids) != len(doc) or not all(isinstance(x, str) for x in ids) or not all(isinstance(x, str) for x in docs):
        raise ValueError("'ids' and 'doc' differ in length, or an id is not a string")
    if any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(docs) for x in doc):
        raise ValueError("a passage's document number is not an index into 'docs'")
    return table


def _check_rows(where: Path, rows: np.ndarray, passages: int) -> None:
    """The row table's shape and its passage numbers: a garbled one would name passages that do not exist."""
    if rows.ndim != 2 or rows.shape[1] != 4 or rows.dtype.kind not in "iu":
        raise _damaged(where, f"an array of shape {rows.shape} and type {rows.dtype}, not int [n, 4]")
    if len(rows) and (int(rows[:, 0].min()) < 0 or int(rows[:, 0].max()) >= passages):
        raise _damaged(where, f"passage numbers outside 0..{passages - 1}")


class DenseIndex:
    """A built dense index, memory-mapped; ``search`` returns FAISS row numbers and scores."""

    def __init__(self, path: str | Path, mmap: bool = True, gpu: bool | None = None, ef_search: int = 128):
        import faiss

        self.path = resolve_dense_dir(path)
        self.metadata = _read_dense_metadata(self.path)
        for part in (VECTORS, ROWS, PASSAGE_TABLE):
            if not (self.path / part).is_file():
                raise IndexMissingError(f"{self.path} lacks {part}; rebuild it with `python -m hybrid.index_dense`")
        verify_dense_files(self.path, self.metadata)
        flags = 0
        if mmap:
            flags = getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP) | faiss.IO_FLAG_READ_ONLY
        self.faiss = _read_part(self.path / VECTORS, lambda where: faiss.read_index(str(where), flags))
        if self.faiss.d != self.metadata["faiss"].get("dim", self.faiss.d):
            raise _damaged(self.path / VECTORS, f"{self.faiss.d} dimensions, the metadata says "
                                                f"{self.metadata['faiss'].get('dim')}")
        if self.metadata["faiss"]["type"] == "hnsw":
            self.faiss.hnsw.efSearch = ef_search
        #: searched on the GPU when faiss-gpu sees one (``gpu=None``) or when asked (``gpu=True``): the FAISS search
        #: runs on a GPU copy (an HNSW index: its exact copy), while ``self.faiss`` stays the CPU index that exact
        #: re-scoring reconstructs from
        self.on_gpu = bool(faiss_has_gpu() if gpu is None else gpu)
        self._searcher = gpu_searcher(self.faiss) if self.on_gpu else self.faiss
        #: the stored float32 vectors of a flat index, read in place by exact re-scoring (None: reconstructed)
        self._stored = stored_vectors(self.faiss)
        self.rows = _read_part(self.path / ROWS, lambda where: np.load(where, mmap_mode="r" if mmap else None,
                                                                       allow_pickle=False))
        table = _read_part(self.path / PASSAGE_TABLE, _read_passage_table)
        self.passage_ids: list[str] = table["ids"]
        self.passage_doc = np.asarray(table["doc"], dtype=np.int32)
        self.doc_ids: list[str] = table["docs"]
        _check_rows(self.path / ROWS, self.rows, len(self.passage_ids))
        #: per passage, :func:`text_hash` of its text (None in indexes built before it was recorded)
        self.text_hashes: list[str] | None = table.get("text_hash")
        if self.text_hashes is not None and len(self.text_hashes) != len(self.passage_ids):
            raise _damaged(self.path / PASSAGE_TABLE,
                           f"{len(self.text_hashes)} text hashes for {len(self.passage_ids)} passages")
        self.doc_number = {d: i for i, d in enumerate(self.doc_ids)}
        self.passage_number = {p: i for i, p in enumerate(self.passage_ids)}
        self.row_passage = np.asarray(self.rows[:, 0])
        self.row_doc = self.passage_doc[self.row_passage]
        self.row_kind = np.asarray(self.rows[:, 3])
        if self.faiss.ntotal != len(self.rows):
            raise IndexMissingError(f"{self.path}: {self.faiss.ntotal} vectors but {len(self.rows)} rows; rebuild it")
        # rows are written passage by passage: passage n owns rows[row_start[n]:row_start[n + 1]]
        n = len(self.passage_ids)
        if len(self.row_passage) and np.all(np.diff(self.row_passage) >= 0):
            self.row_order = None
            self.row_start = np.searchsorted(self.row_passage, np.arange(n + 1))
        else:  # not written in passage order (never by build_dense_index): go through a sorted copy
            self.row_order = np.argsort(self.row_passage, kind="stable")
            self.row_start = np.searchsorted(self.row_passage[self.row_order], np.arange(n + 1))
        self.max_doc_passages = int(np.bincount(self.passage_doc).max()) if n else 0
        self.passage_vectors = None  # optional FAISS index of one unmarked passage vector per passage
        self._stored_passages: np.ndarray | None = None
        info = self.metadata.get("passage_vectors")
        if info:
            where = self.path / info.get("file", PASSAGE_VECTORS)
            if not where.is_file():
                raise IndexMissingError(f"{self.path} lacks {where.name}; rebuild it with "
                                        "`python -m hybrid.index_dense`")
            self.passage_vectors = _read_part(where, lambda part: faiss.read_index(str(part), flags))
            self._passage_searcher = gpu_searcher(self.passage_vectors) if self.on_gpu else self.passage_vectors
            self._stored_passages = stored_vectors(self.passage_vectors)
            if self.passage_vectors.ntotal != n:
                raise IndexMissingError(f"{self.path}: {self.passage_vectors.ntotal} passage vectors for {n} passages; "
                                        "rebuild it")

    def artifact_record(self) -> dict[str, Any]:
        """What a run's meta records of this index (see :func:`hybrid.core.provenance.used_artifacts`)."""
        return {"kind": "dense_index", "path": str(self.path), "fingerprint": file_digest(self.path / DENSE_METADATA),
                "source_index": self.metadata.get("source_index", {}).get("path")}

    @property
    def encoder_info(self) -> dict:
        return self.metadata["encoder"]

    @property
    def size(self) -> int:
        return int(self.faiss.ntotal)

    def check_encoder(self, encoder: BiEncoder) -> None:
        """Refuse a query encoder other than the one the passages were encoded with."""
        want = self.encoder_info["fingerprint"]
        if encoder.fingerprint != want:
            raise ConfigError(
                self.path / DENSE_METADATA, None,
                f"query encoder {encoder.source} (fingerprint {encoder.fingerprint[:12]}) is not the encoder this "
                f"index was built with: {self.encoder_info['path']} (fingerprint {want[:12]}); use that encoder "
                "or rebuild the index with `python -m hybrid.index_dense`",
            )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, self.size)
        searcher = self._searcher if k <= GPU_MAX_K else self.faiss
        return searcher.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def exact_scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of one query vector with the stored vectors of ``rows``, in float64.

        Why: FAISS computes inner products through BLAS for batches of queries and with its own SIMD loop
        otherwise, blocked by the index's size, so the same (query, vector) pair can differ in the last bits
        between one index and a sharding of it, or between two batch sizes; near-equal scores then order
        differently and exact ties (duplicate passages) stop being ties. Here every row is a float64 product
        summed in numpy's fixed order for one row, whatever the other rows, the layout or the batch.
        """
        return _exact_scores(self.faiss, self._stored, query, rows)

    @property
    def has_passage_vectors(self) -> bool:
        return self.passage_vectors is not None

    def rows_of_passage(self, number: int) -> np.ndarray:
        """The row numbers of passage ``number`` (its candidate mentions, or its one span-less row), in order."""
        lo, hi = self.row_start[number], self.row_start[number + 1]
        return np.arange(lo, hi) if self.row_order is None else self.row_order[lo:hi]

    def search_passages(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Nearest passage vectors (FAISS scores, passage numbers) of unmarked query-sentence vectors."""
        if self.passage_vectors is None:
            raise IndexMissingError(f"{self.path} has no passage vectors; rebuild it with "
                                    "`python -m hybrid.index_dense`")
        k = min(k, int(self.passage_vectors.ntotal))
        searcher = self._passage_searcher if k <= GPU_MAX_K else self.passage_vectors
        return searcher.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def stored_passage_number(self, passage_id: str | None, text: str) -> int | None:
        """The number of the indexed passage ``passage_id`` when its text is ``text`` (by :func:`text_hash`), so
        that its stored passage vector is that text's vector; None when unknown, different or not recorded."""
        if self.text_hashes is None or self.passage_vectors is None or not passage_id:
            return None
        number = self.passage_number.get(passage_id)
        return number if number is not None and self.text_hashes[number] == text_hash(text) else None

    def passage_exact_scores(self, query: np.ndarray, numbers: np.ndarray) -> np.ndarray:
        """Inner products of one query-sentence vector with passage vectors, in float64 (see exact_scores)."""
        if self.passage_vectors is None:
            return np.zeros(0, dtype=np.float64)
        return _exact_scores(self.passage_vectors, self._stored_passages, query, numbers)

    def doc_of_passage(self, passage_id: str) -> str | None:
        number = self.passage_number.get(passage_id)
        return None if number is None else self.doc_ids[self.passage_doc[number]]

    def kind_of(self, passage_id: str, start: int, end: int) -> str | None:
        """The indexed kind of a span (query by example: the query is a mention of the corpus)."""
        number = self.passage_number.get(passage_id)
        if number is None:
            return None
        hit = np.nonzero((self.row_passage == number) & (self.rows[:, 1] == start) & (self.rows[:, 2] == end))[0]
        return KIND_NAMES.get(int(self.row_kind[hit[0]])) if len(hit) else None


#: Rows per block of exact products: a block's float64 products (128 x 768 x 8 bytes) stay in the CPU cache
#: between the multiply and the row sums, where all rows' products at once (~18 MB for 3,000 rows) do not.
PRODUCT_BLOCK = 128


def stored_vectors(index: Any) -> np.ndarray | None:
    """A read-only view of a flat FAISS index's stored float32 vectors (the bytes ``reconstruct`` copies), or None
    for another index type. Valid while ``index`` lives and is not added to (a :class:`DenseIndex` never adds)."""
    import faiss

    flat = faiss.downcast_index(index)
    if not isinstance(flat, faiss.IndexFlat) or flat.code_size != 4 * flat.d or flat.ntotal == 0:
        return None
    view = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d).reshape(flat.ntotal, flat.d)
    view.flags.writeable = False
    return view


def _exact_scores(index: Any, stored: np.ndarray | None, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`_float64_products` of ``query`` with vectors ``rows`` of ``index``: read in place from ``stored`` (a
    flat index: a numpy gather, where ``reconstruct_batch`` is a virtual call per row, on OpenMP threads from 1,000
    rows), else reconstructed. The same float32 values either way."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.float64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if stored is None:
        return _float64_products(index.reconstruct_batch(rows), query)
    return _float64_products(stored, query, rows)


def _float64_products(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Each row's inner product with ``query`` (rows ``rows`` of ``vectors``, or all), in float64: the float32 rows
    widened exactly, multiplied, and each row of the products summed by numpy in its fixed order. The ufunc widens
    the rows as it multiplies (one pass, no float64 copy of them first); the products, and so the sums, are the
    same bits either way. A row's sum does not depend on the other rows, so the rows go in blocks of
    :data:`PRODUCT_BLOCK` (the same bits as all at once: tests/hybrid/test_dense_index.py)."""
    wide = np.asarray(query, dtype=np.float64)[None, :]
    n = len(vectors) if rows is None else len(rows)
    out = np.empty(n, dtype=np.float64)
    products = np.empty((min(n, PRODUCT_BLOCK), wide.shape[1]), dtype=np.float64)
    for lo in range(0, n, PRODUCT_BLOCK):
        hi = min(lo + PRODUCT_BLOCK, n)
        block = vectors[lo:hi] if rows is None else vectors[rows[lo:hi]]
        np.multiply(block, wide, out=products[: hi - lo]).sum(axis=1, out=out[lo:hi])
    return out


# -- FAISS rows -> passages (shared by the dense retriever and the sharded dense search) -------------------


def best_mention_per_passage(index: DenseIndex, query: np.ndarray, rows: np.ndarray, own: int, kind: int | None,
                             k: int) -> list[tuple[str, float, int, int]]:
    """FAISS rows of one query vector -> top ``k`` ``(passage id, score, start, end)``: best mention per passage.

    Drops the query's own document (``own`` >= 0) and, with ``kind``, mentions of another kind. The kept rows
    are re-scored by :meth:`DenseIndex.exact_scores` (FAISS's own scores can differ in the last bits between
    layouts, and it returns equal scores in heap order), a passage's best mention among equal scores is its
    first by offset, and ties between passages are broken by passage id, so that one index and any sharding
    of it rank exactly alike.
    """
    keep = rows >= 0
    safe = np.where(keep, rows, 0)
    if own >= 0:
        keep &= index.row_doc[safe] != own
    if kind is not None:
        row_kind = index.row_kind[safe]
        keep &= (row_kind == kind) | (row_kind == 0)
    rows = rows[keep]
    scores = index.exact_scores(query, rows)
    spans = np.asarray(index.rows[rows, 1:3])
    order = np.lexsort((spans[:, 1], spans[:, 0], -scores))  # best first; equal scores: first span
    rows, scores = rows[order], scores[order]
    _, first = np.unique(index.row_passage[rows], return_index=True)  # best first: the first of a passage is its best
    first.sort()
    best = scores[first]  # one per passage, best first (non-increasing)
    if len(best) > k and np.isfinite(best).all():
        # only passages scoring at least the k-th best can be in the top k (those tied with it go by passage id)
        first = first[: int(np.searchsorted(-best, -best[k - 1], side="right"))]
    table = np.asarray(index.rows[rows[first], :3]).tolist()  # one read of the rows table, not one per passage
    ids = index.passage_ids
    found = [(ids[number], score, start, end)
             for (number, start, end), score in zip(table, scores[first].tolist(), strict=True)]
    found.sort(key=lambda hit: (-hit[1], hit[0]))
    return found[:k]


def best_mention_of_passage(index: DenseIndex, query: np.ndarray, number: int, kind: int | None
                            ) -> tuple[float, int, int] | None:
    """``(exact score, start, end)`` of passage ``number``'s best eligible row (first span among equal scores),
    or None when it has none of ``kind`` (or of unknown kind): the score best_mention_per_passage gives it."""
    rows = index.rows_of_passage(number)
    if kind is not None:
        row_kind = index.row_kind[rows]
        rows = rows[(row_kind == kind) | (row_kind == 0)]
    if len(rows) == 0:
        return None
    scores = index.exact_scores(query, rows)
    spans = np.asarray(index.rows[rows, 1:3])
    best = np.lexsort((spans[:, 1], spans[:, 0], -scores))[0]
    return float(scores[best]), int(spans[best, 0]), int(spans[best, 1])


def best_mention_of_passages(index: DenseIndex, query: np.ndarray, numbers: np.ndarray, kind: int | None
                             ) -> list[tuple[float, int, int] | None]:
    """:func:`best_mention_of_passage` of many passages at once (one exact_scores call)."""
    numbers = np.asarray(numbers, dtype=np.int64)
    if len(numbers) == 0:
        return []
    # every passage's rows (rows_of_passage of each, concatenated), and the passage each row belongs to
    lo, counts = index.row_start[numbers], index.row_start[numbers + 1] - index.row_start[numbers]
    owner = np.repeat(np.arange(len(numbers)), counts)
    rows = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(lo - (np.cumsum(counts) - counts), counts)
    if index.row_order is not None:
        rows = index.row_order[rows]
    if kind is not None:
        row_kind = index.row_kind[rows]
        keep = (row_kind == kind) | (row_kind == 0)
        rows, owner = rows[keep], owner[keep]
    out: list[tuple[float, int, int] | None] = [None] * len(numbers)
    if len(rows) == 0:
        return out
    scores = _exact_scores_of_bests(index, query, rows, owner, len(numbers))
    spans = np.asarray(index.rows[rows, 1:3])
    order = np.lexsort((spans[:, 1], spans[:, 0], -scores, owner))  # per passage: best first, then first span
    owner, scores, spans = owner[order], scores[order], spans[order]
    _, first = np.unique(owner, return_index=True)
    for passage, score, (start, end) in zip(owner[first].tolist(), scores[first].tolist(), spans[first].tolist(),
                                            strict=True):
        out[passage] = (score, start, end)
    return out


#: ``|float32 dot - float64 exact score| <= FLOAT32_DOT_ERROR * d * sum(|x_i q_i|)``: float32 summation of ``d``
#: products in any order (BLAS blocks and FMA included) errs by at most ``d u / (1 - d u)`` times the sum of
#: the products' magnitudes (u = 2**-24), and the float64 score by ~2**-29 times as much; 2**-23 (twice u) covers
#: both, the float32 rounding of the magnitudes' own sum, and ``1 / (1 - d u)`` for any d below 100,000.
FLOAT32_DOT_ERROR = 2.0 ** -23


def _exact_scores_of_bests(index: DenseIndex, query: np.ndarray, rows: np.ndarray, owner: np.ndarray,
                           groups: int) -> np.ndarray:
    """``index.exact_scores(query, rows)`` for every row that can be the best of its group (``owner``: the group
    of each row, ``0 <= owner < groups``), ``-inf`` for the rows that cannot: the same best row and score per group.

    Why: over the rows of a passage only the best matters, and exact float64 products of every row of ~400
    candidate passages a query were ~80% of dense-net's passage re-scoring. Here the rows are first scored in
    float32 (one BLAS product a block), each within ``e = FLOAT32_DOT_ERROR * d * (|x| . |q|)`` of its exact score;
    a row whose float32 score plus its ``e`` stays below some row of its group's float32 score minus that row's
    ``e`` scores below it exactly, so it can be neither the best nor tied with it, and only the other rows are
    scored exactly. A flat index's float32 query only (another: every row exactly)."""
    stored = index._stored
    if stored is None or query.dtype != np.float32:
        return index.exact_scores(query, rows)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    approx = np.empty(len(rows), dtype=np.float32)
    error = np.empty(len(rows), dtype=np.float32)
    magnitude = np.abs(query)
    for lo in range(0, len(rows), PRODUCT_BLOCK):
        block = stored[rows[lo : lo + PRODUCT_BLOCK]]
        np.dot(block, query, out=approx[lo : lo + PRODUCT_BLOCK])
        np.dot(np.abs(block, out=block), magnitude, out=error[lo : lo + PRODUCT_BLOCK])
    if not (np.isfinite(approx).all() and np.isfinite(error).all()):
        return index.exact_scores(query, rows)
    slack = error.astype(np.float64) * (FLOAT32_DOT_ERROR * len(query))
    low = np.full(groups, -np.inf)
    np.maximum.at(low, owner, approx - slack)  # per group: a score its best is sure to reach
    keep = approx + slack >= low[owner]
    scores = np.full(len(rows), -np.inf)
    scores[keep] = index.exact_scores(query, rows[keep])
    return scores
