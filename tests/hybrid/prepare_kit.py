"""Tiny collections, labels and a recipe for the prepare / model-store tests (imported by test_prepare_*).

The recipe is hybrid-dense-net in miniature: a dense system (index ``dense/tiny``, the set's ``dense/encoder``)
inside the raw-text safety net, then a logistic LTR model over a few cheap features.
"""

from __future__ import annotations

import json
from pathlib import Path

from dense_toy import toy_topics, write_labelled_corpus

TINY_FEATURES = """name = "tiny"
[groups.string]
features = ["mention_exact", "mention_token_jaccard"]
[groups.first_stage]
features = ["fs_score", "fs_reciprocal_rank"]
normalise = { fs_score = "query_zscore" }
"""


def write_recipe(folder: Path, name: str = "tiny-dense-net") -> Path:
    (folder / "tiny-features.toml").write_text(TINY_FEATURES)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[system]\ntype = "pipeline"\n'
        'first = { type = "safety-net", base = { type = "dense", index = "dense/tiny" } }\n'
        f'rerankers = [{{ type = "ltr", model = "ltr/{name}", featureset = "{folder / "tiny-features.toml"}", '
        'learner = "logistic", depth = 5 }]\n')
    return path


def write_labels(tiny_corpus: Path, folder: Path) -> tuple[Path, Path, Path]:
    """The labelled tiny corpus (train split; document e5 is dev), its queries and qrels from the clusters."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = write_labelled_corpus(tiny_corpus, folder / "labelled.jsonl")
    labelled = [t for t in toy_topics(corpus) if t.doc_id != "e5"]  # train labels only
    members: dict[str, set[str]] = {}
    for t in labelled:
        members.setdefault(t.meta["cluster"], set()).add(t.passage_id)
    topics = [t for t in labelled if members[t.meta["cluster"]] - {t.passage_id}]  # those with a relevant passage
    queries, qrels = [], []
    for t in topics:
        queries.append(json.dumps({"qid": t.qid, "passage_id": t.passage_id, "start": t.start, "end": t.end,
                                   "kind": t.kind, "doc_id": t.doc_id, "cluster": t.meta["cluster"]}))
        for pid in sorted(members[t.meta["cluster"]] - {t.passage_id}):
            qrels.append(f"{t.qid} 0 {pid} 1")
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n")
    (folder / "qrels.txt").write_text("\n".join(qrels) + "\n")
    return corpus, folder / "queries.jsonl", folder / "qrels.txt"


def write_other_collection(tiny_corpus: Path, target: Path, prefix: str) -> Path:
    """The tiny corpus as another collection: every passage and document id rewritten, no annotation."""
    lines = []
    for line in tiny_corpus.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        lines.append(json.dumps({"id": prefix + obj["id"], "doc_id": prefix + obj["doc_id"], "text": obj["text"]}))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def write_search_topics(target: Path, prefix: str) -> Path:
    target.write_text(json.dumps({"qid": "q-reid", "text": "Actress <m> Tara Reid </m> checked into rehab.",
                                  "doc_id": prefix + "zz", "kind": "entity"}) + "\n")
    return target
