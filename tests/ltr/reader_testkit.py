"""Helpers for the reader tests: a cluster-labelled copy of the tiny corpus and its queries.

The tiny corpus has within-document chains only; here chains that denote the same entity/event
across documents get one cluster id, so training pairs and span gold can be derived from it.
"""

from __future__ import annotations

import json
from pathlib import Path

CLUSTER_OF_CHAIN = {
    "a1#c0": "REID", "b2#c0": "REID",
    "a1#c1": "REHAB", "b2#c1": "REHAB",
    "a1#c2": "CLINIC", "b2#c2": "CLINIC",
    "c3#c0": "LOHAN", "c3#c1": "LOHAN_REHAB", "e5#c0": "QUAKE",
}

QUERIES = [
    {"qid": "ev-rehab-a", "passage_id": "a1:0", "start": 18, "end": 30, "doc_id": "a1", "kind": "event"},
    {"qid": "en-reid-a", "passage_id": "a1:0", "start": 8, "end": 17, "doc_id": "a1", "kind": "entity"},
    {"qid": "en-reid-b", "passage_id": "b2:0", "start": 0, "end": 9, "doc_id": "b2", "kind": "entity"},
    {"qid": "ev-rehab-b", "passage_id": "b2:0", "start": 10, "end": 17, "doc_id": "b2", "kind": "event"},
    {"qid": "en-lohan", "passage_id": "c3:0", "start": 0, "end": 13, "doc_id": "c3", "kind": "entity"},
]


def labelled_corpus(source: Path, target: Path, dev_docs: tuple[str, ...] = ()) -> Path:
    """Copy ``source`` adding ``cluster`` to mentions and ``split`` (train, or dev for ``dev_docs``)."""
    rows = []
    for line in source.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        obj["split"] = "dev" if obj["doc_id"] in dev_docs else "train"
        for m in obj.get("mentions", []):
            m["cluster"] = CLUSTER_OF_CHAIN.get(m["chain"], m["chain"])
        rows.append(json.dumps(obj))
    target.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return target


def labelled_queries(corpus: Path, target: Path) -> Path:
    clusters = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        for m in obj.get("mentions", []):
            clusters[(obj["id"], m["start"], m["end"])] = m["cluster"]
    rows = [json.dumps(dict(q, cluster=clusters[(q["passage_id"], q["start"], q["end"])])) for q in QUERIES]
    target.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return target
