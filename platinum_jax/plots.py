"""Figures shared by the command line and the notebooks (matplotlib, written as PNG): optimal
against uniform weights, and a Rosetta stitching fit's capabilities over time and residuals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only; no display is assumed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

if TYPE_CHECKING:
    from platinum_jax.stitching import StitchingFit

__all__ = ["plot_capabilities", "plot_posterior_capabilities", "plot_ppc", "plot_residuals",
           "plot_weights"]


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


def plot_posterior_capabilities(fit, *, path=None, ax=None, label_top: int = 8):
    """Posterior capabilities C_m of a Bayesian stitching fit
    (:class:`~platinum_jax.stitching.BayesStitchingFit`: its ``capabilities`` frame,
    ``likelihood`` and ``anchor``) against release date, with 94% HDI bars; returns the figure.

    Models without a release date are left out (their count is in the title).  The
    ``label_top`` most capable models are labelled.  Writes a PNG when ``path`` is given.
    """
    caps = fit.capabilities
    dated = caps.dropna(subset=["release_date"]).sort_values("release_date")
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 5))
    else:
        fig = ax.figure
    x = pd.to_datetime(dated["release_date"])
    ax.errorbar(
        x,
        dated["mean"],
        yerr=[dated["mean"] - dated["hdi_3%"], dated["hdi_97%"] - dated["mean"]],
        fmt="o",
        ms=3,
        lw=0.8,
        alpha=0.7,
        capsize=0,
    )
    for name, row in dated.nlargest(label_top, "mean").iterrows():
        ax.annotate(
            name,
            (pd.Timestamp(row["release_date"]), row["mean"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    missing = len(caps) - len(dated)
    title = (f"Capabilities (posterior mean, 94% HDI), {fit.likelihood} likelihood, anchor "
             f"{fit.anchor.describe()}")
    if missing:
        title += f"\n{missing} model(s) without a release date not shown"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("model release date")
    ax.set_ylabel("capability C_m")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_ppc(fit, *, path=None, ax=None):
    """Posterior predictive check of a Bayesian stitching fit (its ``idata`` with groups
    ``posterior_predictive`` and ``observed_data``, and ``likelihood``): observed score against
    the predictive mean and 94% interval, on the score scale (count likelihoods: k / n).

    Points off the diagonal by more than their interval are scores the model does not
    reproduce.  Returns the figure.
    """
    pp = fit.idata.posterior_predictive["y"].values.reshape(-1, fit.table.n_scores)
    obs = fit.idata.observed_data["y"].values
    lo, hi = np.quantile(pp, [0.03, 0.97], axis=0)
    mean = pp.mean(0)
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 5.5))
    else:
        fig = ax.figure
    outside = (obs < lo) | (obs > hi)
    ax.errorbar(obs, mean, yerr=[mean - lo, hi - mean], fmt="o", ms=2, lw=0.5, alpha=0.5)
    ax.plot([0, 1], [0, 1], color="k", lw=0.8)
    ax.set_xlabel("observed score")
    ax.set_ylabel("posterior predictive (mean, 94% interval)")
    ax.set_title(
        f"{fit.likelihood}: {outside.mean():.1%} of scores outside their 94% interval", fontsize=9
    )
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_capabilities(
    fit: StitchingFit,
    uncertainty: pd.DataFrame | None = None,
    *,
    ax=None,
    label_top: int = 4,
):
    """Capability ``C_m`` against release date (error bars from ``uncertainty``) and benchmark
    difficulties ``D_b`` against benchmark release date, on one axis (the paper's Figure 1).

    ``fit`` is a :class:`platinum_jax.stitching.StitchingFit`; ``uncertainty`` is a frame from
    its :func:`~platinum_jax.stitching.laplace`, :func:`~platinum_jax.stitching.bootstrap`
    (``.summary``) or :func:`~platinum_jax.stitching.sensitivity`; its ``lower``/``upper`` rows of kind ``capability`` give the bars (for
    the sensitivity analysis, the interval on which the loss stays within 5% of its minimum).
    Returns the matplotlib axis.
    """
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
