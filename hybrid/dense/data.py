"""Training pairs for the bi-encoder from a labelled corpus (ECB+ train).

For each training query (a gold mention of the TRAIN split):

* positives: mentions of the same coreference cluster in *other* documents (query by example
  never returns the query's own document, so same-document mentions teach nothing useful);
* hard negatives: the BM25 top-``top`` candidates (default: :class:`MultiFieldBM25`, which also names
  the best matching mention of each passage) that contain no mention of the cluster.

Cluster ids are read only from corpus lines whose ``split`` is the training split (``--split``), so a
dev or test label can never leak into a training pair. Every passage that appears in a pair is stored
with ALL its candidate mention spans as the sparse index has them (gold + detected) and the gold
cluster of each span (``None`` for detected spans): training then pools every mention of every passage
in a batch, as indexing does, and uses the labels only to mask false negatives.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Topic
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25


@dataclass
class TrainPassage:
    id: str
    doc_id: str
    text: str
    spans: list[tuple[int, int]]
    kinds: list[str | None]
    clusters: list[str | None]

    def span_index(self, start: int, end: int) -> int | None:
        for i, (s, e) in enumerate(self.spans):
            if s == start and e == end:
                return i
        return None


@dataclass
class TrainQuery:
    qid: str
    text: str
    start: int
    end: int
    doc_id: str
    kind: str | None
    cluster: str
    positives: list[tuple[str, int]] = field(default_factory=list)  # (passage id, span index)
    negatives: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class TrainingSet:
    queries: list[TrainQuery]
    passages: dict[str, TrainPassage]
    info: dict = field(default_factory=dict)

    def save(self, path: str | Path) -> None:
        with atomic_write(path) as out:
            out.write(json.dumps({"info": self.info}) + "\n")
            for p in self.passages.values():
                out.write(json.dumps({"passage": asdict(p)}, ensure_ascii=False) + "\n")
            for q in self.queries:
                out.write(json.dumps({"query": asdict(q)}, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> TrainingSet:
        data = cls([], {})
        for number, line in iter_lines(Path(path)):
            obj = json.loads(line)
            if "info" in obj:
                data.info = obj["info"]
            elif "passage" in obj:
                p = obj["passage"]
                data.passages[p["id"]] = TrainPassage(**{**p, "spans": [tuple(s) for s in p["spans"]]})
            elif "query" in obj:
                q = obj["query"]
                data.queries.append(TrainQuery(**{**q, "positives": [tuple(x) for x in q["positives"]],
                                                  "negatives": [tuple(x) for x in q["negatives"]]}))
            else:
                raise InputError(path, number, "expected an 'info', 'passage' or 'query' record")
        return data

    def validate(self) -> None:
        for q in self.queries:
            for pid, span in q.positives + q.negatives:
                if pid not in self.passages or not 0 <= span < len(self.passages[pid].spans):
                    raise ValueError(f"query {q.qid}: pair points at a missing passage/span {pid}#{span}")


def read_labelled_corpus(path: str | Path, split: str | None) -> tuple[dict[str, dict], dict[str, list]]:
    """Passages (raw JSON) and cluster -> [(passage_id, doc_id, start, end)] of one split only."""
    passages: dict[str, dict] = {}
    clusters: dict[str, list[tuple[str, str, int, int]]] = {}
    for number, line in iter_lines(Path(path)):
        obj = json.loads(line)
        if split is not None and obj.get("split") != split:
            continue
        if "id" not in obj or "doc_id" not in obj:
            raise InputError(path, number, "corpus line lacks 'id' or 'doc_id'")
        passages[obj["id"]] = obj
        for m in obj.get("mentions") or []:
            if m.get("cluster"):
                clusters.setdefault(m["cluster"], []).append((obj["id"], obj["doc_id"], m["start"], m["end"]))
    return passages, clusters


def _train_passage(pid: str, raw: dict, records: list) -> TrainPassage:
    """The passage with the sparse index's candidate spans, labelled with gold clusters where known."""
    gold = {(m["start"], m["end"]): m.get("cluster") for m in raw.get("mentions") or []}
    spans, kinds, clusters = [], [], []
    for r in records:
        if (r.start, r.end) in spans:
            continue
        spans.append((r.start, r.end))
        kinds.append(r.kind)
        clusters.append(gold.get((r.start, r.end)))
    for m in raw.get("mentions") or []:  # gold spans the index lacks (should not happen; kept for safety)
        if (m["start"], m["end"]) not in spans:
            spans.append((m["start"], m["end"]))
            kinds.append(m.get("kind"))
            clusters.append(m.get("cluster"))
    return TrainPassage(pid, raw["doc_id"], raw["text"], spans, kinds, clusters)


def build_training_set(index, corpus: str | Path, topics: list[Topic], split: str | None = "train",
                       negatives: str = "multifield", top: int = 20, seed: int = 13,
                       progress: bool = True) -> TrainingSet:
    """Pairs for ``topics`` (their ``meta['cluster']`` labels them) from ``corpus`` lines of ``split``.

    ``index`` is the hybrid :class:`~indexes.sparse_index.SparseIndex` of the corpus;
    ``negatives``: ``multifield`` (span from the mention index), ``bm25`` (plain passage BM25; the
    span is a random candidate of the query's kind) or ``none`` (in-batch negatives only).
    """
    raw, clusters = read_labelled_corpus(corpus, split)
    rng = random.Random(seed)
    passages: dict[str, TrainPassage] = {}

    def passage(pid: str) -> TrainPassage:
        if pid not in passages:
            passages[pid] = _train_passage(pid, raw[pid], index.mention_records(pid))
        return passages[pid]

    queries: list[TrainQuery] = []
    skipped = {"no_cluster": 0, "not_in_split": 0, "no_positive": 0}
    for t in topics:
        cluster = t.meta.get("cluster")
        if not cluster:
            skipped["no_cluster"] += 1
            continue
        if cluster not in clusters or (t.passage_id and t.passage_id not in raw):
            skipped["not_in_split"] += 1
            continue
        own = t.doc_id or raw[t.passage_id]["doc_id"]
        positives = []
        for pid, doc_id, start, end in clusters[cluster]:
            if doc_id == own:
                continue
            span = passage(pid).span_index(start, end)
            if span is not None:
                positives.append((pid, span))
        if not positives:
            skipped["no_positive"] += 1
            continue
        queries.append(TrainQuery(t.qid, t.text, t.start, t.end, own, t.kind, cluster, sorted(set(positives))))
    if negatives != "none":
        _mine_negatives(index, queries, {t.qid: t for t in topics}, clusters, passage, raw, negatives, top, rng,
                        progress)
    info = {"split": split, "corpus": str(corpus), "negatives": negatives, "top": top, "seed": seed,
            "queries": len(queries), "passages": len(passages), "skipped": skipped,
            "with_hard_negative": sum(1 for q in queries if q.negatives)}
    data = TrainingSet(queries, passages, info)
    data.validate()
    return data


def _mine_negatives(index, queries: list[TrainQuery], topics: dict[str, Topic], clusters: dict, passage, raw: dict,
                    method: str, top: int, rng: random.Random, progress: bool) -> None:
    if method == "multifield":
        retriever = MultiFieldBM25(index, k=top, progress=progress)
    elif method == "bm25":
        retriever = PassageBM25(index, "sentence", k=top)
    else:
        raise ValueError(f"unknown negative source {method!r}; choose multifield, bm25 or none")
    batch = 256
    for lo in progress_bar(range(0, len(queries), batch), desc=f"{method} negatives", unit="batch",
                           enabled=progress and method != "multifield"):
        part = queries[lo : lo + batch]
        run = retriever.search([topics[q.qid] for q in part], top)
        for q in part:
            relevant = {pid for pid, *_ in clusters[q.cluster]}
            for hit in run.get(q.qid, []):
                if hit.docid in relevant or hit.docid not in raw:
                    continue  # a relevant passage, or one outside the training split
                p = passage(hit.docid)
                if hit.mention_start is not None:
                    span = p.span_index(hit.mention_start, hit.mention_end)
                else:
                    same = [i for i, k in enumerate(p.kinds) if q.kind and k == q.kind] or list(range(len(p.spans)))
                    span = rng.choice(same) if same else None
                if span is not None:
                    q.negatives.append((hit.docid, span))


def summarize(data: TrainingSet) -> dict:
    kinds: dict[str, int] = {}
    for q in data.queries:
        kinds[q.kind or "unknown"] = kinds.get(q.kind or "unknown", 0) + 1
    return {**data.info, "kinds": kinds}


def iter_batches(n: int, batch_size: int, seed: int, start_step: int = 0) -> Iterable[tuple[int, list[int]]]:
    """(step, query indices) forever: a fresh seeded permutation each epoch; resumable at any step."""
    per_epoch = max(1, n // batch_size)
    step = start_step
    while True:
        epoch, offset = divmod(step, per_epoch)
        order = list(range(n))
        random.Random(seed * 100_003 + epoch).shuffle(order)
        yield step, order[offset * batch_size : (offset + 1) * batch_size]
        step += 1
