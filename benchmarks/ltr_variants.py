"""LTR variants over one recipe's candidates (train -> dev): which learner-side changes move AP@100 / RR@10.

    python benchmarks/ltr_variants.py hybrid-dense-nb --index RAW --artifacts ART \\
        --train-topics $E/queries.train.jsonl --train-qrels $E/qrels.train.txt \\
        --dev-topics $E/queries.dev.jsonl --dev-qrels $E/qrels.dev.txt --corpus $E/corpus.jsonl \\
        --cache CACHE --markdown benchmarks/results/raw-dev-ltr-variants.md [--runs-dir RUNS]

Why: after the feature groups, the remaining knobs of a LambdaMART reranker are on the learner side
(hyper-parameters, seeds, one model per mention kind, more training queries, query-relative features,
a second pass). Each costs a full ``recipe_train`` + ``experiment`` round (~15 min) through the
recipes; here the recipe's first stages run once per split, the feature matrices are cached, and every
variant is one fit on the same matrices, so the variants are compared on identical candidates.

Protocol: the recipe's (last) ``ltr`` reranker names the feature set, learner, parameters, depth and
``train_queries``; the training sample is :func:`hybrid.recipes.training.sample_topics` with seed 0, so the
``reference`` variant is the model ``recipe_train`` writes (its dev numbers must equal the recipe's
row). Every variant is evaluated on all dev queries, by kind, with paired tests against ``reference``;
plain Pyserini BM25 (``PassageBM25``, the whole sentence) runs in the same process as the baseline.

``--corpus`` (a corpus with ECB+'s ``validated`` flags) adds a *diagnostic* that uses gold annotation
and is labelled so: ECB+ judges only its curated sentences completely, so it (a) trains a model on
judged candidates only (candidates of non-curated sentences with no qrel dropped from the training
lists) and (b) evaluates every run a second time on condensed lists (Sakai 2007: the unjudged
candidates removed before scoring). Nothing in the search path reads the flag.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

import numpy as np  # noqa: E402

from hybrid.core.atomic import atomic_write  # noqa: E402
from hybrid.core.formats.corpus import read_corpus  # noqa: E402
from hybrid.core.formats.qrels import read_qrels  # noqa: E402
from hybrid.core.formats.runs import write_run  # noqa: E402
from hybrid.core.formats.topics import read_topics  # noqa: E402
from hybrid.core.judged import judged_only as condensed_run  # noqa: E402
from hybrid.core.judged import with_judged  # noqa: E402
from hybrid.core.measures import aggregate, per_query  # noqa: E402
from hybrid.core.records import KINDS, Rankings, Topic  # noqa: E402
from hybrid.evaluation.significance import paired_test  # noqa: E402
from hybrid.recipes import Context, load_recipe  # noqa: E402
from hybrid.recipes.builders import build_named, build_reranker, featureset_path, reranker_specs  # noqa: E402
from hybrid.recipes.training import sample_topics  # noqa: E402
from hybrid.retrieval.sparse import PassageBM25  # noqa: E402
from indexes.shards import open_one_index  # noqa: E402
from ltr.cv import topic_of  # noqa: E402
from ltr.feature_scaling import Normaliser  # noqa: E402
from ltr.featureset import FeatureSet, load_featureset  # noqa: E402
from ltr.learners import make_learner  # noqa: E402
from ltr.matrix import FeatureMatrix  # noqa: E402
from ltr.model import ltr_versions, train_model  # noqa: E402
from ltr.pipeline import extract_matrix  # noqa: E402
from ltr.resources import IndexResources  # noqa: E402

log = logging.getLogger("benchmarks.ltr_variants")
MEASURES = ("AP@100", "RR@10")
FOLDS = 5

#: Learner parameter variants (each overrides the recipe's parameters); chosen before the first run.
PARAM_VARIANTS: dict[str, dict] = {
    "800 rounds": {"num_boost_round": 800},
    "200 rounds": {"num_boost_round": 200},
    "63 leaves, 100 per leaf": {"num_leaves": 63, "min_data_in_leaf": 100},
    "15 leaves": {"num_leaves": 15},
    "300 per leaf": {"min_data_in_leaf": 300},
    "learning rate 0.02, 1,000 rounds": {"learning_rate": 0.02, "num_boost_round": 1000},
    "feature fraction 0.5": {"feature_fraction": 0.5},
    "lambdarank truncation 20": {"lambdarank_truncation_level": 20},
}
SEEDS = (1, 2, 3, 4)


@dataclass
class Setup:
    featureset: FeatureSet
    learner: str
    params: dict
    depth: int
    train_queries: int | None


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("recipe", help="a pipeline recipe whose last reranker is ltr (bundled name or TOML path)")
    p.add_argument("--index", required=True)
    p.add_argument("--artifacts", required=True)
    p.add_argument("--train-topics", required=True)
    p.add_argument("--train-qrels", required=True)
    p.add_argument("--dev-topics", required=True)
    p.add_argument("--dev-qrels", required=True)
    p.add_argument("--corpus", help="corpus with ECB+ `validated` flags: adds the judged-only diagnostic")
    p.add_argument("--all-train", action="store_true", help="also train on every training topic")
    p.add_argument("--without-groups", nargs="*", default=[], metavar="GROUP",
                   help="also train without each of these feature groups (on both evaluations, so a group's gain "
                        "can be checked on judged passages alone)")
    p.add_argument("--cache", required=True, help="folder for the cached feature matrices")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--markdown", required=True)
    p.add_argument("--runs-dir", help="also write every variant's dev run here as TREC (e.g. to pool and assess them)")
    return p.parse_args(argv)


def recipe_parts(recipe, context: Context):
    """The stages before the recipe's last ltr reranker, and that reranker's training setup."""
    system, source = recipe.system, recipe.source
    specs = reranker_specs(system, source) if system.get("type") == "pipeline" else []
    last = max((i for i, s in enumerate(specs) if s["type"] == "ltr"), default=None)
    if last is None:
        raise SystemExit(f"recipe {recipe.name!r} has no ltr reranker")
    stage = build_named(system["first"], context, source, "first")
    for spec in specs[:last]:
        stage = stage >> build_reranker(spec, context, source)
    spec = specs[last]
    setup = Setup(load_featureset(featureset_path(spec["featureset"], source)), spec["learner"],
                  dict(spec["params"] or {}), spec["depth"], spec["train_queries"])
    return stage, setup


def cached_matrix(path: Path, stage, resources: IndexResources, topics: list[Topic], setup: Setup, qrels,
                  tag: str) -> FeatureMatrix:
    """The labelled feature matrix of ``topics``' candidates; reused when the file's key matches."""
    key = {"tag": tag, "featureset": setup.featureset.fingerprint(), "depth": setup.depth,
           "topics": [t.qid for t in topics]}
    if path.is_file():
        matrix, meta = FeatureMatrix.load(path)
        if meta.get("key") == key:
            log.info("%s: cached", path)
            return matrix.with_labels(qrels)
    started = time.perf_counter()
    run = stage(topics)
    matrix = extract_matrix(resources, topics, run, setup.featureset.feature_names, setup.depth, progress=True,
                            options=setup.featureset.provider_options)
    matrix.save(path, {"key": key, "seconds": round(time.perf_counter() - started, 1)})
    return matrix.with_labels(qrels)


def query_zscores(matrix: FeatureMatrix, X: np.ndarray) -> np.ndarray:
    """Every column z-scored inside each query's candidate list (a constant column becomes 0)."""
    return Normaliser.fit(X, ["query_zscore"] * X.shape[1]).transform(X, matrix.offsets)


class Variants:
    """Fits on the training matrix, scores on the dev matrix."""

    def __init__(self, setup: Setup, train: FeatureMatrix, dev: FeatureMatrix, train_topics: list[Topic],
                 dev_topics: list[Topic], resources: IndexResources):
        self.setup, self.train, self.dev, self.resources = setup, train, dev, resources
        self.train_topics, self.dev_topics = train_topics, dev_topics
        self.kind_of = {t.qid: t.kind for t in [*train_topics, *dev_topics]}
        self._reference: np.ndarray | None = None

    def fit_score(self, train: FeatureMatrix, dev: FeatureMatrix, params: dict | None = None, seed: int = 0):
        model = train_model(self.setup.learner, {**self.setup.params, **(params or {})}, self.setup.featureset,
                            train, seed)
        return model.score(dev)

    def reference(self) -> np.ndarray:
        """The recipe's model's dev scores (fitted once: the cascade's first pass reuses them)."""
        if self._reference is None:
            self._reference = self.fit_score(self.train, self.dev)
        return self._reference

    def without_group(self, group: str) -> np.ndarray:
        featureset = self.setup.featureset.without_group(group)
        names = featureset.feature_names
        model = train_model(self.setup.learner, self.setup.params, featureset, self.train.columns(names), 0)
        return model.score(self.dev.columns(names))

    def per_kind(self) -> np.ndarray:
        scores = np.zeros(len(self.dev))
        for kind in KINDS:
            train_q = [q for q in self.train.query_ids if self.kind_of[q] == kind]
            dev_q = [q for q in self.dev.query_ids if self.kind_of[q] == kind]
            rows = np.isin(self.dev.qids, np.array(dev_q, dtype=self.dev.qids.dtype))
            scores[rows] = self.fit_score(self.train.queries(train_q), self.dev.queries(dev_q))
        return scores

    def _normalised(self, matrix: FeatureMatrix, normaliser: Normaliser) -> np.ndarray:
        return np.nan_to_num(normaliser.transform(matrix.X, matrix.offsets))

    def with_query_zscores(self) -> np.ndarray:
        """The feature set's columns plus a per-query z-scored copy of every column."""
        normaliser = Normaliser.fit(self.train.X, self.setup.featureset.normalisations())
        Xt, Xd = self._normalised(self.train, normaliser), self._normalised(self.dev, normaliser)
        Xt = np.hstack([Xt, query_zscores(self.train, Xt)])
        Xd = np.hstack([Xd, query_zscores(self.dev, Xd)])
        learner = make_learner(self.setup.learner, self.setup.params)
        return learner.fit(Xt, self.train.labels, self.train.group_sizes, 0).predict(Xd)

    def out_of_fold(self) -> np.ndarray:
        """Reference scores of every training candidate from a model that never saw its ECB+ topic."""
        by_topic = {t.qid: topic_of(t) for t in self.train_topics}
        topics = sorted(set(by_topic.values()))
        fold = {t: i % FOLDS for i, t in enumerate(topics)}
        scores = np.zeros(len(self.train))
        for f in range(FOLDS):
            held = [q for q in self.train.query_ids if fold[by_topic[q]] == f]
            kept = [q for q in self.train.query_ids if fold[by_topic[q]] != f]
            rows = np.isin(self.train.qids, np.array(held, dtype=self.train.qids.dtype))
            scores[rows] = self.fit_score(self.train.queries(kept), self.train.queries(held))
        return scores

    def cascade(self) -> np.ndarray:
        """A second LambdaMART pass: the neighbour features recomputed on the first pass's order.

        The first pass is the reference model (out of fold on train, so the second pass does not learn to
        trust an in-sample score); the second sees every feature, the neighbour group recomputed around
        the reranked list, and the first pass's score z-scored per query.
        """
        names = self.setup.featureset.only_groups(["neighbours"]).feature_names  # a ConfigError without the group
        normaliser = Normaliser.fit(self.train.X, self.setup.featureset.normalisations())

        def second_pass_features(matrix: FeatureMatrix, topics: list[Topic], first: np.ndarray) -> np.ndarray:
            again = extract_matrix(self.resources, topics, matrix.to_run(first), names, self.setup.depth)
            row = {(q, d): i for i, (q, d) in enumerate(zip(again.qids, again.docids, strict=True))}
            order = np.array([row[(q, d)] for q, d in zip(matrix.qids, matrix.docids, strict=True)])
            first_z = query_zscores(matrix, first[:, None].astype(np.float64))
            return np.hstack([self._normalised(matrix, normaliser), np.nan_to_num(again.X[order]), first_z])

        Xt = second_pass_features(self.train, self.train_topics, self.out_of_fold())
        Xd = second_pass_features(self.dev, self.dev_topics, self.reference())
        learner = make_learner(self.setup.learner, self.setup.params)
        return learner.fit(Xt, self.train.labels, self.train.group_sizes, 0).predict(Xd)


def judged_only(matrix: FeatureMatrix, validated: set[str]) -> FeatureMatrix:
    """Drop unlabelled candidates of sentences outside the completely judged (curated) ones."""
    return matrix.rows(np.array([label > 0 or str(d) in validated
                                 for label, d in zip(matrix.labels, matrix.docids, strict=True)]))


def vs_reference(values: dict, reference: dict, qrels, kind_of: dict[str, str]) -> dict:
    """'<kind> <measure>' -> mean difference and paired p-values against the reference, per query."""
    out = {}
    for kind in KINDS:
        qids = [q for q in qrels if kind_of.get(q) == kind]
        for m in MEASURES:
            test = paired_test({q: values[m][q] for q in qids}, {q: reference[m][q] for q in qids})
            out[f"{kind} {m}"] = {"delta": test.mean_delta, "t_p": test.t_p, "wilcoxon_p": test.wilcoxon_p}
    return out


def run_file_name(name: str) -> str:
    """A variant's name as a file name: lower case, runs of anything but letters and digits as one dash."""
    slug = "".join(c if c.isalnum() else "-" for c in name.lower())
    return "-".join(part for part in slug.split("-") if part) + ".trec"


def write_runs(runs: dict[str, Rankings], directory: Path) -> dict[str, str]:
    """Every variant's run as ``DIRECTORY/<slug>.trec`` (tagged with the slug); returns name -> file name."""
    files = {name: run_file_name(name) for name in runs}
    if len(set(files.values())) != len(files):
        raise ValueError(f"two variants map to one file name: {sorted(files.values())}")
    directory.mkdir(parents=True, exist_ok=True)
    for name, file_name in files.items():
        write_run(runs[name], directory / file_name, tag=file_name.removesuffix(".trec"))
    return files


def summarise(qrels, run: Rankings, kind_of: dict[str, str]) -> tuple[dict, dict]:
    """(per-kind means, measure -> qid -> value)."""
    values = per_query(qrels, run, MEASURES)
    table = {kind: {m: aggregate(values[m], [q for q in qrels if kind_of.get(q) == kind]) for m in MEASURES}
             for kind in KINDS}
    return table, values


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    index = open_one_index(args.index, "benchmarks/ltr_variants.py")
    context = Context(index=index, hits=100, threads=args.threads, artifacts=args.artifacts)
    recipe = load_recipe(args.recipe)
    stage, setup = recipe_parts(recipe, context)
    resources = IndexResources(index)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)

    all_train = read_topics(args.train_topics, resolve=index.passage_text)
    train_topics = sample_topics(all_train, setup.train_queries, 0)
    dev_topics = read_topics(args.dev_topics, resolve=index.passage_text)
    train_qrels, dev_qrels = read_qrels(args.train_qrels), read_qrels(args.dev_qrels)
    train = cached_matrix(cache / "train.npz", stage, resources, train_topics, setup, train_qrels, recipe.name)
    dev = cached_matrix(cache / "dev.npz", stage, resources, dev_topics, setup, dev_qrels, recipe.name)
    variants = Variants(setup, train, dev, train_topics, dev_topics, resources)
    kind_of = variants.kind_of

    runs: dict[str, Rankings] = {"plain Pyserini BM25 (baseline)": PassageBM25(index, k=100).search(dev_topics, 100),
                            "first stage (the recipe's candidates)": dev.to_run(dev.scores)}
    jobs: dict[str, Callable[[], np.ndarray]] = {"reference (the recipe's model)": variants.reference}
    for seed in SEEDS:
        jobs[f"seed {seed}"] = lambda seed=seed: variants.fit_score(train, dev, seed=seed)
    for name, params in PARAM_VARIANTS.items():
        jobs[name] = lambda params=params: variants.fit_score(train, dev, params)
    jobs["one model per kind"] = variants.per_kind
    jobs["+ every feature z-scored per query"] = variants.with_query_zscores
    if "neighbours" in setup.featureset.group_names:
        jobs["cascade: neighbours recomputed on the first pass's order"] = variants.cascade
    for group in args.without_groups:
        jobs[f"without the {group} group"] = lambda group=group: variants.without_group(group)
    if args.all_train:
        full = cached_matrix(cache / "train-all.npz", stage, resources, all_train, setup, train_qrels, recipe.name)
        jobs[f"all {len(all_train):,} training queries"] = lambda: variants.fit_score(full, dev)
    validated: set[str] = set()
    if args.corpus:
        validated = {p.id for p in read_corpus(args.corpus) if p.meta.get("validated")}
        jobs["diagnostic (gold annotation): trained on judged candidates only"] = (
            lambda: variants.fit_score(judged_only(train, validated), dev))

    scores: dict[str, np.ndarray] = {}
    for name, job in jobs.items():
        t = time.perf_counter()
        scores[name] = job()
        runs[name] = dev.to_run(scores[name])
        log.info("%s: %.0fs", name, time.perf_counter() - t)
    seeded = ["reference (the recipe's model)", *(f"seed {s}" for s in SEEDS)]
    runs["mean of the 5 seeds' scores"] = dev.to_run(np.mean([scores[n] for n in seeded], axis=0))
    if args.runs_dir:
        log.info("runs written: %s", write_runs(runs, Path(args.runs_dir)))

    evaluations = {"standard": lambda run: run}
    if validated:
        # condensed lists (hybrid.eval --judged -J): a passage is judged for a query when it lies in a completely
        # judged sentence or the qrels name it
        evaluations["condensed"] = lambda run: condensed_run(run, with_judged(dev_qrels, validated, run))
    reference = "reference (the recipe's model)"
    results: dict[str, dict] = {how: {} for how in evaluations}
    tests: dict[str, dict] = {how: {} for how in evaluations}
    for how, view in evaluations.items():
        values = {}
        for name, run in runs.items():
            results[how][name], values[name] = summarise(dev_qrels, view(run), kind_of)
        for name in runs:
            tests[how][name] = vs_reference(values[name], values[reference], dev_qrels, kind_of)

    meta = {"recipe": recipe.name, "featureset": setup.featureset.name, "learner": setup.learner,
            "params": setup.params, "train_queries": len(train_topics), "dev_queries": len(dev_topics),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
            "python": platform.python_version(), "versions": ltr_versions(),
            "seconds": round(time.perf_counter() - started), "argv": sys.argv[1:]}
    out = Path(args.markdown)
    with atomic_write(out.with_suffix(".json")) as f:
        json.dump({"meta": meta, "results": results, "tests_vs_reference": tests}, f, indent=1)
    with atomic_write(out) as f:
        f.write(render(meta, results, tests))
    print(out)
    return 0


HEADINGS = {
    "standard": "Standard evaluation (every passage without a qrel counts as non-relevant).",
    "condensed": "Diagnostic with gold annotation (ECB+'s `validated` flags): the same runs on condensed lists, "
                 "unjudged passages (outside the curated sentences, no qrel) removed before scoring.",
}


def render(meta: dict, results: dict, tests: dict) -> str:
    lines = [f"# LTR variants over `{meta['recipe']}`'s candidates (train -> dev)", "",
             f"Feature set `{meta['featureset']}`, learner `{meta['learner']}`, {meta['train_queries']:,} training "
             f"queries (recipe_train's seeded sample), {meta['dev_queries']:,} dev queries; {meta['date']}, "
             f"{meta['machine']}, {meta['seconds']} s.", "",
             "`vs BM25`: AP@100 minus plain BM25's, in the same process. `vs ref`: AP@100 / RR@10 minus the "
             "reference model's, paired t-test p in brackets (Wilcoxon in the JSON)."]

    def vs_ref(t: dict, kind: str) -> str:
        return " / ".join(f"{t[f'{kind} {m}']['delta']:+.4f} ({t[f'{kind} {m}']['t_p']:.2g})" for m in MEASURES)

    for how, table in results.items():
        bm25 = table["plain Pyserini BM25 (baseline)"]
        lines += ["", HEADINGS[how], "",
                  "| variant | event AP@100 | event RR@10 | entity AP@100 | entity RR@10 | event AP vs BM25 | "
                  "entity AP vs BM25 | event vs ref (AP / RR) | entity vs ref (AP / RR) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, r in table.items():
            cells = [f"{r[k][m]:.4f}" for k in KINDS for m in MEASURES]
            gaps = [f"{r[k]['AP@100'] - bm25[k]['AP@100']:+.3f}" for k in KINDS]
            lines.append(f"| {name} | {' | '.join(cells)} | {' | '.join(gaps)} | {vs_ref(tests[how][name], 'event')} "
                         f"| {vs_ref(tests[how][name], 'entity')} |")
    lines += ["", "Command: `python benchmarks/ltr_variants.py " + " ".join(meta["argv"]) + "`", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
