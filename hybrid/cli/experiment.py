"""``python -m hybrid.experiment``: several recipes on the same topics, one table, significance vs a baseline.

Example::

    python -m hybrid.experiment --index idx --topics queries.dev.jsonl --qrels qrels.dev.txt \\
        --recipes bm25 cmr-mention cmr-doc multifield --baseline bm25 --output-dir runs/exp

Event-collection recipes (``eventcoll-*``, :mod:`hybrid.collect`) take event queries as ``--topics``
and document judgments as ``--qrels``; their runs rank documents.

For every recipe: a TREC run (``<name>.trec``), then per query and measure a row in ``per_query.tsv``;
the table (stdout, ``results.md``, ``results.json``) gives each measure overall and by kind, the mean
difference from the baseline, and paired t-test / Wilcoxon / Fisher randomization p-values Holm-corrected
(``--correction``) over the systems compared with the baseline (per measure and group).

With ``--judged FILE`` (passages judged for every query, as ``hybrid.eval --judged``) the listed passages
count as judged non-relevant where the qrels are silent, and the same comparison is made a second time
on condensed lists (each query's unjudged passages removed, as ``trec_eval -J``): ``results.condensed.md``,
``per_query.condensed.tsv`` and ``condensed`` in ``results.json``, beside the standard numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hybrid.api import open_index
from hybrid.cli.common import (
    add_backend,
    add_precision,
    add_quiet,
    add_significance,
    make_parser,
    positive_int,
    run_cli,
)
from hybrid.collect.events import read_event_topics
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run_set
from hybrid.core.formats.topics import read_topics
from hybrid.core.judged import read_judged
from hybrid.core.measures import parse_measures
from hybrid.core.outputs import Input, Output, Writes, run_output
from hybrid.core.progress import progress as progress_bar
from hybrid.core.provenance import inputs, produced_by, used_artifacts
from hybrid.core.records import Rankings, Topic
from hybrid.evaluation.comparison import (
    COMPARISON_MEASURES,
    compare,
    compare_condensed,
    condensed_heading,
    format_markdown,
    write_per_query,
)
from hybrid.recipes import Context, load_recipe, topics_kind
from hybrid.recipes.plan import missing_error, search_plan
from hybrid.sample import sample_paths

DEFAULT_MEASURES = COMPARISON_MEASURES


def run_recipes(recipes: list, topics: list[Topic], context,
                progress: bool = True) -> tuple[dict[str, Rankings], dict[str, float]]:
    """Each recipe's run on the topics, with a progress bar per recipe (its topics in batches)."""

    runs, seconds = {}, {}
    batch = max(1, min(256, -(-len(topics) // 20)))  # about 20 steps per bar, never more than 256 topics a step
    for recipe in recipes:
        stage = recipe.build(context)
        started = time.perf_counter()
        run: Rankings = {}
        with progress_bar(desc=recipe.name, unit="query", total=len(topics), enabled=progress) as bar:
            for lo in range(0, len(topics), batch):
                chunk = topics[lo : lo + batch]
                run.update(stage(chunk))
                bar.update(len(chunk))
        runs[recipe.name] = run
        seconds[recipe.name] = time.perf_counter() - started
        print(f"ran {recipe.name} in {seconds[recipe.name]:.1f}s", file=sys.stderr)
    return runs, seconds


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.experiment", __doc__, epilog=True)
    p.add_argument("--index", help="hybrid index (default, or 'sample': the bundled sample's)")
    p.add_argument("--topics", required=True, help="topics file, or 'sample'")
    p.add_argument("--qrels", help="qrels, or 'sample' (default with --topics sample: the sample's)")
    p.add_argument("--recipes", nargs="+", required=True, help="bundled recipe names or recipe TOML paths")
    p.add_argument("--baseline", help="recipe name to compare against (default: the first)")
    p.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES))
    p.add_argument("--hits", type=positive_int, default=100)
    p.add_argument("--threads", type=positive_int, default=1)
    add_precision(p, "the recipes' query encoders and readers")
    add_backend(p, "the recipes' query encoders and readers")
    p.add_argument("--output-dir", required=True)
    p.add_argument("--artifacts", help="directory that relative artifact paths of recipes (trained models, dense "
                                       "indexes) resolve against (default: $HYBRID_ARTIFACTS)")
    p.add_argument("--judged", metavar="FILE", help="passage ids judged for every query, one per line ('sample': the "
                                                    "bundled sample's curated sentences); adds the comparison on "
                                                    "condensed lists (unjudged passages removed, as trec_eval -J)")
    add_significance(p)
    add_quiet(p)
    return p


def writes(args: argparse.Namespace, recipes: list, topics: str | Path, qrels: str | Path) -> Writes:
    """The files this command writes into --output-dir (a run per recipe, the tables) and what it reads, for
    the output policy (hybrid.core.outputs); earlier results there are replaced, inputs never."""
    out = Path(args.output_dir)
    tables = ["per_query.tsv", "results.md", "results.json"]
    if args.judged:
        tables += ["per_query.condensed.tsv", "results.condensed.md"]
    outputs = [run_output(f"--output-dir run {r.name}.trec", out / f"{r.name}.trec") for r in recipes]
    outputs += [Output(f"--output-dir {name}", out / name, replace=True) for name in tables]
    judged = sample_paths().judged if args.judged == "sample" else args.judged
    reads = [Input("--topics", topics), Input("--qrels", qrels), Input("--judged", judged),
             Input("--index", args.index if args.index not in (None, "sample") else None),
             *(Input(f"--recipes {r.name}", r.source.path) for r in recipes)]
    return Writes("hybrid.experiment", outputs, reads)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    topics_path, qrels_path = args.topics, args.qrels
    if args.topics == "sample":
        topics_path, qrels_path = sample_paths().topics, qrels_path or sample_paths().qrels
    if not qrels_path:
        raise ConfigError(None, None, "--qrels is required (except with --topics sample)")

    measures = parse_measures(args.measures)
    recipes = [load_recipe(r) for r in args.recipes]
    names = [r.name for r in recipes]
    if len(set(names)) != len(names):
        raise ConfigError(None, None, f"recipe names must be unique, got {names}")
    baseline = args.baseline or names[0]
    if baseline not in names:
        raise ConfigError(None, None, f"baseline {baseline!r} is not one of the recipes {names}")
    if qrels_path == "sample":
        qrels_path = sample_paths().qrels
    writes(args, recipes, topics_path, qrels_path).check()
    index = open_index(args.index or "sample", progress=False)
    kinds = {topics_kind(r) for r in recipes}
    if len(kinds) > 1:
        raise ConfigError(None, None, "event-collection recipes (documents for event queries) and mention recipes "
                                      "cannot share one experiment: their topics and judgments differ")
    if kinds == {"events"}:  # --topics holds event queries (hybrid.collect.events), --qrels judges documents
        topics = read_event_topics(topics_path, resolve=index.passage_text,
                                   doc_of=lambda pid: (index.passage_json(pid) or {}).get("doc_id"))
    else:
        topics = read_topics(topics_path, resolve=index.passage_text)
    qrels = read_qrels(qrels_path)
    judged = read_judged(sample_paths().judged if args.judged == "sample" else args.judged) if args.judged else None
    missing = sorted(set(qrels) - {t.qid for t in topics})
    if missing:
        print(f"note: {len(missing)} judged queries are not in the topics and are ignored", file=sys.stderr)
        qrels = {q: v for q, v in qrels.items() if q not in set(missing)}
    groups = {t.qid: (t.kind or index.query_record(t).kind or "unknown") for t in topics}
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    context = Context(index=index, hits=args.hits, threads=args.threads, artifacts=args.artifacts,
                      precision=args.precision, backend=args.backend)
    plans = [p for p in (search_plan(r, getattr(index, "path", ""), args.artifacts) for r in recipes) if p]
    if plans:  # every recipe's missing chain at once, then one line (exit 2)
        print("\n".join(p.format() for p in plans), file=sys.stderr)
        raise missing_error(plans[0])
    runs, seconds = run_recipes(recipes, topics, context, progress=not args.quiet)
    command = argv if argv is not None else sys.argv[1:]
    for recipe in recipes:
        write_run_set(runs[recipe.name], out / f"{recipe.name}.trec", tag=recipe.name, meta={
            "queries": len(topics), "seconds": round(seconds[recipe.name], 2), "model": recipe.name,
            "recipe": {"name": recipe.name, "file": str(recipe.source.path), "system": recipe.system},
            "index": str(index.path), "hits": args.hits, "argv": command, **produced_by(),
            "inputs": inputs(topics_path, index.path, qrels=qrels_path, index=index),
            "artifacts": used_artifacts(context.built.get(recipe.name))})
    tests = {"correction": args.correction, "permutations": args.permutations}
    compared = compare(runs, qrels, groups, baseline, measures, judged, **tests)
    write_per_query(out / "per_query.tsv", compared["per_query"], groups)
    table = format_markdown(compared["results"], baseline, measures, seconds, len(topics), args.correction)
    with atomic_write(out / "results.md") as handle:
        handle.write(table + "\n")
    document = {"baseline": baseline, "results": compared["results"], "seconds": seconds, "significance": tests,
                "recipes": {r.name: {"system": r.system, "description": r.description} for r in recipes},
                "argv": argv if argv is not None else sys.argv[1:]}
    if judged is not None:
        condensed = compare_condensed(runs, qrels, groups, baseline, measures, judged, **tests)
        write_per_query(out / "per_query.condensed.tsv", condensed["per_query"], groups)
        condensed_table = condensed_heading(args.judged) + format_markdown(condensed["results"], baseline, measures,
                                                                           seconds, len(topics), args.correction)
        with atomic_write(out / "results.condensed.md") as handle:
            handle.write(condensed_table + "\n")
        document["condensed"] = {"judged": str(args.judged), "results": condensed["results"]}
        table += "\n\n" + condensed_table
    with atomic_write(out / "results.json") as handle:
        json.dump(document, handle, indent=2)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
