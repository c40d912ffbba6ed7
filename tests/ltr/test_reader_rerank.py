"""Reranking with the reader: score_pairs, rerank_run, the pipeline stage, the CLI and span scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reader_testkit import labelled_corpus, labelled_queries

from hybrid.cli.common import run_cli
from hybrid.cli.reader import main as reader_cli
from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.formats.topics import read_topics
from hybrid.retrieval.sparse import PassageBM25
from ltr.reader.infer import rerank_run, score_pairs
from ltr.reader.spans_eval import evaluate_spans_file, exact_match, score_span, token_f1
from ltr.reader.stage import ReaderReranker
from ltr.reader.store import new_reader, save_reader


@pytest.fixture(scope="module")
def reader_dir(tiny_bert, tmp_path_factory) -> Path:
    return save_reader(new_reader(tiny_bert, seed=2), tmp_path_factory.mktemp("reader") / "model")


@pytest.fixture(scope="module")
def topics(sparse_index, data_dir):
    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_score_pairs_returns_scores_confidences_and_exact_spans(reader_dir, topics, sparse_index):
    from ltr.reader.store import load_reader

    reader = load_reader(reader_dir)
    texts = [sparse_index.passage_text(p) for p in ("b2:0", "c3:0", "d4:1")]
    scores, confidences, spans = score_pairs(reader, [topics[0]] * 3, texts, batch_size=2)
    assert scores.shape == confidences.shape == (3,)
    assert ((confidences > 0) & (confidences <= 1)).all()
    for text, span in zip(texts, spans, strict=True):
        assert span is not None and 0 <= span.start < span.end <= len(text) and text[span.start : span.end] == span.text
    # Batching and order do not change a pair's score.
    again = score_pairs(reader, [topics[0]] * 3, texts[::-1], batch_size=1)
    assert abs(float(again.scores[2]) - float(scores[0])) < 1e-5


def test_rerank_reorders_the_top_k_and_keeps_the_rest(reader_dir, topics, sparse_index):
    first = PassageBM25(sparse_index, k=10)
    run = first(topics)
    stage = ReaderReranker(reader_dir, sparse_index, depth=2)
    reranked = (first >> stage)(topics)
    for topic in topics:
        old, new = run[topic.qid], reranked[topic.qid]
        assert {h.docid for h in old} == {h.docid for h in new}
        assert {h.docid for h in new[:2]} == {h.docid for h in old[:2]}  # the top-2 are reordered among themselves
        assert [h.docid for h in new[2:]] == [h.docid for h in old[2:]]
        assert all(a.score >= b.score for a, b in zip(new, new[1:], strict=False))
        for hit in new[:2]:
            text = sparse_index.passage_text(hit.docid)
            assert text[hit.mention_start : hit.mention_end] == hit.mention_text
            assert hit.extra["reader_score"] == hit.score
    direct = rerank_run(stage.reader, topics, run, sparse_index.passage_text, depth=2)
    assert {q: [h.docid for h in hs] for q, hs in direct.items()} == {q: [h.docid for h in hs]
                                                                      for q, hs in reranked.items()}


def test_rerank_cli_writes_a_valid_run_and_spans(reader_dir, tiny_index, data_dir, sparse_index, tmp_path, capsys):
    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    write_run(PassageBM25(sparse_index, k=10)(topics), tmp_path / "in.trec")
    code = reader_cli(["rerank", "--model", str(reader_dir), "--run", str(tmp_path / "in.trec"),
                       "--topics", str(data_dir / "tiny_topics.jsonl"), "--index", str(tiny_index),
                       "--rerank-depth", "3", "--output", str(tmp_path / "out.trec"),
                       "--spans", str(tmp_path / "spans.jsonl"), "--qrels", str(data_dir / "tiny_qrels.txt"),
                       "--quiet"])
    assert code == 0
    out = read_run(tmp_path / "out.trec")
    assert set(out) == {t.qid for t in topics}
    rows = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    assert len(rows) == sum(len(h) for h in out.values())
    for row in rows:
        if row["rank"] <= 3:
            text = sparse_index.passage_text(row["docid"])
            assert text[row["start"] : row["end"]] == row["text"]
        else:
            assert row["start"] is None
    assert json.loads((tmp_path / "out.trec.meta.json").read_text())["pairs"] > 0
    assert "reranked" in capsys.readouterr().out


def test_rerank_cli_rejects_unknown_queries(reader_dir, tiny_index, data_dir, tmp_path):
    (tmp_path / "in.trec").write_text("nope Q0 b2:0 1 1.0 x\n")
    code = run_cli(reader_cli, ["rerank", "--model", str(reader_dir), "--run", str(tmp_path / "in.trec"),
                       "--topics", str(data_dir / "tiny_topics.jsonl"), "--index", str(tiny_index),
                       "--output", str(tmp_path / "out.trec"), "--quiet"])
    assert code == 2


def test_untrained_checkpoint_is_not_a_reader(tiny_bert, tiny_index, data_dir, tmp_path, capsys):
    (tmp_path / "in.trec").write_text("q-ev-quake Q0 d4:0 1 1.0 x\n")
    code = run_cli(reader_cli, ["rerank", "--model", str(tiny_bert), "--run", str(tmp_path / "in.trec"),
                       "--topics", str(data_dir / "tiny_topics.jsonl"), "--index", str(tiny_index),
                       "--output", str(tmp_path / "out.trec"), "--quiet"])
    assert code == 2 and "not a trained reader" in capsys.readouterr().err


def test_span_metrics_follow_squad_and_need_overlap():
    assert exact_match("The Storm!", "storm") == 1.0
    assert token_f1("the big storm", "storm surge") == pytest.approx(0.5)
    golds = [(10, 15, "storm")]
    assert score_span(10, 15, "storm", golds) == (1.0, 1.0)
    assert score_span(30, 35, "storm", golds) == (0.0, 0.0)  # same words elsewhere: not the coreferring mention
    assert score_span(8, 15, "a storm", golds) == (1.0, 1.0)
    assert score_span(None, None, None, golds) == (0.0, 0.0)


def test_evaluate_spans_against_cluster_gold(tiny_corpus, tmp_path, capsys):
    corpus = labelled_corpus(tiny_corpus, tmp_path / "c.jsonl")
    queries = labelled_queries(corpus, tmp_path / "q.jsonl")
    rows = [
        {"qid": "en-reid-a", "docid": "b2:0", "rank": 1, "start": 0, "end": 9, "text": "Tara Reid"},  # exact
        {"qid": "en-reid-a", "docid": "b2:1", "rank": 2, "start": 0, "end": 12, "text": "Reid starred"},  # partial
        {"qid": "en-reid-a", "docid": "c3:0", "rank": 3, "start": 0, "end": 13, "text": "Lindsay Lohan"},  # not gold
        {"qid": "ev-rehab-a", "docid": "b2:0", "rank": 1, "start": 0, "end": 9, "text": "Tara Reid"},  # wrong span
    ]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = evaluate_spans_file(tmp_path / "s.jsonl", corpus, queries)
    assert table["all"]["#pairs"] == 3
    assert table["entity"]["EM"] == pytest.approx(0.5) and table["entity"]["F1"] == pytest.approx((1 + 2 / 3) / 2)
    assert table["event"] == {"EM": 0.0, "F1": 0.0, "#pairs": 1}
    assert evaluate_spans_file(tmp_path / "s.jsonl", corpus, queries, top=1)["all"]["#pairs"] == 2
    assert reader_cli(["evaluate-spans", "--spans", str(tmp_path / "s.jsonl"), "--corpus", str(corpus),
                       "--queries", str(queries), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["all"]["#pairs"] == 3


def test_candidate_mentions_are_scored_and_can_win(reader_dir, topics, sparse_index):
    from ltr.reader.stage import index_mention_spans
    from ltr.reader.store import load_reader

    reader = load_reader(reader_dir)
    ids = ["b2:0", "c3:0", "a1:1"]
    texts = [sparse_index.passage_text(p) for p in ids]
    spans_of = index_mention_spans(sparse_index)
    candidates = [spans_of(topics[0], p) for p in ids]
    assert all(candidates) and all(m.kind in (None, "event") for m in sparse_index.mention_records("b2:0")
                                   if (m.start, m.end) in candidates[0])
    plain = score_pairs(reader, [topics[0]] * 3, texts)
    with_mentions = score_pairs(reader, [topics[0]] * 3, texts, candidates=candidates)
    assert (with_mentions.scores >= with_mentions.predicted_scores - 1e-6).all()
    assert abs(with_mentions.predicted_scores - plain.scores).max() < 1e-5
    for k, span in enumerate(with_mentions.spans):
        if with_mentions.scores[k] > plain.scores[k] + 1e-6:  # a candidate won: its span is reported
            assert (span.start, span.end) in candidates[k]
    # Candidates that are the predicted spans themselves change nothing.
    same = score_pairs(reader, [topics[0]] * 3, texts, candidates=[[(s.start, s.end)] for s in plain.spans])
    assert abs(same.scores - plain.scores).max() < 1e-5
    stage = ReaderReranker(reader, sparse_index, depth=3, span_source="mentions")
    run = stage(topics, PassageBM25(sparse_index, k=5)(topics))
    assert all(h.extra["reader_score"] >= h.extra["predicted_span_score"] - 1e-6 for hs in run.values()
               for h in hs[:3] if "reader_score" in h.extra)


def test_rerank_cli_interpolation_weight_zero_keeps_the_first_stage_order(reader_dir, tiny_index, data_dir,
                                                                          sparse_index, topics, tmp_path):
    run = PassageBM25(sparse_index, k=6)(topics)
    write_run(run, tmp_path / "in.trec")
    args = ["rerank", "--model", str(reader_dir), "--run", str(tmp_path / "in.trec"), "--topics",
            str(data_dir / "tiny_topics.jsonl"), "--index", str(tiny_index), "--rerank-depth", "4", "--quiet"]
    assert reader_cli([*args, "--interpolate", "0", "--output", str(tmp_path / "w0.trec")]) == 0
    assert reader_cli([*args, "--interpolate", "1", "--output", str(tmp_path / "w1.trec")]) == 0
    assert reader_cli([*args, "--output", str(tmp_path / "reader.trec")]) == 0
    assert reader_cli([*args, "--interpolate", "event=0;entity=1", "--output", str(tmp_path / "kind.trec")]) == 0
    w0, w1, alone, by_kind = (read_run(tmp_path / f) for f in ("w0.trec", "w1.trec", "reader.trec", "kind.trec"))
    for topic in topics:
        assert [h.docid for h in w0[topic.qid]] == [h.docid for h in read_run(tmp_path / "in.trec")[topic.qid]]
        assert [h.docid for h in w1[topic.qid]] == [h.docid for h in alone[topic.qid]]
        same_as = w0 if topic.kind == "event" else w1  # per-kind weights: events 0, entities 1
        assert [h.docid for h in by_kind[topic.qid]] == [h.docid for h in same_as[topic.qid]]
    assert {t.kind for t in topics} == {"event", "entity"}
    assert json.loads((tmp_path / "w0.trec.meta.json").read_text())["interpolate"] == "0"
    assert json.loads((tmp_path / "kind.trec.meta.json").read_text())["interpolate"] == "entity=1;event=0"
    code = run_cli(reader_cli, [*args, "--interpolate", "1.5", "--output", str(tmp_path / "bad.trec")])
    assert code == 2 and not (tmp_path / "bad.trec").exists()


def per_batch_reference(reader, topics, passages, batch_size, chunk_pairs, candidates=None):
    """score_pairs as it was before its results stayed on the device: each batch's numbers read back after its
    forward, the best window kept pair by pair at once."""
    import numpy as np
    import torch

    from ltr.reader.decoding import masked_log_softmax
    from ltr.reader.encoding import PairEncoder, collate
    from ltr.reader.infer import _candidate_positions, _span

    n = len(topics)
    scores, predicted = np.full(n, -np.inf, dtype=np.float32), np.full(n, -np.inf, dtype=np.float32)
    confidences, spans, predicted_spans = np.zeros(n, dtype=np.float32), [None] * n, [None] * n
    reader.model.eval()
    encoder = PairEncoder(reader.tokenizer, reader.encoding)
    for lo in range(0, n, chunk_pairs):
        windows = encoder.encode(list(topics[lo : lo + chunk_pairs]), list(passages[lo : lo + chunk_pairs]))
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
        for b in range(0, len(order), batch_size):
            chunk = [windows[i] for i in order[b : b + batch_size]]
            batch = collate(chunk, reader.tokenizer.pad_token_id)
            batch.pop("gold_start"), batch.pop("gold_end")
            with torch.inference_mode():
                out = reader.model(**batch, return_hidden=candidates is not None)
                options = [[(float(out.score[k]), int(out.span_start[k]), int(out.span_end[k]),
                             float(out.decoded.confidence[k]))] for k in range(len(chunk))]
                rows = [(k, s, e) for k, w in enumerate(chunk) if candidates is not None
                        for s, e in _candidate_positions(w, candidates[lo + w.pair])]
                if rows:
                    r, s, e = (torch.tensor(x) for x in zip(*rows, strict=True))
                    cand = reader.model.pair_score(out.hidden[r], batch["query_open"][r], batch["query_close"][r], s, e)
                    start_lp = masked_log_softmax(out.start_logits, batch["passage_mask"])
                    end_lp = masked_log_softmax(out.end_logits, batch["passage_mask"])
                    conf = (start_lp[r, s] + end_lp[r, e]).exp()
                    for i, (k, s_k, e_k) in enumerate(rows):
                        options[k].append((float(cand[i]), s_k, e_k, float(conf[i])))
            for k, window in enumerate(chunk):
                pair = lo + window.pair
                if options[k][0][0] > predicted[pair]:
                    predicted[pair] = options[k][0][0]
                    predicted_spans[pair] = _span(window, *options[k][0][1:3], passages[pair])
                best = max(options[k], key=lambda o: o[0])
                if best[0] > scores[pair]:
                    scores[pair], confidences[pair] = best[0], best[3]
                    spans[pair] = _span(window, *best[1:3], passages[pair])
    return scores, confidences, spans, predicted, predicted_spans


@pytest.mark.parametrize(("batch_size", "chunk_pairs"), [(1, 2048), (3, 2), (4, 5), (64, 1)])
@pytest.mark.parametrize("with_candidates", [False, True])
def test_results_kept_on_the_device_are_the_per_batch_results_bit_for_bit(tiny_bert, topics, sparse_index, batch_size,
                                                                         chunk_pairs, with_candidates):
    """Reading the results back once per chunk (after the next chunk is queued) changes no bit of any score,
    confidence or span: pairs of several windows (a short max_length), candidate spans, chunks and batches of every
    size against the per-batch read-back it replaced."""
    import numpy as np

    from ltr.reader.encoding import EncodingConfig, PairEncoder
    from ltr.reader.stage import index_mention_spans

    reader = new_reader(tiny_bert, EncodingConfig(max_length=32, max_query_tokens=12, stride=4), seed=5)
    ids = ["a1:0", "a1:1", "b2:0", "c3:0", "d4:1", "e5:0", "b2:0", "a1:0"]
    texts = [sparse_index.passage_text(p) + " " + sparse_index.passage_text("e5:0") for p in ids]
    pair_topics = [topics[k % len(topics)] for k in range(len(ids))]
    spans_of = index_mention_spans(sparse_index)
    candidates = [spans_of(t, p) for t, p in zip(pair_topics, ids, strict=True)] if with_candidates else None
    got = score_pairs(reader, pair_topics, texts, batch_size=batch_size, chunk_pairs=chunk_pairs,
                      candidates=candidates)
    want = per_batch_reference(reader, pair_topics, texts, batch_size, chunk_pairs, candidates)
    assert len(PairEncoder(reader.tokenizer, reader.encoding).encode(pair_topics, texts)) > len(texts)  # windows
    assert got.scores.tobytes() == want[0].tobytes()
    assert got.span_confidences.tobytes() == want[1].tobytes()
    assert got.spans == want[2]
    assert got.predicted_scores.tobytes() == want[3].tobytes()
    assert got.predicted_spans == want[4]
    assert np.isfinite(got.scores).all()
    if with_candidates:
        assert any(c for c in candidates) and (got.scores >= got.predicted_scores).all()
