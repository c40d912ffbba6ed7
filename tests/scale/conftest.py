"""Fixtures for the sharded build/search tests: the bundled ECB+ sample (~1,000 unique passages, 90 documents)
as one index and as 3 shards, query-by-example topics drawn from its gold mentions, a tiny dense encoder.

The sample ships inside the package (hybrid/sample), so nothing here reads ../shared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARDS = 3


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory) -> Path:
    """The sample without its repeated sentences (ECB+ documents share headlines, up to case). Identical passages
    get identical dense vectors, and FAISS orders exactly equal scores arbitrarily (heap order), so with
    them not even two builds of one index would rank alike; BM25 ties (equal tf and length) remain."""
    from hybrid.sample import sample_paths

    seen: set[str] = set()
    lines = []
    for line in sample_paths().corpus.read_text(encoding="utf-8").splitlines():
        key = " ".join(json.loads(line)["text"].lower().split())  # the encoders are uncased
        if key not in seen:
            seen.add(key)
            lines.append(line)
    path = tmp_path_factory.mktemp("corpus") / "sample_unique.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def sample_topics(sample_corpus, tmp_path_factory) -> Path:
    """Every 11th gold mention as a query, cycling through the ways a topic can name its origin: passage +
    document + kind, passage only (document and kind resolved from the index), document only, and free
    text that is in no document (annotated on the fly, nothing excluded)."""
    rows = []
    n = 0
    for line in sample_corpus.read_text(encoding="utf-8").splitlines():
        passage = json.loads(line)
        for mention in passage.get("mentions") or []:
            n += 1
            if n % 11:
                continue
            qid = f"q{n}"
            style = (n // 11) % 4
            text = passage["text"]
            marked = f"{text[:mention['start']]}<m> {text[mention['start']:mention['end']]} </m>{text[mention['end']:]}"
            if style == 0:
                rows.append({"qid": qid, "passage_id": passage["id"], "doc_id": passage["doc_id"],
                             "start": mention["start"], "end": mention["end"], "kind": mention["kind"]})
            elif style == 1:
                rows.append({"qid": qid, "passage_id": passage["id"], "start": mention["start"], "end": mention["end"]})
            elif style == 2:
                rows.append({"qid": qid, "doc_id": passage["doc_id"], "text": marked})
            else:
                rows.append({"qid": qid, "text": marked + " (rephrased)", "kind": mention["kind"]})
    path = tmp_path_factory.mktemp("topics") / "sample_topics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def sample_single(sample_corpus, tmp_path_factory) -> Path:
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig, build_index

    path = tmp_path_factory.mktemp("single") / "sample"
    build_index(IndexConfig(corpus=str(sample_corpus), annotation=LEGACY), path, progress=False)
    return path


@pytest.fixture(scope="session")
def sample_sharded(sample_corpus, tmp_path_factory) -> Path:
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig
    from indexes.shards import build_sharded_index

    path = tmp_path_factory.mktemp("sharded") / "sample3"
    config = IndexConfig(corpus=str(sample_corpus), annotation=LEGACY, batch_docs=16)
    build_sharded_index(config, path, SHARDS, engine="local", progress=False)
    return path


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert, tmp_path_factory) -> Path:
    """A saved tiny random bi-encoder (2 layers, hidden 32): fast enough to encode the sample twice."""
    from features.encoder import BiEncoder

    return BiEncoder.load(tiny_bert, device="cpu").save(tmp_path_factory.mktemp("encoder") / "tiny-dense")
