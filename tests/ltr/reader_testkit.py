"""Helpers for the reader tests: a cluster-labelled copy of the tiny corpus and its queries; query/passage pairs
and the ``hybrid.reader rerank`` runs that the precision and backend tests compare setting by setting.

The tiny corpus has within-document chains only; here chains that denote the same entity/event
across documents get one cluster id, so training pairs and span gold can be derived from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.formats.topics import read_topics
from hybrid.core.records import Topic
from hybrid.retrieval.sparse import PassageBM25
from ltr.reader.store import new_reader, save_reader

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


PAIR_TOPICS = [Topic(qid="storm", text="A storm hit the coast on Tuesday.", start=2, end=7),
               Topic(qid="reid", text="Tara Reid entered rehab at the Promises clinic.", start=0, end=9)]
PAIR_PASSAGES = ["The storm struck the coast.",
                 "Rescue workers searched the rubble in Yushu for survivors for days.",
                 "Reid checked into Promises in Malibu on Tuesday.", "The actress went to rehab again, her agent said."]


def pairs() -> tuple[list[Topic], list[str]]:
    """Every (topic, passage) of PAIR_TOPICS x PAIR_PASSAGES, as score_pairs takes them."""
    return [t for t in PAIR_TOPICS for _ in PAIR_PASSAGES], PAIR_PASSAGES * len(PAIR_TOPICS)


def rerank_args(tiny_bert, tiny_index: Path, sparse_index, data_dir: Path, tmp_path: Path) -> list[str]:
    """``hybrid.reader rerank`` arguments (no ``--output``): a seeded untrained reader saved under ``tmp_path``
    reranking the top 4 of BM25's top 6 for the tiny topics."""
    model = save_reader(new_reader(tiny_bert, seed=2), tmp_path / "reader")
    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    write_run(PassageBM25(sparse_index, k=6)(topics), tmp_path / "in.trec")
    return ["rerank", "--model", str(model), "--run", str(tmp_path / "in.trec"), "--topics",
            str(data_dir / "tiny_topics.jsonl"), "--index", str(tiny_index), "--rerank-depth", "4", "--quiet"]


def rerank_each(args: list[str], settings: dict[str, list[str]], tmp_path: Path) -> tuple[dict, dict]:
    """``hybrid.reader rerank args`` once per setting (name -> extra flags), each into ``tmp_path/<name>.trec``:
    the runs and their meta files, by name."""
    from hybrid.cli.reader import main as reader_cli

    runs, metas = {}, {}
    for name, extra in settings.items():
        assert reader_cli([*args, *extra, "--output", str(tmp_path / f"{name}.trec")]) == 0
        runs[name] = read_run(tmp_path / f"{name}.trec")
        metas[name] = json.loads((tmp_path / f"{name}.trec.meta.json").read_text())
    return runs, metas


def reranked_scores(run: dict) -> dict:
    """(qid, passage id) -> score of the reranked top 4 of each query."""
    return {(q, h.docid): h.score for q, hits in run.items() for h in hits[:4]}
