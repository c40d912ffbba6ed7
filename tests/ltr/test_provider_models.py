"""Model-backed feature groups on the tiny index: dense similarity, fusion, neural reader (tiny random models)."""

from __future__ import annotations

import numpy as np
import pytest

from features.pairs import registry
from hybrid.core.errors import ConfigError
from hybrid.core.formats.topics import read_topics
from hybrid.retrieval import providers as retriever_providers  # noqa: F401  (registers bm25f, dense, fusion)
from ltr.batch import build_batch
from ltr.resources import IndexResources


@pytest.fixture(scope="module")
def batch(sparse_index, data_dir):
    from hybrid.retrieval.sparse import MultiFieldBM25

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    run = MultiFieldBM25(sparse_index).search(topics, 10)
    return build_batch(IndexResources(sparse_index), topics, run, depth=10)


@pytest.fixture(scope="module")
def dense_dir(tmp_path_factory, sparse_index, tiny_bert):
    from features.encoder import BiEncoder, EncoderConfig
    from indexes.faiss_index import build_dense_index

    encoder = BiEncoder.load(tiny_bert, EncoderConfig(mark_query=False), device="cpu")
    saved = encoder.save(tmp_path_factory.mktemp("enc") / "tiny-dense")
    out = tmp_path_factory.mktemp("dense") / "dense"
    build_dense_index(sparse_index, BiEncoder.load(saved, device="cpu"), out, progress=False)
    return out


@pytest.fixture(scope="module")
def reader_dir(tmp_path_factory, tiny_bert):
    from ltr.reader.store import new_reader, save_reader

    return save_reader(new_reader(tiny_bert), tmp_path_factory.mktemp("reader") / "tiny-reader")


def test_dense_similarities_and_rank(batch, dense_dir):
    provider = registry.configured("dense", {"index": str(dense_dir)})
    names = ["dense_score", "dense_passage_max", "dense_rr", "dense_found"]
    values = provider.compute(batch, names)
    assert values.shape == (len(batch), 4) and np.isfinite(values).all()
    assert (values[:, 0] <= values[:, 1] + 1e-5).all()  # the candidate mention is one of the passage's mentions
    assert ((values[:, 2] > 0) == (values[:, 3] == 1)).all() and values[:, 3].sum() > 0


def test_dense_neighbours_match_a_direct_computation(batch, dense_dir):
    from indexes.faiss_index import DenseIndex

    provider = registry.configured("dense_neighbours", {"index": str(dense_dir)})
    names = list(provider.features())
    values = provider.compute(batch, names)
    assert values.shape == (len(batch), 4) and np.isfinite(values).all()
    index = DenseIndex(dense_dir)
    lo, hi = batch.offsets[0], batch.offsets[1]
    assert hi - lo >= 3
    numbers = [index.passage_number[p.hit.docid] for p in batch.pairs[lo:hi]]
    passages = index.passage_vectors.reconstruct_batch(np.asarray(numbers, dtype=np.int64))
    sims = passages @ passages.T
    best_other = [j for j in range(hi - lo) if j != 2][:5]  # the 3rd candidate's five best others
    assert values[lo + 2, names.index("dnb_passage_top5")] == pytest.approx(sims[2, best_other].mean(), abs=1e-5)
    # a matched span is one of its passage's rows: its vector is that row's
    pair = batch.pairs[lo]
    rows = index.rows_of_passage(numbers[0])
    match = [r for r in rows if (index.rows[r, 1], index.rows[r, 2]) == (pair.candidate.record.start,
                                                                          pair.candidate.record.end)]
    assert match, "the first stage matched an indexed span"
    own = index.faiss.reconstruct(int(match[0]))
    others = [provider._mention_vector(index, n, p.candidate.record.start, p.candidate.record.end)
              for n, p in zip(numbers[1:6], batch.pairs[lo:hi][1:6], strict=True)]
    want = np.mean([float(own @ o) for o in others])
    assert values[lo, names.index("dnb_mention_top5")] == pytest.approx(want, abs=1e-5)


def test_fusion_scores(batch, dense_dir):
    provider = registry.configured("fusion", {"index": str(dense_dir), "method": "rrf"})
    values = provider.compute(batch, ["fusion_found", "fusion_rr"])
    assert values[:, 0].sum() > 0 and ((values[:, 1] > 0) == (values[:, 0] == 1)).all()


def test_dense_and_fusion_encode_each_query_once(batch, dense_dir):
    from hybrid.retrieval.providers import QueryVectorMemo, shared_dense_retriever

    dense = registry.configured("dense", {"index": str(dense_dir), "depth": 7})
    fusion = registry.configured("fusion", {"index": str(dense_dir), "method": "combsum", "depth": 7})
    before = dense.compute(batch, ["dense_score", "dense_rr"])
    memo = shared_dense_retriever(dense_dir, None, 7).encoder
    assert isinstance(memo, QueryVectorMemo)
    counted = memo.encoded
    fusion.compute(batch, ["fusion_score"])
    again = dense.compute(batch, ["dense_score", "dense_rr"])
    assert memo.encoded == counted  # the fusion retriever and the second pass reuse the vectors
    np.testing.assert_array_equal(before, again)
    raw = memo.encoder.encode_queries([q.topic for q in batch.queries][:3])
    np.testing.assert_allclose(memo.encode_queries([q.topic for q in batch.queries][:3]), raw, rtol=1e-5, atol=1e-6)


def test_query_memo_is_bounded_and_encodes_duplicates_once():
    from hybrid.retrieval.providers import QueryVectorMemo

    class Counting:
        def __init__(self):
            self.seen = []

        def encode_queries(self, topics, batch_size=64, progress=False):
            self.seen.extend(topics)
            return np.array([[float(t), 1.0] for t in topics], dtype=np.float32)

    inner = Counting()
    memo = QueryVectorMemo(inner, capacity=2)
    out = memo.encode_queries([1, 2, 1])
    assert inner.seen == [1, 2] and out[:, 0].tolist() == [1.0, 2.0, 1.0]
    memo.encode_queries([3])  # holds the two most recently used: 1 (used last by the first call) and 3
    memo.encode_queries([1])
    memo.encode_queries([2])  # evicted: encoded again
    assert inner.seen == [1, 2, 3, 2]


def test_reader_scores(batch, reader_dir):
    provider = registry.configured("reader", {"checkpoint": str(reader_dir), "device": "cpu"})
    values = provider.compute(batch, ["reader_score", "reader_span_confidence", "reader_predicted_score"])
    assert values.shape == (len(batch), 3)
    assert np.isfinite(values).all()
    assert ((values[:, 1] >= 0) & (values[:, 1] <= 1)).all()


def test_reader_with_document_context_gets_the_leads_from_the_index(batch, tiny_bert, tmp_path):
    from ltr.reader.context import LeadContext
    from ltr.reader.encoding import EncodingConfig
    from ltr.reader.infer import score_pairs
    from ltr.reader.store import load_reader, new_reader, save_reader

    path = save_reader(new_reader(tiny_bert, EncodingConfig(context_tokens=12), seed=5), tmp_path / "ctx")
    provider = registry.configured("reader", {"checkpoint": str(path), "device": "cpu"})
    values = provider.compute(batch, ["reader_score"])
    leads = LeadContext.from_index(batch.resources.index)

    def spans(pair):  # the provider's candidate spans: the passage's mentions of the query's kind
        kind = pair.query.topic.kind or pair.query.record.kind
        return [(r.record.start, r.record.end) for r in pair.passage.records
                if r.record.end > r.record.start and (kind is None or r.kind in (kind, None))]

    pairs = batch.pairs
    reader = load_reader(path, device="cpu")
    direct = score_pairs(reader, [p.query.topic for p in pairs], [p.passage.text for p in pairs],
                         contexts=[(leads.of_topic(p.query.topic), leads.of_passage(p.hit.docid)) for p in pairs],
                         candidates=[spans(p) or [(p.candidate.record.start, p.candidate.record.end)] for p in pairs])
    assert np.allclose(values[:, 0], direct.scores, atol=1e-5)


def test_provider_options_are_validated(tmp_path):
    with pytest.raises(ConfigError, match="needs checkpoint"):
        registry.configured("reader", {"checkpoint": str(tmp_path / "nothing")})
    with pytest.raises(ConfigError, match="unknown option 'checkpoint'"):
        registry.configured("dense", {"checkpoint": "x"})
    with pytest.raises(ConfigError, match="takes no options"):
        registry.configured("string", {"x": 1})


def test_reader_checkpoint_is_part_of_the_fingerprint(tmp_path, reader_dir):
    """A model trained with one reader refuses a feature set pointing at another reader."""
    import shutil

    from ltr.featureset import load_featureset

    other = tmp_path / "other-reader"
    shutil.copytree(reader_dir, other)
    weights = next(p for p in other.iterdir() if p.suffix == ".safetensors")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    text = 'name = "r"\n[groups.reader]\nfeatures = ["*"]\n[providers.reader]\ncheckpoint = "{}"\n'
    (tmp_path / "a.toml").write_text(text.format(reader_dir))
    (tmp_path / "b.toml").write_text(text.format(other))
    a, b = load_featureset(tmp_path / "a.toml"), load_featureset(tmp_path / "b.toml")
    assert a.feature_names == b.feature_names
    assert a.fingerprint() != b.fingerprint()
    (tmp_path / "c.toml").write_text(text.format(tmp_path / "missing"))
    with pytest.raises(ConfigError) as err:
        load_featureset(tmp_path / "c.toml")
    assert err.value.line == 4 and "needs checkpoint" in str(err.value)
