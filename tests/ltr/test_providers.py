"""External feature groups over the tiny index: the Java per-field extractor and BM25F run scores."""

from __future__ import annotations

import numpy as np
import pytest

from features.pairs import registry
from hybrid.core.formats.topics import read_topics
from hybrid.retrieval import providers as retriever_providers  # noqa: F401  (registers bm25f, dense, fusion)
from ltr.batch import build_batch
from ltr.resources import IndexResources

needs_jar = pytest.mark.skipif(registry.provider("sparse_fields").available() is not None,
                               reason="the project's jar is not built")


@pytest.fixture(scope="module")
def batch(sparse_index, data_dir):
    from hybrid.retrieval.sparse import MultiFieldBM25

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    run = MultiFieldBM25(sparse_index).search(topics, 10)
    return build_batch(IndexResources(sparse_index), topics, run, depth=10)


def test_unavailable_providers_explain_themselves(monkeypatch):
    from ltr import providers as external

    provider = external.SparseFieldsProvider()
    monkeypatch.setattr(external, "project_jar", lambda: None)
    assert "jar is not built" in provider.available()


@needs_jar
def test_sparse_fields_score_the_candidate_mention(batch):
    provider = registry.provider("sparse_fields")
    names = ["mention:mention:bm25", "mention:mention:coverage", "context:context:bm25", "chain:coref:matched"]
    values = provider.compute(batch, names)
    assert values.shape == (len(batch), 4) and np.isfinite(values).all()
    for row, pair in enumerate(batch.pairs):
        if pair.query.record.mention.lower() == pair.candidate.mention.lower():
            assert values[row, 0] > 0 and values[row, 1] == pytest.approx(1.0)


@needs_jar
def test_bm25f_run_scores(batch):
    provider = registry.provider("bm25f")
    values = provider.compute(batch, ["bm25f_found", "bm25f_rr", "bm25f_score"])
    assert values.shape == (len(batch), 3)
    assert set(np.unique(values[:, 0])) <= {0.0, 1.0} and values[:, 0].sum() > 0
    assert ((values[:, 1] > 0) == (values[:, 0] > 0)).all()
    assert (values[:, 2] >= 0).all()


@needs_jar
@pytest.mark.parametrize(("group", "names", "java_call"), [
    ("bm25f", ["bm25f_score", "bm25f_found", "bm25f_rr"], ("MentionSearch", "search_combined")),
    ("sparse_fields", ["context:context:bm25", "mention:mention:coverage"], ("FeatureBatch", "extract")),
])
def test_java_groups_work_in_a_worker_thread_with_the_values_of_compute(batch, monkeypatch, group, names, java_call):
    """bm25f's and sparse_fields' start hand their Java call to a worker thread and give compute's values; extract
    starts them before the groups computed in this thread and fills the same matrix as computing group by group."""
    import threading

    from hybrid.core import java
    from ltr.matrix import extract

    provider = registry.provider(group)
    expected = provider.compute(batch, names)
    called_in = []
    cls = getattr(java, java_call[0])
    call = getattr(cls, java_call[1])

    def recording(self, *args, **kwargs):
        called_in.append(threading.current_thread() is threading.main_thread())
        return call(self, *args, **kwargs)

    monkeypatch.setattr(cls, java_call[1], recording)
    wait = provider.start(batch, names)
    assert wait is not None
    assert np.array_equal(wait(), expected)
    assert called_in and not any(called_in)

    mixed = ["mention_exact", names[0], "chain_phrase_jaccard", names[1]]
    matrix = extract(batch, mixed)
    one_by_one = np.column_stack([registry.lookup(n)[0].compute(batch, [n])[:, 0] for n in mixed])
    assert np.array_equal(matrix.X, one_by_one)


@needs_jar
def test_bm25f_search_starts_before_the_pairs_with_the_values_of_compute(sparse_index, data_dir, monkeypatch):
    """extract_matrix starts bm25f's search (it needs the queries alone) before it builds the pairs: the values are
    compute's and the matrix the one computed group by group. sparse_fields needs the pairs: nothing early."""
    from hybrid.retrieval.sparse import MultiFieldBM25
    from ltr.pipeline import extract_matrix

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    run = MultiFieldBM25(sparse_index).search(topics, 10)
    resources = IndexResources(sparse_index)
    provider, names = registry.provider("bm25f"), ["bm25f_score", "bm25f_found", "bm25f_rr"]
    handle = provider.start_early(resources, topics, names)
    batch = build_batch(resources, topics, run, depth=10)
    assert handle is not None and np.array_equal(handle(batch)(), provider.compute(batch, names))
    assert provider.start_early(resources, [], names) is None
    assert registry.provider("sparse_fields").start_early(resources, topics, ["context:context:bm25"]) is None

    started = []
    early = provider.start_early
    monkeypatch.setattr(provider, "start_early", lambda *args: started.append(args[1]) or early(*args))
    mixed = ["mention_exact", "bm25f_rr", "chain_phrase_jaccard", "context:context:bm25", "bm25f_score"]
    matrix = extract_matrix(resources, topics, run, mixed, depth=10)
    one_by_one = np.column_stack([registry.lookup(n)[0].compute(batch, [n])[:, 0] for n in mixed])
    assert started == [topics] and np.array_equal(matrix.X, one_by_one)
