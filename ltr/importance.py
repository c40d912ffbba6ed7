"""Feature importance of a trained model: a table and a PNG bar chart.

Two views: the learner's *native* importance (split gain for trees, |coefficient| on standardised
features for linear models), and *permutation* importance - the drop in AP@100 when one feature's
values are shuffled across the evaluation matrix - which is comparable across learners.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybrid.core.atomic import atomic_write
from ltr.matrix import FeatureMatrix
from ltr.metrics import fast_ap
from ltr.model import TrainedModel


@dataclass
class Importance:
    feature: str
    group: str
    native: float  # normalised to sum 1 (NaN when the learner has none)
    permutation: float | None = None  # mean AP@100 drop when shuffled (None if not computed)


def importance(model: TrainedModel, matrix: FeatureMatrix | None = None, n_relevant: np.ndarray | None = None,
               seed: int = 0, repeats: int = 1) -> list[Importance]:
    names = model.featureset.feature_names
    native = model.scorer.importance()
    if native is None:
        native_n = np.full(len(names), np.nan)
    else:
        total = float(np.sum(native))
        native_n = np.asarray(native, dtype=np.float64) / total if total > 0 else np.zeros(len(names))
    perm = [None] * len(names)
    if matrix is not None and matrix.labels is not None and n_relevant is not None:
        matrix = matrix.columns(names)
        offsets = matrix.offsets
        Xn = model.normaliser.transform(matrix.X, offsets)
        base = fast_ap(model.scorer.predict(Xn), matrix.labels, offsets, n_relevant).mean()
        rng = np.random.default_rng(seed)
        for j in range(len(names)):
            drops = []
            for _ in range(repeats):
                Xp = Xn.copy()
                Xp[:, j] = Xp[rng.permutation(len(Xp)), j]
                drops.append(base - fast_ap(model.scorer.predict(Xp), matrix.labels, offsets, n_relevant).mean())
            perm[j] = float(np.mean(drops))
    rows = [Importance(n, model.featureset.group_of(n), float(native_n[i]), perm[i]) for i, n in enumerate(names)]
    key = (lambda r: -r.permutation) if perm[0] is not None else (lambda r: -np.nan_to_num(r.native))
    return sorted(rows, key=key)


def group_totals(rows: list[Importance]) -> dict[str, tuple[float, float | None]]:
    out: dict[str, list] = {}
    for r in rows:
        tot = out.setdefault(r.group, [0.0, None])
        tot[0] += 0.0 if np.isnan(r.native) else r.native
        if r.permutation is not None:
            tot[1] = (tot[1] or 0.0) + r.permutation
    return {g: (v[0], v[1]) for g, v in out.items()}


def format_importance(rows: list[Importance], top: int | None = None) -> str:
    lines = ["| feature | group | native (share) | permutation ΔAP@100 |", "|---|---|---|---|"]
    for r in rows[:top]:
        perm = "" if r.permutation is None else f"{r.permutation:+.4f}"
        lines.append(f"| {r.feature} | {r.group} | {r.native:.4f} | {perm} |")
    return "\n".join(lines)


def plot_importance(rows: list[Importance], path: str, top: int = 30, title: str = "") -> None:
    """Horizontal bar chart of the top features (permutation importance when present), PNG, atomic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    use_perm = rows and rows[0].permutation is not None
    shown = rows[:top][::-1]
    values = [r.permutation if use_perm else r.native for r in shown]
    groups = sorted({r.group for r in shown})
    colours = {g: plt.cm.tab10(i % 10) for i, g in enumerate(groups)}
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(shown) + 1.2))
    ax.barh([r.feature for r in shown], values, color=[colours[r.group] for r in shown])
    ax.set_xlabel("AP@100 drop when permuted" if use_perm else "share of native importance")
    ax.set_title(title or "feature importance")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[g]) for g in groups]
    ax.legend(handles, groups, loc="lower right", fontsize=7)
    fig.tight_layout()
    with atomic_write(path, "wb") as out:
        fig.savefig(out, format="png", dpi=110)
    plt.close(fig)
