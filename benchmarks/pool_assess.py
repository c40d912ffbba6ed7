"""Research on pooled assessment: runs compared on three sets of labels, and a second, independent assessor.

The pools themselves are made, split, merged and turned into qrels by ``python -m hybrid.pool`` (the library:
:mod:`hybrid.evaluation.pooling`); this script holds what only the experiments of docs/history need::

    python benchmarks/pool_assess.py score --pool-dir P1 P2 --assessed P1/assessed.tsv P2/assessed.tsv \\
        --runs bm25=B.trec net=N.trec ... --qrels $E/qrels.dev.txt --judged judged.txt \\
        --topics $E/queries.dev.jsonl --corpus $E/corpus.raw.jsonl --output OUT [--doubtful-as-no]
    python benchmarks/pool_assess.py second --pool-dir P1 --assessed P1/assessed.tsv --sample 300 --seed 21 \\
        --topics $E/queries.dev.jsonl --corpus $E/corpus.raw.jsonl --output-dir SECOND
    python benchmarks/pool_assess.py agree --second-dir SECOND --assessed SECOND/assessed.tsv --output AGREE

``score`` reports the assessor's agreement with the collection on the controls and compares the runs on the
same sampled queries three times: the collection's qrels (standard), condensed lists (unjudged passages
removed), and the completed qrels (``hybrid.pool qrels --pooled-only``). Every pooled run is fully judged to
the pool depth, so RR@10 and P@10 are exact there; AP@100 still counts unjudged passages below the pool as
non-relevant. ``--doubtful-as-no`` counts a yes whose note says "doubtful" as no (a stricter assessor).

``second`` draws a seeded sample of assessed items (controls included), renumbered and reshuffled, for a
second assessor who does not see the first one's answers; ``agree`` reports the two assessors' agreement
(accuracy, Cohen's kappa) and each one's agreement with the collection on the controls.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, replace
from pathlib import Path

from hybrid.core.atomic import atomic_write
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, sha256_file
from hybrid.core.formats.topics import read_topics
from hybrid.core.judged import read_judged
from hybrid.core.outputs import Input, Output, Writes, run_input
from hybrid.core.records import KINDS
from hybrid.evaluation.comparison import compare, compare_condensed, format_markdown
from hybrid.evaluation.pooling import (
    ANSWERS,
    CONTROL,
    ITEM_COLUMNS,
    KEY_COLUMNS,
    POOLED,
    Answer,
    agreement,
    assessor_item,
    check_answered,
    completed_qrels,
    control_agreement,
    named_paths,
    read_assessed,
    read_pools,
    read_texts,
    read_tsv,
    write_qrels,
    write_tsv,
)

MEASURES = ("RR@10", "P@10", "AP@100", "nDCG@10", "Judged@10")


def command_score(args: argparse.Namespace) -> None:
    pools = read_pools(args.pool_dir, args.assessed)
    if args.doubtful_as_no:  # a stricter assessor: every yes the assessor called doubtful counts as no
        pools.answers = {item: Answer(0 if "doubtful" in a.note.lower() else a.relevance, a.note)
                         for item, a in pools.answers.items()}
    key, manifest = pools.key, pools.manifest
    run_paths = named_paths(args.runs)
    runs = {name: read_run(path) for name, path in run_paths.items()}
    qrels = read_qrels(args.qrels)
    judged = read_judged(args.judged)
    texts = {passage.id: passage.text for passage in read_corpus(args.corpus)}
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.get)}
    groups = {q: topics[q].kind for q in manifest["queries"]}
    sample = {q: qrels[q] for q in manifest["queries"]}
    runs = {name: {q: run.get(q, []) for q in manifest["queries"]} for name, run in runs.items()}
    baseline = args.baseline or next(iter(runs))

    pooled = [pools.answers[row.item].relevance for row in key if row.source == POOLED]
    by_kind = {kind: [pools.answers[r.item].relevance for r in key if r.source == POOLED and groups[r.qid] == kind]
               for kind in KINDS}
    full = completed_qrels(qrels, pools, pooled_only=True)
    settings = {
        "standard": compare(runs, sample, groups, baseline, MEASURES, judged),
        "condensed": compare_condensed(runs, sample, groups, baseline, MEASURES, judged),
        "completed": compare(runs, full, groups, baseline, MEASURES, judged),
    }
    run_info = {n: {"path": p, "sha256": sha256_file(p)} for n, p in run_paths.items()}
    for info in run_info.values():  # a run outside the pool is judged only where it agrees with the pooled runs
        covered = {q for m in manifest["pools"] if info["sha256"] in {r["sha256"] for r in m["runs"].values()}
                   for q in m["queries"]}
        info["pooled"] = covered >= set(manifest["queries"])
    summary = {
        "manifest": manifest, "runs": run_info, "doubtful_as_no": args.doubtful_as_no,
        "controls": control_agreement(pools),
        "pool": {"n": len(pooled), "yes": sum(pooled),
                 **{f"{kind}_yes": f"{sum(v)}/{len(v)}" for kind, v in by_kind.items()}},
        "relevant_added": {kind: sum(v) for kind, v in by_kind.items()},
        "relevant_in_qrels": {kind: sum(sum(v > 0 for v in sample[q].values()) for q in sample
                                        if groups[q] == kind) for kind in KINDS},
        "results": {s: r["results"] for s, r in settings.items()},
    }
    names = list(runs)
    unpooled = [n for n in names if not run_info[n]["pooled"]]
    c = summary["controls"]
    lines = [f"# Pooled assessment: {len(sample)} sampled queries, runs pooled to depth {manifest['depth']}", "",
             f"Pool: {summary['pool']['n']} unjudged passages assessed, {summary['pool']['yes']} coreferent "
             f"(event {summary['pool']['event_yes']}, entity {summary['pool']['entity_yes']}); relevant passages "
             f"in the collection's qrels for these queries: {summary['relevant_in_qrels']}, added: "
             f"{summary['relevant_added']}.", ""]
    if args.doubtful_as_no:
        lines += ["Stricter reading: every yes the assessor marked doubtful counts as no.", ""]
    if unpooled:
        lines += ["Not pooled (their unassessed hits count as non-relevant; see Judged@10): "
                  f"{', '.join(unpooled)}.", ""]
    if c["n"]:
        lines += [f"Controls (the collection's own labels, mixed in blind): {c['n']}, agreement "
                  f"{c['accuracy']:.3f}, Cohen's kappa {c['kappa']:.3f} (relevant judged no: "
                  f"{c['gold_yes_assessed_no']}, non-relevant judged yes: {c['gold_no_assessed_yes']}).", ""]
    titles = {"standard": "The collection's qrels (unjudged = non-relevant)",
              "condensed": "Condensed lists (unjudged passages removed)",
              "completed": "Completed qrels (the pool assessed; below the pool unjudged = non-relevant)"}
    for setting, title in titles.items():
        lines += [f"## {title}", format_markdown(summary["results"][setting], baseline, MEASURES), ""]
    if args.qrels_out:
        write_qrels(full, args.qrels_out)
    out = Path(args.output)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write("\n".join(lines))
    with atomic_write(out.with_suffix(".json")) as handle:
        handle.write(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))



SECOND_KEY_COLUMNS = (*KEY_COLUMNS, "first", "first_item")


def command_second(args: argparse.Namespace) -> None:
    """A seeded sample of assessed items, renumbered and reshuffled, for a second, independent assessor."""
    pools = read_pools(args.pool_dir, args.assessed)
    texts = read_texts(args.corpus)
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.text.get)}
    rng = random.Random(args.seed)
    chosen = rng.sample(pools.key, min(args.sample, len(pools.key)))
    rows = [replace(row, item=f"{number:04d}") for number, row in enumerate(chosen, 1)]
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tsv(out / "items.tsv", ITEM_COLUMNS, [assessor_item(row, topics[row.qid], texts) for row in rows])
    write_tsv(out / "key.tsv", SECOND_KEY_COLUMNS,
              [{**asdict(row), "first_item": first.item,
                "first": "yes" if pools.answers[first.item].relevance else "no"}
               for row, first in zip(rows, chosen, strict=True)])
    print(f"{len(rows)} of {len(pools.key)} assessed items drawn for a second assessor -> {out}", file=sys.stderr)


def command_agree(args: argparse.Namespace) -> None:
    """Agreement of the second assessor with the first (every item) and with the collection (controls)."""
    key = read_tsv(Path(args.second_dir) / "key.tsv", SECOND_KEY_COLUMNS)
    second = {item: a.relevance for item, a in read_assessed(args.assessed).items()}
    check_answered((r["item"] for r in key), second, args.assessed)
    summary = {"first_vs_second": agreement([(ANSWERS[r["first"]], second[r["item"]]) for r in key])}
    for kind in KINDS:
        summary[f"first_vs_second_{kind}"] = agreement([(ANSWERS[r["first"]], second[r["item"]])
                                                         for r in key if r["kind"] == kind])
    controls = [r for r in key if r["source"] == CONTROL]
    summary["collection_vs_first"] = agreement([(ANSWERS[r["label"]], ANSWERS[r["first"]]) for r in controls])
    summary["collection_vs_second"] = agreement([(ANSWERS[r["label"]], second[r["item"]]) for r in controls])
    with atomic_write(Path(args.output).with_suffix(".json")) as handle:
        handle.write(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


#: What each sub-command reads (attributes of its arguments), for the output policy.
READS = ("qrels", "judged", "topics", "corpus", "pool_dir", "assessed", "second_dir")


def writes(args: argparse.Namespace) -> Writes:
    """What a sub-command writes (replacing its own earlier files) and reads (never written over)."""
    reads = [run_input(f"--runs {name}", path) for name, path in named_paths(getattr(args, "runs", None) or []).items()]
    for name in READS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value] if value else []:
            reads.append(Input(f"--{name.replace('_', '-')}", path))
    if args.command == "second":
        outputs = [Output(f"--output-dir {name}", Path(args.output_dir) / name, replace=True)
                   for name in ("items.tsv", "key.tsv")]
    else:  # score, agree: the report (.md and .json beside the prefix), and score's completed qrels
        out = Path(args.output)
        outputs = [Output("--output (json)", out.with_suffix(".json"), replace=True)]
        if args.command == "score":
            outputs += [Output("--output (md)", out.with_suffix(".md"), replace=True),
                        Output("--qrels-out", args.qrels_out, replace=True)]
    return Writes(f"pool_assess.py {args.command}", outputs, reads)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    texts = argparse.ArgumentParser(add_help=False)
    texts.add_argument("--topics", required=True, help="topics JSONL (passage_id, start, end, kind)")
    texts.add_argument("--corpus", required=True, help="corpus JSONL with id, doc_id and text")
    pools = argparse.ArgumentParser(add_help=False)
    pools.add_argument("--pool-dir", nargs="+", required=True, help="one or more pools (python -m hybrid.pool make)")
    pools.add_argument("--assessed", nargs="+", required=True,
                       help="per pool, its items.tsv with the coreferent column filled (yes / no)")
    b = sub.add_parser("score", parents=[texts, pools], help="score the runs on the completed qrels")
    b.add_argument("--runs", nargs="+", required=True, help="NAME=PATH run files (TREC format)")
    b.add_argument("--qrels", required=True)
    b.add_argument("--judged", required=True, help="passage ids judged for every query, one per line")
    b.add_argument("--doubtful-as-no", action="store_true",
                   help="count a yes whose note says 'doubtful' as no (a sensitivity check for a lenient assessor)")
    b.add_argument("--baseline", help="run name the others are tested against (default: the first)")
    b.add_argument("--output", required=True, help="path prefix for .md and .json")
    b.add_argument("--qrels-out", help="write the sampled queries' completed qrels here (TREC qrels)")
    c = sub.add_parser("second", parents=[texts, pools], help="draw assessed items for a second assessor")
    c.add_argument("--sample", type=int, default=300)
    c.add_argument("--seed", type=int, default=21)
    c.add_argument("--output-dir", required=True)
    d = sub.add_parser("agree", help="the second assessor's agreement with the first and with the collection")
    d.add_argument("--second-dir", required=True, help="the directory `second` wrote")
    d.add_argument("--assessed", required=True, help="its items.tsv with the coreferent column filled")
    d.add_argument("--output", required=True, help="path prefix for .json")
    args = p.parse_args(argv)
    writes(args).check()
    {"score": command_score, "second": command_second, "agree": command_agree}[args.command](args)


if __name__ == "__main__":
    main()
