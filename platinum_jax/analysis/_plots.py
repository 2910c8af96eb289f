"""Figures for the analyses (matplotlib; every function takes an optional ``ax`` and returns it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "plot_acceleration",
    "plot_detection_study",
    "plot_horizons",
    "plot_progress",
    "plot_robustness",
    "plot_trend",
]


_PAPER_STYLE = {"color": "0.35", "ls": "--", "lw": 1.2}


def _axes(ax, figsize=(8, 5)):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_trend(
    trend: Any, forecast: pd.DataFrame | None = None, ax: Any = None, paper: bool = True
):
    """All models (grey), frontier models (blue), the trend and, if given, the forecast bands.

    With ``paper=True`` the paper's trend is drawn for comparison: 0.55 units a year, through
    4.4 in October 2028 (dashed grey, with a star at the forecast).
    """
    from ._trends import PAPER_TREND_REFERENCE as ref

    ax = _axes(ax)
    models = trend.models
    ax.scatter(models["release_date"], models["capability"], s=12, color="0.7", label="all models")
    front = trend.frontier
    ax.scatter(front["release_date"], front["capability"], s=30, color="C0", label="frontier at release")
    fitted = trend.predict(front["release_date"])
    ax.plot(fitted.index, fitted["capability"], color="C0",
            label=f"trend: {trend.slope:.2f} units/yr")
    if forecast is not None:
        ax.plot(forecast.index, forecast["capability"], color="C3", label="forecast")
        ax.fill_between(forecast.index, forecast["ci_low"], forecast["ci_high"], color="C3",
                        alpha=0.3, label="95% confidence")
        ax.fill_between(forecast.index, forecast["pi_low"], forecast["pi_high"], color="C3",
                        alpha=0.12, label="95% prediction")
        if "draw_low" in forecast:
            ax.plot(forecast.index, forecast["draw_low"], color="C3", ls=":", lw=1)
            ax.plot(forecast.index, forecast["draw_high"], color="C3", ls=":", lw=1,
                    label="capability draws")
    if paper:
        target = pd.Timestamp(ref["forecast_date"])
        end = max(target, forecast.index.max()) if forecast is not None else target
        dates = pd.DatetimeIndex([trend.frontier["release_date"].min(), end])
        years = (dates - target).days.to_numpy() / 365.25
        ax.plot(dates, ref["forecast_capability"] + ref["slope_per_year"] * years, **_PAPER_STYLE,
                label=f"paper: {ref['slope_per_year']:.2f} units/yr, "
                f"{ref['forecast_capability']:.1f} by {target:%b %Y}")
        ax.plot([target], [ref["forecast_capability"]], marker="*", ms=11, color="0.35", ls="")
    ax.set_xlabel("release date")
    ax.set_ylabel("capability C_m")
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_progress(progress: Any, ax: Any = None, paper: bool = True):
    """Capability against log10 training compute, coloured by release year; the family models
    (paper's method) or the frontier models (organisation variant) ringed.

    With ``paper=True`` a dashed line of the paper's compute slope (k = 0.168 per e-fold of
    compute) runs through the centre of the points, next to ours.
    """
    from ._progress import PAPER_PROGRESS_REFERENCE as ref

    ax = _axes(ax)
    df = progress.models
    sc = ax.scatter(np.log10(df["training_compute_flop"]), df["capability"], c=df["year"],
                    cmap="viridis", s=20)
    if getattr(progress, "method", "organization") == "families":
        # the paper's k comes from the single-release families: ring those models
        ringed, what = df[df["family"] != ""], "families used for k"
    else:
        ringed, what = df[df["frontier"]], "frontier at release"
    ax.scatter(np.log10(ringed["training_compute_flop"]), ringed["capability"], s=80,
               facecolors="none", edgecolors="C3", label=what)
    if paper:
        x = np.log10(df["training_compute_flop"].to_numpy())
        xs = np.array([x.min(), x.max()])
        centre_x, centre_y = x.mean(), float(df["capability"].mean())
        for k, style, who in ((progress.k, {"color": "C3", "lw": 1.2}, "ours"),
                              (ref["k"], _PAPER_STYLE, "paper")):
            # C = k ln F + b, so the slope per decade of compute is k ln 10.
            ax.plot(xs, centre_y + k * np.log(10.0) * (xs - centre_x), **style,
                    label=f"{who}: k = {k:.3f}")
    ax.figure.colorbar(sc, ax=ax, label="release year")
    ax.set_xlabel("log10 training compute (FLOP)")
    ax.set_ylabel("capability C_m")
    ax.set_title(
        f"k = {progress.k:.3f} per e-fold, Δb = {progress.delta_b_per_year:.3f}/yr, "
        f"{progress.reduction_per_year:.1f}x less compute per year", fontsize=9
    )
    ax.legend(fontsize=8)
    return ax


def plot_acceleration(fit: Any, ax: Any = None):
    """Frontier points, the fitted one-breakpoint curve and the breakpoint."""
    ax = _axes(ax)
    pts = fit.points
    ax.scatter(pts["release_date"], pts["capability"], s=25, color="C0", label="frontier models")
    grid = pd.date_range(pts["release_date"].min(), pts["release_date"].max(), periods=100)
    curve = fit.predict(grid)
    ax.plot(curve.index, curve.to_numpy(), color="C1",
            label=f"slopes {fit.slope_before:.2f} -> {fit.slope_after:.2f}/yr")
    ax.axvline(fit.breakpoint, color="C3", ls="--",
               label=f"breakpoint (ratio {fit.ratio:.2f}, {'flagged' if fit.accelerated else 'not flagged'})")
    ax.set_xlabel("release date")
    ax.set_ylabel("capability C_m")
    ax.legend(fontsize=8)
    return ax


def plot_detection_study(study: Any, axes: Any = None, paper: bool = True):
    """Two panels: median detection latency and false-positive rate against noise level.

    With ``paper=True`` the paper's figures are marked: a 2x acceleration detected within 2-3
    months at 1x noise (grey band) and a mean false-positive rate of about 38% (dashed line).
    """
    from ._study import PAPER_SIMULATION_REFERENCE as ref

    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(11, 4))
    lat = study.table("median_latency_months")
    det = study.table("detection_rate")
    for f in lat.columns:
        if f <= 1.0:
            continue
        axes[0].plot(lat.index, lat[f], marker="o", label=f"{f:g}x acceleration")
    if paper:
        axes[0].axhspan(ref["latency_months_2x_at_1x_noise_low"],
                        ref["latency_months_2x_at_1x_noise_high"], color="0.6", alpha=0.3,
                        label="paper: 2x at 1x noise, 2-3 months")
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("noise level (x baseline)")
    axes[0].set_ylabel("median detection latency (months)")
    axes[0].legend(fontsize=8)
    fp = study.summary.groupby("noise")["false_positive_rate"].mean()
    axes[1].plot(fp.index, fp.to_numpy(), marker="o", color="C3", label="false positives")
    if paper:
        axes[1].axhline(ref["mean_false_positive_rate"], **_PAPER_STYLE,
                        label=f"paper: {ref['mean_false_positive_rate']:.0%} false positives")
    for f in det.columns:
        if f > 1.0:
            axes[1].plot(det.index, det[f], marker="s", ls=":", label=f"detection rate, {f:g}x")
    axes[1].set_xscale("log", base=2)
    axes[1].set_ylim(-0.02, 1.02)
    axes[1].set_xlabel("noise level (x baseline)")
    axes[1].set_ylabel("fraction of replicates")
    axes[1].legend(fontsize=8)
    return axes


def plot_horizons(fit: Any, ax: Any = None, paper: bool = True):
    """log time horizon against capability with the confidence and prediction bands.

    The legend gives the full-sample R²; with ``paper=True`` also the R² on the training part
    of the paper's split beside the paper's figure.
    """
    from ._horizons import PAPER_HORIZON_REFERENCE as ref

    ax = _axes(ax)
    d = fit.data
    ax.scatter(d["capability"], d["horizon_minutes"], s=25, color="C0", label="METR models")
    grid = np.linspace(d["capability"].min() - 0.2, d["capability"].max() + 0.5, 100)
    pr = fit.predict(grid)
    label = f"fit (R² = {fit.r2:.2f} full sample" + (
        f"; {fit.split_r2_train:.2f} on the paper's training split, paper {ref['r2']:.2f})"
        if paper else ")")
    ax.plot(grid, pr["horizon_minutes"], color="C1", label=label)
    ax.fill_between(grid, pr["ci_low"], pr["ci_high"], color="C1", alpha=0.3, label="95% confidence")
    ax.fill_between(grid, pr["pi_low"], pr["pi_high"], color="C1", alpha=0.12, label="95% prediction")
    ax.set_yscale("log")
    ax.set_xlabel("capability C_m")
    ax.set_ylabel("METR 50% time horizon (minutes)")
    ax.legend(fontsize=8)
    return ax


def plot_robustness(result: Any, ax: Any = None):
    """Each variant's capabilities against the baseline (anchors) or Kendall tau per variant."""
    ax = _axes(ax)
    caps = result.capabilities
    if result.kind == "anchor":
        for col in caps.columns.drop("baseline"):
            ax.scatter(caps["baseline"], caps[col], s=10, label=col)
        lim = [caps.min().min(), caps.max().max()]
        ax.plot(lim, lim, color="0.5", lw=1, ls="--")
        ax.set_xlabel("capability, baseline anchor")
        ax.set_ylabel("capability, other anchor")
        ax.legend(fontsize=8)
    else:
        s = result.summary.sort_values("kendall")
        ax.barh(s.index, s["kendall"], color="C0")
        ax.set_xlim(min(0.9, float(s["kendall"].min()) - 0.01), 1.0)
        ax.set_xlabel("Kendall tau with the full fit")
        ax.tick_params(axis="y", labelsize=6)
    return ax
