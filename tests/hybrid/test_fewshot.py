"""Few-shot mention retrieval: k-shot query construction, mean-over-examples scoring, the tuned head, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hybrid.cli.fewshot import main
from hybrid.core.records import Topic
from hybrid.retrieval.fewshot import (
    DenseTable,
    SiameseHead,
    adhoc_passage_scores,
    build_kshot_queries,
    mean_over_examples,
    ranked,
    tuned_passage_scores,
)


def doc_of(pid: str) -> str:
    return pid.split(":")[0]


def synthetic(n_clusters: int = 4, docs_per_cluster: int = 5):
    """Cluster c has one query mention in each of docs d<c>-0 .. d<c>-(n-1); each query's qrels are the
    cluster's passages in the other documents (plus a judged non-relevant passage)."""
    topics, passages = [], {}
    for c in range(n_clusters):
        n_docs = docs_per_cluster - c  # cluster 3 has 2 documents only
        for d in range(n_docs):
            doc = f"c{c}d{d}"
            passages.setdefault(c, []).append(f"{doc}:0")
            topics.append(Topic(qid=f"q{c}-{d}", text="x", start=0, end=1, doc_id=doc, passage_id=f"{doc}:0",
                                kind="event", meta={"cluster": f"C{c}"}))
    qrels = {}
    for t in topics:
        c = int(t.qid[1])
        qrels[t.qid] = {p: 1 for p in passages[c] if doc_of(p) != t.doc_id}
        qrels[t.qid]["zz:9"] = 0
    return topics, qrels


def test_kshot_queries_never_judge_an_example_document():
    topics, qrels = synthetic()
    for k in (2, 3, 4):
        queries = build_kshot_queries(topics, qrels, k, n_queries=12, seed=7, doc_of=doc_of)
        assert queries and len(queries) <= 12
        keys = set()
        for q in queries:
            docs = [e.doc_id for e in q.examples]
            assert len(q.examples) == k and len(set(docs)) == k  # k distinct documents
            assert len({e.meta["cluster"] for e in q.examples}) == 1
            assert q.banned_docs == frozenset(docs)
            assert all(doc_of(p) not in q.banned_docs for p in q.relevant)
            union = {p for e in q.examples for p, r in qrels[e.qid].items() if r > 0}
            assert set(q.relevant) == {p for p in union if doc_of(p) not in q.banned_docs}
            assert q.relevant and "zz:9" not in q.relevant
            keys.add(tuple(sorted(e.qid for e in q.examples)))
        assert len(keys) == len(queries)  # no two queries share their examples
        # clusters without k documents (cluster 3 has 2, cluster 2 has 3) give no k-shot queries
        assert all(len(set(d.doc_id for d in q.examples)) == k for q in queries)
        small = {f"C{c}" for c in range(4) if 5 - c < k}
        assert not any(q.examples[0].meta["cluster"] in small for q in queries)
    again = build_kshot_queries(topics, qrels, 3, n_queries=12, seed=7, doc_of=doc_of)
    first = build_kshot_queries(topics, qrels, 3, n_queries=12, seed=7, doc_of=doc_of)
    assert [[e.qid for e in q.examples] for q in again] == [[e.qid for e in q.examples] for q in first]


def test_every_usable_cluster_before_a_second_query():
    topics, qrels = synthetic()
    queries = build_kshot_queries(topics, qrels, 2, n_queries=3, seed=1, doc_of=doc_of)
    # C3's only two documents would both be examples: nothing left to find, so it never makes a query
    assert sorted(q.examples[0].meta["cluster"] for q in queries) == ["C0", "C1", "C2"]
    assert len(build_kshot_queries(topics, qrels, 2, n_queries=50, seed=1, doc_of=doc_of)) == 10 + 6 + 3


def hand_table() -> DenseTable:
    """4 passages in 2 documents; unit vectors in 2-D. p0 has two mentions (one entity), p3 none (passage row)."""
    s = 1 / np.sqrt(2)
    vectors = np.array([[1, 0], [0, 1], [s, s], [0, 1], [-1, 0]], dtype=np.float32)
    rows = np.array([[0, 0, 3, 1], [0, 5, 9, 2], [1, 0, 4, 1], [2, 0, 2, 1], [3, -1, -1, 0]])
    return DenseTable(vectors, rows, ["a:0", "a:1", "b:0", "b:1"], ["a", "a", "b", "b"])


def test_mean_over_examples_on_hand_computed_vectors():
    table = hand_table()
    s = 1 / np.sqrt(2)
    examples = np.array([[1, 0], [0, 1]], dtype=np.float32)  # e1 = x axis, e2 = y axis
    allowed_all = table.allowed_rows(None)
    got = adhoc_passage_scores(table, examples, allowed_all)
    # p0: best mention per example = max(1, 0) for e1, max(0, 1) for e2 -> mean 1
    # p1: (s + s) / 2;  p2: (0 + 1) / 2;  p3: (-1 + 0) / 2
    assert got == pytest.approx([1.0, s, 0.5, -0.5])
    # events only: p0 loses its entity mention (row 1), the passage row of p3 (kind unknown) stays
    got = adhoc_passage_scores(table, examples, table.allowed_rows("event"))
    assert got == pytest.approx([0.5, s, 0.5, -0.5])
    # sparse runs: a passage an example did not retrieve counts 0 for it
    assert mean_over_examples([{"a:0": 2.0, "b:0": 1.0}, {"a:0": 4.0}]) == {"a:0": 3.0, "b:0": 0.5}
    hits = ranked({"a:0": 3.0, "b:0": 0.5, "b:1": 0.5, "a:1": -np.inf}, lambda pid: pid == "a:0", 10)
    assert [h.docid for h in hits] == ["b:0", "b:1"]


def test_siamese_head_starts_at_the_adhoc_model_and_learns_the_examples():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 8)).astype(np.float32)
    head = SiameseHead(8, hidden=4, seed=0)
    assert head.embed(x) == pytest.approx(x / np.linalg.norm(x, axis=1, keepdims=True), abs=1e-6)
    left, right = x[[0, 0, 1, 2, 3]], x[[1, 4, 5, 4, 5]]
    labels = np.array([1, 0, 0, 0, 0])
    losses = head.fit(left, right, labels, steps=80, lr=1e-2)
    assert losses[-1] < losses[0]


def test_tuned_scores_rerank_only_the_pool():
    table = hand_table()
    allowed = table.allowed_rows(None)
    examples = [0, 3]
    adhoc = adhoc_passage_scores(table, table.vectors[examples], allowed)
    banned_rows = np.zeros(len(table.rows), dtype=bool)
    out = tuned_passage_scores(table, table.vectors[examples], allowed, banned_rows, adhoc, pool=2, seed=0,
                               negatives=1, steps=5)
    pooled = set(np.argsort(-adhoc, kind="stable")[:2].tolist())
    rest = [p for p in range(4) if p not in pooled]
    assert min(out[list(pooled)]) > max(out[rest])  # pooled passages stay above the others
    assert out[rest] == pytest.approx(adhoc[rest] - 10.0)  # which keep their ad-hoc order


def test_examples_the_annotation_missed_are_encoded_like_indexed_mentions():
    """Raw text: a gold example mention that detection did not find has no row; it is encoded (its passage with
    the span marked, passage side), an indexed one is read from the table."""
    calls = []

    class RecordingEncoder:  # records what it is asked to encode; the real encoder is exercised by the CLI test
        def encode_units(self, units, side):
            calls.append((units[0].text, units[0].spans, side))
            return np.array([[0.0, 1.0]], dtype=np.float32)

    table = hand_table()
    table._encoder_factory = RecordingEncoder
    indexed = Topic(qid="q1", text="Tara entered", start=0, end=3, passage_id="a:0")
    missed = Topic(qid="q2", text="Tara entered", start=5, end=12, passage_id="a:0")
    got = table.example_vectors([indexed, missed])
    assert got.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert calls == [("Tara entered", [(5, 12)], "passage")]
    assert table.example_vectors([missed]).tolist() == [[0.0, 1.0]] and len(calls) == 1  # encoded once
    with pytest.raises(KeyError, match="not a mention"):
        hand_table().example_vectors([missed])


def test_cli_on_the_tiny_index(sparse_index, tiny_index, tiny_bert, tmp_path, capsys):
    from features.encoder import BiEncoder
    from indexes.faiss_index import build_dense_index

    # Labelled queries of the tiny corpus (our own labels): Tara Reid, and 'checking into rehab' in a1, b2 and c3.
    mentions = [("a1:0", 8, 17, "entity", "REID"), ("b2:0", 0, 9, "entity", "REID"), ("b2:1", 0, 4, "entity", "REID"),
                ("a1:0", 18, 30, "event", "CHECKIN"), ("b2:0", 10, 17, "event", "CHECKIN"),
                ("a1:1", 28, 35, "event", "CHECKIN"), ("c3:0", 14, 26, "event", "CHECKIN")]
    lines, qrels = [], []
    for i, (pid, s, e, kind, cluster) in enumerate(mentions):
        lines.append(json.dumps({"qid": f"t{i}", "passage_id": pid, "start": s, "end": e, "kind": kind,
                                 "doc_id": pid.split(":")[0], "cluster": cluster}))
        for other_pid, *_, other_cluster in mentions:
            if other_cluster == cluster and other_pid.split(":")[0] != pid.split(":")[0]:
                qrels.append(f"t{i} 0 {other_pid} 1")
    (tmp_path / "topics.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(sorted(set(qrels))) + "\n")
    build_dense_index(sparse_index, BiEncoder.load(tiny_bert, device="cpu"), tmp_path / "dense", progress=False)
    out = tmp_path / "fewshot.json"
    assert main(["--index", str(tiny_index), "--dense", str(tmp_path / "dense"), "--topics",
                 str(tmp_path / "topics.jsonl"), "--qrels", str(tmp_path / "qrels.txt"), "--k", "2",
                 "--queries-per-k", "5", "--depth", "10", "--pool", "5", "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    row = result["k"]["2"]
    assert row["queries"] >= 1
    for variant in ("bm25", "multifield", "dense-adhoc", "dense-tuned"):
        assert 0.0 <= row["map"][variant]["all"] <= 1.0
    assert "| 2 |" in capsys.readouterr().out
