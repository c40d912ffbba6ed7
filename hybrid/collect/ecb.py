"""ECB+ as an event-collection benchmark: every sub-topic is an event.

A topic's ``ecb`` and ``ecbplus`` documents describe two different seminal events, so the event is the
sub-topic ``<topic>_<ecb|ecbplus>`` and its relevant documents are the sub-topic's documents (read off
the document ids; no mention annotation is needed for relevance).

Seed mentions: the sub-topic's *seminal event* is the event coreference cluster (the ``cluster`` of the
event-kind mention queries, a gold label used only to define the event) that spans the most documents
of the sub-topic (ties: more mentions, then the smaller cluster id). Its seed in a document is its
earliest mention there (headline or lead sentence). Query forms per event:

* ``seed1``: one seed mention, its document removed from ranking and judgments, ``n_single`` seeds from
  different documents (chosen with a seeded shuffle);
* ``seed2`` .. ``seed5``: k seeds from k documents, all of them removed;
* ``name``: the short name from an event-names file (``<topic>_<ecb|ecbplus> TAB name``; ``#`` comments).

Only train and dev queries are accepted: the test topics stay held out.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from hybrid.collect.events import EventQuery
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines, parse_json_object
from hybrid.core.records import EVENT, Topic

ALLOWED_SPLITS = ("train", "dev")


def subtopic(doc_id: str) -> str:
    """``12_3ecbplus`` -> ``12_ecbplus``; ``12_3ecb`` -> ``12_ecb``."""
    topic = doc_id.split("_", 1)[0]
    return f"{topic}_{'ecbplus' if doc_id.endswith('ecbplus') else 'ecb'}"


@dataclass(frozen=True)
class SeedMention:
    doc_id: str
    passage_id: str
    start: int
    end: int
    sentence: int
    cluster: str


def read_seed_mentions(path: str | Path) -> dict[str, list[SeedMention]]:
    """Sub-topic -> the seminal event's earliest mention per document (module docs)."""
    path = Path(path)
    clusters: dict[str, dict[str, list[SeedMention]]] = {}
    for number, line in iter_lines(path):
        row = parse_json_object(path, number, line)
        if row.get("split") not in ALLOWED_SPLITS:
            raise InputError(path, number, f"split {row.get('split')!r}: only train/dev queries define benchmark "
                                           "events (test topics are held out)")
        if row.get("kind") != EVENT:
            continue
        passage = row["passage_id"]
        mention = SeedMention(row["doc_id"], passage, int(row["start"]), int(row["end"]),
                              int(passage.rsplit(":", 1)[1]), str(row["cluster"]))
        clusters.setdefault(subtopic(row["doc_id"]), {}).setdefault(mention.cluster, []).append(mention)
    out: dict[str, list[SeedMention]] = {}
    for sub, by_cluster in clusters.items():
        def size(cluster: str, mentions: dict = by_cluster) -> tuple:
            return (-len({m.doc_id for m in mentions[cluster]}), -len(mentions[cluster]), cluster)

        best = min(by_cluster, key=size)
        first: dict[str, SeedMention] = {}
        for m in sorted(by_cluster[best], key=lambda m: (m.doc_id, m.sentence, m.start)):
            first.setdefault(m.doc_id, m)
        out[sub] = [first[d] for d in sorted(first)]
    return out


def read_event_names(path: str | Path) -> dict[str, str]:
    """Sub-topic -> short event name (``sub-topic TAB name`` lines, ``#`` comments)."""
    path = Path(path)
    names: dict[str, str] = {}
    for number, line in iter_lines(path):
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip():
            raise InputError(path, number, "expected '<topic>_<ecb|ecbplus> TAB name'")
        sub, name = parts[0].strip(), parts[1].strip()
        if not name:
            raise InputError(path, number, f"empty event name for {sub}")
        if sub in names:
            raise InputError(path, number, f"{sub} is named twice")
        names[sub] = name
    return names


def seed_topic(seed: SeedMention, text_of, qid: str) -> Topic:
    text = text_of(seed.passage_id)
    if text is None:
        raise InputError(None, None, f"seed passage {seed.passage_id} is not in the collection")
    return Topic(qid=qid, text=text, start=seed.start, end=seed.end, doc_id=seed.doc_id,
                 passage_id=seed.passage_id, kind=EVENT)


def build_events(seeds: dict[str, list[SeedMention]], text_of, names: dict[str, str] | None = None,
                 n_single: int = 3, ks: tuple[int, ...] = (2, 3, 4, 5), seed: int = 0) -> list[EventQuery]:
    """The event queries of every sub-topic (module docs), deterministic given ``seed``."""
    events: list[EventQuery] = []
    for sub in sorted(seeds, key=lambda s: (int(s.split("_")[0]), s)):
        mentions = seeds[sub]
        rng = random.Random(f"{seed}:{sub}")
        order = list(mentions)
        rng.shuffle(order)
        for i, m in enumerate(order[:n_single]):
            events.append(EventQuery(qid=f"{sub}/seed1-{i}", seeds=[seed_topic(m, text_of, f"{sub}/seed1-{i}#0")],
                                     form="seed1", group=sub))
        for k in ks:
            if k > len(mentions):
                continue
            chosen = rng.sample(mentions, k)
            topics = [seed_topic(m, text_of, f"{sub}/seed{k}#{j}") for j, m in enumerate(chosen)]
            events.append(EventQuery(qid=f"{sub}/seed{k}", form="seedk", seeds=topics, group=sub))
        if names and sub in names:
            events.append(EventQuery(qid=f"{sub}/name", name=names[sub], form="name", group=sub))
    return events


def event_qrels(events: list[EventQuery], doc_ids: list[str]) -> dict[str, dict[str, int]]:
    """qid -> relevant documents: the event's sub-topic's documents minus those the query excludes."""
    by_sub: dict[str, list[str]] = {}
    for doc in doc_ids:
        by_sub.setdefault(subtopic(doc), []).append(doc)
    out: dict[str, dict[str, int]] = {}
    for event in events:
        sub = event.qid.split("/", 1)[0]
        out[event.qid] = {d: 1 for d in by_sub.get(sub, []) if d not in event.excluded}
    return out


def write_qrels(qrels: dict[str, dict[str, int]], path: str | Path) -> None:
    with atomic_write(path) as out:
        for qid in sorted(qrels):
            for doc in sorted(qrels[qid]):
                out.write(f"{qid} 0 {doc} {qrels[qid][doc]}\n")
