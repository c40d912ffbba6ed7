"""The bi-encoder on a tiny random BERT: markers, windows, pooling, save/load and fingerprints."""

import numpy as np
import pytest
import torch

from features.encoder import CLOSE, OPEN, BiEncoder, EncoderConfig, Unit, _windows
from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic


@pytest.fixture(scope="module")
def encoder(tiny_bert):
    return BiEncoder.load(tiny_bert, device="cpu")


def tokens(enc, ids):
    return enc.tokenizer.convert_ids_to_tokens(ids)


def test_markers_are_added_and_wrap_the_query_mention(encoder):
    assert encoder.tokenizer.convert_tokens_to_ids(OPEN) != encoder.tokenizer.unk_token_id
    (seq,), rows = encoder._sequences([Unit("Tara Reid entered rehab.", [(10, 17)])], "query")
    toks = tokens(encoder, seq.ids)
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]"
    i = toks.index(OPEN)
    assert toks[i + 1 : toks.index(CLOSE)] == ["entered"]
    assert [toks[p] for p in seq.positions[0]] == ["entered"]  # pooled tokens exclude the markers


def test_marker_embeddings_start_as_brackets(tiny_bert):
    enc = BiEncoder.load(tiny_bert, device="cpu")
    emb = enc.query_model.get_input_embeddings().weight
    (m, bracket) = enc.tokenizer.convert_tokens_to_ids([OPEN, "["])
    assert torch.equal(emb[m], emb[bracket])


def test_passage_mentions_get_one_row_each_and_marks_nest(tiny_bert):
    enc = BiEncoder.load(tiny_bert, EncoderConfig(mark_passage=True), device="cpu")
    text = "Tara Reid checked herself into rehab."
    (seq,), n = enc._sequences([Unit(text, [(0, 9), (10, 30), (18, 25)])], "passage")
    assert n == 3
    toks = tokens(enc, seq.ids)
    assert toks.count(OPEN) == 3 and toks.count(CLOSE) == 3
    assert [[toks[p] for p in pos] for pos in seq.positions] == [["tara", "reid"], ["checked", "herself", "into"],
                                                                  ["herself"]]


def test_long_inputs_are_windowed_around_every_mention(tiny_bert):
    enc = BiEncoder.load(tiny_bert, EncoderConfig(passage_max_tokens=16, query_max_tokens=16), device="cpu")
    words = [f"w{i}" for i in range(60)]
    text = " ".join(words)
    far = text.index("w50")
    seqs, n = enc._sequences([Unit(text, [(0, 2), (far, far + 3)])], "passage")
    assert n == 2 and len(seqs) == 2 and all(len(s.ids) <= 16 for s in seqs)
    pooled = sorted("".join(tokens(enc, [s.ids[p] for p in s.positions[0]])).replace("##", "") for s in seqs)
    assert pooled == ["w0", "w50"]
    (q,), _ = enc._sequences([Unit(text, [(far, far + 3)])], "query")
    assert len(q.ids) <= 16 and "".join(tokens(enc, [q.ids[p] for p in q.positions[0]])).replace("##", "") == "w50"


def test_windows_cover_each_span_once():
    assert _windows(10, [(0, 2), (5, 9)], 20) == [(0, [0, 1])]
    wins = _windows(100, [(0, 3), (40, 44), (90, 95)], 30)
    for j, (lo, hi) in enumerate([(0, 3), (40, 44), (90, 95)]):
        homes = [s for s, members in wins if j in members]
        assert len(homes) == 1 and homes[0] <= lo and hi <= homes[0] + 30


def test_mean_pooling_matches_the_plain_model(tiny_bert):
    enc = BiEncoder.load(tiny_bert, EncoderConfig(pooling="mean", mark_query=False), device="cpu")
    text = "An earthquake struck Yushu."
    vec = enc.encode_units([Unit(text)], "passage")[0]
    batch = enc.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        ref = enc.passage_model(**batch).last_hidden_state[0].mean(0)
    ref = (ref / ref.norm()).numpy()
    np.testing.assert_allclose(vec, ref, atol=1e-5)


def test_span_plus_context_vectors(encoder):
    text = "Tara Reid entered rehab. Lohan was arrested."
    vecs = encoder.encode_units([Unit(text, [(0, 9), (10, 17)]), Unit("No mentions here.")], "passage")
    assert vecs.shape == (3, 2 * encoder.hidden) == (3, encoder.dim)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    h = encoder.hidden
    np.testing.assert_allclose(vecs[0, h:], vecs[1, h:], atol=1e-6)  # same sentence context
    assert not np.allclose(vecs[0, :h], vecs[1, :h])  # different mentions
    q = encoder.encode_queries([Topic("q", text, 0, 9)])
    assert q.shape == (1, encoder.dim)


def test_batching_does_not_change_vectors(encoder):
    units = [Unit(f"Sentence number {i} mentions Reid {'and more words ' * i}.", [(0, 8)]) for i in range(7)]
    np.testing.assert_allclose(encoder.encode_units(units, "passage", batch_size=2),
                               encoder.encode_units(units, "passage", batch_size=64), atol=1e-5)


def test_reading_back_every_batch_or_in_groups_gives_the_same_bytes(encoder, monkeypatch):
    """Results stay on the device for up to _Readback.EVERY batches (no sync per batch on a GPU); where they are
    copied out must not change them, nor which row gets which vector."""
    from features import encoder as module

    texts = [f"Reid {'was seen again ' * (i % 9)}in rehab number {i}." for i in range(40)]
    units = [Unit(t, [(0, 4), (t.index("rehab"), t.index("rehab") + 5)]) for t in texts] + [Unit("no mention", [])]
    assert len(list(encoder.plan(units, "passage", 2, passages=True).batches())) > module._Readback.EVERY
    grouped = encoder.encode_units(units, "passage", batch_size=2, passages=True)  # more than one group
    monkeypatch.setattr(module._Readback, "EVERY", 1)
    each = encoder.encode_units(units, "passage", batch_size=2, passages=True)
    for a, b in zip(grouped, each, strict=True):
        assert a.tobytes() == b.tobytes()
    assert not (grouped[0] == 0).all(axis=1).any() and not (grouped[1] == 0).all(axis=1).any()  # every row written


def test_plan_batches_hold_each_distinct_sequence_once(encoder):
    """encode_units' host side alone (what benchmarks/gpu_throughput.py times): every distinct sequence in one
    batch, shortest first; every output row and passage vector placed once."""
    same = Unit("Reid entered rehab on Tuesday.", [(0, 4), (5, 12)])
    units = [same, Unit("Lohan checked into a clinic near the sea.", [(0, 5)]), same, Unit("No mention.", [])]
    plan = encoder.plan(units, "passage", batch_size=2, passages=True)
    batches = list(plan.batches())
    lengths = [int(m.sum()) for b in batches for m in b.mask]
    assert lengths == sorted(lengths) and len(lengths) == 3  # three distinct sequences
    assert sorted(r for b in batches for r in b.pooling.rows) == list(range(plan.n_rows)) and plan.n_rows == 6
    assert sorted(u for b in batches for u in b.passage_rows) == [0, 1, 2, 3]
    assert sum(b.units for b in batches) == len(units)


def test_encode_chunks_gives_each_chunks_encode_units_bytes(encoder):
    """The pipelined path (next chunk planned on a worker thread) gives what encode_units gives chunk by chunk."""
    texts = [f"Reid {'was seen ' * (i % 5)}in rehab {i}." for i in range(30)]
    units = [Unit(t, [(0, 4), (t.index("rehab"), t.index("rehab") + 5)]) for t in texts]
    chunks = [units[:7], units[7:8], units[8:30]]
    got = list(encoder.encode_chunks(iter(chunks), "passage", batch_size=4, passages=True))
    assert len(got) == 3
    for chunk, (vectors, plain) in zip(chunks, got, strict=True):
        want_vectors, want_plain = encoder.encode_units(chunk, "passage", batch_size=4, passages=True)
        assert vectors.tobytes() == want_vectors.tobytes() and plain.tobytes() == want_plain.tobytes()
    assert [v.shape[0] for v in encoder.encode_chunks([units[:3], units[3:5]], "query")] == [6, 4]
    assert list(encoder.encode_chunks([], "passage")) == []


def test_encode_chunks_reads_its_source_one_chunk_ahead(encoder):
    """The source is advanced on the worker, never more than one chunk ahead of the chunk the caller has: a lazy
    source (a dense build reading its index) holds at most two chunks, and is read while the model runs."""
    import threading

    units = [Unit(f"Reid was seen in rehab {i}.", [(0, 4)]) for i in range(12)]
    taken: list[tuple[int, bool]] = []  # (chunk number, taken on the caller's thread)

    def source():
        for k in range(4):
            taken.append((k, threading.current_thread() is threading.main_thread()))
            yield units[3 * k : 3 * k + 3]

    seen = []
    for k, vectors in enumerate(encoder.encode_chunks(source(), "passage", batch_size=2)):
        assert vectors.shape[0] == 3 and len(taken) <= k + 2
        seen.append(len(taken))
    assert seen[0] >= 1 and [k for k, _ in taken] == [0, 1, 2, 3]
    assert not any(on_caller for _, on_caller in taken)


def test_a_repeated_sentence_runs_through_the_model_once(encoder):
    """Identical token sequences share one forward pass; each copy still gets its own rows and passage vector."""
    seen: list[int] = []
    hook = encoder.passage_model.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(int(kwargs["input_ids"].shape[0])), with_kwargs=True)
    try:
        same = Unit("Reid entered rehab on Tuesday.", [(0, 4), (5, 12)])
        other = Unit("Lohan checked into a clinic.", [(0, 5)])
        vectors, plain = encoder.encode_units([same, other, same], "passage", passages=True)
    finally:
        hook.remove()
    assert sum(seen) == 2  # three units, two distinct sequences
    alone, alone_plain = encoder.encode_units([same], "passage", passages=True)
    np.testing.assert_allclose(vectors[:2], alone, atol=1e-5)
    np.testing.assert_allclose(vectors[3:], alone, atol=1e-5)
    np.testing.assert_allclose(plain[[0, 2]], np.vstack([alone_plain, alone_plain]), atol=1e-5)
    assert vectors.shape[0] == 5 and not np.allclose(vectors[2], vectors[0])


def test_save_load_round_trip_and_fingerprint(tmp_path, encoder):
    saved = tmp_path / "enc"
    encoder.save(saved)
    again = BiEncoder.load(saved, device="cpu")
    assert again.fingerprint == encoder.fingerprint
    assert (saved / "model.safetensors").is_file() and not list(saved.glob("*.bin"))
    units = [Unit("Tara Reid entered rehab.", [(0, 9)])]
    np.testing.assert_allclose(again.encode_units(units, "passage"), encoder.encode_units(units, "passage"),
                               atol=1e-6)
    other = BiEncoder.load(saved, EncoderConfig(pooling="span"), device="cpu")
    assert other.fingerprint != encoder.fingerprint


def test_separate_encoders_round_trip(tmp_path, tiny_bert):
    enc = BiEncoder.load(tiny_bert, EncoderConfig(shared=False), device="cpu")
    assert enc.query_model is not enc.passage_model
    with torch.no_grad():
        enc.passage_model.encoder.layer[0].output.dense.weight.add_(0.5)
    enc.save(tmp_path / "sep")
    assert (tmp_path / "sep" / "query" / "model.safetensors").is_file()
    again = BiEncoder.load(tmp_path / "sep", device="cpu")
    unit = [Unit("Tara Reid entered rehab.", [(0, 9)])]
    np.testing.assert_allclose(again.encode_units(unit, "passage"), enc.encode_units(unit, "passage"), atol=1e-6)
    assert not np.allclose(again.encode_units(unit, "query"), again.encode_units(unit, "passage"))


def test_bad_config_is_refused():
    with pytest.raises(ConfigError):
        EncoderConfig(pooling="max")
    with pytest.raises(ConfigError):
        EncoderConfig(context_weight=1.5)
    with pytest.raises(ConfigError):
        EncoderConfig.from_json({"pooling": "span", "colour": "red"})


def _plain_reference(enc, text, max_tokens):
    """sentence-transformers' mean pooling over [CLS] text [SEP], cut at max_tokens, unit length."""
    ids = enc.tokenizer(text, add_special_tokens=False)["input_ids"][: max_tokens - 2]
    ids = torch.tensor([[enc.cls_id, *ids, enc.sep_id]])
    with torch.no_grad():
        ref = enc.passage_model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0].mean(0)
    return (ref / ref.norm()).numpy()


@pytest.mark.parametrize("config", [EncoderConfig(), EncoderConfig(mark_passage=True),
                                    EncoderConfig(passage_max_tokens=16, pooling="span+cls")])
def test_passage_vectors_are_the_unmarked_mean_of_the_whole_text(tiny_bert, config):
    """Passage vectors come with the mention vectors (same forward pass where it can be), which stay as they were."""
    enc = BiEncoder.load(tiny_bert, config, device="cpu")
    long = " ".join(f"w{i}" for i in range(60))
    units = [Unit("Tara Reid checked herself into rehab.", [(0, 9), (10, 30)]), Unit("No mentions here."),
             Unit(long, [(long.index("w50"), long.index("w50") + 3)]), Unit(long)]
    mentions, plain = enc.encode_units(units, "passage", batch_size=2, passages=True)
    np.testing.assert_allclose(mentions, enc.encode_units(units, "passage", batch_size=2), atol=1e-6)
    assert plain.shape == (4, enc.hidden)
    for unit, vec in zip(units, plain, strict=True):
        np.testing.assert_allclose(vec, _plain_reference(enc, unit.text, config.passage_max_tokens), atol=1e-5)
    np.testing.assert_allclose(enc.encode_texts([u.text for u in units]), plain, atol=1e-5)
    # the query side of passage vectors: the sentence without markers, whatever mark_query says
    np.testing.assert_allclose(enc.encode_texts([u.text for u in units], "query"), plain, atol=1e-5)


@pytest.mark.parametrize("precision, bound", [("bf16", 0.05), ("fp16", 0.01)])
def test_half_precision_inference_stays_within_its_stated_tolerance(tiny_bert, precision, bound):
    """bf16 / fp16 autocast (inference only): unit vectors within ``bound`` (max abs) of fp32, cosine >= 0.99."""
    enc = BiEncoder.load(tiny_bert, device="cpu")
    units = [Unit(f"Reid entered rehab number {i} on Tuesday {'again ' * i}.", [(0, 4), (5, 12)]) for i in range(6)]
    exact, exact_plain = enc.encode_units(units, "passage", passages=True)
    half, half_plain = enc.set_precision(precision).encode_units(units, "passage", passages=True)
    assert half.dtype == np.float32 and half.shape == exact.shape
    for a, b in ((exact, half), (exact_plain, half_plain)):
        diff = float(np.abs(a - b).max())
        assert 0 < diff < bound  # half precision really ran, and stays within the bound
        assert float((a * b).sum(axis=1).min()) > 0.99
    with pytest.raises(ConfigError):
        enc.set_precision("int4")
