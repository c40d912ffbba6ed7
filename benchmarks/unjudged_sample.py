"""Draw a seeded sample of a run's unjudged first hits for manual assessment.

    python benchmarks/unjudged_sample.py --run RUN --qrels $E/qrels.dev.txt --judged judged.txt \\
        --topics $E/queries.dev.jsonl --corpus $E/corpus.raw.jsonl --per-kind 20 --seed 7 --output sample.tsv

Why: where a collection is judged in part, a system that puts an unjudged passage first scores as if it
were wrong, and a system trained on the same qrels can learn to push unjudged passages down. Whether
that is a skill or an artifact depends on how many of those passages are in fact relevant, which only
reading them answers. This writes, for ``--per-kind`` queries of each kind whose first hit is neither
relevant nor judged, the query sentence with its mention marked ``[[...]]`` and the hit's text, and an
empty ``coreferent`` column for the assessor (yes / no). The sample is seeded (one ``random.Random``
over the kinds in the order event, entity) so that a filled-in file can be re-derived and checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import csv  # noqa: E402
import random  # noqa: E402

from hybrid.core.formats.corpus import read_corpus  # noqa: E402
from hybrid.core.formats.qrels import read_qrels  # noqa: E402
from hybrid.core.formats.runs import read_run  # noqa: E402
from hybrid.core.formats.topics import read_topics  # noqa: E402
from hybrid.core.judged import read_judged  # noqa: E402
from hybrid.core.records import KINDS  # noqa: E402

COLUMNS = ("kind", "qid", "docid", "coreferent", "query", "hit")


def unjudged_first_hits(run, qrels, judged: frozenset[str], kind_of: dict[str, str]) -> dict[str, list[str]]:
    """kind -> the sorted query ids whose first hit is not relevant and not judged."""
    out: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for qid in sorted(run):
        hits = run[qid]
        if qid not in qrels or not hits or kind_of.get(qid) not in out:
            continue
        first = hits[0].docid
        if first not in qrels[qid] and first not in judged:  # listed with any relevance: judged
            out[kind_of[qid]].append(qid)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--judged", required=True, help="passage ids judged for every query, one per line")
    p.add_argument("--topics", required=True, help="topics JSONL (passage_id, start, end, kind)")
    p.add_argument("--corpus", required=True, help="corpus JSONL with id and text")
    p.add_argument("--per-kind", type=int, default=20)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--output", required=True, help="TSV to fill in")
    args = p.parse_args()

    texts = {passage.id: passage.text for passage in read_corpus(args.corpus)}
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.get)}
    run = read_run(args.run)
    candidates = unjudged_first_hits(run, read_qrels(args.qrels), read_judged(args.judged),
                                     {q: t.kind for q, t in topics.items()})
    rng = random.Random(args.seed)
    rows = []
    for kind in KINDS:
        chosen = rng.sample(candidates[kind], min(args.per_kind, len(candidates[kind])))
        print(f"{kind}: {len(candidates[kind])} queries with an unjudged first hit, {len(chosen)} sampled",
              file=sys.stderr)
        for qid in chosen:
            t = topics[qid]
            query = f"{t.text[:t.start]}[[{t.text[t.start:t.end]}]]{t.text[t.end:]}"
            rows.append({"kind": kind, "qid": qid, "docid": run[qid][0].docid, "coreferent": "", "query": query,
                         "hit": texts[run[qid][0].docid]})
    with open(args.output, "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
