"""A labelled copy of tests/data/tiny_corpus.jsonl for dense-training tests (imported by test_dense_*).

Clusters are hand-assigned cross-document coreference labels; document e5 is in the ``dev`` split, so
its labels must never reach a training pair.
"""

from __future__ import annotations

import json
from pathlib import Path

from hybrid.core.records import Topic

CLUSTERS = {
    ("a1:0", "Tara Reid"): "REID", ("a1:1", "she"): "REID", ("b2:0", "Tara Reid"): "REID", ("b2:1", "Reid"): "REID",
    ("a1:0", "checked into"): "CHECKIN", ("a1:1", "entered"): "CHECKIN", ("b2:0", "entered"): "CHECKIN",
    ("a1:0", "Promises Treatment Center"): "REHAB", ("a1:1", "rehab"): "REHAB", ("b2:0", "rehab facility"): "REHAB",
    ("c3:0", "Lindsay Lohan"): "LOHAN", ("c3:1", "actress"): "LOHAN", ("c3:0", "checked into"): "LOHAN-CHECKIN",
    ("e5:0", "Yushu earthquake"): "QUAKE",
}


def write_labelled_corpus(source: Path, target: Path) -> Path:
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        obj["split"] = "dev" if obj["doc_id"] == "e5" else "train"
        for i, m in enumerate(obj.get("mentions") or []):
            m["cluster"] = CLUSTERS.get((obj["id"], m["text"]), f"{obj['id']}-single-{i}")
        lines.append(json.dumps(obj))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def toy_topics(corpus: Path) -> list[Topic]:
    """One topic per labelled mention of the corpus (train and dev), labelled with its cluster."""
    topics = []
    for line in corpus.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        for m in obj.get("mentions") or []:
            topics.append(Topic(qid=f"{obj['id']}@{m['start']}", text=obj["text"], start=m["start"], end=m["end"],
                                doc_id=obj["doc_id"], passage_id=obj["id"], kind=m["kind"],
                                meta={"cluster": m["cluster"]}))
    return topics
