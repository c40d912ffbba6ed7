"""The bundled default training set: how it is built, and how it compares with ECB+'s released train queries.

    python benchmarks/trainset_bundle.py build --corpus ../shared/data/ecbplus/corpus.jsonl \\
        --output hybrid/trainsets/ecbplus-train.jsonl.gz
    python benchmarks/trainset_bundle.py check --data ../shared/data/ecbplus

``build`` keeps the lines of ECB+ train topics only (never a dev or test topic: the split is checked from
each line's ``topic``, not trusted from its ``split``), and of them only what training needs: ``id``,
``doc_id``, ``topic`` (the cross-validation group), ``sent_id``, ``validated``, ``text`` and each mention's
``start``/``end``/``cluster``/``kind``/``tag``/``m_id`` (``m_id`` makes ECB+'s query ids). The gzip stream is
written with mtime 0, so the same input gives the same bytes.

``check`` derives queries and qrels (:func:`hybrid.core.formats.labelled.derive_training`) twice: from the
train-topic lines alone (what the bundle holds) and from the whole labelled corpus keeping the queries of
train passages (``split="train"``, how the released files were made), and compares each with ``queries.train.jsonl`` /
``qrels.train.txt``. It also checks that the cross-validation groups (:func:`ltr.cv.topic_of`) and 5-fold
assignment of the released train queries are what they were with the old document-id-prefix rule.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

from hybrid.core.atomic import atomic_write
from hybrid.core.formats.ecbplus import split_of
from hybrid.core.formats.labelled import derive_training, read_labelled
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics
from ltr.cv import grouped_folds, topic_of

MENTION_FIELDS = ("start", "end", "cluster", "kind", "tag", "m_id")


def build(corpus: Path, output: Path) -> dict:
    kept = dropped = 0
    lines = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if split_of(int(obj["topic"])) != "train":
                dropped += 1
                continue
            mentions = [{k: m[k] for k in MENTION_FIELDS if m.get(k) is not None} for m in obj.get("mentions", [])]
            row = {k: obj[k] for k in ("id", "doc_id", "topic", "sent_id", "validated", "text") if k in obj}
            lines.append(json.dumps({**row, "mentions": mentions}, ensure_ascii=False) + "\n")
            kept += 1
    with atomic_write(output, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                          compresslevel=9) as out:
        out.write("".join(lines).encode("utf-8"))
    return {"kept": kept, "dropped_other_topics": dropped, "bytes": output.stat().st_size}


def _released(data: Path) -> tuple[dict[str, dict], dict[str, set[str]]]:
    queries = {}
    with (data / "queries.train.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            queries[obj["qid"]] = obj
    return queries, {q: set(d) for q, d in read_qrels(data / "qrels.train.txt").items()}


def _compare(name: str, derived: list[dict], qrels: dict, queries: dict, released: dict[str, set[str]]) -> dict:
    ours = {q["qid"] for q in derived}
    differ = sorted(q for q in ours & set(released) if set(qrels[q]) != released[q])
    fields = ("kind", "tag", "doc_id", "passage_id", "start", "end", "mention", "cluster", "topic", "n_relevant")
    field_diffs = sorted(q["qid"] for q in derived if q["qid"] in queries and q["qid"] not in differ
                         and any(q.get(f) != queries[q["qid"]].get(f) for f in fields))
    missing_judgments = sum(len(released[q] - set(qrels[q])) for q in differ)
    return {"derived": name, "queries": len(ours), "released": len(released),
            "only_released": sorted(set(released) - ours),
            "only_derived": sorted(ours - set(released))[:10], "qrels_differ": len(differ), "examples": differ[:5],
            "judgments_missing": missing_judgments, "fields_differ": len(field_diffs)}


def check(data: Path) -> dict:
    queries, released = _released(data)
    with tempfile.TemporaryDirectory() as tmp:
        train_only = Path(tmp) / "train.jsonl"
        with (data / "corpus.jsonl").open(encoding="utf-8") as inp, train_only.open("w", encoding="utf-8") as out:
            out.writelines(line for line in inp if split_of(int(json.loads(line)["topic"])) == "train")
        derived, qrels = derive_training(read_labelled(train_only), train_only)
    rows = [_compare("train-topic lines only (the bundle)", derived, qrels, queries, released)]
    derived, qrels = derive_training(read_labelled(data / "corpus.jsonl"), data / "corpus.jsonl", split="train")
    rows.append(_compare("whole corpus, queries of train passages", derived, qrels, queries, released))
    texts = {}
    with (data / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            texts[obj["id"]] = obj["text"]
    topics = read_topics(data / "queries.train.jsonl", resolve=texts.get)
    new = {t.qid: topic_of(t) for t in topics}
    old = {t.qid: str(t.meta.get("topic", (t.doc_id or t.qid).split("_")[0])) for t in topics}
    qids = [t.qid for t in topics]
    same_folds = all(grouped_folds(qids, new, 5, seed) == grouped_folds(qids, old, 5, seed) for seed in (0, 1, 2))
    return {"comparisons": rows, "cv": {"queries": len(qids), "groups_identical": new == old,
                                        "folds_identical_seeds_0_1_2": same_folds}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the bundled training set from a labelled ECB+ corpus")
    b.add_argument("--corpus", type=Path, required=True)
    b.add_argument("--output", type=Path, required=True)
    c = sub.add_parser("check", help="compare derived train queries/qrels with the released ones")
    c.add_argument("--data", type=Path, required=True)
    args = parser.parse_args(argv)
    result = build(args.corpus, args.output) if args.command == "build" else check(args.data)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
