"""Few-shot mention retrieval: a query is k example mentions; a passage scores the mean over the examples.

After "Few-shot Event Mention Retrieval" (papers/004): given k mentions of the same thing, rank the
corpus by ``r(q, p) = 1/k * sum_i r(e_i, p)``, evaluated with MAP for k = 2..10. On ECB+ the "thing" is
a coreference cluster (stricter than the paper's event *type*). Variants of ``r(e, p)``:

* ``dense-adhoc`` - cosine of the example's vector and the passage's best candidate mention, both
  read from a dense index (no encoding at all: every example is itself an indexed corpus mention);
* ``dense-tuned`` - the paper's Siamese network, trained per query on the k examples: positives are
  the pairs of examples, negatives (example, random corpus mention) pairs; a residual feed-forward
  layer ``F(x) = x + W2 relu(W1 x)`` with ``W2 = 0`` at the start, so training begins at the ad-hoc
  model and moves away only as far as the examples push it; contrastive loss ``y (1-S)^2 + (1-y)
  max(S, 0)^2`` on ``S = cos(F(x1), F(x2))``. It reranks the ad-hoc top ``pool`` passages (the rest keep
  their ad-hoc order below them), so it costs a small matrix product per query on a CPU;
* ``bm25`` / ``multifield`` - each example run as an ordinary query (sentence BM25, the tuned multi-field
  system) to depth ``depth``, scores averaged over the examples (0 where an example did not retrieve p).

k-shot queries (:func:`build_kshot_queries`) come from labelled topics grouped by their ``cluster``;
the cluster is used ONLY to build the evaluation (which examples go together, what is relevant),
never by a scorer. Each query takes k examples from k distinct documents (seeded); its relevant
passages are the union of the examples' qrels minus every passage of the examples' documents, and
those documents are removed from every ranking. MAP is AP@``depth`` over the k-shot queries.
"""

from __future__ import annotations

import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import KIND_CODES, Hit, Rankings, Topic
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
from indexes.faiss_index import DenseIndex, check_bound

VARIANTS = ("bm25", "multifield", "dense-adhoc", "dense-tuned")


@dataclass
class KShotQuery:
    qid: str
    k: int
    examples: list[Topic]  # from k distinct documents
    relevant: dict[str, int]  # passage id -> relevance (examples' documents removed)
    kind: str | None = None
    banned_docs: frozenset[str] = field(default_factory=frozenset)  # the examples' documents


def build_kshot_queries(topics: Sequence[Topic], qrels: Mapping[str, Mapping[str, int]], k: int, n_queries: int,
                        seed: int, doc_of: Callable[[str], str | None]) -> list[KShotQuery]:
    """Up to ``n_queries`` distinct k-shot queries over the clusters with examples in >= k documents.

    Clusters are visited round-robin in a seeded order, so every eligible cluster gets a query before
    any gets a second one (a second one uses another set of examples). ``doc_of`` maps a passage id to
    its document (to remove the examples' documents from the relevant set).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    rng = random.Random(f"{seed}-{k}")
    by_cluster: dict[str, dict[str, list[Topic]]] = defaultdict(lambda: defaultdict(list))
    for topic in topics:
        cluster = topic.meta.get("cluster")
        if cluster is None or topic.doc_id is None or not qrels.get(topic.qid):
            continue
        by_cluster[str(cluster)][topic.doc_id].append(topic)
    eligible = sorted(c for c, docs in by_cluster.items() if len(docs) >= k)
    rng.shuffle(eligible)
    queries: list[KShotQuery] = []
    seen: set[tuple[str, ...]] = set()
    stale = draw = 0  # stale: consecutive draws that gave nothing new
    while eligible and len(queries) < n_queries and stale < 20 * len(eligible):
        cluster = eligible[draw % len(eligible)]  # round robin
        draw += 1
        docs = by_cluster[cluster]
        chosen_docs = rng.sample(sorted(docs), k)
        examples = [rng.choice(docs[d]) for d in chosen_docs]
        key = tuple(sorted(e.qid for e in examples))
        banned = frozenset(chosen_docs)
        relevant: dict[str, int] = {}
        for example in examples:
            for pid, rel in qrels.get(example.qid, {}).items():
                if rel > 0 and doc_of(pid) not in banned:
                    relevant[pid] = max(rel, relevant.get(pid, 0))
        if key in seen or not relevant:
            stale += 1
            continue
        stale = 0
        seen.add(key)
        kinds = {e.kind for e in examples}
        queries.append(KShotQuery(f"k{k}-{len(queries):03d}", k, examples, relevant,
                                  kinds.pop() if len(kinds) == 1 else None, banned))
    return queries


def mean_over_examples(per_example: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Sparse runs of the k examples -> the mean score per passage (0 where an example missed it)."""
    total: dict[str, float] = defaultdict(float)
    for scores in per_example:
        for pid, score in scores.items():
            total[pid] += score
    return {pid: value / len(per_example) for pid, value in total.items()}


def ranked(scores: Mapping[str, float], banned: Callable[[str], bool], depth: int) -> list[Hit]:
    """Best ``depth`` passages by score (ties by id), banned passages dropped."""
    kept = [(s, pid) for pid, s in scores.items() if np.isfinite(s) and not banned(pid)]
    kept.sort(key=lambda x: (-x[0], x[1]))
    return [Hit(docid=pid, score=float(s)) for s, pid in kept[:depth]]


# -- dense -----------------------------------------------------------------------------------------------


class DenseTable:
    """Every candidate-mention vector of a dense index in memory, grouped by passage."""

    def __init__(self, vectors: np.ndarray, rows: np.ndarray, passage_ids: list[str], passage_docs: list[str],
                 encoder: Callable[[], Any] | None = None):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._encoder_factory, self._encoder = encoder, None
        self._encoded: dict[tuple[str | None, int, int, str], np.ndarray] = {}  # missed examples, once each
        self.rows = np.asarray(rows)
        self.row_passage = self.rows[:, 0].astype(np.int64)
        self.row_kind = self.rows[:, 3].astype(np.int64)
        self.passage_ids, self.passage_docs = list(passage_ids), list(passage_docs)
        if len(self.vectors) != len(self.rows):
            raise ValueError(f"{len(self.vectors)} vectors but {len(self.rows)} rows")
        # rows of a passage must be contiguous and every passage needs a row for np.maximum.reduceat
        order = np.argsort(self.row_passage, kind="stable")
        if not np.array_equal(order, np.arange(len(order))):
            self.vectors, self.rows = self.vectors[order], self.rows[order]
            self.row_passage, self.row_kind = self.row_passage[order], self.row_kind[order]
        present = np.unique(self.row_passage)
        if len(present) != len(self.passage_ids) or (len(present) and present[-1] != len(self.passage_ids) - 1):
            raise ValueError("every passage needs at least one row")
        self.starts = np.searchsorted(self.row_passage, np.arange(len(self.passage_ids)))
        self.row_of = {(int(p), int(s), int(e)): i for i, (p, s, e) in enumerate(self.rows[:, :3].tolist())}
        self.passage_number = {p: i for i, p in enumerate(self.passage_ids)}
        self.passage_doc_of = dict(zip(self.passage_ids, self.passage_docs, strict=True))
        doc_numbers: dict[str, int] = {}
        self.passage_doc_number = np.array([doc_numbers.setdefault(d, len(doc_numbers)) for d in self.passage_docs],
                                           dtype=np.int64)
        self.doc_number = doc_numbers

    def passages_of_docs(self, docs) -> np.ndarray:
        """Boolean mask over passages: those of the given documents."""
        numbers = [self.doc_number[d] for d in docs if d in self.doc_number]
        return np.isin(self.passage_doc_number, numbers)

    @classmethod
    def load(cls, path: str | Path, sparse: Any = None) -> DenseTable:
        """The dense index at ``path`` in memory; with ``sparse`` (the hybrid index the run searches), refused
        unless it was built from that index (:func:`~indexes.faiss_index.check_bound`)."""
        index = DenseIndex(path, gpu=False)
        if sparse is not None:
            check_bound(index, sparse)
        vectors = index.faiss.reconstruct_n(0, index.size)
        info = index.encoder_info

        def encoder():
            from features.encoder import BiEncoder, EncoderConfig  # deferred: importing it loads torch

            return BiEncoder.load(info["path"], config=EncoderConfig.from_json(info["config"]), device="cpu")

        return cls(vectors, np.asarray(index.rows), index.passage_ids,
                   [index.doc_ids[d] for d in index.passage_doc.tolist()], encoder=encoder)

    def example_row(self, topic: Topic) -> int | None:
        """The dense-index row of an example that is an indexed candidate mention (None when detection missed it)."""
        number = self.passage_number.get(topic.passage_id or "")
        return self.row_of.get((number, topic.start, topic.end)) if number is not None else None

    def example_vectors(self, examples: Sequence[Topic]) -> np.ndarray:
        """``[k, dim]``: each example's vector as the index holds it, or, for a mention the index's annotation
        did not detect (raw text), encoded the same way (its passage with the span marked, passage side)."""
        out = []
        for topic in examples:
            row = self.example_row(topic)
            if row is not None:
                out.append(self.vectors[row])
                continue
            key = (topic.passage_id, topic.start, topic.end, topic.text)
            if key not in self._encoded:
                if self._encoder_factory is None:
                    raise KeyError(f"example {topic.qid} ({topic.passage_id} {topic.start}-{topic.end}) is not a "
                                   "mention of the dense index, and no encoder is known to encode it")
                if self._encoder is None:
                    self._encoder = self._encoder_factory()
                from features.encoder import Unit  # deferred: importing it loads torch

                unit = Unit(topic.text, [(topic.start, topic.end)])
                self._encoded[key] = self._encoder.encode_units([unit], "passage")[0]
            out.append(self._encoded[key])
        return np.ascontiguousarray(np.stack(out), dtype=np.float32)

    def allowed_rows(self, kind: str | None) -> np.ndarray:
        """Rows of the example's kind or of unknown kind (like the retrievers' same-kind filter)."""
        if kind is None:
            return np.ones(len(self.rows), dtype=bool)
        return (self.row_kind == KIND_CODES.get(kind, 0)) | (self.row_kind == 0)

    def best_mention(self, row_scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """[..., rows] -> [..., passages]: each passage's best allowed mention (-inf when none is allowed)."""
        masked = np.where(allowed, row_scores, -np.inf)
        return np.maximum.reduceat(masked, self.starts, axis=-1)


def adhoc_passage_scores(table: DenseTable, example_vectors: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Mean over examples of the cosine to each passage's best mention: ``[passages]``."""
    per_example = table.best_mention(np.asarray(example_vectors, dtype=np.float32) @ table.vectors.T, allowed)
    return per_example.mean(axis=0)


class SiameseHead:
    """``F(x) = x + W2 relu(W1 x)`` (W2 = 0 at the start) trained with the paper's contrastive loss."""

    def __init__(self, dim: int, hidden: int = 128, seed: int = 0):
        import torch

        generator = torch.Generator().manual_seed(seed)
        self.w1 = torch.nn.Parameter(torch.randn(hidden, dim, generator=generator) / dim**0.5)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = torch.nn.Parameter(torch.zeros(dim, hidden))

    def forward(self, x):
        import torch

        return x + torch.relu(x @ self.w1.T + self.b1) @ self.w2.T

    def fit(self, left: np.ndarray, right: np.ndarray, labels: np.ndarray, steps: int = 60, lr: float = 1e-3) -> list:
        import torch

        a, b = torch.from_numpy(left), torch.from_numpy(right)
        y = torch.from_numpy(labels.astype(np.float32))
        optimiser = torch.optim.Adam([self.w1, self.b1, self.w2], lr=lr)
        losses = []
        for _ in range(steps):
            s = torch.nn.functional.cosine_similarity(self.forward(a), self.forward(b), dim=-1)
            loss = (y * (1 - s) ** 2 + (1 - y) * torch.clamp(s, min=0) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
        return losses

    def embed(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.forward(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
            return torch.nn.functional.normalize(out, dim=-1).numpy()


def tuned_passage_scores(table: DenseTable, examples: np.ndarray, allowed: np.ndarray, banned: np.ndarray,
                         adhoc: np.ndarray, pool: int, seed: int, negatives: int = 32, steps: int = 60,
                         hidden: int = 128) -> np.ndarray:
    """Scores of the Siamese variant: the ad-hoc top ``pool`` passages rescored (placed above the rest,
    which keep their ad-hoc order); ``banned`` marks the examples' documents' rows (never negatives)."""
    rng = np.random.default_rng(seed)
    k = len(examples)
    pos = [(i, j) for i in range(k) for j in range(i + 1, k)]
    candidates = np.flatnonzero(~banned)
    neg_rows = rng.choice(candidates, size=min(negatives * k, len(candidates)), replace=False)
    left = np.concatenate([examples[[i for i, _ in pos]], np.repeat(examples, len(neg_rows) // k, axis=0)])
    per = len(neg_rows) // k
    right = np.concatenate([examples[[j for _, j in pos]], table.vectors[neg_rows[: per * k]]])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(per * k)])
    head = SiameseHead(table.vectors.shape[1], hidden, seed)
    head.fit(left, right, labels, steps=steps)
    order = np.argsort(-adhoc, kind="stable")
    top = order[np.isfinite(adhoc[order])][:pool]
    if len(top) == 0:
        return adhoc
    ends = np.append(table.starts[1:], len(table.rows))
    rows = np.concatenate([np.arange(table.starts[p], ends[p]) for p in top])
    offsets = np.concatenate([[0], np.cumsum(ends[top] - table.starts[top])[:-1]])
    sims = head.embed(examples) @ head.embed(table.vectors[rows]).T  # [k, rows of the pooled passages]
    sims = np.where(allowed[rows], sims, -np.inf)
    rescored = np.maximum.reduceat(sims, offsets, axis=1).mean(axis=0)  # best mention per passage, mean over k
    out = np.where(np.isfinite(adhoc), adhoc - 10.0, adhoc)  # below any pooled passage (cosines are in [-1, 1])
    out[top] = rescored
    return out


# -- evaluation ------------------------------------------------------------------------------------------


def sparse_runs(retriever, examples: list[Topic], depth: int) -> dict[str, dict[str, float]]:
    """example qid -> {passage: score} of one sparse retriever (each example run once)."""
    run = retriever.search(examples, depth)
    return {t.qid: {h.docid: h.score for h in run.get(t.qid, [])} for t in examples}


def run_variants(queries: list[KShotQuery], variants: Sequence[str], index=None, table: DenseTable | None = None,
                 depth: int = 1000, pool: int = 500, seed: int = 0, progress: bool = False,
                 cache: dict | None = None) -> dict[str, Rankings]:
    """variant -> run over the k-shot queries."""

    cache = {} if cache is None else cache
    examples = {e.qid: e for q in queries for e in q.examples}
    runs: dict[str, Rankings] = {}
    doc_of = table.passage_doc_of.get if table is not None else (lambda pid: index.passage_json(pid)["doc_id"])
    for variant in variants:
        started = time.perf_counter()
        run: Rankings = {}
        if variant in ("bm25", "multifield"):
            todo = [e for qid, e in sorted(examples.items()) if (variant, qid) not in cache]
            if todo:
                retriever = PassageBM25(index, "sentence") if variant == "bm25" else MultiFieldBM25(index)
                for qid, scores in sparse_runs(retriever, todo, depth).items():
                    cache[(variant, qid)] = scores
            for q in queries:
                scores = mean_over_examples([cache[(variant, e.qid)] for e in q.examples])
                run[q.qid] = ranked(scores, lambda pid, q=q: doc_of(pid) in q.banned_docs, depth)
        elif variant in ("dense-adhoc", "dense-tuned"):
            if table is None:
                raise ValueError(f"{variant} needs a dense index (--dense)")
            for q in progress_bar(queries, desc=variant, unit="query", enabled=progress):
                vectors = table.example_vectors(q.examples)
                allowed = table.allowed_rows(q.kind)
                banned_p = table.passages_of_docs(q.banned_docs)
                key = ("dense-adhoc", q.qid, tuple(e.qid for e in q.examples))
                if key not in cache:
                    adhoc = adhoc_passage_scores(table, vectors, allowed)
                    adhoc[banned_p] = -np.inf
                    cache[key] = adhoc
                scores = cache[key]
                if variant == "dense-tuned":
                    scores = tuned_passage_scores(table, vectors, allowed, banned_p[table.row_passage], scores, pool,
                                                  seed=seed + int(q.qid.split("-")[1]) + 1000 * q.k)
                    scores[banned_p] = -np.inf
                top = np.argsort(-scores, kind="stable")[:depth]
                run[q.qid] = [Hit(docid=table.passage_ids[p], score=float(scores[p])) for p in top.tolist()
                              if np.isfinite(scores[p])]
        else:
            raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        runs[variant] = run
        print(f"{variant}: {len(queries)} queries in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return runs


def mean_ap(queries: list[KShotQuery], run: Rankings, depth: int) -> dict[str, float]:
    """MAP (AP@depth) over all queries and by kind."""
    from hybrid.core.measures import per_query  # deferred: importing it loads ir_measures

    qrels = {q.qid: q.relevant for q in queries}
    ap = per_query(qrels, run, (f"AP@{depth}",))[f"AP@{depth}"]
    out = {"all": float(np.mean([ap[q.qid] for q in queries])) if queries else 0.0}
    for kind in sorted({q.kind for q in queries if q.kind}):
        values = [ap[q.qid] for q in queries if q.kind == kind]
        out[kind] = float(np.mean(values))
    return out
