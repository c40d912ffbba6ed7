"""``python -m hybrid.pool``: depth-k pooling of TREC runs for assessors, and their judgments merged into qrels.

Examples::

    # the union of three runs' top 10 per query: every passage the qrels do not judge becomes an item
    python -m hybrid.pool make --runs bm25=bm25.trec mf=mf.trec dense=dense.trec --depth 10 \\
        --topics queries.dev.jsonl --corpus corpus.jsonl --qrels qrels.dev.txt --judged judged.txt --output-dir pool
    # a seeded sample (50 queries of each kind), then a second one of other queries
    python -m hybrid.pool make ... --per-kind 50 --seed 11 --output-dir pool1
    python -m hybrid.pool make ... --per-kind 100 --seed 12 --exclude-pool pool1 --output-dir pool2
    # a new run joins a pool already assessed: the same queries, only passages not assessed yet
    python -m hybrid.pool make --runs new=new.trec ... --extend pool1 --output-dir pool1-new
    # one part per assessor, and their answer files (item, coreferent yes/no, note) back into one file
    python -m hybrid.pool split --items pool/items.tsv --parts-of 250 --output-dir pool/parts
    python -m hybrid.pool merge --items pool/items.tsv --answers pool/parts/*.answers.tsv --output pool/assessed.tsv
    # the assessed pools merged into the qrels (yes = 1, no = 0), then scored as usual
    python -m hybrid.pool qrels --qrels qrels.dev.txt --pool-dir pool --assessed pool/assessed.tsv \\
        --output qrels.dev.completed.txt
    python -m hybrid.eval --qrels qrels.dev.completed.txt --run mf.trec --judged judged.txt

``make`` writes ``items.tsv`` (what the assessor fills: the ``coreferent`` column, yes or no, and a note),
``key.tsv`` (what each item stands for) and ``pool.json`` (runs with their sha256, depth, seed, queries).
Items are shuffled and name no passage, query or system: the assessor sees the query sentence with its
mention marked ``[[...]]``, the hit, and each document's first two passages. With ``--qrels`` one *control*
per query (a pooled passage whose label the qrels know) is mixed in, and ``qrels`` reports the assessor's
agreement with the collection on them. Passages below the pool depth stay unjudged, as in any pooled
collection (``hybrid.eval``'s Judged@10 says how far a run outside the pool is judged).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_quiet, add_subparser, make_parser, positive_int, run_cli
from hybrid.core.atomic import atomic_write
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, sha256_file
from hybrid.core.formats.topics import read_topics
from hybrid.core.judged import read_judged
from hybrid.core.outputs import Input, Output, Writes, inputs_of, run_input
from hybrid.core.provenance import produced_by
from hybrid.evaluation.pooling import (
    ANSWER_COLUMNS,
    CONTROL,
    ITEM_COLUMNS,
    completed_qrels,
    control_agreement,
    make_pool,
    merge_answers,
    named_paths,
    part_names,
    read_pools,
    read_texts,
    read_tsv,
    split_items,
    write_key,
    write_qrels,
    write_tsv,
)

POOL_FILES = ("items.tsv", "key.tsv", "pool.json")


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.pool", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="{make,split,merge,qrels}")
    a = add_subparser(sub, "make", help="pool the runs' top --depth passages and write the items to assess")
    a.add_argument("--runs", nargs="+", required=True, metavar="[NAME=]RUN", help="TREC runs to pool")
    a.add_argument("--topics", required=True, help="the runs' topics (JSONL with passage_id, start, end, kind)")
    a.add_argument("--corpus", required=True, help="corpus JSONL (id, doc_id, text): the texts the assessor reads")
    a.add_argument("--depth", type=positive_int, default=10, help="each run's top N passages per query are pooled")
    a.add_argument("--qrels", help="known judgments: their passages are not assessed again, and one of them per "
                                   "query is mixed in as a control (the queries are the qrels'; without, the topics')")
    a.add_argument("--judged", help="passage ids judged for every query (one per line): not assessed again")
    a.add_argument("--per-kind", type=positive_int, help="draw this many queries of each kind (default: all)")
    a.add_argument("--seed", type=int, default=11, help="seed of the query sample, the controls and the item order")
    a.add_argument("--exclude-pool", nargs="+", metavar="POOL",
                   help="earlier pools whose queries are not drawn again (to grow a sample)")
    a.add_argument("--extend", nargs="+", metavar="POOL",
                   help="earlier pools: pool these runs for the same queries and write only the passages those "
                        "pools did not assess (a run joins a pool; no controls)")
    a.add_argument("--no-controls", action="store_true", help="mix no controls in")
    a.add_argument("--output-dir", required=True, help="the pool folder (items.tsv, key.tsv, pool.json)")
    a.add_argument("--overwrite", action="store_true",
                   help="replace the pool already in --output-dir (its key is what gives answers their meaning)")
    add_quiet(a, "print nothing but errors")
    b = add_subparser(sub, "split", help="cut a pool's items into parts, one per assessor")
    b.add_argument("--items", required=True, help="the pool's items.tsv")
    b.add_argument("--parts-of", type=positive_int, default=250, help="items per part")
    b.add_argument("--output-dir", required=True, help="folder for part-01.tsv, part-02.tsv, ...")
    add_quiet(b, "print nothing but errors")
    c = add_subparser(sub, "merge", help="the assessors' answer files back into one assessed file")
    c.add_argument("--items", required=True, help="the pool's items.tsv")
    c.add_argument("--answers", nargs="+", required=True, help="answer files: item, coreferent (yes / no), note")
    c.add_argument("--output", required=True, help="the assessed file to write (the items with their answers)")
    c.add_argument("--answers-only", action="store_true",
                   help="write only item, coreferent and note (a large pool's texts are in its items.tsv)")
    add_quiet(c, "print nothing but errors")
    d = add_subparser(sub, "qrels", help="merge assessed pools into the qrels")
    d.add_argument("--qrels", help="the collection's qrels the assessments are added to")
    d.add_argument("--pool-dir", nargs="+", required=True, metavar="POOL", help="one or more pools")
    d.add_argument("--assessed", nargs="+", required=True, metavar="FILE",
                   help="per pool, in the same order, its assessed file (item, coreferent yes / no)")
    d.add_argument("--pooled-only", action="store_true",
                   help="write only the pools' queries (a sample's qrels) instead of every query of --qrels")
    d.add_argument("--output", required=True, help="the completed qrels to write")
    add_quiet(d, "print nothing but errors")
    return p


def writes(args: argparse.Namespace, parts: int = 0) -> Writes:
    """What a sub-command writes (replacing its own earlier files) and reads (runs, qrels, pools, assessments:
    never written over), for the output policy (hybrid.core.outputs). ``parts``: the number of parts of split."""
    reads = [run_input(f"--runs {name}", path) for name, path in named_paths(getattr(args, "runs", None) or []).items()]
    reads += inputs_of(args, ("topics", "corpus", "qrels", "judged", "items"))
    for option in ("exclude_pool", "extend", "answers", "assessed", "pool_dir"):
        reads += [Input(f"--{option.replace('_', '-')}", path) for path in getattr(args, option, None) or []]
    if args.command == "make":  # a pool is replaced only with --overwrite: answers to it mean nothing without its key
        outputs = [Output(f"--output-dir {name}", Path(args.output_dir) / name) for name in POOL_FILES]
    elif args.command == "split":
        outputs = [Output(f"--output-dir {name}", Path(args.output_dir) / name, replace=True)
                   for name in part_names(parts)]
    else:
        outputs = [Output("--output", args.output, replace=True)]
    return Writes(f"hybrid.pool {args.command}", outputs, reads, overwrite=getattr(args, "overwrite", False))


def say(args: argparse.Namespace, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr)


def command_make(args: argparse.Namespace) -> None:
    args.exclude_pool, args.extend = args.exclude_pool or [], args.extend or []
    runs = named_paths(args.runs)
    texts = read_texts(args.corpus)
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.text.get)}
    qrels = read_qrels(args.qrels) if args.qrels else None
    judged = read_judged(args.judged) if args.judged else frozenset()
    draw = make_pool([read_run(path) for path in runs.values()], topics, texts, args.depth, args.seed, qrels, judged,
                     args.per_kind, args.exclude_pool, args.extend, controls=not args.no_controls)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tsv(out / "items.tsv", ITEM_COLUMNS, draw.items)
    write_key(out / "key.tsv", draw.key)
    controls = sum(row.source == CONTROL for row in draw.key)
    manifest = {"runs": {n: {"path": p, "sha256": sha256_file(p)} for n, p in runs.items()},
                "depth": args.depth, "per_kind": args.per_kind, "seed": args.seed, "queries": draw.queries,
                "excluded_pools": args.exclude_pool, "extends": args.extend, "qrels": args.qrels,
                "judged": args.judged, "topics": args.topics, "corpus": args.corpus,
                "items": len(draw.key), "controls": controls, **produced_by()}
    with atomic_write(out / "pool.json") as handle:  # last: a pool folder with its manifest is complete
        handle.write(json.dumps(manifest, indent=1) + "\n")
    say(args, f"{len(draw.queries)} queries, {len(draw.key) - controls} unjudged pooled passages, {controls} "
              f"controls -> {out}")


def command_split(args: argparse.Namespace) -> None:
    items = read_tsv(args.items, ITEM_COLUMNS)
    parts = split_items(items, args.parts_of)
    writes(args, len(parts)).check()
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in zip(part_names(len(parts)), parts, strict=True):
        write_tsv(out / name, ITEM_COLUMNS, part)
    say(args, f"{len(items)} items in {len(parts)} parts -> {out}")


def command_merge(args: argparse.Namespace) -> None:
    items = read_tsv(args.items, ITEM_COLUMNS)
    merged = merge_answers(items, args.answers, args.items)
    write_tsv(args.output, ANSWER_COLUMNS if args.answers_only else ITEM_COLUMNS, merged)
    say(args, f"{len(merged)} items merged from {len(args.answers)} answer files -> {args.output}")


def command_qrels(args: argparse.Namespace) -> None:
    pools = read_pools(args.pool_dir, args.assessed)
    qrels = read_qrels(args.qrels) if args.qrels else {}
    full = completed_qrels(qrels, pools, pooled_only=args.pooled_only)
    write_qrels(full, args.output)
    assessed = [pools.answers[row.item].relevance for row in pools.key if row.source != CONTROL]
    controls = control_agreement(pools)
    agree = (f"; controls: {controls['n']}, agreement {controls['accuracy']:.3f}, Cohen's kappa "
             f"{controls['kappa']:.3f}" if controls["n"] else "")
    say(args, f"{len(assessed)} assessed passages ({sum(assessed)} relevant) over {len(pools.queries)} queries "
              f"added{agree} -> {args.output} ({len(full)} queries)")


COMMANDS = {"make": command_make, "split": command_split, "merge": command_merge, "qrels": command_qrels}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "split":  # split names its parts once it has read the items
        writes(args).check()
    COMMANDS[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
