"""The bi-encoder's ``onnx`` backend on a tiny random BERT: the same vectors as torch within float rounding, on
padded batches of mixed lengths, shared and separate towers; refused where it cannot run; re-exported after training."""

import sys

import numpy as np
import pytest
import torch

from features.encoder import BiEncoder, EncoderConfig, Unit
from features.onnx_model import OnnxEncoderModel
from hybrid.core.errors import ConfigError

#: Tolerance of the onnx backend's unit vectors against torch's (max abs; they differ by float rounding, ~1e-7 here).
TOLERANCE = 1e-5


def _units() -> list[Unit]:
    long = " ".join(f"w{i}" for i in range(70))  # longer than passage_max_tokens below: windows, cut passage vector
    return [Unit(f"Reid entered rehab number {i} on Tuesday {'again ' * i}.", [(0, 4), (5, 12)]) for i in range(7)] + [
        Unit("No mentions here."), Unit(long, [(long.index("w60"), long.index("w60") + 3)])]


@pytest.mark.parametrize("config", [EncoderConfig(passage_max_tokens=32),
                                    EncoderConfig(shared=False, pooling="span+cls")])
def test_onnx_vectors_equal_torch_within_float_rounding(tiny_bert, config):
    enc = BiEncoder.load(tiny_bert, config, device="cpu")
    units = _units()
    mentions, plain = enc.encode_units(units, "passage", batch_size=3, passages=True)
    queries = enc.encode_units(units, "query", batch_size=4)
    enc.set_backend("onnx")
    got_mentions, got_plain = enc.encode_units(units, "passage", batch_size=3, passages=True)
    got_queries = enc.encode_units(units, "query", batch_size=4)
    for want, got in ((mentions, got_mentions), (plain, got_plain), (queries, got_queries)):
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=TOLERANCE)
    assert len(enc._onnx) == (1 if config.shared else 2)  # one session per distinct model
    assert enc.artifact_record()["backend"] == "onnx"
    assert "backend" not in enc.set_backend("torch").artifact_record()
    np.testing.assert_array_equal(enc.encode_units(units, "query", batch_size=4), queries)  # torch again, exact


def test_the_session_applies_the_attention_mask(tiny_bert):
    """Padded rows equal their unpadded selves, on a batch longer than the traced example."""
    model = BiEncoder.load(tiny_bert, device="cpu").passage_model
    session = OnnxEncoderModel(model)
    ids = torch.tensor([[101, *range(2000, 2010), 102], [101, 2000, 2001, 102, *[0] * 8]])
    mask = (torch.arange(12) < torch.tensor([[12], [4]])).long()
    got = session(input_ids=ids, attention_mask=mask).last_hidden_state
    alone = session(input_ids=ids[1:, :4], attention_mask=mask[1:, :4]).last_hidden_state
    np.testing.assert_allclose(got[1, :4].numpy(), alone[0].numpy(), atol=TOLERANCE)
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask).last_hidden_state
    np.testing.assert_allclose(got[mask.bool()].numpy(), want[mask.bool()].numpy(), atol=TOLERANCE)


def test_training_drops_the_sessions_so_new_weights_are_exported(tiny_bert):
    enc = BiEncoder.load(tiny_bert, device="cpu").set_backend("onnx")
    units = _units()[:3]
    before = enc.encode_units(units, "passage")
    enc.train()
    with torch.no_grad():
        enc.passage_model.embeddings.word_embeddings.weight.mul_(1.5)
    enc.eval()
    after = enc.encode_units(units, "passage")
    assert float(np.abs(after - before).max()) > 1e-3
    np.testing.assert_allclose(after, enc.set_backend("torch").encode_units(units, "passage"), atol=TOLERANCE)


def test_onnx_is_refused_where_it_cannot_run(tiny_bert, monkeypatch):
    enc = BiEncoder.load(tiny_bert, device="cpu")
    with pytest.raises(ConfigError, match="choose from"):
        enc.set_backend("tensorrt")
    enc.set_precision("bf16")
    with pytest.raises(ConfigError, match="fp32"):
        enc.set_backend("onnx")
    enc.set_precision("fp32").set_backend("onnx")
    with pytest.raises(ConfigError, match="fp32"):
        enc.set_precision("bf16")
    with pytest.raises(ConfigError, match="on the CPU"):
        enc.to("cuda")
    assert enc.device == "cpu" and enc.precision == "fp32"
    # both at once: the combination is what is checked, not each single step on the way
    assert (enc.set_inference("bf16", "torch").precision, enc.backend) == ("bf16", "torch")
    with pytest.raises(ConfigError, match="fp32"):
        enc.set_inference(backend="onnx")
    assert (enc.set_inference("fp32", "onnx").precision, enc.backend) == ("fp32", "onnx")
    monkeypatch.setitem(sys.modules, "onnx", None)  # not installed
    with pytest.raises(ConfigError, match=r"hybrid\[onnx\]"):
        enc.encode_units(_units()[:1], "passage")


def test_token_type_ids_reach_the_graph(tiny_bert):
    """With ``token_types`` the graph takes token type ids and uses them: a pair's second segment (type 1) gives
    torch's states, which differ from those of all-0 types by far more than the tolerance (so a graph that dropped
    them could not pass). Without ``token_types`` the bi-encoder's graph is as before, and refuses token types."""
    model = BiEncoder.load(tiny_bert, device="cpu").passage_model
    ids = torch.tensor([[101, 2000, 2001, 102, 2002, 2003, 2004, 102], [101, 2005, 102, 2006, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]])
    session = OnnxEncoderModel(model, token_types=True)
    assert "token_type_ids" in {i.name for i in session.session.get_inputs()}
    got = session(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
    zeros = session(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(types)).last_hidden_state
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        want_zeros = model(input_ids=ids, attention_mask=mask).last_hidden_state
    keep = mask.bool()
    np.testing.assert_allclose(got[keep].numpy(), want[keep].numpy(), atol=TOLERANCE)
    np.testing.assert_allclose(zeros[keep].numpy(), want_zeros[keep].numpy(), atol=TOLERANCE)
    assert float((want - want_zeros)[keep].abs().max()) > 100 * TOLERANCE
    with pytest.raises(ValueError, match="pass them"):
        session(input_ids=ids, attention_mask=mask)
    plain = OnnxEncoderModel(model)
    assert {i.name for i in plain.session.get_inputs()} == {"input_ids", "attention_mask"}
    with pytest.raises(ValueError, match="without token_type_ids"):
        plain(input_ids=ids, attention_mask=mask, token_type_ids=types)
