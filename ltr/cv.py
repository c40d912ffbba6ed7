"""Cross-validation grouped by query group (an ECB+ topic, a user's ``group``), and the train/dev split.

Queries of one group share documents and events (an ECB+ topic), so a group in both training and test
folds would let a model memorise its vocabulary; folds are therefore whole groups (never split),
shuffled with a seed and packed so that folds hold similar numbers of queries. A query's group is
declared, never guessed from the shape of an id (:func:`topic_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic

#: Query fields naming a cross-validation group, first found wins (docs/labelled-collections.md).
GROUP_FIELDS = ("group", "topic")


def topic_of(topic: Topic) -> str:
    """A query's cross-validation group: its ``group`` field, else its ``topic`` field (ECB+ queries carry
    one), else its own document (each document a group), else its passage, else the query itself.

    Ids are never parsed: ``doc_000`` ... ``doc_019`` are twenty documents, not one group ``doc``.
    """
    for key in GROUP_FIELDS:
        if topic.meta.get(key) is not None:
            return str(topic.meta[key])
    return topic.doc_id or topic.passage_id or topic.qid


def grouped_folds(qids: Sequence[str], groups: Mapping[str, str], k: int,
                  seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """``k`` (train qids, test qids) splits; every group's queries fall in exactly one test fold."""
    missing = [q for q in qids if q not in groups]
    if missing:
        raise ConfigError(None, None, f"{len(missing)} queries have no group, e.g. {missing[:3]}")
    by_group: dict[str, list[str]] = {}
    for q in qids:
        by_group.setdefault(groups[q], []).append(q)
    names = sorted(by_group)
    if not 2 <= k <= len(names):
        raise ConfigError(None, None, f"cannot make {k} folds from {len(names)} query group(s) (a query's 'group' or "
                                      "'topic' field, else its document); use 2 <= folds <= groups, or give the "
                                      "queries more groups")
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
