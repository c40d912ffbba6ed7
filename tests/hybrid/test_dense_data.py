"""Training pairs: positives from other documents of the same cluster, BM25 hard negatives, split guard."""

from itertools import islice

from dense_toy import toy_topics, write_labelled_corpus

from hybrid.dense.data import TrainingSet, build_training_set, iter_batches


def test_pairs_from_the_training_split_only(tmp_path, tiny_corpus, sparse_index):
    corpus = write_labelled_corpus(tiny_corpus, tmp_path / "labelled.jsonl")
    data = build_training_set(sparse_index, corpus, toy_topics(corpus), split="train", negatives="bm25", top=10,
                              progress=False)
    by_qid = {q.qid: q for q in data.queries}
    # Tara Reid in a1:0 -> the REID mentions of b2 (not a1:1's "she": same document)
    reid = by_qid["a1:0@8"]
    assert reid.cluster == "REID"
    positives = {(pid, data.passages[pid].spans[i]) for pid, i in reid.positives}
    assert positives == {("b2:0", (0, 9)), ("b2:1", (0, 4))}
    for q in data.queries:
        relevant = {pid for pid, _ in q.positives}
        for pid, span in q.negatives:
            p = data.passages[pid]
            assert pid not in relevant and p.doc_id != q.doc_id
            assert p.clusters[span] != q.cluster
        assert all(data.passages[pid].doc_id != q.doc_id for pid, _ in q.positives)
    assert not any(q.cluster == "QUAKE" for q in data.queries)  # e5 is dev
    assert all(not pid.startswith("e5") for pid in data.passages)
    assert "c3:0@31" not in by_qid  # a cluster with no mention in another document
    assert any(q.negatives for q in data.queries)


def test_training_set_round_trip(tmp_path, tiny_corpus, sparse_index):
    corpus = write_labelled_corpus(tiny_corpus, tmp_path / "labelled.jsonl")
    data = build_training_set(sparse_index, corpus, toy_topics(corpus), negatives="none", progress=False)
    data.save(tmp_path / "pairs.jsonl")
    again = TrainingSet.load(tmp_path / "pairs.jsonl")
    assert again.queries == data.queries and again.passages == data.passages and again.info == data.info


def test_batches_are_seeded_and_resumable():
    first = list(islice(iter_batches(10, 3, seed=5), 7))
    resumed = list(islice(iter_batches(10, 3, seed=5, start_step=4), 3))
    assert first[4:] == resumed
    first = [b for _, b in first]
    assert sorted(sum(first[:3], [])) == sorted(set(sum(first[:3], [])))  # no repeats within an epoch
    other = [b for _, b in islice(iter_batches(10, 3, seed=6), 7)]
    assert other != first
