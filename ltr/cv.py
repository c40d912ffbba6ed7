"""Cross-validation grouped by ECB+ topic, and the train-on-train / test-on-dev split.

ECB+ queries of one topic share documents and events, so a topic in both training and test folds
would let a model memorise the topic's vocabulary; folds are therefore whole topics (never split),
shuffled with a seed and packed so that folds hold similar numbers of queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic


def topic_of(topic: Topic) -> str:
    """The ECB+ topic of a query: the ``topic`` field of the query file, else the document id's prefix."""
    if topic.meta.get("topic") is not None:
        return str(topic.meta["topic"])
    if topic.doc_id and "_" in topic.doc_id:
        return topic.doc_id.split("_", 1)[0]
    if topic.passage_id and "_" in topic.passage_id:
        return topic.passage_id.split("_", 1)[0]
    return topic.doc_id or topic.qid


def grouped_folds(qids: Sequence[str], groups: Mapping[str, str], k: int,
                  seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """``k`` (train qids, test qids) splits; every group's queries fall in exactly one test fold."""
    missing = [q for q in qids if q not in groups]
    if missing:
        raise ConfigError(None, None, f"{len(missing)} queries have no topic group, e.g. {missing[:3]}")
    by_group: dict[str, list[str]] = {}
    for q in qids:
        by_group.setdefault(groups[q], []).append(q)
    names = sorted(by_group)
    if not 2 <= k <= len(names):
        raise ConfigError(None, None, f"cannot make {k} folds from {len(names)} topic group(s); need 2 <= k <= groups")
    rng = np.random.default_rng(seed)
    rng.shuffle(names)
    # Largest groups first (stable after the seeded shuffle), each into the currently smallest fold.
    names.sort(key=lambda g: -len(by_group[g]))
    folds: list[list[str]] = [[] for _ in range(k)]
    sizes = [0] * k
    for g in names:
        i = int(np.argmin(sizes))
        folds[i].append(g)
        sizes[i] += len(by_group[g])
    out = []
    for i in range(k):
        test_groups = set(folds[i])
        test = [q for q in qids if groups[q] in test_groups]
        train = [q for q in qids if groups[q] not in test_groups]
        out.append((train, test))
    return out


def assert_disjoint(folds: list[tuple[list[str], list[str]]], groups: Mapping[str, str]) -> None:
    """Raise if any topic group appears in both the train and the test side of a fold."""
    for i, (train, test) in enumerate(folds):
        shared = {groups[q] for q in train} & {groups[q] for q in test}
        if shared:
            raise AssertionError(f"fold {i}: topic(s) {sorted(shared)[:5]} in both train and test")
