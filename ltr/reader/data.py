"""Training data for the reader: (query, positive passage with its gold span, ranked negatives).

Labels come from coreference *cluster* ids, and only from passages of the allowed splits (default:
ECB+ ``train``): a positive is a passage of another document holding a mention of the query's
cluster, with that mention as the gold span; negatives are the retriever's top-ranked candidates
(from the same allowed splits) that hold no such mention. Cluster ids of dev/test topics are never
read, so they cannot leak into a model that is evaluated on them.

The pool is built once (retrieval needs the JVM) and cached as JSONL, so training itself needs
neither the index nor Java and restarts cheaply.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path

from features.strings import is_pronoun
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, optional, parse_json_object, require
from hybrid.core.formats.topics import read_topics
from hybrid.core.progress import progress as progress_bar
from hybrid.core.records import Topic
from hybrid.core.stage import Retriever


@dataclass
class Candidate:
    passage_id: str
    text: str
    start: int | None = None  # gold span (positives only), char offsets into ``text``
    end: int | None = None
    coref: list[list[int]] = field(default_factory=list)  # positives: every mention of the query's cluster
    mentions: list[list] = field(default_factory=list)  # [start, end, kind]: the index's mentions of the passage

    @property
    def span(self) -> tuple[int, int] | None:
        return None if self.start is None else (self.start, self.end)

    def mention_spans(self, kind: str | None) -> list[tuple[int, int]]:
        """Indexed mentions of the query's kind (or of unknown kind) that are not coreferent with the query -
        the spans the pair scorer must score below the gold one (the same filter as at inference)."""
        out = []
        for start, end, m_kind in self.mentions:
            if kind and m_kind and m_kind != kind:
                continue
            if any(start < e and s < end for s, e in self.coref):
                continue
            out.append((start, end))
        return out


@dataclass
class TrainQuery:
    topic: Topic
    positives: list[Candidate]
    negatives: list[Candidate] = field(default_factory=list)  # retriever order, best first

    def to_json(self) -> dict:
        t = self.topic
        return {"qid": t.qid, "text": t.text, "start": t.start, "end": t.end, "doc_id": t.doc_id,
                "passage_id": t.passage_id, "kind": t.kind,
                "positives": [asdict(c) for c in self.positives],
                "negatives": [{"passage_id": c.passage_id, "text": c.text, "mentions": c.mentions}
                              for c in self.negatives]}

    @classmethod
    def from_json(cls, obj: dict) -> TrainQuery:
        topic = Topic(qid=obj["qid"], text=obj["text"], start=obj["start"], end=obj["end"], doc_id=obj.get("doc_id"),
                      passage_id=obj.get("passage_id"), kind=obj.get("kind"))
        return cls(topic=topic, positives=[Candidate(**c) for c in obj["positives"]],
                   negatives=[Candidate(**c) for c in obj["negatives"]])


@dataclass
class LabelledCorpus:
    """Texts and cluster mentions of the passages of the allowed splits."""

    texts: dict[str, str]
    doc_of: dict[str, str]
    cluster_mentions: dict[str, list[tuple[str, int, int]]]  # cluster -> (passage_id, start, end)


def read_labelled_corpus(path: str | Path, splits: tuple[str, ...] | None = ("train",)) -> LabelledCorpus:
    """Passages (and their mentions' clusters) whose ``split`` is in ``splits`` (None: all passages)."""
    texts: dict[str, str] = {}
    doc_of: dict[str, str] = {}
    clusters: dict[str, list[tuple[str, int, int]]] = {}
    for number, line in iter_lines(path):
        obj = parse_json_object(path, number, line)
        if splits is not None:
            split = optional(path, number, obj, "split", str)
            if split is None:
                raise InputError(path, number, "passage has no 'split'; pass splits=None to use every passage")
            if split not in splits:
                continue
        pid = require(path, number, obj, "id", str)
        text = require(path, number, obj, "text", str)
        texts[pid] = text
        doc_of[pid] = optional(path, number, obj, "doc_id", str) or pid.rsplit(":", 1)[0]
        for k, m in enumerate(obj.get("mentions") or []):
            cluster = m.get("cluster")
            if cluster is None:
                continue
            start, end = m.get("start"), m.get("end")
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
                raise InputError(path, number, f"mentions[{k}] has bad offsets [{start}, {end})")
            clusters.setdefault(str(cluster), []).append((pid, start, end))
    if not texts:
        raise InputError(path, None, f"no passages of splits {splits}")
    return LabelledCorpus(texts=texts, doc_of=doc_of, cluster_mentions=clusters)


def choose_gold(text: str, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """One gold span per positive passage: the first non-pronoun mention of the cluster, else the first."""
    spans = sorted(spans)
    for start, end in spans:
        if not is_pronoun(text[start:end]):
            return start, end
    return spans[0]


def labelled_topics(queries_path: str | Path, corpus: LabelledCorpus) -> tuple[list[Topic], dict[str, str]]:
    """Topics of the queries whose passage is in the labelled corpus, and qid -> cluster."""
    topics = read_topics(queries_path, resolve=corpus.texts.get)
    kept, cluster_of = [], {}
    for topic in topics:
        cluster = topic.meta.get("cluster")
        if cluster is None:
            raise InputError(queries_path, None, f"query {topic.qid!r} has no 'cluster' label")
        if topic.passage_id not in corpus.texts:
            continue  # a query outside the allowed splits: its label must not be used
        kept.append(topic)
        cluster_of[topic.qid] = str(cluster)
    return kept, cluster_of


def positives_for(topic: Topic, cluster: str, corpus: LabelledCorpus) -> list[Candidate]:
    by_passage: dict[str, list[tuple[int, int]]] = {}
    own_doc = topic.doc_id or corpus.doc_of.get(topic.passage_id or "")
    for pid, start, end in corpus.cluster_mentions.get(cluster, []):
        if corpus.doc_of[pid] != own_doc:
            by_passage.setdefault(pid, []).append((start, end))
    out = []
    for pid in sorted(by_passage):
        start, end = choose_gold(corpus.texts[pid], by_passage[pid])
        out.append(Candidate(passage_id=pid, text=corpus.texts[pid], start=start, end=end,
                             coref=[list(span) for span in sorted(by_passage[pid])]))
    return out


def attach_mentions(queries: list[TrainQuery], mention_records: Callable[[str], list]) -> None:
    """Give every candidate the mentions the index holds for its passage (``index.mention_records``)."""
    cache: dict[str, list[list]] = {}
    for query in queries:
        for cand in (*query.positives, *query.negatives):
            if cand.passage_id not in cache:
                cache[cand.passage_id] = [[m.start, m.end, m.kind] for m in mention_records(cand.passage_id)]
            cand.mentions = cache[cand.passage_id]


def build_training_queries(queries_path: str | Path, corpus: LabelledCorpus, retriever: Retriever, depth: int = 30,
                           batch: int = 256, progress: bool = True,
                           mention_records: Callable[[str], list] | None = None) -> list[TrainQuery]:
    """Queries with >= 1 positive; negatives = the retriever's top ``depth`` non-coreferent labelled passages."""
    topics, cluster_of = labelled_topics(queries_path, corpus)
    out: list[TrainQuery] = []
    for i in progress_bar(range(0, len(topics), batch), desc="reader training pool", unit="batch", enabled=progress):
        chunk = topics[i : i + batch]
        run = retriever.search(chunk, depth)
        for topic in chunk:
            positives = positives_for(topic, cluster_of[topic.qid], corpus)
            if not positives:
                continue
            positive_ids = {c.passage_id for c in positives}
            negatives = [Candidate(passage_id=h.docid, text=corpus.texts[h.docid]) for h in run.get(topic.qid, [])
                         if h.docid in corpus.texts and h.docid not in positive_ids]
            out.append(TrainQuery(topic=topic, positives=positives, negatives=negatives))
    if mention_records is not None:
        attach_mentions(out, mention_records)
    return out


def judged_negatives_only(queries: list[TrainQuery], judged: Collection[str]) -> list[TrainQuery]:
    """Keep only negatives from ``judged`` passages; drop the queries left with none.

    Why: a negative is a top-ranked passage the labels do not mark coreferent. Where the collection is
    judged only in part (ECB+ annotates its curated sentences completely and the rest only where a
    mention was annotated), an unjudged passage may well mention the query's event, so training the
    reader to score it low teaches the annotation density, not coreference. A query with no judged
    negative has nothing to select against and is dropped. Retriever order is kept; ``queries`` is
    not changed.
    """
    judged = judged if isinstance(judged, set | frozenset) else set(judged)
    out = []
    for query in queries:
        negatives = [c for c in query.negatives if c.passage_id in judged]
        if negatives:
            out.append(TrainQuery(topic=query.topic, positives=query.positives, negatives=negatives))
    return out


def write_pool(queries: list[TrainQuery], path: str | Path, meta: dict) -> None:
    with atomic_write(path) as out:
        for q in queries:
            out.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")
    with atomic_write(f"{path}.meta.json") as out:
        out.write(json.dumps(meta, indent=2, default=str) + "\n")


def read_pool(path: str | Path) -> list[TrainQuery]:
    queries = []
    for number, line in iter_lines(path):
        obj = parse_json_object(path, number, line)
        try:
            query = TrainQuery.from_json(obj)
        except (KeyError, TypeError) as error:
            raise InputError(path, number, f"not a reader training record ({error})") from None
        for c in query.positives:
            if c.span is None or not 0 <= c.start < c.end <= len(c.text):
                raise InputError(path, number, f"positive {c.passage_id!r} has no valid gold span")
        queries.append(query)
    if not queries:
        raise InputError(path, None, "empty training pool")
    return queries
