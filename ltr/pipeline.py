"""From topics + a first-stage run to feature matrices and reranked runs.

:class:`LtrReranker` is a :class:`~hybrid.core.stage.Reranker` stage, so a trained model
composes with any first stage: ``MultiFieldBM25(index) >> LtrReranker(model, index)``. Hits below
the rerank depth keep their first-stage order, after the reranked ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from features.pairs.registry import lookup
from hybrid.core.gcpause import paused_collector
from hybrid.core.params import Param
from hybrid.core.records import Rankings, Topic
from hybrid.core.stage import Reranker
from indexes.sparse_index import SparseIndex
from ltr.batch import build_batch
from ltr.matrix import FeatureMatrix, extract, start_early
from ltr.model import TrainedModel
from ltr.resources import IndexResources

log = logging.getLogger(__name__)

#: How many hits of a run LTR extracts features for and reorders (a recipe's ltr reranker, hybrid.recipe_train,
#: python -m hybrid.ltr --depth).
DEPTH = Param("depth", int, 100, "head of the input run it reorders", minimum=1)


def extract_matrix(resources: IndexResources, topics: Sequence[Topic], run: Rankings, names: Sequence[str],
                   depth: int = DEPTH.default, progress: bool = False, chunk: int = 500,
                   options: dict[str, dict] | None = None) -> FeatureMatrix:
    """Features of the top ``depth`` hits of every topic, in chunks of ``chunk`` topics (bounded memory).

    ``options``: provider options by group (a feature set's ``provider_options``).
    """
    import numpy as np

    parts = []
    for lo in range(0, len(topics), chunk):
        with paused_collector():  # millions of long-lived acyclic objects: full collections found next to nothing
            # searches that need the queries alone (BM25F's, in Java) run beside the building of the pairs
            early = start_early(resources, topics[lo : lo + chunk], names, options)
            batch = build_batch(resources, topics[lo : lo + chunk], run, depth, progress=False)
            parts.append(extract(batch, names, options, early))
        if progress:
            log.info("features: %d/%d queries", min(lo + chunk, len(topics)), len(topics))
    if not parts:
        batch = build_batch(resources, [], run, depth)
        return extract(batch, names, options)
    return FeatureMatrix(
        np.concatenate([p.qids for p in parts]), np.concatenate([p.docids for p in parts]),
        np.concatenate([p.X for p in parts]), list(names), np.concatenate([p.scores for p in parts]),
        np.concatenate([p.spans for p in parts]),
    )


class LtrReranker(Reranker):
    """Rerank the top ``depth`` hits of a run with a trained model."""

    def __init__(self, model: TrainedModel, index: SparseIndex | IndexResources, depth: int = DEPTH.default):
        model.verify_features()
        self.model, self.depth = model, depth
        self.resources = index if isinstance(index, IndexResources) else IndexResources(index)
        self.name = f"ltr-{model.learner}"
        self.timing: dict[str, float] = {}

    def rerank(self, topics: list[Topic], run: Rankings) -> Rankings:
        started = time.perf_counter()
        fs = self.model.featureset
        matrix = extract_matrix(self.resources, topics, run, fs.feature_names, self.depth,
                                options=fs.provider_options)
        extracted = time.perf_counter()
        reranked = matrix.to_run(self.model.score(matrix))
        scored = time.perf_counter()
        self.timing = {"features_s": extracted - started, "score_s": scored - extracted, "queries": len(topics)}
        out: Rankings = {}
        for topic in topics:
            head = reranked.get(topic.qid, [])
            seen = {h.docid for h in head}
            tail = [h for h in run.get(topic.qid, []) if h.docid not in seen]
            out[topic.qid] = self.keep_tail(head, tail)
        return out


def load_or_extract(resources: IndexResources, topics: Sequence[Topic], run: Rankings, names: Sequence[str], depth: int,
                    cache_dir: str | Path | None, key: dict, progress: bool = False,
                    options: dict[str, dict] | None = None) -> FeatureMatrix:
    """Extract features, or reuse a cached matrix made from the same inputs with (at least) these features.

    ``key`` names the inputs (index, topics/run/spans checksums); the feature implementations'
    versions are part of the key through the fingerprint of each feature.
    """
    import hashlib
    import json

    versions = {n: [lookup(n)[1].group, lookup(n)[1].version] for n in names}
    if cache_dir is not None:
        ident = hashlib.sha256(json.dumps({**key, "depth": depth, "qids": [t.qid for t in topics],
                                           **({"options": options} if options else {})},
                                          sort_keys=True, default=str).encode()).hexdigest()[:20]
        path = Path(cache_dir) / f"features-{ident}.npz"
        if path.is_file():
            matrix, meta = FeatureMatrix.load(path)
            cached_versions = meta.get("versions", {})
            if all(n in matrix.names and cached_versions.get(n) == versions[n] for n in names):
                log.info("features: reusing %s", path)
                return matrix.columns(list(names))
    started = time.perf_counter()
    matrix = extract_matrix(resources, topics, run, names, depth, progress, options=options)
    seconds = time.perf_counter() - started
    if cache_dir is not None:
        matrix.save(path, {"versions": versions, "key": key, "seconds": seconds, "queries": len(topics)})
    return matrix
