"""Long passages and long queries: truncation is explicit (a warning naming file:line) and search stays
bounded and working - including queries with more distinct terms than Lucene's default 1,024 clauses.
"""

from __future__ import annotations

import json
import logging
import random

import pytest
from synthetic_corpus import vocabulary

from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import MAX_PASSAGE_CHARS
from hybrid.core.formats.topics import MAX_QUERY_CHARS, read_topics


def long_text(n_words: int, seed: int = 0) -> str:
    return " ".join(vocabulary(n_words, random.Random(seed)))


def test_index_build_truncates_a_long_passage_and_says_where(tmp_path, caplog):
    from features.annotate import LEGACY
    from indexes.lucene import IndexConfig, build_index
    from indexes.sparse_index import SparseIndex

    text = "Tara Reid " + long_text(2500)  # ~20,000 characters
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a:0", "text": "Tara Reid entered rehab.", "mentions": []}) + "\n"
                      + json.dumps({"id": "b:0", "text": text, "mentions": [
                          {"start": 0, "end": 9, "kind": "entity"}, {"start": 12000, "end": 12004}]}) + "\n")
    with caplog.at_level(logging.WARNING, logger="hybrid.core.formats"):
        build_index(IndexConfig(corpus=str(corpus), annotation=LEGACY), tmp_path / "idx", progress=False)
    assert f"{corpus}:2: passage 'b:0' has {len(text)} characters; truncated to" in caplog.text
    assert "dropping 1 mention(s) past the cut" in caplog.text
    index = SparseIndex(tmp_path / "idx")
    stored = index.passage_text("b:0")
    assert len(stored) <= MAX_PASSAGE_CHARS and text.startswith(stored)
    assert [(r.start, r.end) for r in index.mention_records("b:0")] == [(0, 9)]


def test_long_query_is_clipped_around_its_mention_with_a_warning(tmp_path, caplog):
    before, after = long_text(2000, seed=1), long_text(2000, seed=2)
    path = tmp_path / "t.tsv"
    path.write_text(f"q1\t{before} <m> Tara Reid </m> {after}\td1\nq2\tshort <m> one </m>\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hybrid.core.formats"):
        long, short = read_topics(path)
    assert f"{path}:1: query 'q1' has" in caplog.text
    assert f"clipped to {MAX_QUERY_CHARS} around the mention" in caplog.text
    assert long.mention == "Tara Reid" and len(long.text) <= MAX_QUERY_CHARS
    assert f"{before} Tara Reid {after}".find(long.text) >= 0
    assert long.text[: long.start].strip() and long.text[long.end :].strip()  # context kept on both sides
    assert short.text == "short one"
    path.write_text(f"q1\t<m> {'x' * (MAX_QUERY_CHARS + 1)} </m>\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.tsv:1: the marked mention has 5001 characters \(limit 5000\)"):
        read_topics(path)


def test_queries_with_thousands_of_distinct_terms_search(sparse_index, tmp_path):
    """2,500 distinct terms: over Lucene's default 1,024-clause limit (start_jvm raises it)."""
    from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25

    path = tmp_path / "t.tsv"
    path.write_text(f"q1\tTara Reid <m> entered </m> rehab {long_text(2500, seed=3)}\n", encoding="utf-8")
    (topic,) = read_topics(path, max_chars=None)
    assert len(set(topic.text.split())) > 2000
    for retriever in (PassageBM25(sparse_index, "sentence"), MultiFieldBM25(sparse_index, "mention=1,context=0.5")):
        hits = retriever.search([topic], 5)["q1"]
        assert hits, retriever.name
