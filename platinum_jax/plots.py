"""Figures shared by the command line and the notebooks (matplotlib, written as PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is assumed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_posterior_capabilities", "plot_ppc", "plot_weights"]


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
    (:class:`~platinum_jax.stitching.bayes.BayesStitchingFit`: its ``capabilities`` frame,
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
    the predictive mean and 94% interval.

    Points off the diagonal by more than their interval are scores the model does not
    reproduce.  Binomial fits are shown on the score scale (k / n).  Returns the figure.
    """
    pp = fit.idata.posterior_predictive["y"].values.reshape(-1, fit.table.n_scores)
    obs = fit.idata.observed_data["y"].values
    if fit.likelihood in ("binomial", "beta_binomial"):  # counts k of n_items
        n = fit.idata.constant_data["n_items"].values
        pp, obs = pp / n, obs / n
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
