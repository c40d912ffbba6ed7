"""The reader's ``onnx`` backend: its encoder in ONNX Runtime (token types included), the heads in torch; scores,
confidences and spans of score_pairs within float rounding of torch; refused where it cannot run; training in torch
and the sessions made again from trained weights; the rerank command and recipes pass it on and a run's meta says it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reader_testkit import pairs, rerank_args, rerank_each, reranked_scores

from hybrid.core.errors import ConfigError
from ltr.reader.encoding import collate, encode_pairs
from ltr.reader.infer import score_pairs
from ltr.reader.stage import ReaderReranker
from ltr.reader.store import new_reader, save_reader

#: Max |difference| from torch of the onnx backend's scores and span confidences (float rounding of another kernel
#: library: ~1e-7 on the tiny reader, whose scores are ~0.1-0.3; ~3e-7 on MiniLM's hidden states).
TOLERANCE = 1e-5


def _candidates(passages):
    """Every word of each passage as a candidate span (the pair scorer over candidates reads the hidden states)."""
    out = []
    for text in passages:
        spans, at = [], 0
        for word in text.split():
            start = text.index(word, at)
            spans.append((start, start + len(word.rstrip(".,"))))
            at = start + len(word)
        out.append(spans)
    return out


def _assert_close(torch_scores, onnx_scores):
    for field in ("scores", "predicted_scores", "span_confidences"):
        want, got = getattr(torch_scores, field), getattr(onnx_scores, field)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0, err_msg=field)
    assert onnx_scores.spans == torch_scores.spans
    assert onnx_scores.predicted_spans == torch_scores.predicted_spans


@pytest.mark.parametrize("with_candidates", [False, True])
def test_onnx_reader_scores_equal_torch_within_float_rounding(tiny_bert, with_candidates):
    """score_pairs under onnx: scores, predicted scores and confidences within TOLERANCE of torch's, the same decoded
    spans, through an ONNX session that takes token types; the reader's record says onnx; torch again is exact."""
    reader = new_reader(tiny_bert, seed=2)
    topics, passages = pairs()
    candidates = _candidates(passages) if with_candidates else None
    exact = score_pairs(reader, topics, passages, batch_size=3, candidates=candidates)
    assert all(span is not None for span in exact.spans)
    onnx = score_pairs(reader.set_backend("onnx"), topics, passages, batch_size=3, candidates=candidates)
    assert list(reader.model._onnx) == [True]  # the encoder ran in a session, one made with token types
    _assert_close(exact, onnx)
    assert reader.backend == "onnx" and reader.artifact_record()["backend"] == "onnx"
    back = score_pairs(reader.set_backend("torch"), topics, passages, batch_size=3, candidates=candidates)
    assert "backend" not in reader.artifact_record() and not reader.model._onnx
    for a, b in zip(exact, back, strict=True):
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b)


def test_the_readers_token_types_reach_its_onnx_encoder(tiny_bert):
    """The pairs' token types (the passage side is type 1) go through the session: its hidden states equal torch's
    with those types, which differ from torch's with all-0 types by far more than the tolerance."""
    reader = new_reader(tiny_bert, seed=2)
    topics, passages = pairs()
    batch = collate(encode_pairs(reader.tokenizer, topics, passages, reader.encoding), reader.tokenizer.pad_token_id)
    types = batch["token_type_ids"]
    assert int(types.max()) == 1
    keep = batch["attention_mask"].bool()
    reader.model.eval()
    with torch.inference_mode():
        want, _, _ = reader.model.encode(batch["input_ids"], batch["attention_mask"], types)
        zeros, _, _ = reader.model.encode(batch["input_ids"], batch["attention_mask"], torch.zeros_like(types))
        reader.set_backend("onnx")
        got, start, end = reader.model.encode(batch["input_ids"], batch["attention_mask"], types)
    assert float((want - zeros)[keep].abs().max()) > 100 * TOLERANCE
    np.testing.assert_allclose(got[keep].numpy(), want[keep].numpy(), atol=TOLERANCE, rtol=0)
    assert start.dtype == torch.float32 and start.shape == types.shape


def test_onnx_reader_is_refused_where_it_cannot_run(tiny_bert, tmp_path):
    reader = new_reader(tiny_bert, seed=2)
    with pytest.raises(ConfigError, match="choose from"):
        reader.set_backend("tensorrt")
    reader.set_precision("bf16")
    with pytest.raises(ConfigError, match="runs in fp32"):
        reader.set_backend("onnx")
    assert reader.backend == "torch"
    reader.set_precision("fp32").set_backend("onnx")
    with pytest.raises(ConfigError, match="runs in fp32"):
        reader.set_precision("fp16")
    with pytest.raises(ConfigError, match="runs on the CPU, not on cuda"):
        reader.to("cuda")
    assert reader.precision == "fp32" and reader.device.type == "cpu"
    path = save_reader(new_reader(tiny_bert, seed=2), tmp_path / "reader")
    with pytest.raises(ConfigError, match="runs on the CPU, not on cuda"):  # before loading anything
        ReaderReranker(path, lambda docid: None, device="cuda", backend="onnx")
    with pytest.raises(ConfigError, match="runs in fp32"):
        ReaderReranker(path, lambda docid: None, precision="bf16", backend="onnx")
    stage = ReaderReranker(path, lambda docid: None, backend="onnx")  # no device: the CPU, not the GPU
    assert stage.reader.backend == "onnx" and stage.reader.device.type == "cpu"
    stage = ReaderReranker(stage.reader, lambda docid: None, precision="bf16", backend="torch")  # torch, then bf16
    assert (stage.reader.backend, stage.reader.precision) == ("torch", "bf16")


def test_training_runs_in_torch_and_drops_the_sessions(tiny_bert):
    """Train mode runs the torch encoder (gradients reach it) and drops the sessions; the next inference exports the
    weights as they are then, and equals torch's with them."""
    reader = new_reader(tiny_bert, seed=2).set_backend("onnx")
    topics, passages = pairs()
    before = score_pairs(reader, topics, passages, batch_size=4)
    assert reader.model._onnx
    batch = collate(encode_pairs(reader.tokenizer, topics, passages, reader.encoding), reader.tokenizer.pad_token_id)
    reader.model.train()
    assert not reader.model._onnx
    reader.model(**batch).score.sum().backward()
    assert reader.model.encoder.embeddings.word_embeddings.weight.grad is not None
    with torch.no_grad():
        reader.model.encoder.embeddings.word_embeddings.weight.mul_(1.5)
    after = score_pairs(reader, topics, passages, batch_size=4)  # puts the model in eval mode
    assert reader.model._onnx
    assert float(np.abs(after.scores - before.scores).max()) > 1e-3
    _assert_close(score_pairs(reader.set_backend("torch"), topics, passages, batch_size=4), after)


def test_rerank_cli_backend_reaches_the_reader_and_its_meta(tiny_bert, tiny_index, data_dir, sparse_index, tmp_path):
    """``hybrid.reader rerank --backend onnx`` scores within TOLERANCE of torch on the CPU and its meta says so; torch
    (the default) is the command without the flag, and its meta has no backend; bf16 with onnx is refused."""
    from hybrid.cli.reader import main as reader_cli

    args = rerank_args(tiny_bert, tiny_index, sparse_index, data_dir, tmp_path)
    runs, metas = rerank_each(args, {"plain": [], "torch": ["--backend", "torch"], "onnx": ["--backend", "onnx"]},
                              tmp_path)
    assert runs["torch"] == runs["plain"]
    assert "backend" not in metas["plain"] and "backend" not in metas["torch"]
    assert metas["onnx"]["backend"] == "onnx" and metas["onnx"]["config"]["backend"] == "onnx"
    assert metas["onnx"]["device"] == "cpu"
    want, got = reranked_scores(runs["torch"]), reranked_scores(runs["onnx"])
    assert want and set(want) == set(got)
    assert max(abs(want[key] - got[key]) for key in want) < TOLERANCE
    for extra, says in ((["--precision", "bf16"], "<input>: --backend onnx runs in fp32"),
                        (["--device", "cuda"], "<input>: --backend onnx runs on the CPU, not on cuda")):
        with pytest.raises(ConfigError) as refused:
            reader_cli([*args, "--backend", "onnx", *extra, "--output", str(tmp_path / "x.trec")])
        assert str(refused.value).startswith(says)
    assert not (tmp_path / "x.trec").exists()
