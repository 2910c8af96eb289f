"""Regularisation sensitivity: refit over penalty strengths and see which figures move.

The paper's objective (Ho et al., "A Rosetta Stone for AI Benchmarks") adds to the squared score
residuals the penalty ``lambda / n (sum (C - t)^2 + sum (D - t)^2 + sum alpha_free^2)``, with
``n = n_models + 2 n_benchmarks - 1`` and ``t`` the mean of C and D. Shrinking the slopes towards
0 (the ``alpha^2`` term) widens the capability scale, so the strength lambda and the form of the
slope term change the trend per year. :func:`penalty_sweep` refits for every lambda of a grid and
every penalty form,

* ``"l2"``: the paper's ``alpha^2`` term;
* ``"log_slope"``: ``(ln alpha)^2`` instead, which shrinks slopes towards 1 rather than 0 (the
  capability and difficulty terms are unchanged),

and reports, on the ECI scale (two anchor models, so the units agree across fits), the frontier
trend per year, the forecast at ``until``, and how far every capability moved from the baseline
fit (the ``"l2"`` penalty at ``baseline_l2``). Each fit starts from the previous one of its
penalty (strengths in increasing order), which the engine's Levenberg-Marquardt converges from
in a few steps. Fits are float64 (turn on ``jax_enable_x64``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import stats

from ._eci import DEFAULT_ECI_ANCHORS, eci_scale
from ._trends import PAPER_TREND_REFERENCE, fit_frontier_trend

__all__ = ["PENALTIES", "PenaltySweep", "penalty_sweep"]

PENALTIES = ("l2", "log_slope")


@functools.cache
def _log_slope_class():
    """The Rosetta model with ``(ln alpha)^2`` in place of ``alpha^2`` in the item penalty (one
    class for the session, so compiled solvers are reused across fits)."""
    from platinum_jax.models import Rosetta

    class LogSlopeRosetta(Rosetta):
        def item_penalty(self, raw, free, glob, info):
            d = raw["difficulty"] - glob["shift"]
            # |alpha| keeps the logarithm defined on a trial step through zero; the data favour
            # positive slopes and the penalty's minimum is alpha = 1
            log_a = jnp.log(jnp.maximum(jnp.abs(raw["slope"]), 1e-12))
            a2 = jnp.where(free["slope"], log_a**2, 0.0)
            return self.penalty_scale(info) * (d**2 + a2)

    return LogSlopeRosetta


def _log_slope_model(anchor, l2, link):
    return _log_slope_class()(link=link, l2=float(l2), anchor=anchor)


def _fit(table, anchor, l2, penalty, start):
    """One fit of the paper's model, or of the log-slope one, through :func:`fit_stitching`."""
    from platinum_jax.stitching import fit_stitching

    model = None if penalty == "l2" else _log_slope_model(anchor, l2, "sigmoid")
    return fit_stitching(table, anchor, l2, theta0=start, model=model)


@dataclass(frozen=True, eq=False)
class PenaltySweep:
    """Result of :func:`penalty_sweep` (immutable).

    ``summary``: one row per (penalty, l2) with ``cost``, ``converged``, ``trend_per_year`` (raw
    units), ``trend_eci_per_year``, ``forecast_eci`` (the trend at ``until``),
    ``trend_change_pct`` (against the baseline), ``spearman`` and ``max_abs_shift`` /
    ``median_abs_shift`` of the ECI capabilities against the baseline, ``mean_slope`` (mean
    alpha_b). ``capabilities``: ECI per model, one column per (penalty, l2). ``baseline_l2``,
    ``until``.
    """

    summary: pd.DataFrame
    capabilities: pd.DataFrame
    baseline_l2: float
    until: str

    def dependence(self) -> pd.DataFrame:
        """Range of each headline figure over the grid, per penalty: which figures depend on it."""
        cols = ["trend_eci_per_year", "forecast_eci", "trend_per_year", "max_abs_shift"]
        g = self.summary.groupby("penalty", sort=False)[cols]
        return pd.concat({"min": g.min(), "max": g.max()}, axis=1)


def penalty_sweep(
    table: Any,
    l2_values: Sequence[float] = (1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 1.0),
    *,
    anchor: Any = None,
    penalties: Sequence[str] = ("l2",),
    baseline_l2: float = 0.1,
    until: str = PAPER_TREND_REFERENCE["forecast_date"],
    top_n: int = 1,
    eci_anchors: Any = DEFAULT_ECI_ANCHORS,
) -> PenaltySweep:
    """Refit ``table`` at every strength in ``l2_values`` for every form in ``penalties``.

    Args:
        table: a :class:`~platinum_jax.data.ScoreTable`.
        l2_values: penalty strengths lambda (each finite and > 0).
        anchor: the fit's anchor (default Winogrande, D = 0, alpha = 1).
        penalties: any of ``"l2"`` (the paper's) and ``"log_slope"``.
        baseline_l2: the strength of the reference fit (``"l2"`` penalty; paper: 0.1).
        until: forecast date.
        top_n: frontier = top ``top_n`` at release, for the trend.
        eci_anchors: the two (model, value) anchors of the ECI scale that makes fits comparable.
    """
    values = sorted({float(v) for v in l2_values})
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"l2_values must be positive finite numbers (got {list(l2_values)})")
    bad = [p for p in penalties if p not in PENALTIES]
    if bad or not penalties:
        raise ValueError(f"penalties must be chosen from {PENALTIES} (got {list(penalties)})")
    if not (np.isfinite(baseline_l2) and baseline_l2 > 0):
        raise ValueError(f"baseline_l2 must be a positive number (got {baseline_l2})")
    from platinum_jax.models.rosetta import BenchmarkAnchor

    anchor = BenchmarkAnchor() if anchor is None else anchor
    baseline = _fit(table, anchor, baseline_l2, "l2", None)
    base_eci = eci_scale(baseline, anchors=eci_anchors, replicates=0)
    base_trend = fit_frontier_trend(_eci_frame(base_eci), top_n=top_n).slope
    rows, columns = [], {}
    for penalty in dict.fromkeys(penalties):
        start = None
        for l2 in values:
            same_as_baseline = penalty == "l2" and l2 == float(baseline_l2)
            fit = baseline if same_as_baseline else _fit(table, anchor, l2, penalty, start)
            start = fit.theta
            res = eci_scale(fit, anchors=eci_anchors, replicates=0)
            trend_eci = fit_frontier_trend(_eci_frame(res), top_n=top_n)
            trend_raw = fit_frontier_trend(fit, top_n=top_n)
            shift = (res.models["eci"] - base_eci.models["eci"]).abs()
            rows.append({
                "penalty": penalty,
                "l2": l2,
                "cost": fit.cost,
                "converged": fit.converged,
                "trend_per_year": trend_raw.slope,
                "trend_eci_per_year": trend_eci.slope,
                "forecast_eci": float(trend_eci.predict([until])["capability"].iloc[0]),
                "trend_change_pct": 100.0 * (trend_eci.slope / base_trend - 1.0),
                "spearman": float(stats.spearmanr(res.models["eci"], base_eci.models["eci"])[0]),
                "max_abs_shift": float(shift.max()),
                "median_abs_shift": float(shift.median()),
                "mean_slope": float(np.mean(fit.params.slope)),
            })
            columns[(penalty, l2)] = res.models["eci"]
    caps = pd.DataFrame(columns)
    caps.columns = pd.MultiIndex.from_tuples(caps.columns, names=["penalty", "l2"])
    return PenaltySweep(pd.DataFrame(rows), caps, float(baseline_l2), str(until))


def _eci_frame(res) -> pd.DataFrame:
    return pd.DataFrame({"capability": res.models["eci"], "release_date": res.models["release_date"]})
