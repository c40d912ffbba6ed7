"""Benchmark: learning to rank on ECB+ (train -> dev) vs its first stage vs plain BM25, ablation, timing.

Writes ``benchmarks/results/ltr.md`` (and an importance plot next to it). First-stage runs and
feature matrices are cached in ``--cache`` and reused when their inputs match, because first-stage
retrieval over the ~10k training queries alone takes minutes.

    python benchmarks/ltr_bench.py --index /tmp/ecb-index --data /work/shared/data/ecbplus --cache /tmp/ltr-cache

Protocol: models are trained on a seeded sample of ECB+ train queries (labels from qrels.train.txt
only; the corpus ``cluster`` field is never read) and evaluated on all dev queries, reranking the
top 100 of the default MultiFieldBM25 run. Plain BM25 (PassageBM25, whole sentence as the query) is
run in the same process as the baseline.

With ``--dense-index`` (a FAISS dense index, its encoder recorded in it or given by
``--dense-encoder``), the main model's feature set is ``full`` plus the ``dense`` and ``fusion``
(MultiFieldBM25 + dense, ``--fusion-method``) groups; the generated feature set file is written to
the cache folder and quoted in the report.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

log = logging.getLogger("benchmarks.ltr_bench")
MEASURES = ("AP@100", "RR@10")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", default="/tmp/ecb-index")
    p.add_argument("--data", default="/work/shared/data/ecbplus")
    p.add_argument("--cache", default="/tmp/ltr-cache")
    p.add_argument("--featureset", default=str(ROOT / "ltr" / "configs" / "full.toml"))
    p.add_argument("--builtin-featureset", default=str(ROOT / "ltr" / "configs" / "default.toml"))
    p.add_argument("--linear-featureset", default=str(ROOT / "ltr" / "configs" / "linear.toml"))
    p.add_argument("--dense-index", default=None, help="dense index folder: adds the dense + fusion groups")
    p.add_argument("--dense-encoder", default=None, help="query encoder (default: the one the dense index records)")
    p.add_argument("--fusion-method", default="combsum", choices=("rrf", "combsum", "combmnz"))
    p.add_argument("--train-queries", type=int, default=2500, help="seeded sample of training queries")
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=400, help="LambdaMART boosting rounds of the main model")
    p.add_argument("--ablation-rounds", type=int, default=150)
    p.add_argument("--timing-queries", type=int, default=300, help="dev queries for the timing runs")
    p.add_argument("--importance-queries", type=int, default=800, help="dev queries for permutation importance")
    p.add_argument("--skip-ablation", action="store_true")
    p.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "ltr.md"))
    return p.parse_args(argv)


def first_stage(index, topics, split: str, cache: Path, progress: bool = True):
    """The cached multifield top-100 run (+ spans) of a split, computing it when missing.

    The cache file names carry a hash of the default clauses, so a change of the defaults is a cache miss.
    """
    import hashlib

    from hybrid.core.formats.runs import write_run
    from hybrid.retrieval.sparse import DEFAULT_CLAUSES, MultiFieldBM25
    from ltr.runio import read_first_stage

    tag = hashlib.sha1(DEFAULT_CLAUSES.encode()).hexdigest()[:8]
    run_path, spans_path = cache / f"{split}.multifield-{tag}.trec", cache / f"{split}.multifield-{tag}.spans.jsonl"
    seconds = None
    if not (run_path.is_file() and spans_path.is_file()):
        started = time.perf_counter()
        run = MultiFieldBM25(index, k=100, progress=progress).search(topics, 100)
        seconds = time.perf_counter() - started
        write_run(run, run_path, tag="multifield", spans_path=spans_path)
    return read_first_stage(run_path, spans_path), run_path, spans_path, seconds


def dense_featureset_file(args, cache: Path) -> Path:
    """``full`` + dense + fusion groups with this run's dense index, written to the cache folder."""
    text = Path(args.featureset).read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.startswith(("name =", "description ="))]
    options = [f"index = {json.dumps(str(Path(args.dense_index).resolve()))}"]
    if args.dense_encoder:
        options.append(f"encoder = {json.dumps(str(Path(args.dense_encoder).resolve()))}")
    body = "\n".join([
        'name = "full-dense"',
        'description = "full + dense similarity/rank + fusion (MultiFieldBM25 + dense) score/rank"',
        *lines, "",
        "[groups.dense]", 'features = ["*"]',
        'description = "bi-encoder similarity to the candidate mention / best passage mention, dense rank"', "",
        "[groups.fusion]", 'features = ["*"]', 'normalise = { fusion_score = "query_minmax" }',
        f'description = "{args.fusion_method} fusion of MultiFieldBM25 and the dense run: score and rank"', "",
        "[providers.dense]", *options, "",
        "[providers.fusion]", *options, f'method = "{args.fusion_method}"', "",
    ])
    path = cache / "full-dense.toml"
    path.write_text(body, encoding="utf-8")
    return path


def evaluate(qrels, run, kinds, qids=None):
    from ltr.metrics import by_kind, per_query_metrics

    pq = per_query_metrics(qrels, run, MEASURES, qids)
    return {m: by_kind(pq[m], kinds) for m in MEASURES}, pq


def row(label, table, kinds=("event", "entity", "all")):
    return f"| {label} | " + " | ".join(f"{table[m][k]:.4f}" for m in MEASURES for k in kinds) + " |"


def header(first="run"):
    cols = [f"{m} {k}" for m in MEASURES for k in ("event", "entity", "all")]
    return f"| {first} | " + " | ".join(cols) + " |\n|" + "---|" * (1 + len(cols))


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from hybrid.core.formats.qrels import read_qrels
    from hybrid.core.formats.topics import read_topics
    from hybrid.core.provenance import file_digest, index_sha256
    from hybrid.retrieval.sparse import PassageBM25
    from indexes.sparse_index import SparseIndex
    from ltr.ablation import ablate, format_ablation
    from ltr.featureset import load_featureset
    from ltr.importance import format_importance, group_totals, importance, plot_importance
    from ltr.metrics import relevant_counts
    from ltr.model import ltr_versions, train_model
    from ltr.pipeline import LtrReranker, load_or_extract
    from ltr.resources import IndexResources

    cache, data = Path(args.cache), Path(args.data)
    cache.mkdir(parents=True, exist_ok=True)
    index = SparseIndex(args.index)
    topics = {s: read_topics(data / f"queries.{s}.jsonl", resolve=index.passage_text) for s in ("train", "dev")}
    qrels = {s: read_qrels(data / f"qrels.{s}.txt") for s in ("train", "dev")}
    kinds = {t.qid: t.kind or "unknown" for s in topics for t in topics[s]}
    sample = list(topics["train"])
    random.Random(args.seed).shuffle(sample)
    train_topics = sample[: args.train_queries]
    dev_topics = topics["dev"]
    notes = []

    # -- first stages and the plain BM25 baseline (same process) -------------------------------------
    runs, keys = {}, {}
    for split, tlist in (("train", topics["train"]), ("dev", dev_topics)):
        run, run_path, spans_path, secs = first_stage(index, tlist, split, cache)
        runs[split] = run
        keys[split] = {"index_sha256": index_sha256(args.index), "run": file_digest(run_path, missing_ok=False),
                       "spans": file_digest(spans_path, missing_ok=False),
                       "topics": file_digest(data / f"queries.{split}.jsonl", missing_ok=False)}
        if secs:
            notes.append(f"multifield first stage, {split}: {len(tlist) / secs:.1f} queries/s")
    bm25 = PassageBM25(index, "sentence", k=100)
    started = time.perf_counter()
    bm25_run = bm25.search(dev_topics, 100)
    bm25_seconds = time.perf_counter() - started

    # -- features (cached) ----------------------------------------------------------------------------
    full_fs = load_featureset(args.featureset)
    builtin_fs = load_featureset(args.builtin_featureset)
    linear_fs = load_featureset(args.linear_featureset)
    main_fs = load_featureset(dense_featureset_file(args, cache)) if args.dense_index else full_fs
    names = list(dict.fromkeys(main_fs.feature_names + full_fs.feature_names + builtin_fs.feature_names
                               + linear_fs.feature_names))
    options = main_fs.provider_options or None
    resources = IndexResources(index)
    started = time.perf_counter()
    train_m = load_or_extract(resources, train_topics, runs["train"], names, args.depth, cache, keys["train"],
                              progress=True, options=options).with_labels(qrels["train"])
    dev_m = load_or_extract(resources, dev_topics, runs["dev"], names, args.depth, cache, keys["dev"],
                            progress=True, options=options).with_labels(qrels["dev"])
    log.info("features ready in %.0fs: train %s, dev %s", time.perf_counter() - started, train_m.X.shape,
             dev_m.X.shape)

    # -- models -----------------------------------------------------------------------------------------
    results: dict[str, dict] = {}
    per_query: dict[str, dict] = {}
    results["plain BM25 (PassageBM25, sentence)"], per_query["bm25"] = evaluate(qrels["dev"], bm25_run, kinds)
    results["first stage (MultiFieldBM25 default, top-100)"], per_query["first"] = evaluate(
        qrels["dev"], runs["dev"], kinds)
    if args.dense_index:
        for label, feature in (("rerank top-100 by fusion_score alone", "fusion_score"),
                               ("rerank top-100 by dense_score alone", "dense_score")):
            col = np.nan_to_num(dev_m.columns([feature]).X[:, 0].astype(np.float64), nan=-1e9)
            results[label], per_query[label] = evaluate(qrels["dev"], dev_m.to_run(col), kinds)
    main_params = {"num_boost_round": args.rounds}
    configs = [(f"LTR lambdamart, feature set {main_fs.name}", "lambdamart", main_params, main_fs)]
    if main_fs is not full_fs:
        configs.append(("LTR lambdamart, feature set full (sparse only)", "lambdamart", main_params, full_fs))
    configs += [
        ("LTR lambdamart, built-in groups only", "lambdamart", main_params, builtin_fs),
        (f"LTR gbt (HistGradientBoosting), feature set {main_fs.name}", "gbt", {}, main_fs),
        ("LTR logistic, linear feature set", "logistic", {}, linear_fs),
    ]
    models, train_seconds = {}, {}
    for label, learner, params, fs in configs:
        started = time.perf_counter()
        model = train_model(learner, params, fs, train_m, args.seed)
        train_seconds[label] = time.perf_counter() - started
        dev_run = dev_m.to_run(model.score(dev_m.columns(fs.feature_names)))
        results[label], per_query[label] = evaluate(qrels["dev"], dev_run, kinds)
        models[label] = model
        log.info("%s: %s (%.0fs)", label, json.dumps(results[label]["AP@100"]), train_seconds[label])
    main_label = configs[0][0]
    main_model = models[main_label]
    model_dir = cache / "ltr-model-full"
    main_model.config.update({"train_queries": len(train_topics), "train_pairs": len(train_m)})
    main_model.versions = ltr_versions()
    main_model.save(model_dir, overwrite=True)

    # significance of the main model vs the first stage and vs BM25 (paired over dev queries)
    from ltr.ablation import paired_tests

    sig = {}
    for other in ("first", "bm25"):
        a = per_query[main_label]["AP@100"]
        b = per_query[other]["AP@100"]
        qids = sorted(a)
        sig[other] = paired_tests([a[q] for q in qids], [b[q] for q in qids])

    # -- annotated-pool diagnostic ----------------------------------------------------------------------
    annotated = set()
    with open(data / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if obj.get("mentions"):
                annotated.add(obj["id"])
    main_run = dev_m.to_run(main_model.score(dev_m.columns(main_fs.feature_names)))
    diag = {}
    for label, run in (("plain BM25", bm25_run), ("first stage", runs["dev"]), (main_label, main_run)):
        share = float(np.mean([h.docid in annotated for hits in run.values() for h in hits[:10]]))
        pool = {q: [h for h in hits if h.docid in annotated] for q, hits in run.items()}
        diag[label] = (share, evaluate(qrels["dev"], pool, kinds)[0])

    # -- timing: feature extraction + reranking at depth 100, fresh caches, beside plain BM25 -----------
    timing_topics = random.Random(args.seed + 1).sample(dev_topics, min(args.timing_queries, len(dev_topics)))
    fresh_bm25 = PassageBM25(SparseIndex(args.index), "sentence", k=100)
    started = time.perf_counter()
    fresh_bm25.search(timing_topics, 100)
    bm25_sample_s = time.perf_counter() - started
    mf_sample = {t.qid: runs["dev"][t.qid] for t in timing_topics}
    timing = {}
    from hybrid.retrieval.providers import clear_query_memos

    for label, model in ((main_label, main_model), (configs[1][0], models[configs[1][0]])):
        clear_query_memos()  # the query vectors of the dev extraction are remembered: start cold
        reranker = LtrReranker(model, IndexResources(SparseIndex(args.index)), args.depth)
        started = time.perf_counter()
        reranker.rerank(timing_topics, mf_sample)
        total = time.perf_counter() - started
        timing[label] = (total, reranker.timing)
    from hybrid.retrieval.sparse import MultiFieldBM25

    started = time.perf_counter()
    MultiFieldBM25(SparseIndex(args.index), k=100).search(timing_topics, 100)
    mf_sample_s = time.perf_counter() - started

    # -- ablation ---------------------------------------------------------------------------------------
    ablation_text = ""
    if not args.skip_ablation:
        rows = ablate(main_fs, "lambdamart", {"num_boost_round": args.ablation_rounds}, qrels["dev"], kinds,
                      train_m, dev_m, seed=args.seed)
        ablation_text = format_ablation(rows)

    # -- importance ---------------------------------------------------------------------------------------
    imp_qids = random.Random(args.seed + 2).sample(dev_m.query_ids, min(args.importance_queries,
                                                                        len(dev_m.query_ids)))
    imp_m = dev_m.queries(imp_qids)
    imp_rows = importance(main_model, imp_m, relevant_counts(qrels["dev"], imp_m.query_ids), args.seed)
    png = Path(args.output).with_name("ltr-importance.png")
    plot_importance(imp_rows, str(png), 30, f"LambdaMART, feature set {main_fs.name} (dev permutation)")

    # -- report -------------------------------------------------------------------------------------------
    out = []
    out.append("# Learning to rank on ECB+ (train -> dev)\n")
    out.append(f"Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Machine: {platform.machine()}, "
               "2 CPU cores, no GPU, shared with other jobs running at the same time (load average 5-12 during "
               "this run), so absolute timings are pessimistic; compare the columns measured side by side.\n")
    out.append("Command:\n\n```\npython benchmarks/ltr_bench.py " + " ".join(sys.argv[1:] if argv is None else argv)
               + "\n```\n")
    out.append(f"Protocol: train on a seeded sample of {len(train_topics)} of {len(topics['train'])} ECB+ train "
               f"queries ({len(train_m)} pairs; labels from qrels.train.txt only), evaluate on all "
               f"{len(dev_topics)} dev queries ({sum(1 for t in dev_topics if t.kind == 'event')} event, "
               f"{sum(1 for t in dev_topics if t.kind == 'entity')} entity). The LTR runs rerank the top "
               f"{args.depth} of the default MultiFieldBM25 run; plain BM25 is PassageBM25 with the whole "
               f"sentence as the query, run in the same process. Seed {args.seed}. Main model: LambdaMART "
               f"({args.rounds} rounds) on feature set `{main_fs.name}` ({len(main_fs.feature_names)} features, "
               f"groups {', '.join(main_fs.group_names)}).\n")
    if args.dense_index:
        out.append(f"Dense features: FAISS index `{args.dense_index}` (encoder recorded in it"
                   + (f", or `{args.dense_encoder}`" if args.dense_encoder else "") + f"); fusion = "
                   f"{args.fusion_method} of MultiFieldBM25 and that dense run (each at depth 100). The generated "
                   "feature set:\n\n```toml\n" + Path(main_fs.source).read_text(encoding="utf-8").strip()
                   + "\n```\n")
    out.append("## Effectiveness (dev)\n")
    out.append(header())
    for label, table in results.items():
        out.append(row(label, table))
    bm = results["plain BM25 (PassageBM25, sentence)"]["AP@100"]
    lt = results[main_label]["AP@100"]
    out.append(f"\n{main_label} minus plain BM25, AP@100: event {lt['event'] - bm['event']:+.4f}, "
               f"entity {lt['entity'] - bm['entity']:+.4f} (target: >= +0.15 for both). Paired over all dev "
               f"queries, AP@100 vs first stage: t-test p={sig['first'][0]:.2g}, Wilcoxon p={sig['first'][1]:.2g}; "
               f"vs plain BM25: t-test p={sig['bm25'][0]:.2g}, Wilcoxon p={sig['bm25'][1]:.2g}.\n")
    out.append("Training time (s, same loaded machine): " + ", ".join(f"{k}: {v:.0f}" for k, v in
                                                                      train_seconds.items()) + ".\n")
    out.append("## Annotation-artifact check\n")
    out.append("In ECB+ only annotated sentences can be relevant (qrels come from annotated mentions), and "
               "annotated sentences carry gold tags, gold entity arguments and gold chains that unannotated ones "
               "lack. A ranker can therefore gain by recognising annotated sentences. The table shows the share "
               "of annotated passages in each run's top 10, and the measures when every run is restricted to "
               "annotated passages (the artifact then cannot help anyone):\n")
    out.append("| run | annotated share of top 10 | " + " | ".join(
        f"{m} {k} (annotated pool)" for m in MEASURES for k in ("event", "entity", "all")) + " |")
    out.append("|" + "---|" * (2 + 3 * len(MEASURES)))
    for label, (share, table) in diag.items():
        out.append(f"| {label} | {share:.3f} | " + " | ".join(f"{table[m][k]:.4f}" for m in MEASURES
                                                               for k in ("event", "entity", "all")) + " |")
    out.append("")
    out.append(f"## Time per query at depth {args.depth} ({len(timing_topics)} dev queries, fresh caches)\n")
    out.append("| step | ms/query |\n|---|---|")
    per_q = 1000 / len(timing_topics)
    out.append(f"| plain BM25 search (PassageBM25, sentence, k=100) | {per_q * bm25_sample_s:.1f} |")
    out.append(f"| MultiFieldBM25 first stage (k=100) | {1000 * mf_sample_s / len(timing_topics):.1f} |")
    for label, (total, t) in timing.items():
        out.append(f"| {label}: feature extraction + reranking | {1000 * total / len(timing_topics):.1f} "
                   f"(features {1000 * t['features_s'] / len(timing_topics):.1f}, scoring "
                   f"{1000 * t['score_s'] / len(timing_topics):.2f}) |")
    out.append(f"\nPlain BM25 over all {len(dev_topics)} dev queries in this process: "
               f"{1000 * bm25_seconds / len(dev_topics):.1f} ms/query. Feature caches start empty in the timing runs "
               "(passage, document and term-statistics caches fill as queries arrive), as in a fresh process.\n")
    if notes:
        out.append("Notes: " + "; ".join(notes) + ".\n")
    if ablation_text:
        out.append(f"## Ablation (LambdaMART, {args.ablation_rounds} rounds, train sample -> dev)\n")
        out.append("Each row retrains without one feature group. Δ = mean per-query difference from the full set "
                   "over all dev queries; p(t) paired t-test, p(W) Wilcoxon signed-rank.\n")
        out.append(ablation_text + "\n")
    out.append("## Feature importance (main model)\n")
    out.append(f"Permutation importance on {len(imp_qids)} dev queries (AP@100 drop when one feature is shuffled) and "
               f"LightGBM gain share. Plot: `{png.name}`.\n")
    out.append(format_importance(imp_rows, 30))
    out.append("\n| group | gain share | permutation ΔAP@100 (sum) |\n|---|---|---|")
    for g, (nat, perm) in sorted(group_totals(imp_rows).items(), key=lambda kv: -kv[1][0]):
        out.append(f"| {g} | {nat:.4f} | {perm:+.4f} |")
    out.append(f"\nModel saved (for reuse) at `{model_dir}`; fingerprint {main_model.fingerprint[:12]}.\n")
    from hybrid.core.atomic import atomic_write

    with atomic_write(args.output) as handle:
        handle.write("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
