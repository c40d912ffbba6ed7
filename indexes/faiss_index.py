"""The dense side of a hybrid index: one FAISS vector per candidate mention.

A dense index directory (by default ``<hybrid index>/dense/``) holds::

    dense-index.json   encoder (path, sha256 fingerprint of weights+tokenizer+config, pooling config),
                       FAISS type, counts, the hybrid index it was built from, versions, timings
    vectors.faiss      faiss.write_index of IndexFlatIP (default) or IndexHNSWFlat (inner product)
    rows.npy           int32 [n, 4]: passage number, mention start, end (-1 = whole passage), kind code
    passages.json      passage ids, their document numbers and the document ids
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

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from hybrid.core.atomic import atomic_directory, remove_stale_builds
from hybrid.core.errors import ConfigError, IndexMissingError
from hybrid.core.provenance import produced_by
from hybrid.core.records import KIND_CODES, KIND_NAMES

if TYPE_CHECKING:
    from features.encoder import BiEncoder
    from indexes.sparse_index import SparseIndex

log = logging.getLogger(__name__)

DENSE_METADATA = "dense-index.json"
VECTORS, ROWS, PASSAGE_TABLE = "vectors.faiss", "rows.npy", "passages.json"
PASSAGE_VECTORS = "passages.faiss"
DENSE_DIR = "dense"
INDEX_TYPES = ("flat", "hnsw")
FORMAT_VERSION = 1


@dataclass
class IndexedPassage:
    id: str
    doc_id: str
    text: str
    mentions: list[tuple[int, int, str | None]]  # (start, end, kind), deduplicated, in index order


def iter_index_passages(index: SparseIndex) -> list[IndexedPassage]:
    """Every passage of a hybrid index with its candidate mentions, in Lucene document order."""
    searcher = index.passages
    out = []
    for number in range(searcher.num_docs):
        raw = json.loads(searcher.doc(number).raw())
        seen: set[tuple[int, int, str | None]] = set()
        mentions = []
        for m in raw["mentions"]:
            key = (int(m["start"]), int(m["end"]), m.get("kind"))
            if key not in seen:
                seen.add(key)
                mentions.append(key)
        out.append(IndexedPassage(raw["id"], raw["doc_id"], raw["contents"], mentions))
    return out


def faiss_has_gpu() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def _new_faiss(index_type: str, dim: int, hnsw_m: int, ef_construction: int):
    import faiss

    if index_type == "flat":
        return faiss.IndexFlatIP(dim)
    if index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        return index
    raise ConfigError(None, None, f"unknown dense index type {index_type!r}; choose from {INDEX_TYPES}")


def build_dense_index(index: SparseIndex, encoder: BiEncoder, output: str | Path, index_type: str = "flat",
                      hnsw_m: int = 32, ef_construction: int = 200, batch_size: int = 64, chunk: int = 512,
                      overwrite: bool = False, progress: bool = True, limit: int | None = None,
                      passage_vectors: bool = True) -> dict:
    """Encode every passage of ``index`` once (a vector per candidate mention) and write a dense index.

    ``passage_vectors``: also store one unmarked, mean-pooled vector per passage (``passages.faiss``), taken
    from the same forward pass where it can be. ``limit`` keeps only the first N passages (tests and quick
    experiments; recorded in the metadata).
    """
    import faiss

    output = Path(output)
    remove_stale_builds(output.parent, output.name)
    passages = iter_index_passages(index)
    if limit is not None:
        passages = passages[:limit]
    if not passages:
        raise ValueError(f"{index.path}: no passages to encode")
    from features.encoder import Unit  # deferred: importing it loads torch

    started = time.time()
    with atomic_directory(output, overwrite=overwrite) as tmp:
        vectors = _new_faiss(index_type, encoder.dim, hnsw_m, ef_construction)
        plain = faiss.IndexFlatIP(encoder.hidden) if passage_vectors else None
        doc_numbers: dict[str, int] = {}
        rows: list[tuple[int, int, int, int]] = []
        encode_seconds = 0.0
        bar = tqdm(total=len(passages), desc="encode passages", unit="passage", disable=not progress)
        for lo in range(0, len(passages), chunk):
            part = passages[lo : lo + chunk]
            units = [Unit(p.text, [(s, e) for s, e, _ in p.mentions]) for p in part]
            t0 = time.time()
            if plain is not None:
                vecs, passage_vecs = encoder.encode_units(units, "passage", batch_size=batch_size, passages=True)
                plain.add(passage_vecs)
            else:
                vecs = encoder.encode_units(units, "passage", batch_size=batch_size)
            encode_seconds += time.time() - t0
            vectors.add(vecs)
            for number, p in enumerate(part, start=lo):
                doc_numbers.setdefault(p.doc_id, len(doc_numbers))
                if p.mentions:
                    rows.extend((number, s, e, KIND_CODES.get(kind, 0)) for s, e, kind in p.mentions)
                else:
                    rows.append((number, -1, -1, 0))
            bar.update(len(part))
            bar.set_postfix(passages_per_s=f"{(lo + len(part)) / max(encode_seconds, 1e-9):.1f}")
        bar.close()
        if vectors.ntotal != len(rows):
            raise RuntimeError(f"encoded {vectors.ntotal} vectors for {len(rows)} mention rows")
        faiss.write_index(vectors, str(tmp / VECTORS))
        if plain is not None:
            if plain.ntotal != len(passages):
                raise RuntimeError(f"encoded {plain.ntotal} passage vectors for {len(passages)} passages")
            faiss.write_index(plain, str(tmp / PASSAGE_VECTORS))
        np.save(tmp / ROWS, np.asarray(rows, dtype=np.int32).reshape(-1, 4))
        docs = list(doc_numbers)
        table = {"ids": [p.id for p in passages], "doc": [doc_numbers[p.doc_id] for p in passages], "docs": docs}
        (tmp / PASSAGE_TABLE).write_text(json.dumps(table, ensure_ascii=False) + "\n", encoding="utf-8")
        metadata = {
            "format": FORMAT_VERSION,
            "kind": "hybrid-dense-index",
            "encoder": encoder.describe(),
            "faiss": {"type": index_type, "dim": encoder.dim, "metric": "inner_product",
                      **({"hnsw_m": hnsw_m, "ef_construction": ef_construction} if index_type == "hnsw" else {})},
            "source_index": {"path": str(index.path), "corpus_sha256": index.metadata.get("corpus_sha256"),
                             "counts": index.metadata.get("counts")},
            "counts": {"passages": len(passages), "documents": len(docs), "vectors": len(rows),
                       "passages_without_mentions": sum(1 for p in passages if not p.mentions)},
            **({"passage_vectors": {"file": PASSAGE_VECTORS, "count": len(passages), "dim": encoder.hidden,
                                    "faiss": "flat", "metric": "inner_product", "pooling": "mean", "marked": False,
                                    "max_tokens": encoder.config.passage_max_tokens,
                                    "query": "the query sentence, unmarked, encoded the same way"}}
               if plain is not None else {}),
            "limit": limit,
            "encode_seconds": round(encode_seconds, 2),
            "passages_per_second": round(len(passages) / encode_seconds, 2) if encode_seconds else None,
            "batch_size": batch_size,
            "device": encoder.device,
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


class DenseIndex:
    """A built dense index, memory-mapped; ``search`` returns FAISS row numbers and scores."""

    def __init__(self, path: str | Path, mmap: bool = True, gpu: bool | None = None, ef_search: int = 128):
        import faiss

        self.path = resolve_dense_dir(path)
        self.metadata = json.loads((self.path / DENSE_METADATA).read_text(encoding="utf-8"))
        for part in (VECTORS, ROWS, PASSAGE_TABLE):
            if not (self.path / part).is_file():
                raise IndexMissingError(f"{self.path} lacks {part}; rebuild it with `python -m hybrid.index_dense`")
        flags = 0
        if mmap:
            flags = getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP) | faiss.IO_FLAG_READ_ONLY
        self.faiss = faiss.read_index(str(self.path / VECTORS), flags)
        if self.metadata["faiss"]["type"] == "hnsw":
            self.faiss.hnsw.efSearch = ef_search
        use_gpu = faiss_has_gpu() if gpu is None else gpu
        if use_gpu and self.metadata["faiss"]["type"] == "flat":
            self.faiss = faiss.index_cpu_to_all_gpus(self.faiss)
        self.on_gpu = bool(use_gpu and self.metadata["faiss"]["type"] == "flat")
        self.rows = np.load(self.path / ROWS, mmap_mode="r" if mmap else None)
        table = json.loads((self.path / PASSAGE_TABLE).read_text(encoding="utf-8"))
        self.passage_ids: list[str] = table["ids"]
        self.passage_doc = np.asarray(table["doc"], dtype=np.int32)
        self.doc_ids: list[str] = table["docs"]
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
        info = self.metadata.get("passage_vectors")
        if info:
            where = self.path / info.get("file", PASSAGE_VECTORS)
            if not where.is_file():
                raise IndexMissingError(f"{self.path} lacks {where.name}; rebuild it with "
                                        "`python -m hybrid.index_dense`")
            self.passage_vectors = faiss.read_index(str(where), flags)
            if self.passage_vectors.ntotal != n:
                raise IndexMissingError(f"{self.path}: {self.passage_vectors.ntotal} passage vectors for {n} passages; "
                                        "rebuild it")

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
        return self.faiss.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def exact_scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of one query vector with the stored vectors of ``rows``, in float64.

        Why: FAISS computes inner products through BLAS for batches of queries and with its own SIMD loop
        otherwise, blocked by the index's size, so the same (query, vector) pair can differ in the last bits
        between one index and a sharding of it, or between two batch sizes; near-equal scores then order
        differently and exact ties (duplicate passages) stop being ties. Here every row is a float64 product
        summed in numpy's fixed order for one row, whatever the other rows, the layout or the batch.
        """
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float64)
        vectors = self.faiss.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64))
        return (np.asarray(vectors, dtype=np.float64) * np.asarray(query, dtype=np.float64)[None, :]).sum(axis=1)

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
        return self.passage_vectors.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def passage_exact_scores(self, query: np.ndarray, numbers: np.ndarray) -> np.ndarray:
        """Inner products of one query-sentence vector with passage vectors, in float64 (see exact_scores)."""
        if len(numbers) == 0 or self.passage_vectors is None:
            return np.zeros(0, dtype=np.float64)
        vectors = self.passage_vectors.reconstruct_batch(np.ascontiguousarray(numbers, dtype=np.int64))
        return (np.asarray(vectors, dtype=np.float64) * np.asarray(query, dtype=np.float64)[None, :]).sum(axis=1)

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
    found = []
    for i in first:
        number, start, end = (int(x) for x in index.rows[rows[i], :3])
        found.append((index.passage_ids[number], float(scores[i]), start, end))
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
    parts = [index.rows_of_passage(int(n)) for n in numbers]
    if not parts:
        return []
    owner = np.repeat(np.arange(len(parts)), [len(r) for r in parts])
    rows = np.concatenate(parts)
    if kind is not None:
        row_kind = index.row_kind[rows]
        keep = (row_kind == kind) | (row_kind == 0)
        rows, owner = rows[keep], owner[keep]
    out: list[tuple[float, int, int] | None] = [None] * len(parts)
    if len(rows) == 0:
        return out
    scores = index.exact_scores(query, rows)
    spans = np.asarray(index.rows[rows, 1:3])
    order = np.lexsort((spans[:, 1], spans[:, 0], -scores, owner))  # per passage: best first, then first span
    owner, scores, spans = owner[order], scores[order], spans[order]
    _, first = np.unique(owner, return_index=True)
    for i in first:
        out[int(owner[i])] = (float(scores[i]), int(spans[i, 0]), int(spans[i, 1]))
    return out
