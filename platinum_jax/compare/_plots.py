"""Pictures of a comparison: a forest plot of accuracies and a heat map of P(A > B)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._paired import p_better_matrix

__all__ = ["forest_plot", "p_better_heatmap"]


def forest_plot(acc: pd.DataFrame, group: str, *, ax=None, max_models: int = 60):
    """Accuracy of each model in ``group`` (a frame from :func:`accuracy`) with its interval,
    best model on top; at most ``max_models`` (the best) are drawn.  Returns the figure."""
    import matplotlib.pyplot as plt

    sub = acc.xs(group, level="group").sort_values("accuracy").tail(max_models)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 1.2 + 0.22 * len(sub)))
    pos = np.arange(len(sub))
    err = np.vstack([sub["accuracy"] - sub["lo"], sub["hi"] - sub["accuracy"]])
    ax.errorbar(sub["accuracy"], pos, xerr=err, fmt="o", ms=3, color="#1f4e79",
                ecolor="#7f9fbf", capsize=2)
    ax.set_yticks(pos, sub.index, fontsize=7)
    method, level = sub["method"].iat[0], sub["level"].iat[0]
    ax.set_xlabel(f"accuracy ({level:.0%} {method} interval)")
    ax.set_title(group, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.figure.tight_layout()
    return ax.figure


def p_better_heatmap(pairs: pd.DataFrame, group: str, *, acc: pd.DataFrame | None = None,
                     mark: str = "significant_bh", ax=None, max_models: int = 40):
    """P(row model > column model) in ``group`` (a frame from :func:`compare_pairs`), models
    ordered by accuracy (from ``acc`` when given, else by their mean P(better)); pairs whose
    ``mark`` column is true (default: significant after Benjamini-Hochberg) carry a dot."""
    import matplotlib.pyplot as plt

    mat = p_better_matrix(pairs, group)
    if acc is not None:
        order = acc.xs(group, level="group")["accuracy"].reindex(mat.index)
    else:
        order = mat.mean(axis=1)
    names = list(order.sort_values(ascending=False).index[:max_models])
    mat = mat.loc[names, names]
    sig = pd.DataFrame(False, index=names, columns=names)
    sub = pairs.xs(group, level="group")
    for (a, b), flag in sub[mark].items():
        if a in sig.index and b in sig.index:
            sig.loc[a, b] = sig.loc[b, a] = bool(flag)
    if ax is None:
        side = 2.5 + 0.2 * len(names)
        _, ax = plt.subplots(figsize=(side + 1.2, side))
    im = ax.imshow(mat.to_numpy(float), cmap="RdBu_r", vmin=0, vmax=1)
    r, c = np.nonzero(sig.to_numpy())
    ax.scatter(c, r, s=4, c="k", marker="o", label=f"{mark.replace('_', ' ')}")
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=6)
    ax.set_yticks(range(len(names)), names, fontsize=6)
    ax.set_title(f"{group}: P(row > column)", fontsize=9)
    ax.figure.colorbar(im, ax=ax, fraction=0.04)
    ax.figure.tight_layout()
    return ax.figure
