"""Reader training data (labels from train splits only), loss, determinism and resumption."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from reader_testkit import labelled_corpus, labelled_queries

from hybrid.cli.common import run_cli
from hybrid.cli.reader import main as reader_cli
from hybrid.core.errors import ConfigError, InputError
from hybrid.retrieval.sparse import PassageBM25
from ltr.reader.data import (
    build_training_queries,
    judged_negatives_only,
    read_labelled_corpus,
    read_pool,
    write_pool,
)
from ltr.reader.store import load_reader, new_reader
from ltr.reader.train import TrainConfig, build_batch, checkpoint_path, compute_loss, sample_group, train


@pytest.fixture(scope="module")
def labelled(tiny_corpus, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("labelled")
    corpus = labelled_corpus(tiny_corpus, root / "corpus.jsonl")
    return corpus, labelled_queries(corpus, root / "queries.jsonl")


@pytest.fixture(scope="module")
def pool(labelled, sparse_index):
    corpus, queries = labelled
    return build_training_queries(queries, read_labelled_corpus(corpus), PassageBM25(sparse_index), depth=10,
                                  progress=False, mention_records=sparse_index.mention_records)


def test_pool_positives_carry_gold_spans_and_negatives_are_not_coreferent(pool):
    by_qid = {q.topic.qid: q for q in pool}
    assert "en-lohan" not in by_qid  # no mention of its cluster in another document: no positive
    reid = by_qid["en-reid-a"]
    assert {(c.passage_id, c.text[c.start : c.end]) for c in reid.positives} == {("b2:0", "Tara Reid"),
                                                                                 ("b2:1", "Reid")}
    assert by_qid["en-reid-b"].positives[0].text[slice(*by_qid["en-reid-b"].positives[0].span)] == "Tara Reid"
    # Indexed mentions to score against the gold one: the query's kind, never a coreferent mention.
    b2 = next(c for c in reid.positives if c.passage_id == "b2:0")
    assert b2.coref == [[0, 9]]
    assert [b2.text[s:e] for s, e in b2.mention_spans("entity")] == ["rehab facility", "Malibu"]
    assert [b2.text[s:e] for s, e in b2.mention_spans("event")] == ["entered"]
    for q in pool:
        positive_ids = {c.passage_id for c in q.positives}
        assert q.negatives, q.topic.qid
        for c in q.negatives:
            assert c.passage_id not in positive_ids
            assert not c.passage_id.startswith(q.topic.doc_id + ":")


def test_labels_of_other_splits_are_never_read(tiny_corpus, tmp_path, sparse_index):
    corpus = labelled_corpus(tiny_corpus, tmp_path / "c.jsonl", dev_docs=("b2",))
    queries = labelled_queries(corpus, tmp_path / "q.jsonl")
    lc = read_labelled_corpus(corpus)
    assert not any(pid.startswith("b2:") for pid in lc.texts)
    assert all(pid.startswith(("a1", "c3", "d4", "e5")) for ms in lc.cluster_mentions.values() for pid, _, _ in ms)
    with pytest.raises(InputError):  # its queries include b2 (dev) queries, whose labels must not be used
        build_training_queries(queries, lc, PassageBM25(sparse_index), progress=False)


def test_pool_round_trip(pool, tmp_path):
    write_pool(pool, tmp_path / "pool.jsonl", {"n": len(pool)})
    again = read_pool(tmp_path / "pool.jsonl")
    assert [q.to_json() for q in again] == [q.to_json() for q in pool]
    (tmp_path / "bad.jsonl").write_text('{"qid": "x"}\n')
    with pytest.raises(InputError, match="bad.jsonl:1"):
        read_pool(tmp_path / "bad.jsonl")


def test_judged_negatives_only_keeps_judged_negatives_in_order_and_drops_queries_left_without(pool):
    first = pool[0]
    judged = {first.negatives[-1].passage_id, first.negatives[0].passage_id, "nowhere:0"}
    kept = judged_negatives_only(pool, judged)
    assert kept[0].topic == first.topic and kept[0].positives == first.positives
    for query in kept:
        assert query.negatives and all(c.passage_id in judged for c in query.negatives)
    by_qid = {q.topic.qid: q for q in kept}
    for query in pool:
        expected = [c.passage_id for c in query.negatives if c.passage_id in judged]
        if expected:
            assert [c.passage_id for c in by_qid[query.topic.qid].negatives] == expected  # retriever order
        else:
            assert query.topic.qid not in by_qid
    assert len(first.negatives) > 2 and [c.passage_id for c in kept[0].negatives] == [
        first.negatives[0].passage_id, first.negatives[-1].passage_id]
    assert all(q.negatives for q in pool)  # the input is not changed


def test_train_cli_builds_a_pool_with_judged_negatives_only(labelled, pool, tiny_index, tiny_bert, tmp_path):
    corpus, queries = labelled
    judged = sorted({c.passage_id for c in pool[0].negatives[:2]})
    (tmp_path / "judged.txt").write_text("# judged passages\n" + "\n".join(judged) + "\n")
    args = ["train", "--index", str(tiny_index), "--corpus", str(corpus), "--queries", str(queries),
            "--retriever", "bm25", "--depth", "10", "--base-model", str(tiny_bert), "--steps", "1",
            "--queries-per-step", "1", "--negatives", "1", "--quiet"]
    judged_args = ["--judged", str(tmp_path / "judged.txt")]
    assert reader_cli([*args, *judged_args, "--pool", str(tmp_path / "pool.jsonl"),
                       "--output", str(tmp_path / "model")]) == 0
    built = read_pool(tmp_path / "pool.jsonl")
    assert [q.to_json() for q in built] == [q.to_json() for q in judged_negatives_only(pool, judged)]
    meta = json.loads((tmp_path / "pool.jsonl.meta.json").read_text())
    assert meta["judged"] == str(tmp_path / "judged.txt")
    assert meta["queries_without_judged_negative"] == len(pool) - len(built) and meta["queries_kept"] == len(built)
    assert (tmp_path / "model" / "reader.json").exists()
    # An existing pool is reused as it is: one built without --judged is refused, not silently used.
    assert reader_cli([*args, "--pool", str(tmp_path / "all.jsonl"), "--output", str(tmp_path / "m2"),
                       "--stop-after", "1"]) == 0
    code = run_cli(reader_cli, [*args, *judged_args, "--pool", str(tmp_path / "all.jsonl"),
                                "--output", str(tmp_path / "m3")])
    assert code == 2 and not (tmp_path / "m3").exists()


def _fixed_batch(reader, pool, config):
    groups = [(q, *sample_group(q, config, 0)) for q in pool]
    return build_batch(reader, groups)


def test_a_few_training_steps_reduce_the_loss(pool, tiny_bert, tmp_path):
    config = TrainConfig(base_model=str(tiny_bert), steps=30, queries_per_step=2, negatives=2, lr=1e-3,
                         head_lr=3e-3, warmup=0.0, checkpoint_every=1000, seed=1)
    fresh = new_reader(tiny_bert, config.encoding(), seed=config.seed)
    fresh.model.eval()
    batch = _fixed_batch(fresh, pool, config)
    assert len(set(batch.group_of)) == len(pool)
    assert any(batch.mentions)  # indexed mentions are scored too
    with torch.no_grad():
        before, _ = compute_loss(fresh, batch, config)
    trained = train(pool, config, tmp_path / "model", device="cpu", progress=False)
    trained.model.eval()
    with torch.no_grad():
        after, parts = compute_loss(trained, batch, config)
    assert float(after) < 0.7 * float(before)
    meta = json.loads((tmp_path / "model" / "reader.json").read_text())
    assert meta["training"]["steps_done"] == 30 and meta["training"]["config"]["seed"] == 1
    assert "torch" in meta["versions"]
    assert not checkpoint_path(tmp_path / "model").exists()  # removed once the final model is saved


CUDA = pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"))


@pytest.mark.parametrize("device", ["cpu", CUDA])
def test_interrupted_training_resumes_to_the_same_weights(pool, tiny_bert, tmp_path, device):
    config = TrainConfig(base_model=str(tiny_bert), steps=6, queries_per_step=2, negatives=2, lr=1e-3,
                         checkpoint_every=2, seed=4)
    straight = train(pool, config, tmp_path / "a", device=device, progress=False)
    train(pool, config, tmp_path / "b", device=device, progress=False, stop_after=3)
    assert checkpoint_path(tmp_path / "b").is_dir() and not (tmp_path / "b").exists()
    # Another stretch of random draws between the two calls, as in a new process (the dropout of a GPU run
    # draws from the CUDA generator, which the checkpoint must restore).
    torch.rand(1000, device=device)
    resumed = train(pool, config, tmp_path / "b", device=device, progress=False)
    # CUDA's backward sums in no fixed order (last-bit noise); a wrong dropout mask moves weights by ~lr (1e-3).
    atol = 1e-6 if device == "cpu" else 1e-4
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items(),
                                 strict=True):
        assert torch.allclose(a, b, atol=atol), name
    assert load_reader(tmp_path / "b").meta["training"]["steps_done"] == 6
    if device != "cpu":
        return
    # A checkpoint from another config is refused rather than silently mixed.
    train(pool, config, tmp_path / "c", device="cpu", progress=False, stop_after=1)
    other = TrainConfig(**{**config.__dict__, "lr": 2e-3})
    with pytest.raises(ConfigError, match="another config"):
        train(pool, other, tmp_path / "c", device="cpu", progress=False)


def test_training_can_warm_start_from_a_saved_reader(pool, tiny_bert, tmp_path):
    config = TrainConfig(base_model=str(tiny_bert), steps=3, queries_per_step=2, negatives=2, lr=1e-3, seed=2)
    first = train(pool, config, tmp_path / "first", device="cpu", progress=False)
    warm = new_reader(tmp_path / "first", config.encoding(), seed=3)
    for (name, a), (_, b) in zip(first.model.state_dict().items(), warm.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name  # encoder and heads, not fresh heads over the encoder
    assert warm.meta["warm_start"] == 3
    more = TrainConfig(**{**config.__dict__, "base_model": str(tmp_path / "first"), "steps": 2, "seed": 5})
    again = train(pool, more, tmp_path / "again", device="cpu", progress=False)
    assert load_reader(tmp_path / "again").meta["base_model"] == str(tmp_path / "first")
    assert any(not torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                     again.model.state_dict().values(), strict=True))
    with pytest.raises(ConfigError, match="heads"):
        new_reader(tmp_path / "first", config.encoding(), ffnn_hidden=64)
