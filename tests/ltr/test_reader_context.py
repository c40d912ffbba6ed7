"""Document context for the reader: document leads, the query-side segment, training and reranking with it."""

from __future__ import annotations

import json

import pytest
import torch
from reader_testkit import labelled_corpus, labelled_queries

from hybrid.core.errors import ConfigError, InputError
from hybrid.core.formats.topics import read_topics
from hybrid.core.records import Topic
from hybrid.retrieval.sparse import PassageBM25
from ltr.reader.context import LeadContext
from ltr.reader.data import build_training_queries, read_labelled_corpus
from ltr.reader.encoding import EncodingConfig, add_marker_tokens, encode_pairs, marker_ids
from ltr.reader.infer import rerank_run, score_pairs
from ltr.reader.stage import ReaderReranker
from ltr.reader.store import load_reader, new_reader, save_reader
from ltr.reader.train import TrainConfig, build_batch, compute_loss, sample_group, train

CONTEXT = EncodingConfig(context_tokens=12, context_sentences=2)


@pytest.fixture(scope="module")
def tokenizer(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    add_marker_tokens(tok)
    return tok


def test_corpus_leads_follow_sent_id_not_file_order(tmp_path):
    rows = [{"id": "d:2", "doc_id": "d", "sent_id": 2, "text": "third"},
            {"id": "d:0", "doc_id": "d", "sent_id": 0, "text": "Headline  here"},
            {"id": "d:1", "doc_id": "d", "sent_id": 1, "text": "Monday, May 2"},
            {"id": "x:5", "text": "no doc id or sent id"}]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert LeadContext.from_corpus(path, sentences=2).of_passage("d:2") == "Headline  here Monday, May 2"
    one = LeadContext.from_corpus(path, sentences=1)
    assert one.of_passage("d:1") == "Headline  here"
    assert one.of_passage("x:5") == "no doc id or sent id"  # doc id from the passage id
    with pytest.raises(InputError, match="'nope'"):
        one.of_passage("nope")
    outside = Topic(qid="q", text="a storm", start=2, end=7)
    assert one.of_topic(outside) == ""  # a query from outside the collection has no lead
    assert one.of_topic(Topic(qid="q", text="x", start=0, end=1, doc_id="d")) == "Headline  here"


def test_index_leads_match_the_corpus_leads(sparse_index, tiny_corpus):
    from_index = LeadContext.from_index(sparse_index, sentences=2)
    from_corpus = LeadContext.from_corpus(tiny_corpus, sentences=2)
    for pid in ("a1:1", "b2:0", "d4:1", "e5:1"):
        assert from_index.of_passage(pid) == from_corpus.of_passage(pid)
    assert from_index.of_passage("d4:1").startswith("A strong earthquake struck Yushu")


def test_leads_go_to_the_query_side_and_leave_the_passage_windows_alone(tokenizer):
    topic = Topic(qid="q", text="the storm hit the coast", start=4, end=9)
    passage = "Rescue workers searched the rubble in Yushu for survivors."
    leads = ("Storm hits the coast on Tuesday, killing three people in the province", "Earthquake in Yushu")
    plain = encode_pairs(tokenizer, [topic], [passage], EncodingConfig())
    with_context = encode_pairs(tokenizer, [topic], [passage], CONTEXT, contexts=[leads])
    assert len(plain) == len(with_context) == 1
    a, b = plain[0], with_context[0]
    assert a.offsets == b.offsets  # the same passage tokens, at the same characters
    assert [a.input_ids[p] for p in a.passage_positions] == [b.input_ids[p] for p in b.passage_positions]
    query_side = tokenizer.decode(b.input_ids[: b.passage_positions[0]])
    assert "yushu" in query_side and "storm hits the coast" in query_side
    assert b.input_ids[b.query_open] == marker_ids(tokenizer)[0] and b.query_open < b.query_close
    # Each lead is cut to context_tokens.
    first_lead = len(tokenizer(leads[0], add_special_tokens=False)["input_ids"])
    assert first_lead > CONTEXT.context_tokens
    assert len(b.input_ids) - len(a.input_ids) <= 2 * (CONTEXT.context_tokens + 1)
    with pytest.raises(ConfigError, match="document context"):
        encode_pairs(tokenizer, [topic], [passage], CONTEXT)


def test_the_context_changes_the_pair_score(tiny_bert):
    reader = new_reader(tiny_bert, CONTEXT, seed=3)
    topic = Topic(qid="q", text="the storm hit the coast", start=4, end=9)
    texts = ["The storm flooded the town."] * 2
    contexts = [("Storm hits coast", "Storm hits coast"), ("Storm hits coast", "Election results announced")]
    scores = score_pairs(reader, [topic] * 2, texts, contexts=contexts).scores
    assert scores[0] != pytest.approx(scores[1])
    with pytest.raises(ConfigError, match="document context"):
        score_pairs(reader, [topic], texts[:1])


@pytest.fixture(scope="module")
def labelled(tiny_corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("labelled")
    corpus = labelled_corpus(tiny_corpus, root / "corpus.jsonl")
    return corpus, labelled_queries(corpus, root / "queries.jsonl")


def test_training_with_context_reduces_the_loss_and_records_it(labelled, sparse_index, tiny_bert, tmp_path):
    corpus, queries = labelled
    pool = build_training_queries(queries, read_labelled_corpus(corpus), PassageBM25(sparse_index), depth=10,
                                  progress=False, mention_records=sparse_index.mention_records)
    context = LeadContext.from_corpus(corpus, sentences=2)
    config = TrainConfig(base_model=str(tiny_bert), steps=25, queries_per_step=2, negatives=2, lr=1e-3,
                         head_lr=3e-3, warmup=0.0, checkpoint_every=1000, seed=1, context_tokens=12)
    with pytest.raises(ConfigError, match="LeadContext"):
        train(pool, config, tmp_path / "none", device="cpu", progress=False)
    fresh = new_reader(tiny_bert, config.encoding(), seed=config.seed)
    fresh.model.eval()
    batch = build_batch(fresh, [(q, *sample_group(q, config, 0)) for q in pool], context=context)
    with torch.no_grad():
        before, _ = compute_loss(fresh, batch, config)
    trained = train(pool, config, tmp_path / "model", device="cpu", progress=False, context=context)
    trained.model.eval()
    with torch.no_grad():
        after, _ = compute_loss(trained, batch, config)
    assert float(after) < 0.7 * float(before)
    saved = load_reader(tmp_path / "model")
    assert saved.encoding.context_tokens == 12 and saved.encoding.context_sentences == 2


def test_a_context_reader_reranks_with_the_index_leads(tiny_bert, sparse_index, data_dir, tmp_path):
    path = save_reader(new_reader(tiny_bert, CONTEXT, seed=4), tmp_path / "ctx")
    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    run = PassageBM25(sparse_index, k=5)(topics)
    stage = ReaderReranker(path, sparse_index, depth=3)
    reranked = stage.rerank(topics, run)
    direct = rerank_run(stage.reader, topics, run, sparse_index.passage_text, depth=3,
                        context=LeadContext.from_index(sparse_index, 2))
    assert {q: [h.docid for h in hs] for q, hs in reranked.items()} == {q: [h.docid for h in hs]
                                                                        for q, hs in direct.items()}
    with pytest.raises(InputError, match="document context"):
        rerank_run(stage.reader, topics, run, sparse_index.passage_text, depth=3)
    with pytest.raises(ValueError, match="SparseIndex"):
        ReaderReranker(path, sparse_index.passage_text, depth=3)


def test_context_config_is_checked():
    with pytest.raises(ConfigError):
        EncodingConfig(context_tokens=-1)
    with pytest.raises(ConfigError):
        EncodingConfig(max_length=100, max_query_tokens=64, context_tokens=20)
