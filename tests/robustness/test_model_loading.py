"""Encoders and readers: safetensors only, files checked against the sha256 recorded at save, before any
weight is read; a damaged directory is one ConfigError (issue 22, defects 5 and 6)."""

from __future__ import annotations

import json
import shutil

import pytest
from documented import assert_documented

from features.encoder import ENCODER_CONFIG, BiEncoder, EncoderConfig
from hybrid.core.errors import ConfigError


@pytest.fixture(scope="module")
def saved_encoder(tiny_bert, tmp_path_factory):
    path = tmp_path_factory.mktemp("enc") / "encoder"
    BiEncoder.load(tiny_bert, EncoderConfig(), device="cpu").save(path)
    return path


@pytest.fixture(scope="module")
def saved_reader(tiny_bert, tmp_path_factory):
    from ltr.reader.store import new_reader, save_reader

    path = tmp_path_factory.mktemp("reader") / "reader"
    save_reader(new_reader(tiny_bert), path)
    return path


def _copy(src, tmp_path, name="copy"):
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _no_weight_reads(monkeypatch):
    """Make any weight read fail loudly: the check must come first."""
    import safetensors.torch
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("weights were read before the fingerprint was checked")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", refuse)
    monkeypatch.setattr(safetensors.torch, "load_file", refuse)


def test_saved_encoder_records_its_fingerprint_and_loads(saved_encoder):
    meta = json.loads((saved_encoder / ENCODER_CONFIG).read_text())
    loaded = BiEncoder.load(saved_encoder, device="cpu")
    assert meta["fingerprint"] == loaded.fingerprint


def test_tampered_encoder_weights_are_refused_before_they_are_read(saved_encoder, tmp_path, monkeypatch):
    copy = _copy(saved_encoder, tmp_path)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-8:] = b"tampered"
    weights.write_bytes(bytes(data))
    _no_weight_reads(monkeypatch)
    with pytest.raises(ConfigError) as caught:
        BiEncoder.load(copy, device="cpu")
    assert "the encoder's files changed since it was saved" in caught.value.reason
    assert caught.value.path == str(copy / ENCODER_CONFIG)
    assert_documented("the encoder's files changed since it was saved")


def test_pickle_weights_are_never_loaded(tiny_bert, tmp_path):
    import torch
    from safetensors.torch import load_file

    raw = _copy(tiny_bert, tmp_path, "raw")
    torch.save(load_file(str(raw / "model.safetensors")), raw / "pytorch_model.bin")  # what transformers would read
    (raw / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="has no model.safetensors: weights are read from safetensors only"):
        BiEncoder.load(raw, device="cpu")
    assert_documented("has no model.safetensors: weights are read from safetensors only")


def test_a_garbled_encoder_description_is_one_error(saved_encoder, tmp_path):
    copy = _copy(saved_encoder, tmp_path)
    (copy / ENCODER_CONFIG).write_text("{not json")
    with pytest.raises(ConfigError, match="is not a valid encoder description"):
        BiEncoder.load(copy, device="cpu")
    assert_documented("is not a valid encoder description")


def test_an_unfingerprinted_damaged_encoder_is_one_error(saved_encoder, tmp_path):
    copy = _copy(saved_encoder, tmp_path)
    meta = json.loads((copy / ENCODER_CONFIG).read_text())
    del meta["fingerprint"]  # saved before fingerprints were recorded
    (copy / ENCODER_CONFIG).write_text(json.dumps(meta))
    (copy / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ConfigError, match=r"cannot load the encoder's weights \("):
        BiEncoder.load(copy, device="cpu")
    assert_documented("cannot load the encoder's weights (")


def test_saved_reader_records_its_files_and_loads(saved_reader):
    from ltr.reader.store import load_reader

    meta = json.loads((saved_reader / "reader.json").read_text())
    assert "model.safetensors" in meta["files"] and "tokenizer.json" in meta["files"]
    assert load_reader(saved_reader, device="cpu").model is not None


@pytest.mark.parametrize("tamper", ["weights", "tokenizer", "added"])
def test_tampered_reader_is_refused_before_anything_is_read(saved_reader, tmp_path, monkeypatch, tamper):
    from ltr.reader.store import load_reader

    copy = _copy(saved_reader, tmp_path)
    if tamper == "weights":
        (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes()[:-4] + b"evil")
    elif tamper == "tokenizer":
        (copy / "tokenizer.json").write_text((copy / "tokenizer.json").read_text().replace("[UNK]", "[UNX]", 1))
    else:
        (copy / "added_tokens.json").write_text('{"evil": 99999}')
    _no_weight_reads(monkeypatch)
    with pytest.raises(ConfigError) as caught:
        load_reader(copy, device="cpu")
    assert "the reader's files changed since it was saved" in caught.value.reason
    assert_documented("the reader's files changed since it was saved")


def test_a_damaged_reader_description_is_one_error(saved_reader, tmp_path):
    from ltr.reader.store import load_reader

    copy = _copy(saved_reader, tmp_path)
    meta = json.loads((copy / "reader.json").read_text())
    del meta["heads"]
    (copy / "reader.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match=r"cannot load the reader \(KeyError"):
        load_reader(copy, device="cpu")
    (copy / "reader.json").write_text("{")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_reader(copy, device="cpu")
    assert_documented("cannot load the reader (", "reader.json: is not valid JSON")
