"""Which labelled collection the models of a plan learn from, and whether it is the target collection.

A labelled collection is a corpus JSONL with gold mentions (``cluster`` per mention), its training queries
(JSONL, ``cluster`` per query) and qrels. When its passages are exactly the target index's (same ids, same
texts: ECB+'s ``corpus.jsonl`` against an index of ``corpus.raw.jsonl``), the models are trained in place on
the target index, as the documented chain does; otherwise a raw index of the labelled collection is built in
the store and the models are trained there. A corpus whose lines carry ``split`` gives labels from its
``train`` lines only (ECB+'s gold corpus also holds dev and test labels).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.labelled import fingerprint as source_fingerprint
from hybrid.core.formats.labelled import materialize_training_set
from hybrid.recipes.plan import TrainingData, corpus_fingerprint
from hybrid.store.models import store_root
from indexes.lucene import METADATA
from indexes.sparse_index import SparseIndex

_NAME = re.compile(r"[^A-Za-z0-9._-]+")
#: Where labelled collections are materialised (corpus, derived queries and qrels) in the store.
TRAINING_SETS = "training-sets"


def _lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _has_split(corpus: Path) -> bool:
    with open(corpus, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                return "split" in json.loads(line)
            except ValueError:
                raise InputError(corpus, number, "is not a JSON object; a labelled corpus is JSONL") from None
    return False


def same_collection(corpus: Path, index: str | Path) -> bool:
    """Whether ``corpus`` holds exactly the passages of the hybrid index at ``index`` (ids and texts)."""
    try:
        meta = json.loads((Path(index) / METADATA).read_text(encoding="utf-8"))
        passages = int(meta["counts"]["passages"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if _lines(corpus) != passages:
        return False
    opened = SparseIndex(index)
    with open(corpus, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise InputError(corpus, number, "is not a JSON object; a labelled corpus is JSONL") from None
            if opened.passage_text(str(obj.get("id"))) != obj.get("text"):
                return False
    return True


def labelled_files(corpus: str | Path, topics: str | Path, qrels: str | Path, index: str | Path,
                   name: str | None = None) -> TrainingData:
    """A labelled collection given as its three files (a corpus with clusters, its queries, their qrels), checked
    against the target index: how the released ECB+ files are given, so that the models are those of the
    documented chain."""
    paths = [Path(corpus), Path(topics), Path(qrels)]
    for path, option in zip(paths, ("--train", "--train-topics", "--train-qrels"), strict=True):
        if not path.is_file():
            raise InputError(path, None, f"does not exist ({option})")
    corpus, topics, qrels = paths
    return _training_data(corpus, topics, qrels, index, name or corpus.parent.name or corpus.stem,
                          corpus_fingerprint(corpus, topics, qrels))


def training_set(source: str | Path | None, index: str | Path, name: str | None = None) -> TrainingData:
    """A labelled collection in any form :mod:`hybrid.core.formats.labelled` reads (``None``: the bundled default
    training set, ECB+ train topics), its queries and qrels derived and materialised once in the store."""
    folder = store_root() / TRAINING_SETS / source_fingerprint(source)[:16]
    made = materialize_training_set(source, folder)
    return _training_data(made.corpus, made.topics, made.qrels, index, name or made.name, made.fingerprint)


def _training_data(corpus: Path, topics: Path, qrels: Path, index: str | Path, name: str,
                   fingerprint: str) -> TrainingData:
    label = _NAME.sub("-", name).strip("-") or "training"
    return TrainingData(name=label[:60], fingerprint=fingerprint, corpus=corpus, topics=topics, qrels=qrels,
                        passages=_lines(corpus), queries=_lines(topics), in_place=same_collection(corpus, index),
                        split="train" if _has_split(corpus) else None)
