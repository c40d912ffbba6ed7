"""Cross-validation folds are whole topics: no topic is ever on both sides of a fold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_ltr_learners import SMALL, featureset, toy_matrix

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic
from ltr.cv import assert_disjoint, grouped_folds, topic_of
from ltr.experiment import cv_scores


def test_topic_of_uses_the_declared_group_then_the_document_never_an_id_prefix():
    assert topic_of(Topic("q1", "x", 0, 1, doc_id="12_3ecbplus", meta={"topic": 45})) == "45"
    assert topic_of(Topic("q1", "x", 0, 1, doc_id="d", meta={"group": "g", "topic": 45})) == "g"
    assert topic_of(Topic("q1", "x", 0, 1, doc_id="12_3ecbplus")) == "12_3ecbplus"
    assert topic_of(Topic("q1", "x", 0, 1, passage_id="7_1ecb:3")) == "7_1ecb:3"
    assert topic_of(Topic("q1", "x", 0, 1)) == "q1"


def test_documents_with_a_shared_id_prefix_are_separate_groups():
    topics = [Topic(f"q{i}", "x", 0, 1, doc_id=f"doc_{i // 2:03d}") for i in range(40)]  # doc_000 .. doc_019
    groups = {t.qid: topic_of(t) for t in topics}
    folds = grouped_folds([t.qid for t in topics], groups, 5)
    assert len(folds) == 5 and all(len(test) == 8 for _, test in folds)
    assert_disjoint(folds, groups)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_folds_never_share_a_topic_and_cover_every_query_once(seed, k):
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(200)]
    groups = {q: f"t{rng.integers(0, 11)}" for q in qids}
    folds = grouped_folds(qids, groups, k, seed)
    assert len(folds) == k
    assert_disjoint(folds, groups)
    tested = [q for _, test in folds for q in test]
    assert sorted(tested) == sorted(qids)
    for train, test in folds:
        assert not {groups[q] for q in train} & {groups[q] for q in test}
        assert set(train) | set(test) == set(qids)
    sizes = [len(test) for _, test in folds]
    assert max(sizes) - min(sizes) <= max(len([q for q in qids if groups[q] == g]) for g in set(groups.values()))


def test_folds_are_seeded():
    qids = [f"q{i}" for i in range(60)]
    groups = {q: f"t{i % 12}" for i, q in enumerate(qids)}
    assert grouped_folds(qids, groups, 4, seed=3) == grouped_folds(qids, groups, 4, seed=3)
    assert grouped_folds(qids, groups, 4, seed=3) != grouped_folds(qids, groups, 4, seed=4)


def test_assert_disjoint_catches_a_leak():
    groups = {"a": "t1", "b": "t1", "c": "t2"}
    with pytest.raises(AssertionError, match="t1"):
        assert_disjoint([(["a", "c"], ["b"])], groups)


def test_too_many_folds_is_an_error():
    with pytest.raises(ConfigError, match=r"cannot make 3 folds from 2 query group\(s\) \(a query's 'group'") as error:
        grouped_folds(["a", "b"], {"a": "t1", "b": "t2"}, 3)
    documented = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text(encoding="utf-8")
    assert error.value.reason.replace("3 folds from 2", "5 folds from 3") in documented


def test_cv_scores_are_out_of_fold():
    matrix = toy_matrix(n_queries=24)
    groups = {q: f"t{int(q[1:]) % 6}" for q in matrix.query_ids}
    scores, info = cv_scores(featureset(), "logistic", SMALL["logistic"], matrix, groups, k=3, seed=0)
    assert np.isfinite(scores).all() and len(info) == 3
    for fold in info:
        assert fold["train_queries"] + fold["test_queries"] == 24
    # a perfectly predictive feature still ranks perfectly out of fold
    for lo, hi in zip(matrix.offsets, matrix.offsets[1:], strict=False):
        rel = matrix.labels[lo:hi] > 0
        assert scores[lo:hi][rel].min() > scores[lo:hi][~rel].max()
