"""Figures of the Bayesian stitching fit: posterior capabilities over time, and the posterior
predictive check."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._bayes_options import COUNT_LIKELIHOODS as _COUNT_LIKELIHOODS
from ._bayes_summary import _HDI_HI, _HDI_LO

if TYPE_CHECKING:
    from ._bayes_fit import BayesStitchingFit


def plot_capabilities(fit: BayesStitchingFit, *, path=None, ax=None, label_top: int = 8):
    """Posterior capabilities C_m against release date, with 94% HDI bars; returns the figure.

    Models without a release date are left out (their count is in the title).  The
    ``label_top`` most capable models are labelled.  Writes a PNG when ``path`` is given.
    """
    import matplotlib.pyplot as plt

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
        yerr=[dated["mean"] - dated[_HDI_LO], dated[_HDI_HI] - dated["mean"]],
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
    title = f"Capabilities (posterior mean, 94% HDI), {fit.likelihood} likelihood, anchor {fit.anchor.describe()}"
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


def plot_ppc(fit: BayesStitchingFit, *, path=None, ax=None):
    """Posterior predictive check: observed score against the predictive mean and 94% interval.

    Points off the diagonal by more than their interval are scores the model does not
    reproduce.  Binomial fits are shown on the score scale (k / n).  Returns the figure.
    """
    import matplotlib.pyplot as plt

    pp = fit.idata.posterior_predictive["y"].values.reshape(-1, fit.table.n_scores)
    obs = fit.idata.observed_data["y"].values
    if fit.likelihood in _COUNT_LIKELIHOODS:
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
