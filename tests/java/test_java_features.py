"""Batch per-field features: BM25 equals Lucene explain; names, passage ids and unknown ids behave as documented."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid.core.jvm import JAR_BUILD_COMMAND, project_jar

pytestmark = pytest.mark.skipif(project_jar() is None, reason=f"project jar not built: {JAR_BUILD_COMMAND}")


@pytest.fixture(scope="module")
def topics(sparse_index, data_dir):
    from hybrid.core.formats.topics import read_topics

    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


@pytest.fixture(scope="module")
def mention_ids(sparse_index, tiny_corpus):
    import json

    from indexes.lucene import mention_doc_id

    ids = []
    for line in tiny_corpus.read_text(encoding="utf-8").splitlines():
        ids += [mention_doc_id(r) for r in sparse_index.mention_records(json.loads(line)["id"])]
    return ids


def test_bm25_feature_equals_lucene_explain(sparse_index, topics, mention_ids):
    from hybrid.core.java import FEATURES
    from indexes.java_explain import LuceneExplainer
    from indexes.lucene import MENTIONS
    from ltr.sparse_features import SparseFeatureExtractor

    extractor = SparseFeatureExtractor(sparse_index)
    explainer = LuceneExplainer(sparse_index.path / MENTIONS)
    assert all(explainer.doc(m) >= 0 for m in mention_ids)  # the reference never scores a missing document
    n_features, checked, nonzero = len(FEATURES), 0, 0
    for topic in topics:
        matrix, names = extractor.extract(topic, mention_ids)
        texts = extractor.query_texts(topic)
        assert matrix.shape == (len(mention_ids), len(extractor.channels) * n_features)
        for c, channel in enumerate(extractor.channels):
            assert names[c * n_features] == f"{channel.source}:{channel.field}:bm25"
            for i, mention_id in enumerate(mention_ids):
                expected = explainer.field_bm25(channel.field, texts[c], mention_id)
                assert matrix[i, c * n_features] == pytest.approx(expected, abs=1e-4), (channel, mention_id)
                checked += 1
                nonzero += expected > 0
    assert checked > 500 and nonzero > 20


def test_feature_names_are_stable(sparse_index):
    from ltr.sparse_features import SparseFeatureExtractor

    names = SparseFeatureExtractor(sparse_index, channels="mention,chain:mention,sentence").feature_names
    assert names[:9] == ["mention:mention:bm25", "mention:mention:ql", "mention:mention:tfidf",
                         "mention:mention:matched", "mention:mention:coverage", "mention:mention:tf",
                         "mention:mention:length", "mention:mention:min_span", "mention:mention:proximity"]
    assert names[9] == "chain:mention:bm25" and names[18] == "sentence:context:bm25" and len(names) == 27


def test_passage_ids_take_the_best_mention_and_unknown_ids_are_zero(sparse_index, topics):
    from hybrid.retrieval.sparse import MultiFieldBM25
    from ltr.sparse_features import SparseFeatureExtractor

    extractor = SparseFeatureExtractor(sparse_index)
    topic = topics[0]
    run = MultiFieldBM25(sparse_index, same_kind=False).search([topic], 5)
    passage = run[topic.qid][0].docid
    mentions = [f"{passage}#{r.start}-{r.end}" for r in sparse_index.mention_records(passage)]
    by_mention, _ = extractor.extract(topic, mentions)
    by_passage, _ = extractor.extract(topic, [passage, "no-such-passage"])
    bm25_cols = [c * 9 for c in range(len(extractor.channels))]
    best = int(np.argmax(by_mention[:, bm25_cols].sum(axis=1)))
    np.testing.assert_array_equal(by_passage[0], by_mention[best])
    assert not by_passage[1].any()


def test_batch_equals_one_by_one_and_threads_agree(sparse_index, topics, mention_ids):
    from ltr.sparse_features import SparseFeatureExtractor

    one = SparseFeatureExtractor(sparse_index, threads=1)
    two = SparseFeatureExtractor(sparse_index, threads=2)
    candidates = [mention_ids[i::3] for i in range(len(topics))]
    batch, names = one.extract_many(topics, candidates)
    batch2, _ = two.extract_many(topics, candidates)
    for topic, cands, m, m2 in zip(topics, candidates, batch, batch2, strict=True):
        single, _ = one.extract(topic, cands)
        np.testing.assert_array_equal(m, single)
        np.testing.assert_array_equal(m, m2)
        assert m.shape == (len(cands), len(names))


def test_counts_and_lengths_are_consistent(sparse_index, topics, mention_ids):
    from hybrid.core.java import FEATURES
    from ltr.sparse_features import SparseFeatureExtractor

    extractor = SparseFeatureExtractor(sparse_index, channels="mention,context")
    matrix, names = extractor.extract(topics[0], mention_ids)
    col = {n: i for i, n in enumerate(names)}
    for prefix in ("mention:mention", "context:context"):
        matched, coverage = matrix[:, col[f"{prefix}:matched"]], matrix[:, col[f"{prefix}:coverage"]]
        span, prox = matrix[:, col[f"{prefix}:min_span"]], matrix[:, col[f"{prefix}:proximity"]]
        bm25, length = matrix[:, col[f"{prefix}:bm25"]], matrix[:, col[f"{prefix}:length"]]
        assert ((bm25 > 0) == (matched > 0)).all()
        assert ((coverage > 0) == (matched > 0)).all() and (coverage <= 1).all()
        assert (span[matched > 0] >= matched[matched > 0]).all() and (prox <= 1).all()
        assert (length >= matrix[:, col[f"{prefix}:tf"]]).all()
    # the context field of a mention document is its sentence: the length the analyzer gives it
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    analyzer = Analyzer(get_lucene_analyzer())
    for i, mention_id in enumerate(mention_ids[:10]):
        passage = mention_id.rsplit("#", 1)[0]
        expected = len(analyzer.analyze(sparse_index.passage_text(passage)))
        assert matrix[i, col["context:context:length"]] == expected
    assert len(FEATURES) == 9
