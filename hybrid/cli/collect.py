"""``python -m hybrid.collect``: build an event-centric collection (an event in, documents out).

Examples::

    # one event by name and/or marked seed mentions, our-light, over a corpus JSONL (or --index IDX)
    python -m hybrid.collect run --corpus corpus.jsonl --name "Tara Reid checks into rehab" \\
        --seed "A publicist says Tara Reid has <m> checked </m> herself into rehab ." \\
        --ranker emb-ent+pass --output runs/rehab.trec

    # many events (JSONL, see hybrid.collect.events), combined by a trained LambdaMART (our-full)
    python -m hybrid.collect train --corpus corpus.jsonl --events events.train.jsonl --qrels qrels.train.txt \\
        --output models/eventcoll-full
    python -m hybrid.collect run --corpus corpus.jsonl --events events.dev.jsonl --model models/eventcoll-full \\
        --output runs/full.trec

    # ECB+ sub-topics as events (train/dev only)
    python -m hybrid.collect ecb-events --queries queries.dev.jsonl --corpus corpus.raw.jsonl \\
        --names benchmarks/data/ecbplus_event_names.tsv --output events.dev.jsonl --qrels-output qrels.dev.txt

``run`` writes the TREC run of documents, ``<run>.meta.json`` (configuration, inputs, versions) and
``<run>.evidence.jsonl``: per event its related entities (ContFreq, CheapEntRel, contextual passage),
its place, and for every returned document the related entities detected in it and where.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_quiet, add_subparser, make_parser, output_file, positive_int, run_cli
from hybrid.collect.collection import Collection
from hybrid.collect.ecb import build_events, event_qrels, read_event_names, read_seed_mentions, write_qrels
from hybrid.collect.events import EventQuery, event_groups, parse_event, read_events
from hybrid.collect.kb import read_kb
from hybrid.collect.ltr import EVENT_MODEL, EventModel, cross_validate, event_matrix, train
from hybrid.collect.rankers import RANKERS
from hybrid.collect.stage import EventCollector
from hybrid.core.atomic import atomic_write
from hybrid.core.errors import ConfigError
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run_set
from hybrid.core.outputs import RUN, RUN_SIDES, Input, Output, Writes, inputs_of
from hybrid.core.provenance import inputs, produced_by
from hybrid.sample import index_location
from indexes.shards import open_one_index


def _source_args(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", help="corpus JSONL of passages (id, doc_id, text)")
    source.add_argument("--index", help="hybrid index whose stored passages are the collection;"
                                        " 'sample': the bundled sample's, built on first use")
    p.add_argument("--kb", help="knowledge-base JSONL (entity, aliases, description, links, type)")
    p.add_argument("--entities-cache", help="file caching the collection's detected entities (read if present, "
                                            "else written)")
    p.add_argument("--events", help="event queries JSONL (hybrid.collect.events)")
    add_quiet(p)
    p.add_argument("--no-progress", dest="quiet", action="store_true", help=argparse.SUPPRESS)  # the old name


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.collect", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True)
    run = add_subparser(sub, "run", help="rank documents for events")
    _source_args(run)
    run.add_argument("--name", help="the event's short name (a single event, with or without --seed)")
    run.add_argument("--seed", action="append", default=[], help="a seed mention: a sentence with <m> ... </m> "
                                                                "(repeat for k seeds)")
    run.add_argument("--place", help="the event's place (single event)")
    run.add_argument("--ranker", default="emb-ent+pass", choices=RANKERS, help="ranker (ignored with --model)")
    run.add_argument("--model", help="trained model directory (our-full, from `train`)")
    run.add_argument("--hits", type=positive_int, default=100)
    run.add_argument("--tag", default=None)
    run.add_argument("--output", required=True, type=output_file)
    train = add_subparser(sub, "train", help="train the LambdaMART combination (our-full)")
    _source_args(train)
    train.add_argument("--qrels", required=True, help="document judgments of the events")
    train.add_argument("--output", required=True, help="model directory")
    train.add_argument("--overwrite", action="store_true", help="replace an existing event-collection model")
    train.add_argument("--cv", type=positive_int, default=0,
                       help="also report k-fold CV (folds never split an event's 'group'; an event without one is its "
                            "own group)")
    train.add_argument("--random-seed", type=int, default=0)
    ecb = add_subparser(sub, "ecb-events", help="ECB+ sub-topics (train/dev) as event queries + document qrels")
    ecb.add_argument("--queries", required=True, help="ECB+ queries.{train,dev}.jsonl")
    ecb.add_argument("--corpus", required=True, help="ECB+ corpus (raw) JSONL")
    ecb.add_argument("--names", help="event names file (sub-topic TAB name)")
    ecb.add_argument("--output", required=True, type=output_file)
    ecb.add_argument("--qrels-output", required=True, type=output_file)
    ecb.add_argument("--random-seed", type=int, default=0)
    return p


def _collection(args: argparse.Namespace):
    kb = read_kb(args.kb) if args.kb else None
    if args.corpus:
        collection = Collection.from_corpus(args.corpus)
    else:
        collection = Collection.from_index(open_one_index(index_location(args.index), "python -m hybrid.collect"))
    cache = Path(args.entities_cache) if args.entities_cache else None
    if cache is not None and cache.is_file():
        collection.load_entities(cache)
    else:
        collection.annotate(kb=kb, progress=not args.quiet)
        if cache is not None:
            collection.save_entities(cache)
    return collection, kb


def _resolver(collection: Collection):
    return lambda pid: (collection.passages[collection.passage_index[pid]].text
                        if pid in collection.passage_index else None)


def _doc_of(collection: Collection):
    """A passage's document as the collection records it (seeds that point into the collection)."""
    return lambda pid: (collection.passages[collection.passage_index[pid]].doc_id
                        if pid in collection.passage_index else None)


def _events(args: argparse.Namespace, collection: Collection) -> list[EventQuery]:
    single = getattr(args, "name", None) is not None or getattr(args, "seed", [])
    if args.events and single:
        raise ConfigError(None, None, "give --events or a single event (--name/--seed), not both")
    if args.events:
        return read_events(args.events, _resolver(collection), _doc_of(collection))
    if not single:
        raise ConfigError(None, None, "give --events FILE, or --name and/or --seed for one event")
    line = json.dumps({"qid": "event", "name": args.name, "seeds": args.seed or None, "place": args.place})
    return [parse_event(Path("<command line>"), None, line, _resolver(collection), _doc_of(collection))]


def _run(args: argparse.Namespace) -> int:
    collection, kb = _collection(args)
    events = _events(args, collection)
    model = EventModel.load(args.model) if args.model else None
    stage = EventCollector(collection, ranker=args.ranker, kb=kb, k=args.hits, progress=not args.quiet,
                           combiner=model.combiner() if model else None,
                           **({"rankers": model.rankers, "depth": model.depth} if model else {}))
    run = stage([e.to_topic() for e in events])
    tag = args.tag or stage.name
    config = {"ranker": None if model else args.ranker, "model": args.model, "hits": args.hits,
              "kb": args.kb, "annotation": collection.annotation}
    write_run_set(run, args.output, tag=tag, meta={
        "queries": len(events), "system": stage.name, "config": config, "argv": sys.argv[1:], **produced_by(),
        "inputs": inputs(args.events, args.index, corpus=args.corpus, kb=args.kb)})
    with atomic_write(f"{args.output}.evidence.jsonl") as out:
        for event in events:
            out.write(json.dumps(stage.evidence[event.qid], ensure_ascii=False) + "\n")
    print(f"wrote {args.output} ({len(events)} events) and {args.output}.evidence.jsonl", file=sys.stderr)
    return 0


def _train(args: argparse.Namespace) -> int:
    from hybrid.core.measures import evaluate  # deferred: importing it loads ir_measures

    if not args.events:
        raise ConfigError(None, None, "train needs --events (the training event queries)")
    collection, kb = _collection(args)
    events = read_events(args.events, _resolver(collection), _doc_of(collection))
    qrels = read_qrels(args.qrels)
    stage = EventCollector(collection, kb=kb, combiner=lambda X: X[:, 0], progress=not args.quiet)
    matrices = [event_matrix(stage.scores(e.to_topic()), collection) for e in events]
    extra = {}
    if args.cv:
        run, _ = cross_validate(matrices, qrels, event_groups(events).__getitem__, k=args.cv, seed=args.random_seed)
        extra["cv"] = evaluate({q: v for q, v in qrels.items() if q in run}, run, ("AP", "P@5", "P@10"))["all"]
        print(f"{args.cv}-fold CV grouped by event: {extra['cv']}", file=sys.stderr)
    model = train(matrices, qrels, seed=args.random_seed)
    model.save(args.output, overwrite=args.overwrite, extra={"events": args.events, "qrels": args.qrels, **extra})
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _ecb_events(args: argparse.Namespace) -> int:
    collection = Collection.from_corpus(args.corpus)
    seeds = read_seed_mentions(args.queries)
    names = read_event_names(args.names) if args.names else None
    events = build_events(seeds, _resolver(collection), names, seed=args.random_seed)
    with atomic_write(args.output) as out:
        for event in events:
            out.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
    write_qrels(event_qrels(events, collection.doc_ids), args.qrels_output)
    print(f"wrote {len(events)} event queries to {args.output}", file=sys.stderr)
    return 0


def writes(args: argparse.Namespace) -> Writes:
    """What each sub-command writes and reads, for the output policy (hybrid.core.outputs)."""
    if args.command == "ecb-events":
        return Writes("hybrid.collect ecb-events", [Output("--output", args.output, replace=True),
                                                    Output("--qrels-output", args.qrels_output, replace=True)],
                      inputs_of(args, ("queries", "corpus", "names")))
    reads = inputs_of(args, ("corpus", "index", "kb", "events", "qrels", "model"))
    outputs = [Output("--output", args.output, RUN, (*RUN_SIDES, "{name}.evidence.jsonl"), replace=True)
               if args.command == "run" else Output("--output", args.output, EVENT_MODEL)]
    if args.entities_cache and Path(args.entities_cache).is_file():  # read when there, written when not
        reads.append(Input("--entities-cache", args.entities_cache))
    else:
        outputs.append(Output("--entities-cache", args.entities_cache))
    return Writes(f"hybrid.collect {args.command}", outputs, reads, getattr(args, "overwrite", False))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    return {"run": _run, "train": _train, "ecb-events": _ecb_events}[args.command](args)


if __name__ == "__main__":
    sys.exit(run_cli(main))
