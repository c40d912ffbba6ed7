"""The project's own calls of Anserini's searcher, reader and analyzer answer exactly as pyserini's wrappers do,
and opening an index imports neither pyserini nor torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hybrid.core.anserini import Analyzer, IndexStats, LuceneSearcher, english_analyzer
from indexes.lucene import PASSAGES

QUERIES = ["Tara Reid checked into rehab", "earthquake", "the of and", "quake hits Indonesia on Tuesday",
           "zzzz-not-a-word"]


@pytest.fixture(scope="module")
def both(tiny_index):
    from hybrid.core.jvm import start_jvm

    start_jvm()
    from pyserini.search.lucene import LuceneSearcher as PyseriniSearcher

    path = str(tiny_index / PASSAGES)
    return LuceneSearcher(path), PyseriniSearcher(path)


def rows(hits):
    return [(h.docid, h.lucene_docid, h.score) for h in hits]


def test_search_same_hits_scores_order(both):
    ours, theirs = both
    assert ours.num_docs == theirs.num_docs == 10
    for k1, b in ((0.9, 0.4), (1.2, 0.75)):
        ours.set_bm25(k1, b)
        theirs.set_bm25(k1, b)
        for query in QUERIES:
            for k in (1, 3, 100):
                assert rows(ours.search(query, k=k)) == rows(theirs.search(query, k=k))


def test_search_with_a_java_query(both):
    from jnius import autoclass

    ours, theirs = both
    query = autoclass("org.apache.lucene.search.TermQuery")(autoclass("org.apache.lucene.index.Term")("contents",
                                                                                                     "quak"))
    found = rows(ours.search(query, k=10))
    assert found and found == rows(theirs.search(query, k=10))


@pytest.mark.parametrize("ids_only", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_search_same_hits(tiny_index, both, threads, ids_only):
    # ids_only: the project jar's id-only searcher (the default when the jar is built); else Anserini's own call
    _, theirs = both
    ours = LuceneSearcher(tiny_index / PASSAGES)
    if not ids_only:
        ours._ids = False
    qids = [f"q{i}" for i in range(len(QUERIES))]
    for k1, b in ((0.9, 0.4), (1.2, 0.75)):
        ours.set_bm25(k1, b)
        theirs.set_bm25(k1, b)
        for k in (1, 3, 100):
            got = ours.batch_search(QUERIES, qids, k=k, threads=threads)
            expected = theirs.batch_search(QUERIES, qids, k=k, threads=threads)
            assert sorted(got) == sorted(expected) == sorted(qids)
            assert any(got[q] for q in qids)
            for qid in qids:
                assert [(h.docid, h.score) for h in got[qid]] == [(h.docid, h.score) for h in expected[qid]]
    assert bool(ours._ids) is ids_only
    assert ours.batch_search([], [], k=3) == {}


def test_stored_documents(both):
    ours, theirs = both
    for docid in ("a1:0", "a1:1", 0, 9):
        mine, reference = ours.doc(docid), theirs.doc(docid)
        assert mine.raw() == reference.raw() and json.loads(mine.raw())["id"]
        assert mine.docid() == reference.docid() and mine.contents() == reference.contents()
    assert ours.doc("nope") is None and theirs.doc("nope") is None


def test_analyzer_and_term_statistics(tiny_index, both):
    from pyserini.analysis import Analyzer as PyseriniAnalyzer
    from pyserini.analysis import get_lucene_analyzer
    from pyserini.index.lucene import LuceneIndexReader

    reference = PyseriniAnalyzer(get_lucene_analyzer())
    for text in [*QUERIES, "", "  ", "Running runners ran; U.S. e-mail 3.5%"]:
        assert Analyzer().analyze(text) == reference.analyze(text)
        assert Analyzer(english_analyzer()).analyze(text) == reference.analyze(text)
    stats, reader = IndexStats(tiny_index / PASSAGES), LuceneIndexReader(str(tiny_index / PASSAGES))
    assert stats.documents() == int(reader.stats()["documents"]) == 10
    terms = {t for q in QUERIES for t in reference.analyze(q)} | {"the", "Reid", "nope"}
    frequencies = {t: stats.document_frequency(t) for t in terms}
    assert frequencies == {t: reader.get_term_counts(t, analyzer=None)[0] for t in terms}
    assert any(frequencies.values())


def test_opening_an_index_imports_neither_pyserini_nor_torch(tiny_index):
    code = ("import sys\n"
            "from indexes.sparse_index import SparseIndex\n"
            "index = SparseIndex(sys.argv[1])\n"
            "assert index.passages.search('earthquake', k=3)\n"
            "print(sorted(m for m in ('pyserini', 'torch', 'transformers') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tiny_index)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
