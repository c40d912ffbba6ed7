"""Contrastive training on a toy set with a tiny random BERT: loss goes down, runs are seeded, resume is exact."""

import json
import random

import pytest
import torch
from dense_toy import toy_topics, write_labelled_corpus
from safetensors.torch import load_file

from features.encoder import BiEncoder, EncoderConfig
from hybrid.dense.data import build_training_set
from hybrid.dense.train import TrainConfig, _batch, checkpoint_dir, contrastive_loss, train


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory, tiny_corpus, sparse_index):
    corpus = write_labelled_corpus(tiny_corpus, tmp_path_factory.mktemp("toy") / "labelled.jsonl")
    return build_training_set(sparse_index, corpus, toy_topics(corpus), negatives="bm25", top=10, progress=False)


def fixed_loss(encoder: BiEncoder, data, same_kind=True) -> float:
    """Loss over every query at once (dropout off, fixed positive/negative choice)."""
    encoder.eval()
    batch = _batch(data, list(range(len(data.queries))), random.Random(0), same_kind)
    with torch.no_grad():
        return float(contrastive_loss(encoder, *batch, scale=20.0))


def config(tiny_bert, **kw):
    base = dict(base=str(tiny_bert), steps=30, batch_size=4, lr=1e-3, warmup=0.1, seed=3, checkpoint_every=0,
                freeze_embeddings=False)
    return TrainConfig(**{**base, **kw})


def test_training_reduces_the_loss(tmp_path, tiny_bert, toy_data):
    before = fixed_loss(BiEncoder.load(tiny_bert, device="cpu"), toy_data)
    summary = train(toy_data, tmp_path / "model", config(tiny_bert), progress=False)
    after = fixed_loss(BiEncoder.load(tmp_path / "model", device="cpu"), toy_data)
    assert after < 0.7 * before
    assert summary["steps_done"] == 30 and summary["history"][-1]["step"] == 30
    saved = json.loads((tmp_path / "model" / "hybrid-encoder.json").read_text())
    assert saved["training"]["config"]["lr"] == 1e-3 and "torch" in saved["versions"]
    assert (tmp_path / "model" / "model.safetensors").is_file()
    assert not checkpoint_dir(tmp_path / "model").exists()


def test_frozen_embeddings_stay_put(tmp_path, tiny_bert, toy_data):
    train(toy_data, tmp_path / "frozen", config(tiny_bert, steps=3, freeze_embeddings=True), progress=False)
    start = load_file(str(BiEncoder.load(tiny_bert, device="cpu").save(tmp_path / "start") / "model.safetensors"))
    end = load_file(str(tmp_path / "frozen" / "model.safetensors"))
    key = next(k for k in end if k.endswith("word_embeddings.weight"))
    assert torch.equal(start[key], end[key])
    layer = next(k for k in end if "layer.0" in k and k.endswith("dense.weight"))
    assert not torch.equal(start[layer], end[layer])


def test_seeded_and_resumable(tmp_path, tiny_bert, toy_data):
    cfg = config(tiny_bert, steps=6, checkpoint_every=3)
    train(toy_data, tmp_path / "straight", cfg, progress=False)

    class Killed(Exception):
        pass

    def die_at_step_5(step, loss):
        if step == 5:
            raise Killed

    with pytest.raises(Killed):
        train(toy_data, tmp_path / "resumed", cfg, progress=False, on_step=die_at_step_5)
    state = json.loads((checkpoint_dir(tmp_path / "resumed") / "trainer-state.json").read_text())
    assert state["step"] == 3 and not (tmp_path / "resumed").exists()
    summary = train(toy_data, tmp_path / "resumed", cfg, progress=False)
    assert summary["steps_done"] == 6
    a = load_file(str(tmp_path / "straight" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_resume_refuses_a_different_config(tmp_path, tiny_bert, toy_data):
    cfg = config(tiny_bert, steps=6, checkpoint_every=2)

    def stop(step, loss):
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(toy_data, tmp_path / "m", cfg, progress=False, on_step=stop)
    with pytest.raises(ValueError, match="different training config"):
        train(toy_data, tmp_path / "m", config(tiny_bert, steps=6, checkpoint_every=2, lr=5e-4), progress=False)


def test_separate_encoders_train(tmp_path, tiny_bert, toy_data):
    train(toy_data, tmp_path / "sep", config(tiny_bert, steps=2), EncoderConfig(shared=False), progress=False)
    assert (tmp_path / "sep" / "query" / "model.safetensors").is_file()
    assert (tmp_path / "sep" / "passage" / "model.safetensors").is_file()


def test_topics_without_kind_train_as_any_kind(tmp_path, tiny_bert, tiny_corpus, sparse_index):
    """``kind`` is optional in topics: a query without one is of any kind (no candidate is masked for its kind;
    before, the mask held None and the loss raised TypeError)."""
    from dataclasses import replace

    corpus = write_labelled_corpus(tiny_corpus, tmp_path / "labelled.jsonl")
    topics = [replace(t, kind=None) for t in toy_topics(corpus)]
    data = build_training_set(sparse_index, corpus, topics, negatives="bm25", top=10, progress=False)
    query_units, passage_units, targets, masks = _batch(data, list(range(len(data.queries))), random.Random(0), True)
    assert all(isinstance(m, bool) for row in masks for m in row)
    assert not any(m for row, t in zip(masks, targets, strict=True) for m in row[t:t + 1])  # the target stays
    assert torch.isfinite(torch.tensor(fixed_loss(BiEncoder.load(tiny_bert, device="cpu"), data)))
    summary = train(data, tmp_path / "model", config(tiny_bert, steps=2), progress=False)
    assert summary["steps_done"] == 2
