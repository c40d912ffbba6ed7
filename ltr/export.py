"""Export feature matrices in SVMlight / LETOR format, for RankLib and other LTR tools.

One line per (query, passage)::

    <label> qid:<n> 1:<v1> 2:<v2> ... # qid=<original qid> docid=<passage id> rank=<first-stage rank>

LETOR needs integer query ids, so queries are numbered 1, 2, ... in file order and the original id
goes into the comment. Feature numbers start at 1 in feature-set order; a sidecar
``<output>.features.tsv`` lists number, name, group and documentation. Missing values (NaN) are
written as 0, the sparse-format convention.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from features.pairs.registry import lookup
from hybrid.core.atomic import atomic_write
from ltr.featureset import FeatureSet
from ltr.matrix import FeatureMatrix


def export_svmlight(matrix: FeatureMatrix, featureset: FeatureSet, path: str | Path,
                    normalised: np.ndarray | None = None, zero_based: bool = False) -> int:
    """Write the matrix (or ``normalised`` values of the same shape); returns the number of lines."""
    matrix = matrix.columns(featureset.feature_names)
    X = np.nan_to_num(matrix.X if normalised is None else normalised)
    labels = matrix.labels if matrix.labels is not None else np.zeros(len(matrix), dtype=np.int64)
    base = 0 if zero_based else 1
    offsets = matrix.offsets
    with atomic_write(path) as out:
        out.write(f"# feature set {featureset.name} fingerprint {featureset.fingerprint()} "
                  f"features {len(featureset.feature_names)}\n")
        for qn in range(len(offsets) - 1):
            for rank, row in enumerate(range(offsets[qn], offsets[qn + 1]), start=1):
                values = " ".join(f"{j + base}:{X[row, j]:.6g}" for j in range(X.shape[1]))
                out.write(f"{int(labels[row])} qid:{qn + 1} {values} # qid={matrix.qids[row]} "
                          f"docid={matrix.docids[row]} rank={rank}\n")
    with atomic_write(f"{path}.features.tsv") as out:
        out.write("number\tname\tgroup\tdoc\n")
        for j, name in enumerate(featureset.feature_names):
            _, feat = lookup(name)
            out.write(f"{j + base}\t{name}\t{featureset.group_of(name)}\t{feat.doc}\n")
    return len(matrix)
