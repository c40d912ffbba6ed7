"""Every bundled recipe on ECB+ dev with ``python -m hybrid.experiment``, against plain BM25.

Usage::

    python benchmarks/experiment.py --index /tmp/ecb-index --data ../shared/data/ecbplus \\
        --artifacts /tmp/artifacts --out /tmp/experiment

Two experiment commands (both printed, both written to ``<out>/commands.txt``):

* ``full``: all 3,421 dev queries, every recipe whose artifacts exist except those listed in
  ``--sample-only`` (the reader recipes: ~130 reader pairs/s on 2 idle CPU cores, 50 pairs per query for coresearch-e2e,
  would add ~30 min to the full run);
* ``sample``: a seeded sample of ``--per-kind`` event + entity dev queries, every recipe whose artifacts exist.

A recipe whose artifact is missing is skipped and reported with the reason (the recipe's own error
message, which names the command that builds it). The tables land in ``<out>/{full,sample}/results.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path


def sample_topics(source: Path, target: Path, per_kind: int, seed: int) -> int:
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_kind: dict[str, list[str]] = {}
    for line in lines:
        by_kind.setdefault(json.loads(line)["kind"], []).append(line)
    rng = random.Random(seed)
    chosen = set()
    for kind in sorted(by_kind):
        chosen.update(rng.sample(by_kind[kind], min(per_kind, len(by_kind[kind]))))
    kept = [line for line in lines if line in chosen]  # file order
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return len(kept)


def available_recipes(index: str, artifacts: str) -> tuple[list[str], dict[str, str]]:
    from hybrid.core.errors import ConfigError, InputError
    from hybrid.recipes import Context, bundled_recipes, load_recipe
    from indexes.sparse_index import SparseIndex

    context = Context(index=SparseIndex(index), artifacts=artifacts)
    ok, skipped = [], {}
    for name in bundled_recipes():
        try:
            load_recipe(name).build(context)
            ok.append(name)
        except (ConfigError, InputError) as exc:
            skipped[name] = str(exc)
    return ok, skipped


ORDER = ("bm25", "coresearch-bm25", "cmr-mention", "cmr-doc", "cmr-qe", "cmr-coref", "cmr-disck", "multifield",
         "multifield-reader", "bm25f", "dense", "coresearch-dpr", "coresearch-e2e", "fused", "hybrid-full",
         "hybrid-full-reader")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--data", required=True, help="folder with queries.dev.jsonl and qrels.dev.txt")
    p.add_argument("--artifacts", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--per-kind", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample-only", nargs="*", default=["coresearch-e2e", "multifield-reader", "hybrid-full-reader"])
    p.add_argument("--only", choices=("full", "sample"), help="run one of the two experiments")
    args = p.parse_args()
    from hybrid.cli.experiment import main as experiment

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    names, skipped = available_recipes(args.index, args.artifacts)
    names = sorted(names, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}", file=sys.stderr)
    sample = out / "queries.dev.sample.jsonl"
    n_sample = sample_topics(data / "queries.dev.jsonl", sample, args.per_kind, args.seed)
    runs = {
        "full": (data / "queries.dev.jsonl", [n for n in names if n not in args.sample_only]),
        "sample": (sample, names),
    }
    report = {"skipped": skipped, "sample_queries": n_sample, "commands": {}, "seconds": {}}
    for label, (topics, recipes) in runs.items():
        if args.only and label != args.only:
            continue
        argv = ["--index", args.index, "--topics", str(topics), "--qrels", str(data / "qrels.dev.txt"),
                "--recipes", *recipes, "--baseline", "bm25", "--artifacts", args.artifacts,
                "--output-dir", str(out / label)]
        command = "python -m hybrid.experiment " + " ".join(shlex.quote(a) for a in argv)
        print(command, file=sys.stderr)
        report["commands"][label] = command
        started = time.perf_counter()
        experiment(argv)
        report["seconds"][label] = round(time.perf_counter() - started, 1)
    (out / "benchmark.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
