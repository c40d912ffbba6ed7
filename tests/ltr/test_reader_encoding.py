"""Reader inputs: marker tokens, query windows, passage windows with strides, char offsets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic
from ltr.reader.encoding import (
    EncodingConfig,
    add_marker_tokens,
    collate,
    encode_pairs,
    marker_ids,
    query_string,
    token_span,
)


@pytest.fixture(scope="module")
def tokenizer(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    assert add_marker_tokens(tok) == 2
    assert add_marker_tokens(tok) == 0  # idempotent
    return tok


WORDS = ["storm", "hit", "the", "coast", "on", "Tuesday", "killing", "three", "people", "earthquake", "Yushu",
         "rescue", "workers", "searched", "rubble", "unbelievably", "Qinghai", "province", ",", "."]


def sentence(draw, n_min: int, n_max: int) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=n_min, max_size=n_max)))


@st.composite
def topics(draw):
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=80))
    i = draw(st.integers(0, len(words) - 1))
    j = draw(st.integers(i, min(len(words) - 1, i + 4)))
    before = " ".join(words[:i])
    start = len(before) + (1 if before else 0)
    mention = " ".join(words[i : j + 1])
    text = " ".join(words)
    return Topic(qid="q", text=text, start=start, end=start + len(mention))


def test_markers_are_single_tokens(tokenizer):
    open_id, close_id = marker_ids(tokenizer)
    ids = tokenizer("a <m> storm </m> b", add_special_tokens=False)["input_ids"]
    assert ids.count(open_id) == 1 and ids.count(close_id) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=topics(), max_tokens=st.integers(3, 24))
def test_query_is_cut_around_the_mention(tokenizer, topic, max_tokens):
    text = query_string(tokenizer, topic, max_tokens)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    open_id, close_id = marker_ids(tokenizer)
    assert len(ids) <= max_tokens
    assert ids.count(open_id) == 1 and ids.count(close_id) == 1
    assert ids.index(open_id) < ids.index(close_id)
    inside = text[text.index("<m>") + 3 : text.index("</m>")].strip()
    assert topic.mention.startswith(inside)  # the whole mention, or its head if it alone is too long
    if len(tokenizer(topic.marked(), add_special_tokens=False)["input_ids"]) <= max_tokens:
        assert text == topic.marked()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), max_length=st.integers(24, 64), stride=st.integers(0, 16))
def test_offsets_map_back_to_the_original_characters(tokenizer, data, max_length, stride):
    passage = sentence(data.draw, 1, 60)
    topic = Topic(qid="q", text="the storm hit", start=4, end=9)
    config = EncodingConfig(max_length=max_length, max_query_tokens=8, stride=stride)
    windows = encode_pairs(tokenizer, [topic], [passage], config)
    covered = set()
    for w in windows:
        assert len(w.input_ids) <= max_length
        assert w.input_ids[w.query_open] == marker_ids(tokenizer)[0]
        assert w.input_ids[w.query_close] == marker_ids(tokenizer)[1]
        for pos, (a, b) in zip(w.passage_positions, w.offsets, strict=True):
            piece = tokenizer.convert_ids_to_tokens(w.input_ids[pos]).removeprefix("##")
            assert passage[a:b].lower() == piece
            covered.add((a, b))
    # Every passage token lies in some window.
    all_offsets = tokenizer(passage, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert covered == {tuple(o) for o in all_offsets}
    for first, second in zip(windows, windows[1:], strict=False):  # consecutive windows overlap or touch
        assert second.offsets[0][0] <= first.offsets[-1][1] + 1


def test_long_passage_is_split_and_gold_found_in_its_window(tokenizer):
    words = [f"{w}" for w in WORDS * 4]
    passage = " ".join(words)
    target = passage.index("unbelievably", 150)
    gold = (target, target + len("unbelievably"))
    topic = Topic(qid="q", text="rescue workers searched", start=7, end=14)
    windows = encode_pairs(tokenizer, [topic], [passage], EncodingConfig(max_length=40, max_query_tokens=10,
                                                                          stride=8), [gold])
    assert len(windows) > 2
    with_gold = [w for w in windows if w.gold_start >= 0]
    assert with_gold
    for w in with_gold:
        assert w.char_span(w.gold_start, w.gold_end) == gold
    for w in windows:
        if w.gold_start < 0:
            assert not (w.offsets[0][0] <= gold[0] and w.offsets[-1][1] >= gold[1])


def test_token_span_needs_full_cover():
    offsets = [(0, 3), (4, 9), (9, 12), (13, 20)]
    assert token_span(offsets, 4, 12) == (1, 2)
    assert token_span(offsets, 5, 12) == (1, 2)  # a mention inside a token maps to that token
    assert token_span(offsets, 0, 25) is None  # runs past the window
    assert token_span(offsets, 21, 25) is None


def test_collate_pads_and_masks(tokenizer):
    topic = Topic(qid="q", text="the storm hit", start=4, end=9)
    windows = encode_pairs(tokenizer, [topic, topic], ["storm", "the storm hit the coast on Tuesday"],
                           EncodingConfig())
    batch = collate(windows, tokenizer.pad_token_id)
    assert batch["input_ids"].shape == batch["attention_mask"].shape == batch["passage_mask"].shape
    assert batch["attention_mask"][0].sum() == len(windows[0].input_ids)
    assert batch["passage_mask"][0].sum() == 1 and batch["passage_mask"][1].sum() == 7
    assert not (batch["passage_mask"] & ~batch["attention_mask"].bool()).any()


def test_bad_config_is_rejected():
    with pytest.raises(ConfigError):
        EncodingConfig(max_length=40, max_query_tokens=64)
    with pytest.raises(ConfigError):
        EncodingConfig(max_span_tokens=0)
