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
``--out-dir`` keeps the runs (``first_stage.trec``, ``reader.trec``, ``reader_mentions.trec`` and the
``interpolated.trec`` of the table) for ``--reuse`` and for ``hybrid.compare`` (e.g. ``--judged``).
``--judged FILE`` adds every table on condensed lists, and ``--tune-on condensed`` tunes the interpolation
weight on them, for collections judged in part (ECB+ judges its curated sentences completely).
"""

from __future__ import annotations

import sys
from pathlib import Path

# ``python benchmarks/reader.py`` puts benchmarks/ first on sys.path, not the repository root: put the root
# first (and drop benchmarks/, whose modules must not shadow a package), whatever the working directory.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

from scipy import stats  # noqa: E402

from hybrid.core.formats.qrels import read_qrels  # noqa: E402
from hybrid.core.formats.runs import SCORE_DECIMALS, read_run, write_run  # noqa: E402
from hybrid.core.formats.topics import read_topics  # noqa: E402
from hybrid.core.judged import judged_only, read_judged, with_judged  # noqa: E402
from hybrid.core.measures import evaluate, per_query  # noqa: E402
from hybrid.core.records import KINDS, Hit, Rankings  # noqa: E402
from hybrid.retrieval.sparse import MultiFieldBM25, PassageBM25  # noqa: E402
from indexes.sparse_index import SparseIndex  # noqa: E402
from ltr.reader.context import LeadContext  # noqa: E402
from ltr.reader.infer import rerank_run, write_spans  # noqa: E402
from ltr.reader.interpolate import cross_fit, interpolate, tune_weight  # noqa: E402
from ltr.reader.spans_eval import SpanRow, evaluate_spans, gold_mentions, read_query_labels  # noqa: E402
from ltr.reader.stage import index_mention_spans  # noqa: E402
from ltr.reader.store import load_reader  # noqa: E402

MEASURES = ("RR@10", "AP@100", "R@10", "R@50", "nDCG@10")


def stratified_subset(topics, per_kind: int, seed: int, tune_per_kind: int = 0):
    """Seeded subset, ``per_kind`` queries of each kind, and a disjoint tuning subset (``tune_per_kind`` of each
    kind, drawn with its own seeded generator from the queries left out of the evaluated subset)."""
    chosen, tune = [], []
    for kind in KINDS:
        qids = sorted(t.qid for t in topics if t.kind == kind)
        picked = qids if per_kind <= 0 else random.Random(f"{seed}:{kind}").sample(qids, min(per_kind, len(qids)))
        rest = sorted(set(qids) - set(picked))
        chosen += picked
        tune += random.Random(f"{seed}:{kind}:tune").sample(rest, min(tune_per_kind, len(rest)))
    keep, keep_tune = set(chosen), set(tune)
    return [t for t in topics if t.qid in keep], [t for t in topics if t.qid in keep_tune]


ERRORS = ("correct", "same document", "same subtopic", "other subtopic", "other topic", "no hit")


def ecb_subtopic(doc_id: str) -> tuple[str, bool]:
    """ECB+ topic and subtopic of a document id: ``36_4ecb`` (the ECB half) vs ``36_4ecbplus`` (the ECB+ half,
    a similar but different event of the same topic)."""
    topic, _, name = doc_id.partition("_")
    return topic, name.endswith("ecbplus")


UNJUDGED = "of the errors: unjudged"


def top1_errors(run: Rankings, qrels, topics, judged=None) -> dict[str, dict[str, int]]:
    """Per kind: where each query's first hit comes from when it is not relevant. Why: a reader that sees one
    sentence cannot tell an ECB+ topic's two subtopics (or two topics' similar events) apart the way a first
    stage over the document's coreference chain can; this table shows which confusions a system makes.
    ``judged`` (passages judged for every query) adds how many of the errors are unjudged passages, which
    may be relevant passages nobody labelled rather than errors."""
    counts = {kind: dict.fromkeys(ERRORS + ((UNJUDGED,) if judged is not None else ()), 0) for kind in KINDS}
    for topic in topics:
        if topic.qid not in qrels or topic.kind not in counts:
            continue
        row = counts[topic.kind]
        hits = sorted(run.get(topic.qid, []), key=lambda h: (-h.score, h.docid))
        if not hits:
            row["no hit"] += 1
            continue
        doc = hits[0].docid.rsplit(":", 1)[0]
        hit_sub, own_sub = ecb_subtopic(doc), ecb_subtopic(topic.doc_id or "")
        if qrels[topic.qid].get(hits[0].docid, 0) > 0:
            row["correct"] += 1
            continue
        if judged is not None and hits[0].docid not in judged and hits[0].docid not in qrels[topic.qid]:
            row[UNJUDGED] += 1
        if doc == topic.doc_id:
            row["same document"] += 1
        elif hit_sub[0] != own_sub[0]:
            row["other topic"] += 1
        elif hit_sub == own_sub:
            row["same subtopic"] += 1
        else:
            row["other subtopic"] += 1
    return counts


def same_first_stage(saved: list[Hit], fresh: list[Hit], depth: int) -> bool:
    """Whether a first stage read back from its TREC file is the freshly computed one. The file keeps
    ``SCORE_DECIMALS`` decimals, so two hits whose scores differ by less than that swap places when read
    back: compare the scores per passage (to that precision) and the top-``depth`` passages, not the order."""
    tolerance = 2 * 10.0 ** -SCORE_DECIMALS
    saved_scores = {h.docid: h.score for h in saved}
    if saved_scores.keys() != {h.docid for h in fresh}:
        return False
    if any(abs(saved_scores[h.docid] - h.score) > tolerance for h in fresh):
        return False
    top = sorted(fresh, key=lambda h: -h.score)
    cut = top[depth - 1].score if len(top) >= depth else None
    # passages tied with the depth-th one (within the precision) may be on either side of the cut
    certain = {h.docid for h in top[:depth] if cut is None or h.score > cut + tolerance}
    saved_top = {h.docid for h in sorted(saved, key=lambda h: (-h.score, h.docid))[:depth]}
    return certain <= saved_top


def attach_first_stage(reranked: Rankings, first: Rankings, depth: int) -> Rankings:
    """A reranked run read back from its TREC file lost the hits' ``extra``: restore what interpolation needs
    (reader score = the run's score over the first stage's top ``depth``; first-stage score and rank)."""
    for qid, hits in reranked.items():
        ranked = sorted(first.get(qid, []), key=lambda h: (-h.score, h.docid))
        first_of = {h.docid: (rank, h.score) for rank, h in enumerate(ranked, start=1)}
        for hit in hits:
            rank, score = first_of[hit.docid]
            hit.extra = {"first_stage_score": score, "first_stage_rank": rank}
            if rank <= depth:
                hit.extra["reader_score"] = hit.score
    return reranked


def cross_fit_by_kind(qrels, reranked: Rankings, fold_of: dict[str, str], kind_of: dict[str, str], judged=None):
    """Leave-one-fold-out interpolation weights, tuned separately for each query kind; and, per kind, the
    weight tuned on all folds (what a recipe such as ``multifield-reader`` should ship). ``judged``: tune on
    condensed lists."""
    run, weights, overall = {}, {}, {}
    for kind in KINDS:
        part = {q: hits for q, hits in reranked.items() if kind_of.get(q) == kind}
        if part:
            fitted = cross_fit(qrels, part, fold_of, judged=judged)
            run.update(fitted.run)
            weights[kind] = fitted.weights
            overall[kind] = tune_weight(qrels, part, judged=judged)[0]
    return run, weights, overall


def predicted_only(run: Rankings, passage_text) -> Rankings:
    """The run the reader gives when it scores only its predicted span (read off a mentions-mode run)."""
    out: Rankings = {}
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


def rrf(a: Rankings, b: Rankings, k: int = 60) -> Rankings:
    """Reciprocal rank fusion (parameter-free, k=60) of two runs over the same candidates."""
    out: Rankings = {}
    for qid in a:
        fused: dict[str, float] = {}
        spans = {h.docid: h for h in a[qid]}
        for run in (a, b):
            for rank, hit in enumerate(run.get(qid, []), start=1):
                fused[hit.docid] = fused.get(hit.docid, 0.0) + 1.0 / (k + rank)
        out[qid] = sorted((Hit(docid=d, score=s, mention_start=spans[d].mention_start if d in spans else None,
                               mention_end=spans[d].mention_end if d in spans else None,
                               mention_text=spans[d].mention_text if d in spans else None)
                           for d, s in fused.items()), key=lambda h: (-h.score, h.docid))
    return out


def load_reranked(path: Path, spans_path: Path, qids: set[str]) -> Rankings:
    """A saved reranked run (with its spans), restricted to the evaluated queries ``qids``."""
    run = {q: hits for q, hits in read_run(path).items() if q in qids}
    by_pair = {}
    for line in spans_path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by_pair[(row["qid"], row["docid"])] = row
    for qid, hits in run.items():
        for hit in hits:
            row = by_pair[(qid, hit.docid)]
            hit.mention_start, hit.mention_end, hit.mention_text = row["start"], row["end"], row["text"]
    return run


def span_rows(run: Rankings, top: int, passage_text) -> list[SpanRow]:
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
    p.add_argument("--per-kind", type=int, default=150, help="queries of each kind evaluated (0: all)")
    p.add_argument("--tune-per-kind", type=int, default=40,
                   help="queries of each kind, disjoint from the evaluated ones, on which the weight of the "
                        "reader/first-stage interpolation is tuned (0: no interpolation)")
    p.add_argument("--cross-fit", action="store_true",
                   help="instead of --tune-per-kind: tune the interpolation weight per kind on the other ECB+ "
                        "topics' queries and apply it to each held-out topic (leave one topic out)")
    p.add_argument("--judged", metavar="FILE",
                   help="passage ids judged for every query (hybrid.eval --judged): adds every table on condensed "
                        "lists (unjudged passages removed, trec_eval -J)")
    p.add_argument("--tune-on", choices=("standard", "condensed"), default="standard",
                   help="lists on which the interpolation weight is tuned (condensed needs --judged)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--hits", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int)
    p.add_argument("--first-stage-run", help="rerank this run instead of computing MultiFieldBM25")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--markdown", help="also write a markdown table here")
    p.add_argument("--reuse", action="store_true",
                   help="re-evaluate the reader runs/spans already in --out-dir (and their measured throughput) "
                        "instead of running the reader again")
    args = p.parse_args()
    if args.tune_on == "condensed" and not args.judged:
        p.error("--tune-on condensed needs --judged")
    judged = read_judged(args.judged) if args.judged else None
    tune_judged = judged if args.tune_on == "condensed" else None
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = SparseIndex(args.index)
    topics, tune_topics = stratified_subset(read_topics(args.topics, resolve=index.passage_text), args.per_kind,
                                            args.seed, 0 if args.cross_fit else args.tune_per_kind)
    assert not {t.qid for t in topics} & {t.qid for t in tune_topics}
    qids = {t.qid for t in topics}
    qrels = {q: j for q, j in read_qrels(args.qrels).items() if q in qids}
    groups = {t.qid: t.kind for t in topics}
    (out / "subset.txt").write_text("".join(f"{t.qid}\n" for t in topics))
    (out / "tune_subset.txt").write_text("".join(f"{t.qid}\n" for t in tune_topics))

    def first_stage(chosen) -> Rankings:
        if args.first_stage_run:
            full = read_run(args.first_stage_run)
            return {t.qid: full.get(t.qid, []) for t in chosen}
        return MultiFieldBM25(index).search(chosen, args.hits)

    runs: dict[str, Rankings] = {}
    runs["bm25 (plain Pyserini, sentence)"] = PassageBM25(index, "sentence").search(topics, args.hits)
    first_name = f"first stage ({Path(args.first_stage_run).name})" if args.first_stage_run \
        else "multifield (first stage)"
    runs[first_name] = first_stage(topics)

    reader = load_reader(args.model)
    pairs = sum(min(len(h), args.depth) for h in runs[first_name].values())
    base = first_name.split(" (")[0]
    reader_name = f"reader, predicted span (CoreSearch) over {base} top-{args.depth}"
    mentions_name = f"reader, predicted span + indexed mentions over {base} top-{args.depth}"
    context = LeadContext.for_reader(reader, index)
    if args.reuse:
        saved = read_run(out / "first_stage.trec")
        if any(not same_first_stage(saved.get(q, []), runs[first_name][q], args.depth) for q in qids):
            raise SystemExit("the first stage differs from the one the saved reader runs reranked; run without --reuse")
        previous = json.loads((out / "results.json").read_text())
        # The throughput measured when the runs were made (a smaller --per-kind re-evaluates a subset of them).
        seconds, pairs = previous["throughput"]["seconds"], previous["throughput"]["pairs"]
        runs[reader_name] = load_reranked(out / "reader.trec", out / "reader.spans.jsonl", qids)
        runs[mentions_name] = attach_first_stage(
            load_reranked(out / "reader_mentions.trec", out / "reader_mentions.spans.jsonl", qids), runs[first_name],
            args.depth)
    else:
        started = time.time()
        reranked = rerank_run(reader, topics, runs[first_name], index.passage_text, depth=args.depth,
                              batch_size=args.batch_size, progress=True, span_candidates=index_mention_spans(index),
                              context=context)
        seconds = time.time() - started
        runs[reader_name] = predicted_only(reranked, index.passage_text)
        runs[mentions_name] = reranked
        write_run(runs[reader_name], out / "reader.trec", tag="reader")
        write_spans(runs[reader_name], out / "reader.spans.jsonl")
        write_run(reranked, out / "reader_mentions.trec", tag="reader-mentions")
        write_spans(reranked, out / "reader_mentions.spans.jsonl")
    runs[f"RRF(reader + indexed mentions, {base})"] = rrf(runs[mentions_name], runs[first_name])
    write_run(runs[first_name], out / "first_stage.trec", tag="first")

    tuning = None
    interpolated = f"interpolated: (1 - w) z({base}) + w z(reader + indexed mentions), top-{args.depth}"
    if args.cross_fit:
        # Every evaluated query gets the weight tuned, for its kind, on the queries of the other ECB+ topics.
        fold_of = {t.qid: str(t.meta.get("topic")) for t in topics}
        if any(t.meta.get("topic") is None for t in topics):
            raise SystemExit("--cross-fit needs a 'topic' field in every query of --topics")
        kind_of = {t.qid: t.kind for t in topics}
        runs[f"{interpolated}, w cross-fitted (leave one ECB+ topic out, per kind)"], weights, overall = \
            cross_fit_by_kind(qrels, runs[mentions_name], fold_of, kind_of, tune_judged)
        lists = "condensed lists of " if tune_judged is not None else ""
        tuning = {"mode": "cross-fit", "folds": len(set(fold_of.values())),
                  "measure": f"RR@10 on {lists}the query's kind on the other topics", "weights": weights,
                  "all_folds": overall}
    elif tune_topics:
        tune_qids = {t.qid for t in tune_topics}
        tune_qrels = {q: j for q, j in read_qrels(args.qrels).items() if q in tune_qids}
        tune_first = first_stage(tune_topics)
        if args.reuse and (out / "tune_reader_mentions.trec").is_file():
            tune_reader = attach_first_stage(read_run(out / "tune_reader_mentions.trec"), tune_first, args.depth)
        else:
            tune_reader = rerank_run(reader, tune_topics, tune_first, index.passage_text, depth=args.depth,
                                     batch_size=args.batch_size, progress=True,
                                     span_candidates=index_mention_spans(index), context=context)
            write_run(tune_reader, out / "tune_reader_mentions.trec", tag="reader-mentions")
        weight, curve = tune_weight(tune_qrels, tune_reader, judged=tune_judged)
        lists = ", condensed lists" if tune_judged is not None else ""
        tuning = {"mode": "disjoint", "queries": len(tune_topics), "measure": f"RR@10 (mean over both kinds{lists})",
                  "weight": weight, "curve": curve}
        runs[f"{interpolated}, w = {weight:g} tuned on disjoint queries"] = interpolate(runs[mentions_name], weight)

    for name, run in runs.items():  # the interpolated run too, for hybrid.compare (e.g. on condensed lists)
        if name.startswith("interpolated"):
            write_run(run, out / "interpolated.trec", tag="interpolated")
    tables = {name: evaluate(qrels, run, MEASURES, groups) for name, run in runs.items()}
    condensed = None
    if judged is not None:
        condensed = {}
        for name, run in runs.items():
            full = with_judged(qrels, judged, run)
            condensed[name] = evaluate(full, judged_only(run, full), MEASURES, groups)
    pq = {name: per_query(qrels, run, ("RR@10", "AP@100")) for name, run in runs.items()}
    tests = {}
    for measure in ("RR@10", "AP@100"):
        for system in [reader_name, mentions_name, *(n for n in runs if n.startswith("interpolated"))]:
            for other in (first_name, "bm25 (plain Pyserini, sentence)"):
                a = [pq[system][measure][q] for q in sorted(qrels)]
                b = [pq[other][measure][q] for q in sorted(qrels)]
                tests[f"{measure}: {system.split(' over')[0]} vs {other}"] = float(stats.ttest_rel(a, b).pvalue)

    errors = {name: top1_errors(run, qrels, topics, judged) for name, run in runs.items()}

    labels = {q: lab for q, lab in read_query_labels(args.topics).items() if q in qids}
    gold = gold_mentions(args.corpus, labels)
    kinds = {q: lab.kind for q, lab in labels.items()}
    spans = {}
    # A first stage whose hits are passages with no mention offsets (e.g. a fused run read from a file)
    # has no span to score: leave it out rather than report EM/F1 = 0.
    has_offsets = any(h.mention_start is not None for hits in runs[first_name].values() for h in hits)
    for name in (reader_name, mentions_name, first_name) if has_offsets else (reader_name, mentions_name):
        for top in (10, args.depth):
            spans[f"{name} @ top-{top}"] = evaluate_spans(span_rows(runs[name], top, index.passage_text), gold, kinds)

    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
        "command": "python benchmarks/reader.py " + " ".join(sys.argv[1:]),
        "subset": {"per_kind": args.per_kind, "seed": args.seed, "queries": len(topics),
                   "by_kind": {k: sum(1 for t in topics if t.kind == k) for k in KINDS}},
        "tuning": tuning, "depth": args.depth, "tables": tables, "judged": args.judged, "tables_condensed": condensed,
        "paired_t_test_p": tests, "spans": spans,
        "top1_errors": errors,
        "throughput": {"pairs": pairs, "seconds": round(seconds, 1), "pairs_per_second": round(pairs / seconds, 2),
                       "device": str(reader.device), "threads": args.threads},
        "reader": {"model": args.model, "training": reader.meta.get("training", {}).get("config"),
                   "base_model": reader.meta.get("base_model") if reader.meta.get("warm_start") is not None else None,
                   "warm_start_steps": reader.meta.get("warm_start"), "encoding": reader.encoding.to_json(),
                   "heads": reader.model.heads_config(),
                   "steps_done": reader.meta.get("training", {}).get("steps_done"),
                   "train_seconds": reader.meta.get("training", {}).get("seconds_this_run")},
    }
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


def context_line(encoding: dict) -> str:
    if not encoding.get("context_tokens"):
        return "Input: the query sentence and the candidate sentence only (no document context)."
    return (f"Input: the query sentence and the candidate sentence, plus document context: the first "
            f"{encoding['context_tokens']} tokens of the first {encoding['context_sentences']} sentences of each "
            f"side's document (ltr.reader.context).")


def boundary_line(heads: dict | None) -> str:
    # Results written before the option existed have no "heads": those readers read the markers.
    if (heads or {}).get("query_boundary", "markers") == "markers":
        return "The query's g_i: the hidden states of its <m> and </m> markers."
    return "The query's g_i: its first and last mention token (CoreSearch's g = [m_s; m_t])."


def markdown(result: dict) -> str:
    sub, rd = result["subset"], result["reader"]
    lines = ["# Neural coreference reader on ECB+ dev (generated by benchmarks/reader.py)", "",
             f"{result['date']}, {result['machine']}. Command:", "", "```", result["command"], "```", "",
             f"Subset: {sub['queries']} dev queries ({sub['by_kind']}), seeded (seed {sub['seed']}), stratified by "
             f"kind; qrels restricted to it. Reader `{rd['model']}` ({rd['steps_done']} training steps in this run"
             f"{'; warm start from ' + str(rd['base_model']) if rd.get('base_model') else ''}). "
             f"{context_line(rd.get('encoding') or {})} {boundary_line(rd.get('heads'))}", ""]
    lines += ["| system | kind | #q | " + " | ".join(MEASURES) + " |", "|---|---|---|" + "---|" * len(MEASURES)]
    for name, table in result["tables"].items():
        for group in ("event", "entity", "all"):
            row = table[group]
            lines.append(f"| {name} | {group} | {int(row['#q'])} | " + " | ".join(f"{row[m]:.4f}" for m in MEASURES)
                         + " |")
    if result.get("tables_condensed"):
        lines += ["", f"The same runs on condensed lists (each query's unjudged passages removed before scoring, "
                      f"as trec_eval -J; judged: the qrels and `{result['judged']}`):", "",
                  "| system | kind | #q | " + " | ".join(MEASURES) + " |", "|---|---|---|" + "---|" * len(MEASURES)]
        for name, table in result["tables_condensed"].items():
            for group in ("event", "entity", "all"):
                row = table[group]
                lines.append(f"| {name} | {group} | {int(row['#q'])} | "
                             + " | ".join(f"{row[m]:.4f}" for m in MEASURES) + " |")
    lines += ["", "| spans | kind | #coreferent pairs | EM | F1 |", "|---|---|---|---|---|"]
    for name, table in result["spans"].items():
        for group in ("event", "entity", "all"):
            if group in table:
                row = table[group]
                lines.append(f"| {name} | {group} | {row['#pairs']} | {row['EM']:.4f} | {row['F1']:.4f} |")
    if result.get("top1_errors"):
        lines += ["", "Where each query's first hit comes from (ECB+ topic / subtopic of its document):", ""]
        columns = [*ERRORS, *((UNJUDGED,) if any(UNJUDGED in row for by_kind in result["top1_errors"].values()
                                                   for row in by_kind.values()) else ())]
        lines += ["| system | kind | " + " | ".join(columns) + " |", "|---|---|" + "---:|" * len(columns)]
        for name, by_kind in result["top1_errors"].items():
            for kind, row in by_kind.items():
                lines.append(f"| {name} | {kind} | " + " | ".join(str(row.get(e, "")) for e in columns) + " |")
    lines += ["", "| paired t-test (per query, subset) | p |", "|---|---|"]
    lines += [f"| {k} | {v:.2g} |" for k, v in result["paired_t_test_p"].items()]
    tuning = result.get("tuning")
    if tuning and tuning.get("mode") == "cross-fit":
        def applied(weights: dict) -> str:
            return ", ".join(f"topic {fold} {w:g}" for fold, w in sorted(weights.items(), key=lambda x: int(x[0])))

        per_kind = "; ".join(f"{kind}: {applied(ws)}" for kind, ws in tuning["weights"].items())
        lines += ["", f"Interpolation weight w cross-fitted over the {tuning['folds']} ECB+ topics: each topic's "
                      f"queries use the w (grid 0, 0.05 .. 1) with the best {tuning['measure']}. Weights applied: "
                      f"{per_kind}."]
        if tuning.get("all_folds"):
            lines += ["", "Weights tuned on all evaluated queries, per kind (for a recipe; not used in the table): "
                      + ", ".join(f"{kind} {w:g}" for kind, w in tuning["all_folds"].items()) + "."]
    elif tuning:
        curve = ", ".join(f"{w:g}: {v:.3f}" for w, v in tuning["curve"].items())
        lines += ["", f"Interpolation weight tuned on {tuning['queries']} dev queries disjoint from the subset "
                      f"({tuning['measure']}): **{tuning['weight']:g}**; tuning curve {{{curve}}}."]
    t = result["throughput"]
    lines += ["", f"Reader throughput: {t['pairs']} pairs in {t['seconds']} s = **{t['pairs_per_second']} pairs/s** "
                  f"({t['device']}, torch threads {t['threads'] or 'default'})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
