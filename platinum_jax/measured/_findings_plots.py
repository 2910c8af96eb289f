"""Figures of the reproduced findings (matplotlib, Agg backend, written as PNG).

Each function takes the frame or result its finding function returns and a path (or a binary
file object, so a caller can render first and write later) and returns what it wrote to.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; no display is assumed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from platinum_jax.measured._findings_welfare import (  # noqa: E402
    QUADRANTS,
    ConceptQuadrants,
    HeldoutCheck,
    WelfareFrontier,
)

__all__ = ["plot_quantile_bands", "plot_noise_decomposition", "plot_concept_quadrants",
           "plot_welfare_frontier", "plot_welfare_robustness", "plot_heldout_check"]

_MATH, _GENERAL = "#d62728", "#1f4e79"


def _save(fig, path, dpi=130):
    fig.savefig(path, dpi=dpi, bbox_inches="tight", format="png")
    plt.close(fig)
    return path


def plot_quantile_bands(table: pd.DataFrame, path, *, value: str, value_label: str,
                        title: str):
    """Tables 1 and 2: each listed item's rank with its bootstrap rank interval (left) and its
    ``value`` (right), grouped by quantile band."""
    fig, (ax_r, ax_v) = plt.subplots(1, 2, figsize=(12, 0.22 * len(table) + 1.5), sharey=True)
    y = np.arange(len(table))[::-1]
    colours = plt.get_cmap("viridis")(np.linspace(0.1, 0.9, table["quantile"].nunique()))
    band = pd.factorize(table["quantile"])[0]
    rank, lo, hi = (table[c].to_numpy(float) for c in ("rank", "rank_lo", "rank_hi"))
    ax_r.hlines(y, lo, hi, color="0.6", lw=1)  # a rank may fall outside its bootstrap interval
    ax_r.scatter(rank, y, c=colours[band], s=18, zorder=3)
    ax_r.set_xlabel("rank (ascending) with [2.5, 97.5] % bootstrap interval")
    ax_v.scatter(table[value], y, c=colours[band], s=18)
    ax_v.set_xscale("log")
    ax_v.set_xlabel(value_label)
    labels = [f"{b} {d}" for b, d in zip(table["benchmark"], table["doc_id"], strict=True)]
    ax_r.set_yticks(y, labels, fontsize=6)
    for q, c in zip(pd.unique(table["quantile"]), colours, strict=True):
        ax_v.scatter([], [], color=c, label=f"quantile {q:.0%}")
    ax_v.legend(fontsize=7, loc="upper right")
    fig.suptitle(title)
    return _save(fig, path)


def plot_noise_decomposition(table: pd.DataFrame, path, *, checkpoints: int = 10):
    """Table 4: median σ̂ and median Z = σ̂/√(p̂(1−p̂)) per family, with the binomial floor
    1/√K; the right panel shows the gold/runner-up ratio on items the model gets right."""
    fig, (ax_s, ax_m) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(table))
    ax_s.bar(x - 0.2, table["median_sigma"], 0.4, label="median σ̂", color="0.55")
    ax_s.bar(x + 0.2, table["median_sigma_z"], 0.4, label="median Z", color="#1f77b4")
    ax_s.axhline(1 / np.sqrt(checkpoints), ls="--", color="k", lw=1,
                 label=f"binomial floor 1/√{checkpoints}")
    ax_s.set_xticks(x, table.index)
    ax_s.legend(fontsize=8)
    ax_s.set_title("Bernoulli component")
    ax_m.bar(x, (1 - table["median_log_ratio_won"]).abs(), color="#ff7f0e")
    ax_m.set_xticks(x, table.index)
    ax_m.set_ylabel("|1 − median gold/runner-up ratio| (p̂ > 0.5)")
    ax_m.set_yscale("log")
    ax_m.set_title("Margin component")
    fig.tight_layout()
    return _save(fig, path)


def plot_concept_quadrants(result: ConceptQuadrants, path, *, threshold: float = 3.5):
    """Figure 2: kept GWAs on (p_auto, p_aug), point size by the share of items the judge
    loads on them, one panel per perspective."""
    c = result.concepts
    fig, axes = plt.subplots(1, 2, figsize=(15, 7.5), sharey=True)
    for ax, persp in zip(axes, ("automation", "augmentation"), strict=True):
        for q, (xlo, ylo) in {"low": (1, 1), "automate": (threshold, 1),
                              "augment": (1, threshold), "green": (threshold, threshold)}.items():
            w = (5 - threshold) if xlo == threshold else (threshold - 1)
            h = (5 - threshold) if ylo == threshold else (threshold - 1)
            ax.add_patch(plt.Rectangle((xlo, ylo), w, h, color=QUADRANTS[q][1], alpha=0.1, lw=0))
            ax.text(xlo + 0.05, ylo + h - 0.05, QUADRANTS[q][0], color=QUADRANTS[q][1],
                    va="top", fontsize=10, fontweight="bold")
        frac = c[f"loading_{persp}"]
        ax.scatter(c["p_auto_15"], c["p_aug_15"], s=30 + 600 * frac, color="0.35",
                   edgecolor="k", alpha=0.85, zorder=3)
        for cid, row in c[frac >= 0.05].iterrows():
            ax.annotate(f"{cid} ({row[f'loading_{persp}']:.0%})",
                        (row["p_auto_15"], row["p_aug_15"]), xytext=(6, 4),
                        textcoords="offset points", fontsize=7)
        ax.axvline(threshold, ls="--", color="0.3", lw=1)
        ax.axhline(threshold, ls="--", color="0.3", lw=1)
        ax.set(xlim=(0.9, 5.1), ylim=(0.9, 5.1), xlabel="p_auto (worker automation desire)",
               title=f"{persp}-framed judge ranking (n = {result.n_items[persp]} items)")
        ax.set_aspect("equal")
    axes[0].set_ylabel("p_aug (worker augmentation desire)")
    fig.tight_layout()
    return _save(fig, path)


def plot_welfare_frontier(result: WelfareFrontier, path):
    """Figure 3: items in (w_auto, w_aug) with the Pareto frontier (left) and the marginal
    ECDFs of math and general items (right)."""
    it = result.items
    math, gen = it[it["family"] == "math"], it[it["family"] == "general"]
    fig = plt.figure(figsize=(15, 7))
    grid = fig.add_gridspec(2, 2, width_ratios=[2, 1])
    ax = fig.add_subplot(grid[:, 0])
    dom = gen["n_dominated_by_math"] > 0
    ax.scatter(gen.loc[~dom, "w_auto"], gen.loc[~dom, "w_aug"], s=14, color="#7fb3d5",
               label=f"general, undominated by math (n={int((~dom).sum())})")
    ax.scatter(gen.loc[dom, "w_auto"], gen.loc[dom, "w_aug"], s=14, marker="s",
               color=_GENERAL, label=f"general, dominated by ≥1 math (n={int(dom.sum())})")
    ax.scatter(math["w_auto"], math["w_aug"], s=28, marker="D", color=_MATH, edgecolor="k",
               label=f"math (n={len(math)})")
    front = it[it["on_frontier"]].sort_values("w_auto")
    ax.step(front["w_auto"], front["w_aug"], where="post", color="k", lw=2)
    ax.scatter(front["w_auto"], front["w_aug"], s=120, facecolor="none", edgecolor="k", lw=1.5,
               label=f"Pareto frontier (n={len(front)})")
    ax.set(xlabel="w_auto (rescaled to [1, 5])", ylabel="w_aug (rescaled to [1, 5])",
           title="Welfare and the Pareto frontier")
    ax.legend(fontsize=8, loc="lower left")
    for row, axis in enumerate(("w_auto", "w_aug")):
        ax_e = fig.add_subplot(grid[row, 1])
        for sub, colour, name in ((math, _MATH, "math"), (gen, _GENERAL, "general")):
            x = np.sort(sub[axis].to_numpy())
            ax_e.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=colour,
                      label=f"{name} (n={len(x)})")
        gap = result.axes.loc[axis]
        ax_e.set(xlabel=axis, ylabel="ECDF",
                 title=f"gap {gap['gap_general_minus_math']:+.3f} [{gap['gap_ci_lo']:+.3f}, "
                       f"{gap['gap_ci_hi']:+.3f}], p = {gap['cluster_permutation_p']:.2g}")
        ax_e.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return _save(fig, path)


def plot_welfare_robustness(table: pd.DataFrame, path):
    """Robustness set 1: rank correlations with the headline welfare and frontier Jaccard,
    per variant."""
    cols = ["spearman_auto", "spearman_aug", "kendall_auto", "kendall_aug", "frontier_jaccard"]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = np.arange(len(table))
    for i, c in enumerate(cols):
        ax.bar(x + (i - 2) * 0.16, table[c], 0.16, label=c)
    ax.set_xticks(x, table.index, rotation=15)
    ax.set_ylim(0, 1)
    ax.set_ylabel("agreement with the headline welfare")
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    ax.set_title("Robustness set 1: pipeline perturbations")
    fig.tight_layout()
    return _save(fig, path)


def plot_heldout_check(result: HeldoutCheck, path):
    """Robustness set 2: % of top-k slot mass per quadrant, per rater and perspective (left);
    math–general mean welfare gaps per rater (right)."""
    mass = result.loading_mass
    fig, (ax_m, ax_g) = plt.subplots(1, 2, figsize=(13, 4.5),
                                     gridspec_kw={"width_ratios": [2, 1]})
    x = np.arange(len(mass))
    bottom = np.zeros(len(mass))
    for q, (label, colour) in QUADRANTS.items():
        ax_m.bar(x, mass[q], bottom=bottom, color=colour, label=label)
        bottom += mass[q].to_numpy()
    ax_m.set_xticks(x, [f"{r}\n{p}" for r, p in mass.index], fontsize=8)
    ax_m.set_ylabel("% of top-5 slots")
    ax_m.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    gaps = result.gaps
    xg = np.arange(len(gaps))
    ax_g.bar(xg - 0.2, gaps["gap_w_auto"], 0.4, label="w_auto")
    ax_g.bar(xg + 0.2, gaps["gap_w_aug"], 0.4, label="w_aug")
    ax_g.axhline(0, color="k", lw=0.8)
    ax_g.set_xticks(xg, gaps.index)
    ax_g.set_ylabel("general − math mean welfare (raw units)")
    ax_g.legend(fontsize=8)
    fig.suptitle("Robustness set 2: held-out raters")
    fig.tight_layout()
    return _save(fig, path)
