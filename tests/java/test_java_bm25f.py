"""BM25F: a term spread across fields is saturated once; the retriever filters, excludes and orders like multifield."""

from __future__ import annotations

import json

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.jvm import JAR_BUILD_COMMAND, project_jar

pytestmark = pytest.mark.skipif(project_jar() is None, reason=f"project jar not built: {JAR_BUILD_COMMAND}")


@pytest.fixture(scope="module")
def crafted_index(tmp_path_factory):
    """An Anserini index (same indexer and analyzer as a hybrid mention index) built for the BM25F case:
    a has the rare term "xylo" in mention and context, b has "xylo" in mention and the commoner "yak" in
    context; fillers make "yak" commoner than "xylo"."""
    from indexes.lucene import _run_anserini

    root = tmp_path_factory.mktemp("bm25f")
    docs = [{"id": "a#0-4", "contents": "xylo", "mention": "xylo", "context": "xylo"},
            {"id": "b#0-4", "contents": "xylo", "mention": "xylo", "context": "yak"}]
    docs += [{"id": f"f{i:02d}#0-3", "contents": "zed", "mention": "zed", "context": "yak" if i < 4 else "wam"}
             for i in range(18)]
    (root / "in").mkdir()
    (root / "in" / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    _run_anserini(root / "in", root / "index", ("mention", "context"), 1, store_raw=False)
    return root / "index"


def test_bm25f_scores_a_term_spread_across_fields_once(crafted_index):
    from hybrid.core.java import MentionSearch

    searcher = MentionSearch(crafted_index)
    boosted = searcher.search_boosted(["mention", "context"], [1.0, 1.0], [["xylo yak", "xylo yak"]], [""], [""],
                                      k1=1.2, b=0.75, k=2)[0]
    assert boosted.passage_ids == ["a", "b"]  # the sum counts xylo twice for a
    combined = searcher.search_combined(["mention", "context"], [1.0, 1.0], ["xylo yak"], [""], [""],
                                        k1=1.2, b=0.75, k=2)[0]
    assert combined.passage_ids == ["b", "a"]  # BM25F: xylo once (tf 2) < xylo + yak
    # one term in two fields is worth less under BM25F than the sum of its two field scores
    single_sum = searcher.search_boosted(["mention", "context"], [1.0, 1.0], [["xylo", "xylo"]], [""], [""],
                                         k1=1.2, b=0.75, k=1)[0]
    single_f = searcher.search_combined(["mention", "context"], [1.0, 1.0], ["xylo"], [""], [""],
                                        k1=1.2, b=0.75, k=1)[0]
    assert single_sum.passage_ids == single_f.passage_ids == ["a"]
    assert single_f.scores[0] < single_sum.scores[0]


@pytest.fixture(scope="module")
def topics(sparse_index, data_dir):
    from hybrid.core.formats.topics import read_topics

    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_bm25f_retriever_filters_kind_excludes_own_doc_and_orders(sparse_index, topics):
    from hybrid.retrieval.bm25f import BM25F

    run = BM25F(sparse_index, {"mention": 2.0, "context": 0.5, "ner": 0.3}, same_kind=True, k=100).search(topics, 100)
    assert sum(len(h) for h in run.values()) > 0
    for topic in topics:
        record = sparse_index.query_record(topic)
        kind = topic.kind or record.kind
        own = sparse_index.exclude_doc(topic, record)
        hits = run[topic.qid]
        keys = [(-h.score, h.docid) for h in hits]
        assert keys == sorted(keys) and len({h.docid for h in hits}) == len(hits)
        for h in hits:
            assert sparse_index.passage_json(h.docid)["doc_id"] != own
            mention = next(r for r in sparse_index.mention_records(h.docid)
                           if (r.start, r.end) == (h.mention_start, h.mention_end))
            assert mention.kind in (kind, None)


def test_bm25f_differs_from_boosted_sum_on_the_tiny_index(sparse_index, topics):
    from hybrid.retrieval.bm25f import BM25F
    from hybrid.retrieval.sparse import MultiFieldBM25

    fields = {"mention": 1.0, "context": 1.0}
    bm25f = BM25F(sparse_index, fields, same_kind=False, query="sentence").search(topics, 100)
    summed = MultiFieldBM25(sparse_index, "sentence:mention=1,sentence:context=1", same_kind=False).search(topics, 100)
    assert {q: {h.docid for h in hits} for q, hits in bm25f.items()} == {
        q: {h.docid for h in hits} for q, hits in summed.items()
    }  # same matching passages ...
    assert any(bm25f[q][0].score < summed[q][0].score for q in bm25f)  # ... scored lower: terms saturate once


def test_field_weights_are_validated(sparse_index):
    from hybrid.retrieval.bm25f import BM25F, parse_field_weights

    assert parse_field_weights("mention=1,context=0.3") == {"mention": 1.0, "context": 0.3}
    for bad in ("nofield=1", "mention=-1", "mention=0", "mention", "mention=1,mention=2"):
        with pytest.raises(ConfigError):
            parse_field_weights(bad)
    with pytest.raises(ConfigError):
        BM25F(sparse_index, "mention=1", query="nonsense")


def test_query_is_a_formulation_or_sources_joined_by_plus(sparse_index, topics):
    from hybrid.retrieval.bm25f import check_query, query_text

    record = sparse_index.query_record(topics[0])
    assert query_text("mention+mention", topics[0], record) == f"{record.mention} ; {record.mention}"
    assert query_text("sentence", topics[0], record) == topics[0].text
    assert check_query("mention+chain+ner+sentence") == "mention+chain+ner+sentence"
    for bad in ("mention+bogus", "", "mention++ner"):
        with pytest.raises(ConfigError):
            check_query(bad)


def test_search_cli_bm25f_model(tiny_index, data_dir, tmp_path):
    """``--model bm25f`` writes the same ranking as the BM25F retriever with the same fields and query."""
    from hybrid.cli.search import main as search_main
    from hybrid.core.formats.runs import read_run
    from hybrid.core.formats.topics import read_topics
    from hybrid.retrieval.bm25f import BM25F
    from indexes.sparse_index import SparseIndex

    out = tmp_path / "bm25f.trec"
    topics_path = data_dir / "tiny_topics.jsonl"
    assert search_main(["--index", str(tiny_index), "--topics", str(topics_path), "--model", "bm25f",
                        "--bm25f-fields", "mention=1,context=0.5", "--bm25f-query", "mention+ner",
                        "--output", str(out), "--hits", "5", "--quiet", "--no-safety-net"]) == 0
    index = SparseIndex(tiny_index)
    topics = read_topics(topics_path, resolve=index.passage_text)
    expected = BM25F(index, "mention=1,context=0.5", query="mention+ner").search(topics, 5)
    got = read_run(out)
    assert got and {q: [h.docid for h in hits] for q, hits in got.items()} == \
        {q: [h.docid for h in hits] for q, hits in expected.items() if hits}
    assert json.loads((tmp_path / "bm25f.trec.meta.json").read_text())["model"] == "bm25f"
