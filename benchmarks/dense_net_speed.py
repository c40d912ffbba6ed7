"""Speed of the dense first stage on CPU (issue 39), and a check that a faster build ranks exactly alike.

Two sub-commands:

* ``run``: the recipes (default ``dense-net``) over the first ``--limit`` topics, batched as
  ``hybrid.experiment`` batches them, timed (queries per second) and written as TREC runs
  (``<recipe>.trec``, scores printed with full precision) into ``--runs``; ``--profile N`` prints the ``N``
  most expensive functions of the timed search (cProfile, cumulative time).
* ``compare``: two such run folders (before / after a change) must agree: per query the same passages
  in the same order, except that passages whose scores differ by at most ``--tolerance`` may swap places
  (near-ties), and every common passage's score within ``--tolerance``. Exit status 1 when they do not.

On a shared machine absolute timings are noisy: time before and after back to back (``--repeat``) and
report ratios.

Example (the raw ECB+ index, the untrained MiniLM dense index in ``ART/dense/index``)::

    python benchmarks/dense_net_speed.py run --index /work/idx/ecb-raw --artifacts ART \\
        --topics /work/shared/data/ecbplus/queries.dev.jsonl --limit 300 --runs /tmp/after
    python benchmarks/dense_net_speed.py compare /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

from hybrid.core.records import Rankings

TOLERANCE = 1e-5


def run_recipes(args: argparse.Namespace) -> dict:
    from hybrid.api import open_index
    from hybrid.core.formats.topics import read_topics
    from hybrid.recipes import Context, load_recipe

    index = open_index(args.index, progress=False)
    topics = read_topics(args.topics, resolve=index.passage_text)
    if args.limit:
        topics = topics[: args.limit]
    context = Context(index=index, hits=args.hits, threads=args.threads, artifacts=args.artifacts)
    out = Path(args.runs)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"queries": len(topics), "recipes": {}}
    batch = max(1, min(256, -(-len(topics) // 20)))  # hybrid.experiment's batching
    for name in args.recipes:
        stage = load_recipe(name).build(context)
        stage(topics[:batch])  # warm-up: lazy loads (document vectors, JVM classes, caches) are not timed
        seconds = []
        run: Rankings = {}
        for _ in range(args.repeat):
            profiler = cProfile.Profile() if args.profile else None
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            run = {}
            for lo in range(0, len(topics), batch):
                run.update(stage(topics[lo : lo + batch]))
            if profiler:
                profiler.disable()
            seconds.append(time.perf_counter() - started)
            if profiler:
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(args.profile)
                print(text.getvalue(), file=sys.stderr)
        best = min(seconds)
        report["recipes"][name] = {"seconds": [round(s, 3) for s in seconds],
                                   "queries_per_second": round(len(topics) / best, 2)}
        with open(out / f"{name}.trec", "w", encoding="utf-8") as handle:
            for topic in topics:
                for rank, hit in enumerate(run.get(topic.qid, []), start=1):
                    handle.write(f"{topic.qid} Q0 {hit.docid} {rank} {hit.score!r} {name}\n")
        print(f"{name}: {len(topics)} queries, best of {args.repeat}: {best:.2f}s = "
              f"{len(topics) / best:.1f} q/s", file=sys.stderr)
    (out / "speed.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def read_trec(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _, score, _ = line.split()
        run.setdefault(qid, []).append((docid, float(score)))
    return run


def compare_lists(a: list[tuple[str, float]], b: list[tuple[str, float]], tolerance: float) -> str | None:
    """None when the two ranked lists agree (see the module docstring), else why not."""
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} hits"
    scores_b = dict(b)
    for rank, ((doc_a, score_a), (doc_b, score_b)) in enumerate(zip(a, b, strict=True), start=1):
        if abs(score_a - score_b) > tolerance:
            return f"rank {rank}: score {score_a!r} vs {score_b!r}"
        if doc_a != doc_b:  # allowed only as a swap of near-tied passages
            other = scores_b.get(doc_a)
            if other is None or abs(other - score_a) > tolerance:
                return f"rank {rank}: {doc_a} vs {doc_b}, not a near-tie"
    common = {d for d, _ in a} & set(scores_b)
    if len(common) != len(a):
        # a passage at the cut-off may be replaced by a near-tied one; anything else is a difference
        last = a[-1][1]
        for doc, score in a:
            if doc not in scores_b and abs(score - last) > tolerance:
                return f"{doc} (score {score!r}) only in the first run"
    for doc, score in a:
        if doc in scores_b and abs(scores_b[doc] - score) > tolerance:
            return f"{doc}: score {score!r} vs {scores_b[doc]!r}"
    return None


def compare_runs(before: Path, after: Path, tolerance: float) -> int:
    failed = 0
    for path in sorted(before.glob("*.trec")):
        other = after / path.name
        if not other.is_file():
            print(f"{path.name}: missing in {after}")
            failed += 1
            continue
        a, b = read_trec(path), read_trec(other)
        problems = {q: compare_lists(a.get(q, []), b.get(q, []), tolerance) for q in sorted(set(a) | set(b))}
        bad = {q: why for q, why in problems.items() if why}
        identical = sum(1 for q in a if a[q] == b.get(q))
        largest = max((abs(sa - dict(b.get(q, [])).get(d, sa)) for q in a for d, sa in a[q]), default=0.0)
        print(f"{path.name}: {len(a)} queries, {identical} bit-identical, {len(bad)} differ beyond "
              f"tolerance {tolerance:g}; largest score change {largest:.3g}")
        for q, why in list(bad.items())[:10]:
            print(f"  {q}: {why}")
        failed += bool(bad)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="time recipes and write their runs")
    r.add_argument("--index", required=True)
    r.add_argument("--artifacts", help="where the recipes' artifacts (dense/index) live")
    r.add_argument("--topics", required=True)
    r.add_argument("--limit", type=int, default=300, help="first N topics (0 = all)")
    r.add_argument("--recipes", nargs="+", default=["dense-net"])
    r.add_argument("--hits", type=int, default=100)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--repeat", type=int, default=1, help="time the search N times, report the fastest")
    r.add_argument("--profile", type=int, default=0, help="print the N most expensive functions (cProfile)")
    r.add_argument("--runs", required=True, help="folder for the TREC runs and speed.json")
    c = sub.add_parser("compare", help="check that two run folders rank alike")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = p.parse_args(argv)
    if args.command == "run":
        print(json.dumps(run_recipes(args), indent=2))
        return 0
    return compare_runs(args.before, args.after, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
