"""Reader heads, span decoding, masking, save/load."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid.core.records import Topic
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



class _HostReads(torch.overrides.TorchFunctionMode):
    """Records the calls that read a tensor back to the host (a sync per call on a GPU), outside ``skip``'s forward."""

    READS = ("__bool__", "item", "tolist", "cpu", "numpy", "__int__", "__float__")

    def __init__(self, skip: torch.nn.Module):
        super().__init__()
        self.reads: list[str] = []
        self.inside = 0
        skip.register_forward_pre_hook(lambda *_: setattr(self, "inside", self.inside + 1))
        skip.register_forward_hook(lambda *_: setattr(self, "inside", self.inside - 1))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if not self.inside and name in self.READS:
            self.reads.append(name)
        return func(*args, **(kwargs or {}))


def test_inference_forward_reads_nothing_back_to_the_host(tiny_bert):
    """Without gold (inference, as score_pairs calls it) the reader's own code in forward never reads a tensor back
    (it used to ask ``bool(use_gold.all())`` of an all-False tensor: a host-device sync per batch on a GPU). The HF
    encoder is left out: what it does is transformers' business. With gold (training) the check still runs."""
    reader = new_reader(tiny_bert)
    reader.model.eval()
    windows, batch = _batch(reader)
    gold = batch.pop("gold_start"), batch.pop("gold_end")
    with torch.inference_mode(), _HostReads(reader.model.encoder) as recorder:
        out = reader.model(**batch)
    assert recorder.reads == []
    assert out.decoded is not None and torch.equal(out.span_start, out.decoded.start)
    with torch.inference_mode(), _HostReads(reader.model.encoder) as recorder:
        reader.model(**batch, gold_start=gold[0], gold_end=gold[1])
    assert recorder.reads == ["__bool__"]  # the recorder sees the check where it is still made

def test_score_pairs_reads_back_once_per_chunk_not_per_batch(tiny_bert):
    """score_pairs keeps a chunk's results on the device and reads them back together (on a GPU each read-back waits
    for the device, so the host could not prepare the next batch while the device runs this one): its reads,
    outside the HF encoder, are as many with one window a batch as with all windows in one batch, and grow with the
    chunks only."""
    from ltr.reader.infer import score_pairs

    reader = new_reader(tiny_bert)
    passages = PASSAGES * 3

    def reads(batch_size, chunk_pairs, candidates=None):
        with _HostReads(reader.model.encoder) as recorder:
            score_pairs(reader, [TOPIC] * len(passages), passages, batch_size=batch_size, chunk_pairs=chunk_pairs,
                        candidates=candidates)
        return len(recorder.reads)

    one_chunk = reads(len(passages), len(passages))
    assert 0 < one_chunk == reads(1, len(passages))
    assert reads(1, 2) == reads(2, 2) == 3 * one_chunk
    spans = [[(4, 9), (0, 3)] if "storm" in p else [(0, 6)] for p in passages]
    assert reads(1, len(passages), spans) == reads(len(passages), len(passages), spans) == one_chunk


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


def _hidden_with_marked_positions(width: int = 12, size: int = 4) -> torch.Tensor:
    """Hidden states whose every position is a distinct, recognisable vector."""
    return torch.arange(width, dtype=torch.float32)[None, :, None].expand(1, width, size).clone()


def test_query_g_i_is_the_first_and_last_mention_token(tiny_bert):
    """CoreSearch's g_i = [m_i,s; m_i,t]: the mention's own first and last token, not the markers."""
    from ltr.reader.model import query_boundary_positions

    reader = new_reader(tiny_bert)
    windows, _ = _batch(reader, PASSAGES[:1])
    w = windows[0]
    first, last = query_boundary_positions(torch.tensor([w.query_open]), torch.tensor([w.query_close]), "mention")
    mention_ids = reader.tokenizer(TOPIC.text[TOPIC.start:TOPIC.end], add_special_tokens=False)["input_ids"]
    assert w.input_ids[int(first)] == mention_ids[0] and w.input_ids[int(last)] == mention_ids[-1]
    assert query_boundary_positions(torch.tensor([3]), torch.tensor([7]), "markers") == (torch.tensor([3]),
                                                                                         torch.tensor([7]))
    # No token between the markers: fall back to the markers rather than read outside the mention.
    first, last = query_boundary_positions(torch.tensor([3, 3]), torch.tensor([4, 5]), "mention")
    assert first.tolist() == [3, 4] and last.tolist() == [4, 4]


def test_query_boundary_changes_which_states_the_pair_scorer_reads(tiny_bert):
    mention, markers = new_reader(tiny_bert, seed=2), new_reader(tiny_bert, seed=2, query_boundary="markers")
    hidden = _hidden_with_marked_positions(size=mention.model.encoder.config.hidden_size)
    args = (hidden, torch.tensor([2]), torch.tensor([6]), torch.tensor([8]), torch.tensor([9]))
    same_weights = markers.model.load_state_dict(mention.model.state_dict())
    assert not same_weights.missing_keys
    for r in (mention, markers):
        r.model.eval()
    with torch.no_grad():
        by_mention = mention.model.pair_score(*args)
        by_markers = markers.model.pair_score(*args)
        # Markers at 2 and 6 read exactly what a mention-boundary reader reads for a mention at 2..6.
        shifted = mention.model.pair_score(hidden, torch.tensor([1]), torch.tensor([7]), *args[3:])
    assert not torch.allclose(by_mention, by_markers)
    assert torch.allclose(by_markers, shifted)


def test_query_boundary_is_saved_and_old_readers_load_with_markers(tiny_bert, tmp_path):
    import json

    import pytest

    from hybrid.core.errors import ConfigError
    from ltr.reader.train import TrainConfig

    save_reader(new_reader(tiny_bert, seed=3), tmp_path / "new")
    assert load_reader(tmp_path / "new", device="cpu").model.query_boundary == "mention"
    save_reader(new_reader(tiny_bert, seed=3, query_boundary="markers"), tmp_path / "old")
    meta_path = tmp_path / "old" / "reader.json"
    meta = json.loads(meta_path.read_text())
    del meta["heads"]["query_boundary"]  # as written before the option existed
    meta_path.write_text(json.dumps(meta))
    assert load_reader(tmp_path / "old", device="cpu").model.query_boundary == "markers"
    with pytest.raises(ValueError, match="query_boundary"):
        new_reader(tiny_bert, query_boundary="cls")
    with pytest.raises(ConfigError, match="query_boundary"):
        TrainConfig(query_boundary="cls").validate()
    # A warm start keeps the saved reader's boundary; asking for another is refused.
    with pytest.raises(ConfigError, match="heads"):
        new_reader(tmp_path / "old", query_boundary="mention")
    assert new_reader(tmp_path / "old", query_boundary="markers").model.query_boundary == "markers"
