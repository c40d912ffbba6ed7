"""The reader's inference precision: bf16 / fp16 autocast of its encoder, within a stated bound of fp32; fp32 as
before; training always in fp32; the rerank command and recipes pass it on and a run's meta records it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reader_testkit import pairs, rerank_args, rerank_each, reranked_scores

from hybrid.core.errors import ConfigError
from ltr.reader.encoding import collate, encode_pairs
from ltr.reader.infer import score_pairs
from ltr.reader.store import new_reader

#: Max |score difference| from fp32 that bf16 / fp16 inference of the tiny test reader stays within (its scores are
#: ~0.1-0.3 in size; it moves by ~2e-5 / ~4e-6; an untrained MiniLM reader's, what BENCHMARKS.md says).
BOUNDS = {"bf16": 2e-4, "fp16": 5e-5}


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_reader_scores_stay_within_their_stated_tolerance(tiny_bert, precision):
    """Scores, span confidences and predicted scores move by more than 0 (half precision really ran) and less than
    the bound; the reader says its precision and an unknown one is refused."""
    reader = new_reader(tiny_bert, seed=2)
    topics, passages = pairs()
    exact = score_pairs(reader, topics, passages, batch_size=3)
    half = score_pairs(reader.set_precision(precision), topics, passages, batch_size=3)
    assert reader.precision == precision and reader.artifact_record()["precision"] == precision
    assert half.scores.dtype == np.float32 and half.scores.shape == exact.scores.shape
    for a, b in ((exact.scores, half.scores), (exact.predicted_scores, half.predicted_scores),
                 (exact.span_confidences, half.span_confidences)):
        diff = float(np.abs(a - b).max())
        assert 0 < diff < BOUNDS[precision]
    with pytest.raises(ConfigError, match="unknown precision 'int4'"):
        reader.set_precision("int4")


def test_fp32_is_the_encoder_as_it_was_and_training_ignores_the_precision(tiny_bert):
    """fp32 runs the HF encoder as it always ran (the same bits as calling it directly), and returning to fp32 after
    bf16 gives a fresh reader's scores bit for bit. A reader set to bf16 still trains in fp32: its train-mode forward
    (same seed for dropout) equals the fp32 reader's bit for bit, where its eval-mode forward moves."""
    reader = new_reader(tiny_bert, seed=2)
    topics, passages = pairs()
    windows = encode_pairs(reader.tokenizer, topics, passages, reader.encoding)
    batch = collate(windows, reader.tokenizer.pad_token_id)
    reader.model.eval()
    with torch.inference_mode():
        hidden, _, _ = reader.model.encode(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        direct = reader.model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                      token_type_ids=batch["token_type_ids"]).last_hidden_state
    assert hidden.dtype == torch.float32 and torch.equal(hidden, direct)
    fresh = score_pairs(new_reader(tiny_bert, seed=2), topics, passages)
    back = score_pairs(reader.set_precision("bf16").set_precision("fp32"), topics, passages)
    assert "precision" not in reader.artifact_record()
    for a, b in zip(fresh, back, strict=True):
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b)

    def train_forward(precision):
        reader.set_precision(precision)
        reader.model.train()
        torch.manual_seed(7)
        out = reader.model(**batch)
        reader.model.eval()
        return out.score.detach()

    assert torch.equal(train_forward("bf16"), train_forward("fp32"))
    with torch.inference_mode():
        eval_bf16 = reader.set_precision("bf16").model(**batch).score
        eval_fp32 = reader.set_precision("fp32").model(**batch).score
    assert not torch.equal(eval_bf16, eval_fp32)


def test_rerank_cli_precision_reaches_the_reader_and_its_meta(tiny_bert, tiny_index, data_dir, sparse_index,
                                                               tmp_path):
    """``hybrid.reader rerank --precision bf16`` scores in bf16 (reader scores move, within the bound) and its meta
    says so; fp32 (the default) is the command without the flag, and its meta has no precision."""
    args = rerank_args(tiny_bert, tiny_index, sparse_index, data_dir, tmp_path)
    runs, metas = rerank_each(args, {"plain": [], "fp32": ["--precision", "fp32"], "bf16": ["--precision", "bf16"]},
                              tmp_path)
    assert runs["fp32"] == runs["plain"]
    assert "precision" not in metas["plain"] and "precision" not in metas["fp32"]
    assert metas["bf16"]["precision"] == "bf16" and metas["bf16"]["config"]["precision"] == "bf16"
    fp32, bf16 = reranked_scores(runs["fp32"]), reranked_scores(runs["bf16"])
    assert set(fp32) == set(bf16)
    assert 0 < max(abs(fp32[key] - bf16[key]) for key in fp32) < BOUNDS["bf16"]
