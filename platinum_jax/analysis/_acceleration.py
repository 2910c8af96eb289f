"""Acceleration detection: a one-breakpoint piecewise-linear fit of frontier capability.

For a candidate breakpoint tau the model is continuous and piecewise linear in time t,

    C(t) = a + s_1 (t - t_ref) + (s_2 - s_1) max(t - tau, 0),

so for fixed tau it is linear in (a, s_1, s_2 - s_1) and solved in closed form (weighted least
squares by Cholesky).  A grid of tau values is evaluated at once under ``vmap``; the breakpoint
minimising the weighted SSE wins, restricted to breakpoints with at least ``min_side`` points
on each side.  An acceleration is flagged when s_2 / s_1 >= ``threshold`` (with s_1 > 0), the
paper's slope-ratio threshold of 2 applied to one continuous hinge. This is a quick look at real
data, not the paper's detection protocol: that one (a running-maximum frontier, two separate
segment fits with an R^2 filter, breakpoints scanned after a known date) is
:func:`platinum_jax.analysis.scan_breakpoints`, used by :func:`simulate_detection`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float

from ._trends import decimal_year, frontier_models, year_to_timestamp

__all__ = [
    "BreakpointFit",
    "breakpoint_grid",
    "detect_acceleration",
    "fit_breakpoint",
    "piecewise_sse",
]


def _one_breakpoint(tau, x, y, w, x_ref, min_side):
    X = jnp.stack([jnp.ones_like(x), x - x_ref, jnp.maximum(x - tau, 0.0)], axis=1)
    n_before = jnp.sum(w * (x <= tau))
    n_after = jnp.sum(w * (x > tau))
    ok = (n_before >= min_side) & (n_after >= min_side)
    # a tiny ridge keeps the Cholesky finite for breakpoints that are masked out anyway
    Xw = X * w[:, None]
    gram = X.T @ Xw + 1e-12 * jnp.eye(3)
    chol = jnp.linalg.cholesky(gram)
    beta = jax.scipy.linalg.cho_solve((chol, True), Xw.T @ y)
    sse = jnp.sum(w * (y - X @ beta) ** 2)
    return jnp.where(ok, sse, jnp.inf), beta


def piecewise_sse(
    taus: Float[Array, " k"],
    x: Float[Array, " n"],
    y: Float[Array, " n"],
    w: Float[Array, " n"],
    min_side: int = 3,
) -> tuple[Float[Array, " k"], Float[Array, "k 3"]]:
    """Weighted SSE and coefficients (a, s_1, s_2 - s_1) for each breakpoint in ``taus``.

    Pure and jittable; rows with ``w = 0`` are ignored (padding or unreleased models).
    Breakpoints with fewer than ``min_side`` weighted points on either side get SSE = inf.
    """
    x_ref = jnp.sum(w * x) / jnp.sum(w)
    return jax.vmap(_one_breakpoint, in_axes=(0, None, None, None, None, None))(
        taus, x, y, w, x_ref, min_side
    )


def fit_breakpoint(
    taus: Float[Array, " k"],
    x: Float[Array, " n"],
    y: Float[Array, " n"],
    w: Float[Array, " n"],
    min_side: int = 3,
) -> tuple[Float[Array, ""], Float[Array, ""], Float[Array, ""], Float[Array, ""]]:
    """Best breakpoint: returns (tau, s_1, s_2, SSE).  Pure, jittable, vmappable."""
    sse, beta = piecewise_sse(taus, x, y, w, min_side)
    i = jnp.argmin(sse)
    s1 = beta[i, 1]
    return taus[i], s1, s1 + beta[i, 2], sse[i]


_fit_breakpoint_jit = jax.jit(fit_breakpoint, static_argnums=(4,))
_piecewise_sse_jit = jax.jit(piecewise_sse, static_argnums=(4,))


def breakpoint_grid(year: np.ndarray, n_grid: int = 200, min_side: int = 3) -> np.ndarray:
    """Evenly spaced candidate breakpoints between the ``min_side``-th first and last points."""
    year = np.sort(np.asarray(year, dtype=np.float64))
    if len(year) < 2 * min_side:
        raise ValueError(
            f"a breakpoint fit needs at least {2 * min_side} frontier models "
            f"(min_side={min_side} on each side), got {len(year)}"
        )
    return np.linspace(year[min_side - 1], year[-min_side], n_grid)


@dataclass(frozen=True, eq=False)
class BreakpointFit:
    """Result of :func:`detect_acceleration` (immutable).

    ``breakpoint`` (date), ``slope_before`` s_1 and ``slope_after`` s_2 (units/year),
    ``ratio`` s_2/s_1 (NaN when s_1 <= 0), ``accelerated`` (ratio >= threshold), ``sse``,
    ``grid`` (frame of every candidate breakpoint with its SSE), ``points`` (the frontier
    models used) and ``threshold``.
    """

    breakpoint: pd.Timestamp
    breakpoint_year: float
    slope_before: float
    slope_after: float
    intercept: float
    year_ref: float
    ratio: float
    accelerated: bool
    sse: float
    threshold: float
    grid: pd.DataFrame
    points: pd.DataFrame

    def predict(self, dates: Any) -> pd.Series:
        """The fitted piecewise-linear curve at ``dates``."""
        year = decimal_year(pd.DatetimeIndex(pd.to_datetime(np.atleast_1d(np.asarray(dates)))))
        curve = (
            self.intercept
            + self.slope_before * (year - self.year_ref)
            + (self.slope_after - self.slope_before) * np.maximum(year - self.breakpoint_year, 0)
        )
        return pd.Series(curve, index=year_to_timestamp(year), name="capability")

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "breakpoint": [self.breakpoint],
                "slope_before": [self.slope_before],
                "slope_after": [self.slope_after],
                "ratio": [self.ratio],
                "threshold": [self.threshold],
                "accelerated": [self.accelerated],
                "sse": [self.sse],
                "n_points": [len(self.points)],
            }
        )


def detect_acceleration(
    capabilities: Any,
    *,
    threshold: float = 2.0,
    top_n: int = 1,
    n_grid: int = 200,
    min_side: int = 3,
    frontier_only: bool = True,
) -> BreakpointFit:
    """Fit one breakpoint to frontier capability over time and flag an acceleration.

    ``capabilities``: a StitchingFit or a frame with ``capability`` and ``release_date``.
    ``frontier_only=False`` fits every model instead of the top-``top_n``-at-release ones.
    """
    if not np.isfinite(threshold) or threshold <= 0:
        raise ValueError(f"threshold must be a positive slope ratio (e.g. 2.0), got {threshold!r}")
    models = frontier_models(capabilities, top_n=top_n)
    pts = models[models["frontier"]] if frontier_only else models
    year = pts["year"].to_numpy()
    y = pts["capability"].to_numpy()
    taus = breakpoint_grid(year, n_grid=n_grid, min_side=min_side)
    w = np.ones_like(year)
    sse, beta = _piecewise_sse_jit(jnp.asarray(taus), jnp.asarray(year), jnp.asarray(y),
                                   jnp.asarray(w), int(min_side))
    sse, beta = np.asarray(sse), np.asarray(beta)
    if not np.isfinite(sse).any():
        raise ValueError(
            f"no breakpoint leaves {min_side} frontier models on each side; lower min_side"
        )
    i = int(np.argmin(sse))
    s1, s2 = float(beta[i, 1]), float(beta[i, 1] + beta[i, 2])
    ratio = s2 / s1 if s1 > 0 else np.nan
    grid = pd.DataFrame(
        {"breakpoint": year_to_timestamp(taus), "year": taus, "sse": sse,
         "slope_before": beta[:, 1], "slope_after": beta[:, 1] + beta[:, 2]}
    )
    return BreakpointFit(
        breakpoint=year_to_timestamp(taus[i])[0],
        breakpoint_year=float(taus[i]),
        slope_before=s1,
        slope_after=s2,
        intercept=float(beta[i, 0]),
        year_ref=float(year.mean()),
        ratio=float(ratio),
        accelerated=bool(np.isfinite(ratio) and ratio >= threshold),
        sse=float(sse[i]),
        threshold=float(threshold),
        grid=grid,
        points=pts,
    )
