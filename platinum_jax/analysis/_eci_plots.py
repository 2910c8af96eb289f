"""Figures for the ECI views (matplotlib; each takes an optional ``ax`` and returns it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "plot_domain_index",
    "plot_eci",
    "plot_frontier_lag",
    "plot_penalty_sweep",
    "plot_shapes",
    "plot_slope_ratio",
]


def _axes(ax, figsize=(9, 5)):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=figsize)
    return ax


def _errorbars(ax, x, y, lo, hi, **kw):
    """Points with their intervals as lines from lower to upper, drawn as they are: a bootstrap
    interval need not contain its estimate (a refit distribution shifted by bias)."""
    label = kw.pop("label", None)
    if np.isfinite(lo).any():
        ax.vlines(x, lo, hi, linewidth=0.8, **kw)
    ax.plot(x, y, "o", ms=3.5, linestyle="none", label=label, **kw)


def plot_eci(result: Any, ax: Any = None, label_top: int = 5):
    """The index over release dates with its intervals; anchors as stars, the top models named."""
    ax = _axes(ax)
    shown = result.shown
    _errorbars(ax, shown["release_date"], shown["eci"].to_numpy(), shown["lower"].to_numpy(),
               shown["upper"].to_numpy(), color="C0", alpha=0.8,
               label=f"ECI ({100 * result.level:.0f}% bootstrap interval)")
    anchors = result.models[result.models["anchor"]]
    ax.scatter(anchors["release_date"], anchors["eci"], marker="*", s=160, color="C3", zorder=3,
               label="anchors: " + ", ".join(f"{m} = {v:g}" for m, v in result.anchors))
    # the top models crowd one corner: their labels go in a column at the lower right (where the
    # rising index leaves room), with leader lines
    for k, (name, row) in enumerate(shown.head(label_top).iterrows()):
        ax.annotate(f"{name} ({row['eci']:.1f})", (row["release_date"], row["eci"]), fontsize=7,
                    xytext=(0.66, 0.32 - 0.045 * k), textcoords="axes fraction",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.6"})
    ax.set_xlabel("release date")
    ax.set_ylabel("Epoch Capabilities Index")
    rule = "" if result.min_benchmarks is None else f"; models with >= {result.min_benchmarks} benchmarks"
    ax.set_title(f"ECI of {len(shown)} models{rule}")
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_frontier_lag(lag: pd.DataFrame, ax: Any = None):
    """Months behind the frontier against release date, with intervals where present."""
    ax = _axes(ax)
    _errorbars(ax, lag["release_date"], lag["lag_months"].to_numpy(), lag["lower"].to_numpy(),
               lag["upper"].to_numpy(), color="C2")
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlabel("release date")
    ax.set_ylabel("months behind the frontier")
    ax.set_title(f"lag behind the frontier ({lag.attrs.get('method', 'observed')} method)")
    return ax


def plot_slope_ratio(sweep: pd.DataFrame, ax: Any = None, threshold: float | None = 2.0):
    """Slope ratio s_2 / s_1 against the breakpoint, with the replicates' interval band."""
    ax = _axes(ax)
    ax.plot(sweep.index, sweep["ratio"], color="C1", marker="o", ms=3, label="slope ratio s2/s1")
    if "lower" in sweep:
        ax.fill_between(sweep.index, sweep["lower"], sweep["upper"], color="C1", alpha=0.25,
                        label=f"{100 * sweep.attrs.get('level', 0.9):.0f}% bootstrap interval")
    if threshold is not None:
        ax.axhline(threshold, color="0.4", ls="--", lw=1, label=f"ratio {threshold:g}")
    ax.axhline(1, color="0.6", lw=0.8)
    ax.set_xlabel("breakpoint")
    ax.set_ylabel("slope after / slope before")
    ax.set_title("acceleration factor as a function of the breakpoint")
    ax.legend(fontsize=8)
    return ax


def plot_penalty_sweep(sweep: Any, axes: Any = None):
    """Three panels against the penalty strength: the frontier trend per year on the ECI scale,
    the same in the fit's raw units (which move with the scale the penalty sets), the forecast."""
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 3, figsize=(15, 4))
    s = sweep.summary
    columns = ("trend_eci_per_year", "trend_per_year", "forecast_eci")
    labels = ("frontier trend (ECI points / year)", "frontier trend (raw units / year)",
              "forecast (ECI)")
    titles = ("trend per year, ECI scale", "trend per year, raw scale",
              f"forecast for {pd.Timestamp(sweep.until).date()}")
    for ax, column, label, title in zip(axes, columns, labels, titles, strict=True):
        for penalty, part in s.groupby("penalty", sort=False):
            ax.plot(part["l2"], part[column], marker="o", label=penalty)
        ax.set_xscale("log")
        ax.axvline(sweep.baseline_l2, color="0.5", ls=":", lw=1)
        ax.set_xlabel("penalty strength lambda")
        ax.set_ylabel(label)
        ax.set_title(title)
        ax.legend(fontsize=8, title="penalty")
    return axes


def plot_domain_index(result: Any, ax: Any = None, top_n: int = 10):
    """A basket's index against the full index, one point per model (the diagonal = agreement).

    ``ax``: one axes, or two: then the second shows the ``top_n`` largest differences basket -
    full with their intervals (a domain index with a bootstrap), the models named."""
    pair = ax is not None and np.ndim(ax) == 1 and len(ax) == 2
    ax, bx = (ax[0], ax[1]) if pair else (_axes(ax, figsize=(6, 6)), None)
    m = result.models
    ax.scatter(m["full"], m["basket"], s=12, color="C4")
    lo, hi = np.nanmin(m[["full", "basket"]].to_numpy()), np.nanmax(m[["full", "basket"]].to_numpy())
    ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8)
    ax.set_xlabel(f"full index ({result.units})")
    ax.set_ylabel(f"{result.name} index ({result.mode} mode)")
    ax.set_title(f"{result.name}: {len(result.benchmarks)} benchmarks, {len(m)} models")
    if bx is None:
        return ax
    top = m.reindex(m["difference"].abs().sort_values(ascending=False).index).head(int(top_n))
    y = np.arange(len(top))[::-1]
    flagged = top["p_adjusted"].to_numpy() < 1 - result.level
    for mask, color, label in ((flagged, "C3", "adjusted p below 1 - level"),
                               (~flagged, "0.3", "not significant after adjustment")):
        if mask.any():  # intervals drawn as they are (a bootstrap's need not hold its estimate)
            part = top[mask]
            if np.isfinite(part["difference_lower"]).any():
                bx.hlines(y[mask], part["difference_lower"], part["difference_upper"],
                          color=color, lw=1.0)
            bx.plot(part["difference"], y[mask], "o", color=color, label=label)
    bx.axvline(0.0, color="0.5", lw=0.8)
    bx.set_yticks(y, [str(k) for k in top.index], fontsize=8)
    bx.set_xlabel(f"{result.name} - full ({result.units})")
    bx.set_title(f"largest differences ({100 * result.level:.0f}% intervals)")
    bx.legend(fontsize=8, loc="best")
    return ax, bx


def plot_shapes(result: Any, axes: Any = None):
    """Left: the frontier (measurement error as bars) with each shape's posterior median curve and
    band; right: elpd_loo of each shape with its SE and the SE of its difference from the best."""
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    ax, bx = axes
    data, cmp = result.data, result.comparison
    sd = data["measurement_sd"].to_numpy()
    _errorbars(ax, data["release_date"], data["capability"].to_numpy(),
               data["capability"].to_numpy() - sd, data["capability"].to_numpy() + sd, color="0.3",
               label="frontier model (+-1 sd of its draws)")
    for k, shape in enumerate(cmp.index):
        curve = result.curves[result.curves["shape"] == shape]
        ax.plot(curve.index, curve["median"], color=f"C{k}", lw=1.4,
                label=f"{shape} (elpd {cmp.loc[shape, 'elpd_loo']:.1f})")
        ax.fill_between(curve.index, curve["lower"], curve["upper"], color=f"C{k}", alpha=0.12)
    ax.set_xlabel("release date")
    ax.set_ylabel("capability")
    ax.set_title(f"frontier trajectory shapes ({100 * result.level:.0f}% bands)")
    ax.legend(fontsize=8, loc="upper left")
    y = np.arange(len(cmp))[::-1]
    bx.errorbar(cmp["elpd_loo"], y, xerr=cmp["se"], fmt="o", color="k", capsize=3, label="elpd_loo +- SE")
    best = cmp["elpd_loo"].iloc[0]
    bx.errorbar(best - cmp["elpd_diff"].iloc[1:], y[1:] + 0.2, xerr=cmp["dse"].iloc[1:], fmt="^",
                color="0.5", capsize=3, label="difference from the best +- SE")
    bx.axvline(best, color="0.7", ls="--", lw=0.8)
    bx.set_yticks(y, [f"{s} (max k {cmp.loc[s, 'max_pareto_k']:.2f})" for s in cmp.index])
    bx.set_xlabel("elpd (PSIS-LOO, standardised capability)")
    bx.set_title("ranking by PSIS-LOO")
    bx.legend(fontsize=8, loc="best")
    return axes
