"""Coordinate ascent over MultiFieldBM25 clause weights on a dev topic set (mean AP@100 of events and entities).

    python benchmarks/tune_multifield.py --index IDX --topics queries.dev.jsonl --qrels qrels.dev.txt [--sample 1200]
"""

from __future__ import annotations

import argparse
import json
import random

from hybrid.core.formats import read_qrels, read_topics
from hybrid.core.measures import evaluate
from hybrid.retrieval.sparse import Clause, MultiFieldBM25, parse_clauses
from indexes.sparse_index import SparseIndex

START = "chain:mention=0.5,mention:coref=0.5,chain:coref=0.25,ner=0.3,context=0.3,trigrams=0.2,mention=0.25,acronym=0.1"
STEPS = (0.0, 0.5, 2.0)  # multipliers tried per clause


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--sample", type=int, default=1200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    index = SparseIndex(args.index)
    topics = read_topics(args.topics, resolve=index.passage_text)
    random.Random(args.seed).shuffle(topics)
    topics = sorted(topics[: args.sample], key=lambda t: t.qid)
    qrels = {q: v for q, v in read_qrels(args.qrels).items() if q in {t.qid for t in topics}}
    groups = {t.qid: t.kind for t in topics}

    def score(clauses: list[Clause]) -> float:
        run = MultiFieldBM25(index, clauses).search(topics, 100)
        table = evaluate(qrels, run, ("AP@100",), groups)
        return (table["event"]["AP@100"] + table["entity"]["AP@100"]) / 2

    best = parse_clauses(START)
    best_score = score(best)
    print(json.dumps({"start": START, "score": round(best_score, 4)}), flush=True)
    for _ in range(args.rounds):
        improved = False
        for i, clause in enumerate(best):
            for mult in STEPS:
                weight = round(clause.weight * mult, 4) if clause.weight else 0.25 * mult
                trial = list(best)
                trial[i] = Clause(clause.source, clause.field, weight)
                s = score(trial)
                if s > best_score + 1e-4:
                    best, best_score, improved = trial, s, True
                    spec = ",".join(f"{c.source}:{c.field}={c.weight}" for c in best)
                    print(json.dumps({"improved": spec, "score": round(s, 4)}), flush=True)
        if not improved:
            break
    print("BEST", ",".join(f"{c.source}:{c.field}={c.weight}" for c in best), round(best_score, 4))


if __name__ == "__main__":
    main()
