"""The Fuse stage over real sparse retrievers on the tiny index: component runs, spans, per-kind weights."""

import re

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.formats.topics import read_topics
from hybrid.fusion import Fuse, parse_fusion_weights, parse_weights
from hybrid.fusion.combsum import combsum
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25


@pytest.fixture(scope="module")
def topics(data_dir, sparse_index):
    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_fuse_runs_components_and_keeps_sparse_spans(sparse_index, topics):
    seen = []
    fuse = Fuse([PassageBM25(sparse_index), MultiFieldBM25(sparse_index)], method="combsum", k=5,
                on_component=lambda name, run: seen.append(name))
    fused = fuse(topics)
    assert seen == ["bm25-sentence", "multifield"] == list(fuse.component_runs)
    assert fuse.name == "combsum(bm25-sentence+multifield)"
    expected = combsum(list(fuse.component_runs.values()), k=5)
    assert {q: [h.docid for h in hits] for q, hits in fused.items()} == \
           {q: [h.docid for h in hits] for q, hits in expected.items()}
    multifield = fuse.component_runs["multifield"]
    for qid, hits in fused.items():
        spans = {h.docid: (h.mention_start, h.mention_end) for h in multifield.get(qid, [])}
        for h in hits:
            if h.docid in spans:  # the span comes from the only run that knows one
                assert (h.mention_start, h.mention_end) == spans[h.docid]
        assert len(hits) <= 5


def test_weights_by_kind(sparse_index, topics):
    bm25, mf = PassageBM25(sparse_index), MultiFieldBM25(sparse_index)
    fuse = Fuse([bm25, mf], method="rrf", weights_by_kind={"event": [1.0, 0.0]}, k=10)
    fused = fuse(topics)
    for t in topics:
        only_bm25 = [h.docid for h in fuse.component_runs["bm25-sentence"][t.qid]][:10]
        if t.kind == "event":
            assert [h.docid for h in fused[t.qid]] == only_bm25
    equal = Fuse([bm25, mf], method="rrf", k=10)(topics)
    entity = [t.qid for t in topics if t.kind == "entity"]
    assert entity and all([h.docid for h in fused[q]] == [h.docid for h in equal[q]] for q in entity)


def test_duplicate_names_and_bad_config(sparse_index):
    fuse = Fuse([PassageBM25(sparse_index), PassageBM25(sparse_index)])
    assert fuse.names == ["bm25-sentence1", "bm25-sentence2"]
    with pytest.raises(ConfigError):
        Fuse([PassageBM25(sparse_index)], method="borda")
    with pytest.raises(ConfigError):
        Fuse([PassageBM25(sparse_index)], weights=[1, 2])
    with pytest.raises(ConfigError):
        Fuse([])


def test_parse_fusion_weights():
    assert parse_fusion_weights("0.4,0.6", 2) == ([0.4, 0.6], {})
    assert parse_fusion_weights("event=0.3,0.7; entity=1,0", 2) == (None, {"event": [0.3, 0.7], "entity": [1, 0]})
    assert parse_fusion_weights("1,1;event=0,1", 2) == ([1, 1], {"event": [0, 1]})
    assert parse_fusion_weights(None, 3) == (None, {})
    for bad in ("0.4", "x,y", "topic=1,1"):
        with pytest.raises(ConfigError):
            parse_fusion_weights(bad, 2)



@pytest.mark.parametrize("bad", ["x,y", "-1,2", "inf,1", "nan,1", "0,0", ","])
def test_one_weight_parser_for_hybrid_fuse_and_fusion_weights(bad):
    """hybrid.fuse --weights and a fuse recipe's weights (hybrid.search --fusion-weights) are read by the same
    parser: the same inputs are refused, each error naming its own option."""
    with pytest.raises(ConfigError, match=rf"^<input>: --weights {re.escape(repr(bad))}: give one number >= 0 per "
                                          r"run, "):
        parse_weights(bad, 2, "--weights", "run", "--runs")
    with pytest.raises(ConfigError, match=r"^<input>: fusion weights .*: give one number >= 0 per retriever, "
                                          r"comma separated"):
        parse_fusion_weights(f"event={bad}", 2)


def test_weight_count_errors_name_the_order():
    with pytest.raises(ConfigError, match=r"^<input>: --weights: 1 weight\(s\) for 2 run\(s\); give one per run, "
                                          r"in the order of --runs$"):
        parse_weights("0.5", 2, "--weights", "run", "--runs")
    with pytest.raises(ConfigError, match=r"^<input>: fusion weights: 3 weight\(s\) for 2 retriever\(s\); give one per "
                                          r"retriever, in the order of the fused retrievers$"):
        parse_fusion_weights("1,1,1", 2)
    assert parse_weights("0,1.5", 2) == [0.0, 1.5] and parse_weights("", 2) is None
