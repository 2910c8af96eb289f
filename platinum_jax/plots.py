"""Figures shared by the command line and the notebooks (matplotlib, written as PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is assumed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_weights"]


def plot_weights(items: pd.DataFrame, concepts: pd.DataFrame, path: str | Path) -> Path:
    """Uniform against optimal weight shares, per item (left) and summed per concept (right).

    ``items`` needs columns ``concept``, ``uniform_share``, ``optimal_share`` and ``platinum``;
    ``concepts`` needs ``uniform_share`` and ``optimal_share``.  Platinum items are hatched.
    """
    path = Path(path)
    names = list(concepts.index)
    colours = dict(zip(names, plt.get_cmap("tab10").colors, strict=False))
    fig, (ax_items, ax_concepts) = plt.subplots(
        1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [2.2, 1]}
    )
    x = np.arange(len(items))
    ax_items.bar(x, items["uniform_share"], width=0.8, color="none", edgecolor="0.4",
                 linestyle="--", label="uniform")
    for i, (_, row) in enumerate(items.iterrows()):
        ax_items.bar(i, row["optimal_share"], width=0.55, color=colours[row["concept"]],
                     hatch="//" if row["platinum"] else None, edgecolor="black", linewidth=0.4)
    ax_items.set_xticks(x, items.index, rotation=70, fontsize=7)
    ax_items.set_ylabel("share of total weight")
    ax_items.set_title("Per item: optimal v* (bars; hatched = platinum) vs uniform (dashed)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[c]) for c in names]
    ax_items.legend(handles, names, fontsize=7, loc="upper right")

    xc = np.arange(len(concepts))
    ax_concepts.bar(xc - 0.2, concepts["uniform_share"], width=0.4, color="0.75", label="uniform")
    ax_concepts.bar(xc + 0.2, concepts["optimal_share"], width=0.4,
                    color=[colours[c] for c in names], label="optimal v*")
    ax_concepts.set_xticks(xc, names, rotation=30, ha="right", fontsize=8)
    ax_concepts.set_title("Per concept")
    ax_concepts.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
