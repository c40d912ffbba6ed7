"""Reader heads, span decoding, masking, save/load."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid.records import Topic
from ltr.reader.decoding import best_spans, masked_log_softmax
from ltr.reader.encoding import EncodingConfig, collate, encode_pairs
from ltr.reader.store import load_reader, new_reader, save_reader

TOPIC = Topic(qid="q", text="A storm hit the coast on Tuesday.", start=2, end=7)
PASSAGES = ["The storm struck the coast.", "Rescue workers searched the rubble in Yushu for survivors for days."]


def _batch(reader, passages=PASSAGES):
    windows = encode_pairs(reader.tokenizer, [TOPIC] * len(passages), passages, reader.encoding)
    return windows, collate(windows, reader.tokenizer.pad_token_id)


def test_heads_shapes_and_spans_inside_the_passage(tiny_bert):
    reader = new_reader(tiny_bert, EncodingConfig(max_span_tokens=3))
    reader.model.eval()
    windows, batch = _batch(reader)
    batch.pop("gold_start"), batch.pop("gold_end")
    out = reader.model(**batch)
    n, width = batch["input_ids"].shape
    assert out.start_logits.shape == out.end_logits.shape == (n, width)
    assert out.score.shape == (n,)
    assert reader.model.mention_scorer.net[0].out_features == 128  # FFNN hidden layer of CoreSearch
    assert reader.model.pair_scorer.net[0].in_features == 6 * reader.model.encoder.config.hidden_size
    for k, w in enumerate(windows):
        s, e = int(out.span_start[k]), int(out.span_end[k])
        assert s in w.passage_positions and e in w.passage_positions
        assert 0 <= e - s < 3


def test_padding_does_not_change_scores(tiny_bert):
    reader = new_reader(tiny_bert)
    reader.model.eval()
    _, both = _batch(reader)
    _, alone = _batch(reader, PASSAGES[:1])
    for b in (both, alone):
        b.pop("gold_start"), b.pop("gold_end")
    with torch.no_grad():
        out_both, out_alone = reader.model(**both), reader.model(**alone)
    assert both["input_ids"].shape[1] > alone["input_ids"].shape[1]  # the first row is padded in `both`
    assert torch.allclose(out_both.score[0], out_alone.score[0], atol=1e-5)
    assert int(out_both.span_start[0]) == int(out_alone.span_start[0])


def test_gold_span_drives_the_pair_score(tiny_bert):
    reader = new_reader(tiny_bert)
    reader.model.eval()
    windows, batch = _batch(reader, PASSAGES[:1])
    p = windows[0].passage_positions
    scores = []
    for start, end in ((p[0], p[0]), (p[1], p[2])):
        batch["gold_start"], batch["gold_end"] = torch.tensor([start]), torch.tensor([end])
        with torch.no_grad():
            out = reader.model(**batch)
        assert int(out.span_start[0]) == start and int(out.span_end[0]) == end
        scores.append(float(out.score[0]))
    assert scores[0] != scores[1]


@st.composite
def logits_and_masks(draw):
    n = draw(st.integers(1, 4))
    width = draw(st.integers(1, 12))
    values = st.floats(-30, 30, allow_nan=False, width=32)
    start = torch.tensor(draw(st.lists(st.lists(values, min_size=width, max_size=width), min_size=n, max_size=n)))
    end = torch.tensor(draw(st.lists(st.lists(values, min_size=width, max_size=width), min_size=n, max_size=n)))
    mask = torch.tensor(draw(st.lists(st.lists(st.booleans(), min_size=width, max_size=width), min_size=n,
                                      max_size=n)))
    return start, end, mask, draw(st.integers(1, 6))


@settings(max_examples=100, deadline=None)
@given(case=logits_and_masks())
def test_decoding_never_returns_an_invalid_span(case):
    start, end, mask, limit = case
    out = best_spans(start, end, mask, limit)
    start_lp, end_lp = masked_log_softmax(start, mask), masked_log_softmax(end, mask)
    for r in range(start.shape[0]):
        s, e = int(out.start[r]), int(out.end[r])
        if not mask[r].any():
            assert (s, e) == (-1, -1) and float(out.confidence[r]) == 0.0
            continue
        assert bool(mask[r, s]) and bool(mask[r, e]) and s <= e < s + limit
        assert 0.0 < float(out.confidence[r]) <= 1.0 + 1e-6
        # It is the best valid span (brute force).
        best = max(float(start_lp[r, a] + end_lp[r, b]) for a in range(mask.shape[1]) for b in range(mask.shape[1])
                   if mask[r, a] and mask[r, b] and a <= b < a + limit)
        assert abs(float(start_lp[r, s] + end_lp[r, e]) - best) < 1e-4


def test_save_and_load_give_the_same_scores(tiny_bert, tmp_path):
    reader = new_reader(tiny_bert, seed=3)
    reader.model.eval()
    _, batch = _batch(reader)
    with torch.no_grad():
        before = reader.model(**batch).score
    save_reader(reader, tmp_path / "r", {"note": "test"})
    assert (tmp_path / "r" / "model.safetensors").is_file() and (tmp_path / "r" / "reader.json").is_file()
    loaded = load_reader(tmp_path / "r", device="cpu")
    with torch.no_grad():
        after = loaded.model(**batch).score
    assert torch.allclose(before, after, atol=1e-6)
    assert loaded.meta["note"] == "test" and loaded.encoding == reader.encoding


def test_same_seed_same_heads(tiny_bert):
    a, b, c = new_reader(tiny_bert, seed=5), new_reader(tiny_bert, seed=5), new_reader(tiny_bert, seed=6)
    wa, wb, wc = (r.model.pair_scorer.net[0].weight for r in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
