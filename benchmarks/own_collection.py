"""A new user's own raw collection, from nothing to a hybrid-dense-net run: the three commands, timed.

The collection is ~1,000 raw passages of ECB+ *dev* documents with every passage and document id rewritten
(``d17:3``), so nothing ECB+-shaped is left for the engine to recognise; its subject groups are ECB+ dev's
topic halves (8 topics x their ecb / ecbplus sub-topics = 16 groups: dev has no more). The models are
trained on the bundled default training set when the package has one (``--train`` not given), else on the
labelled collection given with ``--train/--train-topics/--train-qrels`` (ECB+ train labels). A fresh store
(``$HYBRID_CACHE`` under ``--work``) stands for a fresh machine; ``pip install`` is not timed.

    python benchmarks/own_collection.py --ecbplus ../shared/data/ecbplus --work /tmp/own \\
        --train ../shared/data/ecbplus/corpus.jsonl --train-topics ../shared/data/ecbplus/queries.train.jsonl \\
        --train-qrels ../shared/data/ecbplus/qrels.train.txt --output benchmarks/results/own-collection.json

Each command runs as a user would run it (a subprocess), and its wall time is recorded with the machine's
core count and load average; the run is scored on the rewritten dev judgments of the chosen passages.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from hybrid.core.atomic import atomic_write


def group_of(doc_id: str) -> str:
    """ECB+ document ``2_10ecbplus`` -> its topic half ``2-ecbplus``."""
    topic, rest = doc_id.split("_", 1)
    return f"{topic}-{'ecbplus' if rest.endswith('ecbplus') else 'ecb'}"


def make_collection(ecbplus: Path, work: Path, passages: int, queries: int, seed: int) -> dict:
    """The rewritten collection, its topics and qrels under ``work``; returns counts."""
    dev_docs = set()
    with open(ecbplus / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if obj.get("split") == "dev":
                dev_docs.add(obj["doc_id"])
    docs: dict[str, list[dict]] = defaultdict(list)
    with open(ecbplus / "corpus.raw.jsonl", encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if obj["doc_id"] in dev_docs:
                docs[obj["doc_id"]].append(obj)
    by_group: dict[str, list[str]] = defaultdict(list)
    for doc in sorted(docs):
        by_group[group_of(doc)].append(doc)
    chosen, total = [], 0
    while total < passages and any(by_group.values()):  # documents round-robin over the groups
        for group in sorted(by_group):
            if by_group[group] and total < passages:
                doc = by_group[group].pop(0)
                chosen.append(doc)
                total += len(docs[doc])
    doc_ids = {doc: f"d{i}" for i, doc in enumerate(chosen)}
    passage_ids = {}
    lines = []
    for doc in chosen:
        for k, obj in enumerate(docs[doc]):
            passage_ids[obj["id"]] = f"{doc_ids[doc]}:{k}"
            lines.append(json.dumps({"id": passage_ids[obj["id"]], "doc_id": doc_ids[doc], "text": obj["text"]}))
    work.mkdir(parents=True, exist_ok=True)
    (work / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    topics = []
    with open(ecbplus / "queries.dev.jsonl", encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if obj["passage_id"] in passage_ids:
                topics.append({"qid": f"q{len(topics)}", "passage_id": passage_ids[obj["passage_id"]],
                               "doc_id": doc_ids[obj["doc_id"]], "start": obj["start"], "end": obj["end"],
                               "kind": obj["kind"], "_old": obj["qid"]})
    topics = sorted(random.Random(seed).sample(topics, min(queries, len(topics))), key=lambda t: int(t["qid"][1:]))
    old = {t.pop("_old"): t["qid"] for t in topics}
    qrels = []
    with open(ecbplus / "qrels.dev.txt", encoding="utf-8") as handle:
        for line in handle:
            qid, _, pid, rel = line.split()
            if qid in old and pid in passage_ids:
                qrels.append(f"{old[qid]} 0 {passage_ids[pid]} {rel}")
    (work / "topics.jsonl").write_text("\n".join(json.dumps(t) for t in topics) + "\n", encoding="utf-8")
    (work / "qrels.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return {"passages": len(lines), "documents": len(chosen), "groups": len({group_of(d) for d in chosen}),
            "queries": len(topics), "qrels": len(qrels)}


def timed(name: str, argv: list[str], env: dict, log: Path) -> dict:
    started = time.time()
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        done = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.time() - started
    print(f"{name}: {seconds / 60:.1f} min (exit {done.returncode})", file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed (exit {done.returncode}); see {log}")
    return {"command": " ".join(argv), "seconds": round(seconds, 1), "load_after": os.getloadavg()}


def scores_of(py: str, env: dict, qrels: Path, topics: Path, run: Path) -> dict:
    """``hybrid.eval --by-kind --json`` of one run (kinds from the topics' own ``kind`` field)."""
    return json.loads(subprocess.run([py, "-m", "hybrid.eval", "--qrels", str(qrels), "--topics", str(topics),
                                      "--run", str(run), "--by-kind", "--json"], env=env, capture_output=True,
                                     text=True, check=True).stdout)


def untrained_floor(args: argparse.Namespace, env: dict, log: Path, py: str, index: Path) -> dict:
    """The zero-shot floor: the same first stages with no trained part, on the same collection.

    ``dense-net`` over the off-the-shelf MiniLM (its own dense index, outside the model set) is the trained
    pipeline with every trained part taken out; ``multifield-net`` is the recommended pipeline without
    training. Trained models moved to a new collection should never fall below either (issue 37). Not part of
    the three commands' time.
    """
    dense = args.work / "dense-minilm"
    built = timed("index_dense (untrained MiniLM)", [py, "-m", "hybrid.index_dense", "--index", str(index),
                                                      "--output", str(dense), "--threads", str(args.threads),
                                                      "--quiet"], env, log)
    floor = {}
    for name, argv in {"dense-net (untrained MiniLM)": ["--model", "dense", "--dense-index", str(dense)],
                       "multifield-net": ["--recipe", "multifield-net"]}.items():
        run = args.work / f"run.floor-{name.split()[0]}.trec"
        floor[name] = {**timed(name, [py, "-m", "hybrid.search", *argv, "--index", str(index), "--topics",
                                      str(args.work / "topics.jsonl"), "--output", str(run), "--threads",
                                      str(args.threads), "--quiet"], env, log), "run": str(run)}
    floor["dense-net (untrained MiniLM)"]["index_dense"] = built
    return floor


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ecbplus", required=True, type=Path, help="folder with corpus(.raw).jsonl, queries/qrels dev")
    p.add_argument("--work", required=True, type=Path, help="scratch folder (fresh store, index, run)")
    p.add_argument("--passages", type=int, default=1000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", help="labelled corpus (default: the package's bundled training set)")
    p.add_argument("--train-topics")
    p.add_argument("--train-qrels")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--output", type=Path, help="results JSON")
    p.add_argument("--no-floor", action="store_true",
                   help="skip the untrained floor (dense-net over off-the-shelf MiniLM, multifield-net)")
    args = p.parse_args()
    collection = make_collection(args.ecbplus, args.work, args.passages, args.queries, args.seed)
    print(json.dumps(collection), file=sys.stderr)
    env = {**os.environ, "HYBRID_CACHE": str(args.work / "cache")}
    env.pop("HYBRID_ARTIFACTS", None)
    log = args.work / "commands.log"
    py, index = sys.executable, args.work / "index"
    train = (["--train", args.train, "--train-topics", args.train_topics, "--train-qrels", args.train_qrels]
             if args.train else [])
    steps = {
        "index": timed("index", [py, "-m", "hybrid.index", "--corpus", str(args.work / "corpus.jsonl"), "--index",
                                 str(index), "--threads", str(args.threads)], env, log),
        "prepare": timed("prepare", [py, "-m", "hybrid.prepare", "hybrid-dense-net", "--index", str(index),
                                     "--threads", str(args.threads), *train], env, log),
        "search": timed("search", [py, "-m", "hybrid.search", "--recipe", "hybrid-dense-net", "--index", str(index),
                                   "--topics", str(args.work / "topics.jsonl"), "--qrels", str(args.work / "qrels.txt"),
                                   "--output", str(args.work / "run.trec"), "--threads", str(args.threads)], env, log),
    }
    floor = {} if args.no_floor else untrained_floor(args, env, log, py, index)
    runs = {"hybrid-dense-net": args.work / "run.trec", **{name: Path(f["run"]) for name, f in floor.items()}}
    result = {"collection": collection, "commands": steps,
              "total_minutes": round(sum(s["seconds"] for s in steps.values()) / 60, 1),
              "cores": os.cpu_count(), "trained_on": args.train or "the bundled default training set",
              "scores": scores_of(py, env, args.work / "qrels.txt", args.work / "topics.jsonl",
                                  runs["hybrid-dense-net"]),
              "floor": {name: {**f, "scores": scores_of(py, env, args.work / "qrels.txt",
                                                        args.work / "topics.jsonl", runs[name])}
                        for name, f in floor.items()},
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(result, indent=2))
    if args.output:
        with atomic_write(args.output) as out:
            out.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
