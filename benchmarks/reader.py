"""Reader benchmark: rerank a first-stage run's top-k with the neural coreference reader, on a dev subset.

    python benchmarks/reader.py --index IDX --topics queries.dev.jsonl --qrels qrels.dev.txt \
        --corpus corpus.jsonl --model READER_DIR --per-kind 150 --depth 50 --out-dir OUT \
        [--first-stage-run RUN] [--markdown benchmarks/results/reader.md]

Cross-encoder inference is expensive on a CPU, so the benchmark uses a seeded random subset of the
dev queries, stratified by kind (``--per-kind`` queries of each kind). On exactly that subset it
runs plain Pyserini BM25 (``PassageBM25`` with the whole sentence, the project baseline), the first
stage (``MultiFieldBM25`` with its default clauses, or ``--first-stage-run``), and the reader over
the first stage's top ``--depth``, in both scoring modes from one pass: the span heads' best
valid span alone (CoreSearch's inference) and the best of that span and every indexed mention of
the candidate (``--span-source mentions``). Ranking measures by kind (qrels restricted to the subset), span
exact match / token F1 against the gold coreferring mention (overlap rule of CoreSearch), for the
reader's spans and for the first stage's best-matching mention, and reader throughput (pairs/s).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from pathlib import Path

from scipy import stats

from hybrid.evaluation import evaluate, per_query
from hybrid.formats.qrels import read_qrels
from hybrid.formats.runs import read_run, write_run
from hybrid.formats.topics import read_topics
from hybrid.records import KINDS, Hit, Run
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25
from hybrid.retrieval.sparse_index import SparseIndex
from ltr.reader.infer import rerank_run, write_spans
from ltr.reader.spans_eval import SpanRow, evaluate_spans, gold_mentions, read_query_labels
from ltr.reader.stage import index_mention_spans
from ltr.reader.store import load_reader

MEASURES = ("RR@10", "AP@100", "R@10", "R@50", "nDCG@10")


def stratified_subset(topics, per_kind: int, seed: int):
    chosen = []
    for kind in KINDS:
        qids = sorted(t.qid for t in topics if t.kind == kind)
        chosen += random.Random(f"{seed}:{kind}").sample(qids, min(per_kind, len(qids)))
    keep = set(chosen)
    return [t for t in topics if t.qid in keep]


def predicted_only(run: Run, passage_text) -> Run:
    """The run the reader gives when it scores only its predicted span (read off a mentions-mode run)."""
    out: Run = {}
    for qid, hits in run.items():
        top, rest = [], []
        for hit in hits:
            if "reader_score" not in hit.extra:
                rest.append(hit)
                continue
            span = hit.extra["predicted_span"]
            text = passage_text(hit.docid)[span[0] : span[1]] if span else None
            top.append(Hit(docid=hit.docid, score=hit.extra["predicted_span_score"], extra=hit.extra,
                           mention_start=span[0] if span else None, mention_end=span[1] if span else None,
                           mention_text=text))
        floor = min((h.score for h in top), default=0.0)
        rest.sort(key=lambda h: h.extra["first_stage_rank"])
        out[qid] = sorted(top, key=lambda h: (-h.score, h.docid)) + [
            Hit(docid=h.docid, score=floor - i, extra=h.extra) for i, h in enumerate(rest, start=1)]
    return out


def span_rows(run: Run, top: int, passage_text) -> list[SpanRow]:
    """Each hit's span; a first-stage hit knows only the offsets of its best mention, so its text is looked up."""
    rows = []
    for qid, hits in run.items():
        for rank, hit in enumerate(hits[:top], start=1):
            text = hit.mention_text
            if text is None and hit.mention_start is not None:
                text = passage_text(hit.docid)[hit.mention_start : hit.mention_end]
            rows.append(SpanRow(qid, hit.docid, rank, hit.mention_start, hit.mention_end, text))
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--corpus", required=True, help="corpus JSONL with clusters (span gold, evaluation only)")
    p.add_argument("--model", required=True, help="trained reader directory")
    p.add_argument("--per-kind", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--hits", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int)
    p.add_argument("--first-stage-run", help="rerank this run instead of computing MultiFieldBM25")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--markdown", help="also write a markdown table here")
    args = p.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = SparseIndex(args.index)
    topics = stratified_subset(read_topics(args.topics, resolve=index.passage_text), args.per_kind, args.seed)
    qids = {t.qid for t in topics}
    qrels = {q: j for q, j in read_qrels(args.qrels).items() if q in qids}
    groups = {t.qid: t.kind for t in topics}
    (out / "subset.txt").write_text("".join(f"{t.qid}\n" for t in topics))

    runs: dict[str, Run] = {}
    runs["bm25 (plain Pyserini, sentence)"] = PassageBM25(index, "sentence").search(topics, args.hits)
    if args.first_stage_run:
        full = read_run(args.first_stage_run)
        first_name = f"first stage ({Path(args.first_stage_run).name})"
        runs[first_name] = {q: full.get(q, []) for q in qids}
    else:
        first_name = "multifield (first stage)"
        runs[first_name] = MultiFieldBM25(index).search(topics, args.hits)

    reader = load_reader(args.model)
    pairs = sum(min(len(h), args.depth) for h in runs[first_name].values())
    started = time.time()
    reranked = rerank_run(reader, topics, runs[first_name], index.passage_text, depth=args.depth,
                          batch_size=args.batch_size, progress=True, span_candidates=index_mention_spans(index))
    seconds = time.time() - started
    base = first_name.split(" (")[0]
    reader_name = f"reader, predicted span (CoreSearch) over {base} top-{args.depth}"
    mentions_name = f"reader, predicted span + indexed mentions over {base} top-{args.depth}"
    runs[reader_name] = predicted_only(reranked, index.passage_text)
    runs[mentions_name] = reranked
    write_run(runs[reader_name], out / "reader.trec", tag="reader")
    write_spans(runs[reader_name], out / "reader.spans.jsonl")
    write_run(reranked, out / "reader_mentions.trec", tag="reader-mentions")
    write_spans(reranked, out / "reader_mentions.spans.jsonl")
    write_run(runs[first_name], out / "first_stage.trec", tag="first")

    tables = {name: evaluate(qrels, run, MEASURES, groups) for name, run in runs.items()}
    pq = {name: per_query(qrels, run, ("RR@10", "AP@100")) for name, run in runs.items()}
    tests = {}
    for measure in ("RR@10", "AP@100"):
        for system in (reader_name, mentions_name):
            for other in (first_name, "bm25 (plain Pyserini, sentence)"):
                a = [pq[system][measure][q] for q in sorted(qrels)]
                b = [pq[other][measure][q] for q in sorted(qrels)]
                tests[f"{measure}: {system.split(' over')[0]} vs {other}"] = float(stats.ttest_rel(a, b).pvalue)

    labels = {q: lab for q, lab in read_query_labels(args.topics).items() if q in qids}
    gold = gold_mentions(args.corpus, labels)
    kinds = {q: lab.kind for q, lab in labels.items()}
    spans = {}
    for name in (reader_name, mentions_name, first_name):
        for top in (10, args.depth):
            spans[f"{name} @ top-{top}"] = evaluate_spans(span_rows(runs[name], top, index.passage_text), gold, kinds)

    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
        "subset": {"per_kind": args.per_kind, "seed": args.seed, "queries": len(topics),
                   "by_kind": {k: sum(1 for t in topics if t.kind == k) for k in KINDS}},
        "depth": args.depth, "tables": tables, "paired_t_test_p": tests, "spans": spans,
        "throughput": {"pairs": pairs, "seconds": round(seconds, 1), "pairs_per_second": round(pairs / seconds, 2),
                       "device": str(reader.device), "threads": args.threads},
        "reader": {"model": args.model, "training": reader.meta.get("training", {}).get("config"),
                   "steps_done": reader.meta.get("training", {}).get("steps_done"),
                   "train_seconds": reader.meta.get("training", {}).get("seconds_this_run")},
    }
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


def markdown(result: dict) -> str:
    lines = ["| system | kind | #q | " + " | ".join(MEASURES) + " |", "|---|---|---|" + "---|" * len(MEASURES)]
    for name, table in result["tables"].items():
        for group in ("event", "entity", "all"):
            row = table[group]
            lines.append(f"| {name} | {group} | {int(row['#q'])} | " + " | ".join(f"{row[m]:.4f}" for m in MEASURES)
                         + " |")
    lines += ["", "| spans | kind | #coreferent pairs | EM | F1 |", "|---|---|---|---|---|"]
    for name, table in result["spans"].items():
        for group in ("event", "entity", "all"):
            if group in table:
                row = table[group]
                lines.append(f"| {name} | {group} | {row['#pairs']} | {row['EM']:.4f} | {row['F1']:.4f} |")
    lines += ["", "| paired t-test (per query, subset) | p |", "|---|---|"]
    lines += [f"| {k} | {v:.2g} |" for k, v in result["paired_t_test_p"].items()]
    t = result["throughput"]
    lines += ["", f"Reader throughput: {t['pairs']} pairs in {t['seconds']} s = **{t['pairs_per_second']} pairs/s** "
                  f"({t['device']}, torch threads {t['threads'] or 'default'})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
