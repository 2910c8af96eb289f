"""Figures for a stitching fit: capabilities and difficulties over time, residuals per benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._fit import StitchingFit

__all__ = ["plot_capabilities", "plot_residuals"]


def plot_capabilities(
    fit: StitchingFit,
    uncertainty: pd.DataFrame | None = None,
    *,
    ax=None,
    label_top: int = 4,
):
    """Capability ``C_m`` against release date (error bars from ``uncertainty``) and benchmark
    difficulties ``D_b`` against benchmark release date, on one axis (the paper's Figure 1).

    ``uncertainty`` is a frame from :func:`laplace`, :func:`bootstrap` (``.summary``) or
    :func:`sensitivity`; its ``lower``/``upper`` rows of kind ``capability`` give the bars (for
    the sensitivity analysis, the interval on which the loss stays within 5% of its minimum).
    Returns the matplotlib axis.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 6))
    caps = fit.capabilities.dropna(subset=["release_date"])
    yerr = None
    if uncertainty is not None:
        cap_unc = uncertainty.xs("capability", level="kind").reindex(caps.index)
        lower = (caps["capability"] - cap_unc["lower"]).clip(lower=0).fillna(0)
        upper = (cap_unc["upper"] - caps["capability"]).clip(lower=0).fillna(0)
        yerr = np.vstack([lower.to_numpy(), upper.to_numpy()])
    ax.errorbar(
        caps["release_date"],
        caps["capability"],
        yerr=yerr,
        fmt="o",
        ms=4,
        alpha=0.75,
        elinewidth=0.8,
        color="tab:blue",
        label="models (capability $C_m$)",
    )
    bench = fit.benchmarks.dropna(subset=["release_date"])
    ax.scatter(
        bench["release_date"],
        bench["difficulty"],
        marker="s",
        s=30,
        color="tab:red",
        alpha=0.8,
        label="benchmarks (difficulty $D_b$)",
    )
    # Top models sit close together at the right edge: stack their labels down the left side.
    for k, (name, row) in enumerate(caps.nlargest(label_top, "capability").iterrows()):
        ax.annotate(name, (row["release_date"], row["capability"]), fontsize=7,
                    xytext=(-70, 45 - 10 * k), textcoords="offset points", ha="right",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.4"})
    for name, row in bench.nlargest(min(label_top, 5), "difficulty").iterrows():
        ax.annotate(name, (row["release_date"], row["difficulty"]), fontsize=7, color="tab:red",
                    xytext=(3, -9), textcoords="offset points")
    ax.set_xlabel("release date")
    ax.set_ylabel("position on the stitched scale")
    ax.set_title(f"Capabilities and difficulties (anchor: {fit.anchor.describe()})")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return ax


def plot_residuals(fit: StitchingFit, *, ax=None):
    """Residuals (predicted - observed) per benchmark, benchmarks ordered by difficulty."""
    import matplotlib.pyplot as plt

    res = fit.residuals
    order = fit.benchmarks.sort_values("difficulty").index
    if ax is None:
        _, ax = plt.subplots(figsize=(10, max(4, 0.22 * len(order))))
    data = [res.loc[res["benchmark"] == b, "residual"].to_numpy() for b in order]
    ax.boxplot(data, orientation="horizontal", widths=0.6, showfliers=False)
    rng = np.random.default_rng(0)  # jitter only spreads the dots for legibility
    for i, vals in enumerate(data, start=1):
        ax.scatter(vals, i + rng.uniform(-0.15, 0.15, vals.size), s=6, alpha=0.5, color="tab:blue")
    ax.set_yticks(range(1, len(order) + 1), order, fontsize=7)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xlabel("residual (predicted - observed score)")
    ax.set_title("Residuals per benchmark (easiest at the bottom)")
    ax.grid(alpha=0.3, axis="x")
    return ax
