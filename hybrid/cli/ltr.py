"""``python -m hybrid.ltr``: learning to rank over a first-stage run (train / rerank / ablate / export / importance).

Examples::

    # every feature a feature set can name, with its documentation
    python -m hybrid.ltr features --markdown
    # first stage (cached on disk), with the matched mention spans
    python -m hybrid.search --index idx --topics queries.train.jsonl --model multifield --hits 100 \\
        --output train.mf.trec --spans train.mf.spans.jsonl
    # train LambdaMART on the default feature set; evaluate on dev; importance plot
    python -m hybrid.ltr train --index idx --topics queries.train.jsonl --qrels qrels.train.txt \\
        --run train.mf.trec --spans train.mf.spans.jsonl --learner lambdamart --output models/lm \\
        --dev-topics queries.dev.jsonl --dev-qrels qrels.dev.txt --dev-run dev.mf.trec --dev-spans dev.mf.spans.jsonl \\
        --importance models/lm-importance.png --cache /tmp/ltr-cache
    # rerank a run with the model (refuses a feature set other than the model's)
    python -m hybrid.ltr rerank --index idx --model models/lm --topics queries.dev.jsonl --run dev.mf.trec \\
        --spans dev.mf.spans.jsonl --output dev.ltr.trec --qrels qrels.dev.txt
    # leave-one-group-out ablation (train -> dev, or --cv 5 grouped by topic)
    python -m hybrid.ltr ablate --index idx --topics queries.train.jsonl --qrels qrels.train.txt --run train.mf.trec \\
        --test-topics queries.dev.jsonl --test-qrels qrels.dev.txt --test-run dev.mf.trec --output ablation.md
    # features in SVMlight/LETOR format for RankLib
    python -m hybrid.ltr export --index idx --topics queries.dev.jsonl --run dev.mf.trec --qrels qrels.dev.txt \\
        --output dev.letor.txt
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

from features.pairs import registry
from hybrid.cli.common import (
    add_quiet,
    add_subparser,
    format_table,
    make_parser,
    output_file,
    positive_int,
    run_cli,
    run_tag,
)
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError, InputError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run_set
from hybrid.core.formats.topics import read_topics
from hybrid.core.outputs import Output, Writes, inputs_of, run_output
from hybrid.core.provenance import file_digest, index_sha256, produced_by
from hybrid.sample import index_location
from indexes.shards import open_one_index
from ltr.cv import topic_of
from ltr.experiment import cv_scores
from ltr.export import export_svmlight
from ltr.feature_scaling import Normaliser
from ltr.featureset import load_featureset
from ltr.learners import LEARNER, LEARNERS
from ltr.model import LEARNER_PACKAGES, LTR_MODEL, TrainedModel, ltr_versions, train_model
from ltr.pipeline import DEPTH, LtrReranker, load_or_extract
from ltr.resources import IndexResources
from ltr.runio import read_first_stage

log = logging.getLogger("hybrid.ltr")
DEFAULT_FEATURESET = Path(__file__).resolve().parents[2] / "ltr" / "configs" / "default.toml"


# -- argument groups --------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", required=True, help="hybrid index directory the run was retrieved from;"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--depth", type=positive_int, default=DEPTH.default, help="rerank the top N hits of each query")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", help="directory for cached feature matrices (reused when inputs match)")
    add_quiet(p)


def _inputs(p: argparse.ArgumentParser, prefix: str = "", required: bool = True, qrels: bool = True) -> None:
    dash = f"--{prefix}-" if prefix else "--"
    p.add_argument(f"{dash}topics", required=required, help="topics (TSV/JSONL)")
    p.add_argument(f"{dash}run", required=required, help="first-stage TREC run")
    p.add_argument(f"{dash}spans", help="spans JSONL of the run (hybrid.search --spans): the matched mentions")
    if qrels:
        p.add_argument(f"{dash}qrels", required=required and prefix != "dev", help="relevance judgments")
    p.add_argument(f"{dash}max-queries", type=positive_int, help="use a seeded random sample of this many queries")


def _learner(p: argparse.ArgumentParser) -> None:
    p.add_argument("--featureset", default=str(DEFAULT_FEATURESET), help="feature set TOML")
    p.add_argument("--learner", choices=sorted(LEARNERS), default=LEARNER.default, help=LEARNER.desc)
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="learner parameter (repeatable), e.g. --param num_leaves=63; python -m hybrid.recipes "
                        "types lists each learner's, with their defaults")


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.ltr", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True)

    t = add_subparser(sub, "train", help="train a model on a labelled first-stage run")
    _common(t), _inputs(t), _learner(t)
    t.add_argument("--output", required=True, help="model directory to write")
    t.add_argument("--overwrite", action="store_true")
    t.add_argument("--cv", type=positive_int, metavar="K",
                   help="also report K-fold CV (folds grouped by the queries' group or topic field, else by document)")
    _inputs(t, "dev", required=False)
    t.add_argument("--importance", metavar="PNG", help="write a feature-importance plot (and print the table)")

    r = add_subparser(sub, "rerank", help="rerank a first-stage run with a trained model")
    _common(r), _inputs(r, qrels=False)
    r.add_argument("--model", required=True)
    r.add_argument("--featureset", help="check the model against this feature set (refused if it differs)")
    r.add_argument("--qrels", help="evaluate the reranked run")
    r.add_argument("--output", required=True, type=output_file, help="TREC run to write")
    r.add_argument("--output-spans", type=output_file, help="also write the spans JSONL of the reranked run")
    r.add_argument("--tag", type=run_tag, default=None)

    a = add_subparser(sub, "ablate", help="retrain without each feature group; metric deltas with paired tests")
    _common(a), _inputs(a), _learner(a)
    _inputs(a, "test", required=False)
    a.add_argument("--cv", type=positive_int, default=5, metavar="K", help="folds when no --test-run is given")
    a.add_argument("--output", help="write the markdown table here too")

    e = add_subparser(sub, "export", help="write features in SVMlight/LETOR format")
    _common(e), _inputs(e, required=True, qrels=False)
    e.add_argument("--qrels", help="labels (0 when absent)")
    e.add_argument("--featureset", default=str(DEFAULT_FEATURESET))
    e.add_argument("--normalise", action="store_true", help="apply the feature set's normalisations")
    e.add_argument("--zero-based", action="store_true", help="number features from 0 (default 1, as RankLib)")
    e.add_argument("--output", required=True)

    f = add_subparser(sub, "features", help="list every feature (name, group, documentation) and unavailable groups")
    f.add_argument("--group", help="only this group")
    f.add_argument("--markdown", action="store_true", help="as a markdown table")

    i = add_subparser(sub, "importance", help="feature importance of a model (table + PNG)")
    _common(i), _inputs(i, required=False)
    i.add_argument("--model", required=True)
    i.add_argument("--png", help="plot to write")
    i.add_argument("--top", type=positive_int, default=30)
    i.add_argument("--repeats", type=positive_int, default=1, help="permutations per feature")
    return p


# -- helpers ----------------------------------------------------------------------------------------------


def parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(None, None, f"--param {item!r}: expected KEY=VALUE")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


class Inputs:
    """Topics + first-stage run (+ qrels) of one split, read once."""

    def __init__(self, args: argparse.Namespace, index, prefix: str = ""):
        get = lambda name: getattr(args, f"{prefix}_{name}" if prefix else name, None)  # noqa: E731
        self.paths = {k: get(k) for k in ("topics", "run", "spans", "qrels")}
        self.topics = read_topics(self.paths["topics"], resolve=index.passage_text)
        limit = get("max_queries")
        if limit is not None and limit < len(self.topics):
            sample = list(self.topics)
            random.Random(args.seed).shuffle(sample)
            keep = {t.qid for t in sample[:limit]}
            self.topics = [t for t in self.topics if t.qid in keep]
        self.run = read_first_stage(self.paths["run"], self.paths["spans"])
        self.qrels = read_qrels(self.paths["qrels"]) if self.paths["qrels"] else None
        self.kinds = {t.qid: t.kind or "unknown" for t in self.topics}
        missing = [t.qid for t in self.topics if t.qid not in self.run]
        if missing:
            log.warning("%d topics have no hits in %s (e.g. %s)", len(missing), self.paths["run"], missing[:3])

    def key(self, index_path: Path) -> dict:
        """What a cached feature matrix was made from: the index by its manifest's sha256 (a rebuilt index at the
        same path must not reuse the old index's features; a moved one may), the input files by theirs."""
        return {"index_sha256": index_sha256(index_path),
                **{k: file_digest(v, missing_ok=False) for k, v in self.paths.items() if k != "qrels"}}

    def matrix(self, args: argparse.Namespace, resources, names: list[str], options: dict | None = None):
        matrix = load_or_extract(resources, self.topics, self.run, names, args.depth, args.cache,
                                 self.key(resources.index.path), progress=not args.quiet, options=options)
        return matrix.with_labels(self.qrels) if self.qrels is not None else matrix


def _evaluate(qrels, run, kinds, label: str) -> dict:
    from ltr.metrics import REPORT_MEASURES, by_kind, per_query_metrics  # deferred: importing it loads ir_measures

    pq = per_query_metrics(qrels, run, REPORT_MEASURES)
    table = {m: by_kind(pq[m], kinds) for m in REPORT_MEASURES}
    print_means(label, table, pq[REPORT_MEASURES[0]], kinds)
    return table


def print_means(label: str, means: dict[str, dict[str, float]], qids, kinds: dict[str, str],
                measures: tuple[str, ...] = ("AP@100", "RR@10")) -> None:
    """LTR's means by kind (measure -> kind -> mean, as ltr.metrics.by_kind gives them) in the table every command
    prints (hybrid.cli.common.format_table), under ``label``."""
    from hybrid.core.measures import group_qids  # deferred: importing it loads ir_measures

    rows = {group: {**{m: means[m][group] for m in measures}, "#q": len(members)}
            for group, members in group_qids(qids, kinds, missing="unknown").items()}
    print(f"{label}\n{format_table(rows, measures)}", file=sys.stderr)


def _open(args: argparse.Namespace):
    if args.depth < 1:
        raise InputError(None, None, "--depth must be >= 1")
    index = open_one_index(index_location(args.index), "python -m hybrid.ltr")
    return index, IndexResources(index)


# -- commands ---------------------------------------------------------------------------------------------


def cmd_train(args: argparse.Namespace) -> int:
    from ltr.metrics import by_kind, per_query_metrics  # deferred: importing it loads ir_measures, numpy

    featureset = load_featureset(args.featureset)
    params = parse_params(args.param)
    index, resources = _open(args)
    train = Inputs(args, index)
    names = featureset.feature_names
    started = time.perf_counter()
    matrix = train.matrix(args, resources, names, featureset.provider_options)
    log.info("training matrix: %d pairs x %d features (%.1fs)", len(matrix), len(names), time.perf_counter() - started)
    metrics: dict[str, Any] = {}
    if args.cv:
        groups = {t.qid: topic_of(t) for t in train.topics}
        scores, folds = cv_scores(featureset, args.learner, params, matrix, groups, args.cv, args.seed)
        pq = per_query_metrics(train.qrels, matrix.to_run(scores), ("AP@100", "RR@10"), matrix.query_ids)
        metrics["cv"] = {"k": args.cv, "folds": folds, **{m: by_kind(pq[m], train.kinds) for m in pq}}
        print_means(f"{args.learner} {args.cv}-fold CV", metrics["cv"], pq["AP@100"], train.kinds)
    config = {"command": "train", "argv": sys.argv[1:], "featureset_file": args.featureset, "index": args.index,
              "depth": args.depth, "inputs": train.paths, "queries": len(train.topics), "pairs": len(matrix)}
    model = train_model(args.learner, params, featureset, matrix, args.seed, config)
    model.versions = ltr_versions()
    if args.dev_run:
        dev = Inputs(args, index, "dev")
        dev_matrix = dev.matrix(args, resources, names, featureset.provider_options)
        run = dev_matrix.to_run(model.score(dev_matrix))
        if dev.qrels is not None:
            metrics["dev"] = _evaluate(dev.qrels, run, dev.kinds, f"{args.learner} on dev")
        if args.importance:
            _importance(model, dev_matrix, dev.qrels, args.importance, 30, args.seed)
    elif args.importance:
        _importance(model, None, None, args.importance, 30, args.seed)
    model.metrics = metrics
    model.save(args.output, overwrite=args.overwrite)
    print(json.dumps({"model": args.output, "learner": args.learner, "features": len(names),
                      "fingerprint": model.fingerprint[:12], "train_queries": len(train.topics),
                      "train_pairs": len(matrix)}), file=sys.stderr)
    return 0


def _importance(model, matrix, qrels, png: str | None, top: int, seed: int, repeats: int = 1) -> None:
    # deferred: both load ir_measures, which the other subcommands do not need
    from ltr.importance import format_importance, group_totals, importance, plot_importance
    from ltr.metrics import relevant_counts

    n_rel = relevant_counts(qrels, matrix.query_ids) if matrix is not None and qrels is not None else None
    rows = importance(model, matrix if n_rel is not None else None, n_rel, seed, repeats)
    print(format_importance(rows, top))
    totals = group_totals(rows)
    print("\n| group | native share | permutation ΔAP@100 (sum) |\n|---|---|---|")
    for g, (nat, perm) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        print(f"| {g} | {nat:.4f} | {'' if perm is None else f'{perm:+.4f}'} |")
    if png:
        plot_importance(rows, png, top, f"{model.featureset.name} / {model.learner}")
        log.info("importance plot: %s", png)


def cmd_rerank(args: argparse.Namespace) -> int:
    model = TrainedModel.load(args.model)
    if args.featureset:
        model.check_featureset(load_featureset(args.featureset))
    index, resources = _open(args)
    args.qrels_path, args.qrels = args.qrels, None
    inputs = Inputs(args, index)
    reranker = LtrReranker(model, resources, args.depth)
    started = time.perf_counter()
    run = reranker.rerank(inputs.topics, inputs.run)
    elapsed = time.perf_counter() - started
    meta = {"run": args.output, "queries": len(inputs.topics), "seconds": round(elapsed, 2),
            "ms_per_query": round(1000 * elapsed / max(len(inputs.topics), 1), 2), **reranker.timing,
            "model": args.model, "learner": model.learner, "featureset": model.featureset.name,
            "fingerprint": model.fingerprint, "argv": sys.argv[1:], **produced_by(LEARNER_PACKAGES)}
    write_run_set(run, args.output, tag=args.tag or reranker.name, spans_path=args.output_spans, meta=meta)
    print(json.dumps({k: meta[k] for k in ("run", "queries", "seconds", "ms_per_query")}), file=sys.stderr)
    if args.qrels_path:
        _evaluate(read_qrels(args.qrels_path), run, inputs.kinds, "reranked")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from ltr.ablation import ablate, format_ablation  # deferred: importing it loads ir_measures, numpy, scipy

    featureset = load_featureset(args.featureset)
    params = parse_params(args.param)
    index, resources = _open(args)
    train = Inputs(args, index)
    names = featureset.feature_names
    train_m = train.matrix(args, resources, names, featureset.provider_options)
    if args.test_run:
        test = Inputs(args, index, "test")
        if test.qrels is None:
            raise InputError(None, None, "ablate needs --test-qrels with --test-run")
        rows = ablate(featureset, args.learner, params, test.qrels, test.kinds, train_m,
                      test.matrix(args, resources, names, featureset.provider_options), seed=args.seed)
        protocol = f"trained on {args.topics}, tested on {args.test_topics}"
    else:
        groups = {t.qid: topic_of(t) for t in train.topics}
        rows = ablate(featureset, args.learner, params, train.qrels, train.kinds, train_m, groups=groups, k=args.cv,
                      seed=args.seed)
        protocol = f"{args.cv}-fold CV grouped by topic over {args.topics}"
    table = format_ablation(rows)
    text = (f"Ablation of feature set {featureset.name!r} with {args.learner} ({protocol}); Δ = mean per-query "
            f"difference vs the full set over all queries; p(t) paired t-test, p(W) Wilcoxon signed-rank.\n\n{table}\n")
    print(text)
    if args.output:
        with atomic_write(args.output) as out:
            out.write(text)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    featureset = load_featureset(args.featureset)
    index, resources = _open(args)
    inputs = Inputs(args, index)
    matrix = inputs.matrix(args, resources, featureset.feature_names, featureset.provider_options)
    normalised = None
    if args.normalise:
        normalised = Normaliser.fit(matrix.X, featureset.normalisations()).transform(matrix.X, matrix.offsets)
    n = export_svmlight(matrix, featureset, args.output, normalised, args.zero_based)
    print(json.dumps({"output": args.output, "lines": n, "features": len(featureset.feature_names),
                      "queries": len(matrix.query_ids)}), file=sys.stderr)
    return 0


def cmd_importance(args: argparse.Namespace) -> int:
    model = TrainedModel.load(args.model)
    model.verify_features()
    matrix, qrels = None, None
    if args.run:
        index, resources = _open(args)
        inputs = Inputs(args, index)
        matrix, qrels = inputs.matrix(args, resources, model.featureset.feature_names,
                                       model.featureset.provider_options), inputs.qrels
    _importance(model, matrix, qrels, args.png, args.top, args.seed, args.repeats)
    return 0


def cmd_features(args: argparse.Namespace) -> int:
    groups = [p for p in registry.providers() if args.group in (None, p.group)]
    if not groups:
        known = [p.group for p in registry.providers()]
        raise ConfigError(None, None, f"unknown group {args.group!r}; groups: {known}")
    if args.markdown:
        print("| feature | group | description |\n|---|---|---|")
    for provider in groups:
        reason = provider.available()
        if reason is not None:
            print(f"# {provider.group}: not available here ({reason})")
            continue
        for name, feat in provider.features().items():
            row = (name, provider.group, feat.doc)
            print("| " + " | ".join(row) + " |" if args.markdown else "\t".join(row))
    return 0


#: What each sub-command reads (attributes of its arguments), for the output policy; runs with their side files.
READS = ("index", "cache", "model", "featureset", *(f"{prefix}{name}" for prefix in ("", "dev_", "test_")
                                                  for name in ("topics", "run", "spans", "qrels")))
RUNS = ("run", "dev_run", "test_run")


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes and reads, for the output policy (hybrid.core.outputs): a model folder
    (``train``), a run with its spans and meta (``rerank``), or a table, export or plot file."""
    command = args.command
    if command == "train":
        outputs = [Output("--output", args.output, LTR_MODEL), Output("--importance", args.importance, replace=True)]
    elif command == "rerank":
        outputs = [run_output("--output", args.output), Output("--output-spans", args.output_spans, replace=True)]
    elif command == "importance":
        outputs = [Output("--png", args.png, replace=True)]
    else:  # ablate, export: a table or an SVMlight file
        outputs = [Output("--output", getattr(args, "output", None), replace=True)]
    return Writes(f"hybrid.ltr {command}", outputs, inputs_of(args, READS, RUNS), getattr(args, "overwrite", False))


COMMANDS = {"features": cmd_features, "train": cmd_train, "rerank": cmd_rerank, "ablate": cmd_ablate,
            "export": cmd_export, "importance": cmd_importance}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    # deferred: importing it loads numpy; it registers the feature groups that wrap retrievers (bm25f, dense, fusion)
    from hybrid.retrieval import providers  # noqa: F401

    if getattr(args, "quiet", False):
        logging.getLogger("ltr").setLevel(logging.WARNING)
        logging.getLogger("hybrid").setLevel(logging.WARNING)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(run_cli(main))
