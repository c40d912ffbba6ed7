"""our-full: cross-validation folds never share an event; a trained model saves, loads and ranks the same."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hybrid.collect.features import feature_names
from hybrid.collect.ltr import MODEL_FILE, EventMatrix, EventModel, cross_validate, train
from hybrid.collect.rankers import RANKERS
from hybrid.core.errors import InputError


def toy_matrices(n_events: int = 10, seed: int = 0):
    """Events with a few query forms each; relevant documents have a higher first feature (plus noise)."""
    rng = np.random.default_rng(seed)
    width = len(feature_names(RANKERS))
    matrices, qrels = [], {}
    for e in range(n_events):
        for form in ("seed1-0", "seed1-1", "seed3", "name"):
            qid = f"{e}_ecb/{form}"
            docs = [f"d{e}_{i}" for i in range(30)]
            relevant = set(docs[:6])
            X = rng.normal(size=(30, width))
            X[:6, 0] += 2.0
            matrices.append(EventMatrix(qid, docs, X))
            qrels[qid] = {d: 1 for d in relevant}
    return matrices, qrels


def test_cv_folds_never_share_an_event():
    matrices, qrels = toy_matrices()
    group = {m.qid: m.qid.split("/")[0] for m in matrices}  # the test's own naming: <event>/<form>
    run, folds = cross_validate(matrices, qrels, group.__getitem__, k=5, seed=3,
                                params={"num_boost_round": 10, "min_data_in_leaf": 5})
    assert len(folds) == 5
    tested = []
    for train_qids, test_qids in folds:
        assert not {group[q] for q in train_qids} & {group[q] for q in test_qids}
        tested += test_qids
    assert sorted(tested) == sorted(qrels) and set(run) == set(qrels)


def test_model_round_trip(tmp_path):
    matrices, qrels = toy_matrices(4)
    model = train(matrices, qrels, params={"num_boost_round": 20, "min_data_in_leaf": 5})
    before = model.rerank(matrices[0])
    assert {h.docid for h in before[:6]} & set(qrels[matrices[0].qid])
    model.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / MODEL_FILE).read_text())
    # every model directory records what produced it (hybrid.core.provenance.produced_by)
    assert meta["versions"]["lightgbm"] != "not installed"
    assert {"git_commit", "source_sha256"} & set(meta["code"])
    again = EventModel.load(tmp_path / "m")
    assert [(h.docid, round(h.score, 9)) for h in again.rerank(matrices[0])] == \
        [(h.docid, round(h.score, 9)) for h in before]
    (tmp_path / "m" / "lightgbm.txt").write_text("tampered")
    with pytest.raises(InputError, match="checksum"):
        EventModel.load(tmp_path / "m")
