"""Event-centric collection building on ECB+ (issue 24): every train/dev sub-topic is an event.

Builds the event queries (one seed with its document removed, k = 2..5 seeds, short names), runs every
ranker of :mod:`hybrid.collect.rankers` over all corpus documents, trains *our-full* (LambdaMART) on
the train events and scores the dev events, adds this project's mention retrieval aggregated to
documents (``multifield-net`` from each seed mention on a raw-text index, max over a document's
passages, CombSUM over seeds), and writes one table (MAP, P@5, P@10; paired t-test / Wilcoxon vs
``event-name``, Holm-corrected) per query form::

    python benchmarks/eventcoll.py --corpus ../shared/data/ecbplus/corpus.raw.jsonl \\
        --queries-dir ../shared/data/ecbplus --index RAW_INDEX --cache-dir /tmp/eventcoll \\
        --output benchmarks/results/eventcoll-dev

Gold labels only define the events (the seminal event cluster picks the seeds) and the relevant
documents; the corpus is the raw one, annotated automatically.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hybrid.cli.common import make_parser  # noqa: E402
from hybrid.collect.aggregate import documents_run  # noqa: E402
from hybrid.collect.collection import Collection  # noqa: E402
from hybrid.collect.ecb import build_events, event_qrels, read_event_names, read_seed_mentions  # noqa: E402
from hybrid.collect.events import event_groups  # noqa: E402
from hybrid.collect.rankers import RANKERS, ranking, score_event  # noqa: E402
from hybrid.collect.related import rank_entities  # noqa: E402
from hybrid.core.atomic import atomic_write  # noqa: E402
from hybrid.evaluation.comparison import compare  # noqa: E402

MEASURES = ("AP", "P@5", "P@10")
TABLE = (("event-name", "event-name"), ("name-any", "event-name, no all-words filter"), ("place", "place"),
         ("entities", "entities"), ("ent+pass", "ent+pass"), ("emb-ent", "emb-ent"),
         ("emb-ent+pass", "emb-ent+pass (our-light)"), ("bm25-ent+pass", "BM25 ent+pass"),
         ("ent-match", "detected related entities"), ("our-full", "our-full (LambdaMART, train -> dev)"),
         ("our-full-cv", "our-full, 5-fold CV by event (train+dev)"),
         ("mention-max", "mention retrieval (multifield-net) -> documents"))


def parser() -> argparse.ArgumentParser:
    p = make_parser("benchmarks/eventcoll.py", __doc__, epilog=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--queries-dir", required=True, help="folder with queries.train.jsonl and queries.dev.jsonl")
    p.add_argument("--names", default=str(ROOT / "benchmarks" / "data" / "ecbplus_event_names.tsv"))
    p.add_argument("--index", help="raw-text hybrid index for the mention-retrieval row (skipped without)")
    p.add_argument("--cache-dir", required=True, help="entity annotation and MiniLM document vectors are cached here")
    p.add_argument("--output", required=True, help="output prefix (.md, .json)")
    p.add_argument("--seed", type=int, default=0)
    return p


def mention_runs(index_path: str, events: list, hits: int = 300) -> dict:
    """multifield-net from every seed of every seed query, aggregated to documents."""
    from hybrid.recipes import Context, load_recipe
    from indexes.sparse_index import SparseIndex

    index = SparseIndex(index_path)
    stage = load_recipe("multifield-net").build(Context(index=index, hits=hits))
    seeded = [e for e in events if e.seeds]
    topics = [s for e in seeded for s in e.seeds]
    passage_run = {}
    for lo in range(0, len(topics), 64):
        passage_run.update(stage(topics[lo:lo + 64]))
    per_event = {e.qid: [passage_run.get(s.qid, []) for s in e.seeds] for e in seeded}

    @functools.cache
    def doc_of(passage_id: str) -> str | None:  # the index's doc_id of a passage
        passage = index.passage(passage_id)
        return passage.doc_id if passage is not None else None

    return documents_run(per_event, {e.qid: e.excluded for e in seeded}, doc_of, how="max")


def main(argv: list[str] | None = None) -> int:
    import torch

    from hybrid.collect.ltr import cross_validate, event_matrix, train
    from hybrid.collect.stage import load_encoder

    torch.set_num_threads(1)
    args = parser().parse_args(argv)
    started = time.time()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    collection = Collection.from_corpus(args.corpus)
    entities = cache / "entities.jsonl"
    if entities.is_file():
        collection.load_entities(entities)
    else:
        collection.annotate()
        collection.save_entities(entities)
    encoder = load_encoder()
    embeddings = collection.embeddings(encoder, cache=cache / "doc-minilm.npy")
    text_of = lambda pid: collection.passages[collection.passage_index[pid]].text  # noqa: E731
    names = read_event_names(args.names)
    events = {split: build_events(read_seed_mentions(Path(args.queries_dir) / f"queries.{split}.jsonl"), text_of,
                                  names, seed=args.seed) for split in ("train", "dev")}
    qrels = {split: event_qrels(evs, collection.doc_ids) for split, evs in events.items()}
    scored = {}
    for split, evs in events.items():
        for event in evs:
            evidence = rank_entities(collection, event)
            scored[event.qid] = score_event(collection, evidence, RANKERS, encoder=encoder, embeddings=embeddings)
        print(f"scored {len(evs)} {split} event queries ({time.time() - started:.0f}s)", file=sys.stderr)
    dev = events["dev"]
    runs = {r: {e.qid: ranking(collection, scored[e.qid].scores[r], 1000) for e in dev} for r in RANKERS}
    matrices = {q: event_matrix(s, collection) for q, s in scored.items()}
    model = train([matrices[e.qid] for e in events["train"]], qrels["train"], seed=args.seed)
    runs["our-full"] = {e.qid: model.rerank(matrices[e.qid]) for e in dev}
    all_qrels = {**qrels["train"], **qrels["dev"]}
    groups = event_groups([*events["train"], *events["dev"]])  # the sub-topic of each event
    cv_run, folds = cross_validate(list(matrices.values()), all_qrels, groups.__getitem__, k=5, seed=args.seed)
    runs["our-full-cv"] = {e.qid: cv_run[e.qid] for e in dev}
    if args.index:
        runs["mention-max"] = mention_runs(args.index, dev)
    forms = {e.qid: e.label for e in dev}
    tables, results = [], {}
    for form, title in (("seed1", "(a) one seed mention, its document removed"),
                        ("seedk", "(b) k = 2..5 seed mentions, their documents removed"),
                        ("name", "(c) short event name")):
        qids = [q for q in sorted(qrels["dev"]) if forms[q] == form]
        group_qrels = {q: qrels["dev"][q] for q in qids}
        group_runs = {name: {q: run.get(q, []) for q in qids} for name, run in runs.items()
                      if form != "name" or name != "mention-max"}
        out = compare(group_runs, group_qrels, {}, "event-name", MEASURES)["results"]["all"]
        results[form] = out
        lines = [f"\n**{title}** ({len(qids)} queries, {len({groups[q] for q in qids})} dev events)\n",
                 "| system | MAP | P@5 | P@10 |", "|---|---|---|---|"]
        for name, label in TABLE:
            if name not in out:
                continue
            cells = []
            for m in MEASURES:
                c = out[name][m]
                if name == "event-name":
                    cells.append(f"{c['mean']:.3f}")
                else:
                    mark = "*" if c["t_p"] < 0.05 and c["w_p"] < 0.05 else ""
                    cells.append(f"{c['mean']:.3f} ({c['delta']:+.3f}{mark}; p={c['t_p']:.1e}/{c['w_p']:.1e})")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines))
    importance = dict(zip(__import__("hybrid.collect.features", fromlist=["x"]).feature_names(model.rankers),
                          [round(float(v), 2) for v in model.scorer.importance()], strict=True))
    summary = {"seconds": round(time.time() - started, 1), "events": {s: len({groups[e.qid] for e in evs})
                                                                      for s, evs in events.items()},
               "queries": {s: len(evs) for s, evs in events.items()}, "folds": len(folds), "results": results,
               "importance": dict(sorted(importance.items(), key=lambda kv: -kv[1])[:12]),
               "related_examples": {q: [e.text for e in scored[q].evidence.top]
                                    for q in [e.qid for e in dev if e.label == "name"][:4]}}
    text = "\n".join(tables) + "\n\n`*`: both tests significant at 0.05 after Holm correction (vs event-name).\n"
    with atomic_write(f"{args.output}.md") as out:
        out.write(text)
    with atomic_write(f"{args.output}.json") as out:
        json.dump(summary, out, indent=2)
    print(text)
    print(json.dumps({k: summary[k] for k in ("seconds", "events", "queries", "importance")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
