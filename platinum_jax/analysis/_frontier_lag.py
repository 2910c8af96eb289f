"""Months behind the frontier, and the slope ratio of a two-piece trend as a function of the breakpoint.

Months behind the frontier (``method="observed"``): with release times t_j and capabilities C_j,
the frontier first reaches model m's capability at ``T_m = min{t_j : C_j >= C_m}`` (m itself
counts, so ``T_m <= t_m``), and the lag is ``12 (t_m - T_m)`` months (t in decimal years). A
frontier model has lag 0. ``method="trend"`` reads the lag off the linear frontier trend
``C = a + s (t - t_ref)`` instead: ``12 ((a + s (t_m - t_ref)) - C_m) / s``, which is negative
for a model above the trend. Both are pure array functions, evaluated per bootstrap replicate
under ``vmap`` for the intervals.

The slope-ratio sweep fits the continuous two-piece line of :mod:`._acceleration` at every
breakpoint of a grid, on the frontier of the central fit and on the frontier of every replicate
(``vmap`` over replicates of a ``vmap`` over breakpoints), and reports ``s_2 / s_1`` with
percentile intervals: how much of a quoted acceleration factor is the choice of breakpoint.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._acceleration import piecewise_sse
from ._trends import (
    as_capabilities,
    decimal_year,
    fit_frontier_trend,
    frontier_line_fit,
    frontier_mask,
    year_to_timestamp,
)

__all__ = ["capability_draw_matrix", "frontier_lag", "lag_months", "organization_lag", "slope_ratio_sweep"]

LAG_METHODS = ("observed", "trend")


def lag_months(capability: jax.Array, year: jax.Array) -> jax.Array:
    """Observed lag (months) of every model behind the frontier: ``12 (t_m - min{t_j: C_j >= C_m})``.

    Pure and jittable; ``capability`` and ``year`` are (n,) arrays.
    """
    reached = capability[None, :] >= capability[:, None]  # row m: models j at least as capable
    first = jnp.min(jnp.where(reached, year[None, :], jnp.inf), axis=1)
    return 12.0 * (year - first)


def _trend_lag(capability, year, x_ref, top_n):
    beta = frontier_line_fit(capability, year, jnp.ones(year.shape, bool), x_ref, top_n)
    line = beta[0] + beta[1] * (year - x_ref)
    return 12.0 * (line - capability) / beta[1]


_lag_draws = jax.jit(jax.vmap(lag_months, in_axes=(0, None)))
_trend_lag_draws = jax.jit(jax.vmap(_trend_lag, in_axes=(0, None, None, None)), static_argnums=(3,))


def capability_draw_matrix(draws: Any, models: pd.Index) -> np.ndarray:
    """Capability draws (replicates x models) aligned on ``models``, as a float64 array.

    ``draws`` is a stitching bootstrap result or a frame of draws (replicates or posterior draws x
    models); missing models, fewer than 2 draws or non-finite values raise ``ValueError``.
    """
    if hasattr(draws, "thetas") and hasattr(draws, "fit"):
        from ._trends import bootstrap_capabilities

        draws = bootstrap_capabilities(draws)
    if not isinstance(draws, pd.DataFrame):
        raise ValueError(
            "draws must be a stitching bootstrap result or a frame of capability draws "
            f"(replicates x models), got {type(draws).__name__}"
        )
    missing = [m for m in models if m not in draws.columns]
    if missing:
        raise ValueError(f"draws lack {len(missing)} model(s), e.g. {missing[:5]}; pass draws of the same fit")
    out = draws[list(models)].to_numpy(dtype=np.float64)
    if len(out) < 2 or not np.isfinite(out).all():
        raise ValueError("draws must hold at least 2 replicates of finite capabilities")
    return out


def frontier_lag(
    capabilities: Any,
    *,
    models: Any = None,
    draws: Any = None,
    method: str = "observed",
    top_n: int = 1,
    level: float = 0.90,
) -> pd.DataFrame:
    """Months each model trails the frontier, with a bootstrap interval.

    Args:
        capabilities: a StitchingFit or a frame with ``capability`` and ``release_date``.
        models: names to report (default: every model); the frontier is always built from all.
        draws: a stitching bootstrap result (or a frame of capability draws, replicates x
            models) of the same fit: the lag is recomputed per replicate.
        method: ``"observed"`` (the frontier's first release at least as capable) or ``"trend"``
            (the linear frontier trend, frontier = top ``top_n`` at release).
        level: interval level.

    Returns a frame indexed by model: ``release_date``, ``capability``, ``lag_months``,
    ``lower``, ``upper`` (NaN without draws), ``frontier_reached`` (the date T_m of the observed
    method; NaT for the trend method).
    """
    if method not in LAG_METHODS:
        raise ValueError(f"method must be one of {LAG_METHODS} (got {method!r})")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    caps = as_capabilities(capabilities)
    year = decimal_year(caps["release_date"])
    c = caps["capability"].to_numpy()
    if method == "observed":
        lag = np.asarray(lag_months(jnp.asarray(c), jnp.asarray(year)))
        dates = caps["release_date"].to_numpy()
        # the release date itself (not a float round trip): earliest release at least as capable
        at_least = c[None, :] >= c[:, None]
        reached = pd.DatetimeIndex(np.where(at_least, dates[None, :], dates.max()).min(axis=1))
    else:
        trend = fit_frontier_trend(caps, top_n=top_n)
        if trend.slope <= 0:
            raise ValueError(
                f"the frontier trend is not rising (slope {trend.slope:.3g} per year); a lag "
                "behind it is undefined. Use method='observed'"
            )
        lag = 12.0 * (trend.intercept + trend.slope * (year - trend.year_ref) - c) / trend.slope
        reached = pd.DatetimeIndex([pd.NaT] * len(c))
    out = pd.DataFrame(
        {"release_date": caps["release_date"].to_numpy(), "capability": c, "lag_months": lag,
         "lower": np.nan, "upper": np.nan, "frontier_reached": reached},
        index=caps.index,
    )
    if draws is not None:
        mat = jnp.asarray(capability_draw_matrix(draws, caps.index))
        if method == "observed":
            lags = np.asarray(_lag_draws(mat, jnp.asarray(year)))
        else:
            lags = np.asarray(_trend_lag_draws(mat, jnp.asarray(year), float(year.mean()), int(top_n)))
        out[["lower", "upper"]] = np.quantile(lags, [(1 - level) / 2, (1 + level) / 2], axis=0).T
    if models is not None:
        names = [" ".join(str(m).split()) for m in ([models] if isinstance(models, str) else models)]
        unknown = [m for m in names if m not in out.index]
        if unknown:
            from platinum_jax._names import UnknownNameError, close_matches_message

            raise UnknownNameError("models: " + close_matches_message("model", unknown[0], out.index))
        out = out.loc[names]
    out.attrs["method"] = method
    out.attrs["level"] = float(level)
    return out


def _organization_lag(capability, year, group, has_group):
    """Lag (months) of each group's best model so far, at each of the group's releases."""
    same = (group[None, :] == group[:, None]) & has_group[None, :] & (year[None, :] <= year[:, None])
    best = jnp.max(jnp.where(same, capability[None, :], -jnp.inf), axis=1)
    reached = capability[None, :] >= best[:, None]
    first = jnp.min(jnp.where(reached, year[None, :], jnp.inf), axis=1)
    return best, 12.0 * (year - first)


_organization_lag_jit = jax.jit(_organization_lag)
_organization_lag_draws = jax.jit(jax.vmap(_organization_lag, in_axes=(0, None, None, None)))


def organization_lag(
    capabilities: Any, organizations: Any, *, draws: Any = None, level: float = 0.90
) -> pd.DataFrame:
    """Months an organisation's best model so far trails the frontier, at each of its releases.

    At the release t_m of a model of organisation o, the organisation's best capability so far is
    ``B = max{C_j : org_j = o, t_j <= t_m}`` and its lag ``12 (t_m - min{t_j : C_j >= B})``
    months, the frontier built from every model. ``organizations`` maps model -> organisation (a
    Series or dict, e.g. ``read_model_compute(path)["organization"]``); models it does not name
    still make the frontier but get no row (their count is in ``attrs["unassigned"]``). With
    ``draws`` (a bootstrap result or a frame of capability draws of the same fit) the lag is
    recomputed per replicate under ``vmap``. Returns a frame indexed by ``(organization,
    model)``, sorted by release: ``release_date``, ``best_capability``, ``lag_months``,
    ``lower``, ``upper``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    caps = as_capabilities(capabilities)
    orgs = pd.Series(organizations, dtype="object") if isinstance(organizations, dict) else organizations
    if not isinstance(orgs, pd.Series):
        raise ValueError(
            f"organizations must map model -> organisation (a Series or dict), got {type(organizations).__name__}"
        )
    orgs = orgs[~orgs.index.duplicated()].reindex(caps.index)
    has = orgs.notna().to_numpy()
    if not has.any():
        raise ValueError("organizations names none of the fit's models; check the model names")
    codes, names = pd.factorize(orgs)
    year = decimal_year(caps["release_date"])
    args = (jnp.asarray(year), jnp.asarray(codes), jnp.asarray(has))
    best, lag = (np.asarray(x) for x in _organization_lag_jit(jnp.asarray(caps["capability"].to_numpy()), *args))
    out = pd.DataFrame(
        {"release_date": caps["release_date"].to_numpy(), "best_capability": best, "lag_months": lag,
         "lower": np.nan, "upper": np.nan},
        index=pd.MultiIndex.from_arrays([orgs.to_numpy(), caps.index], names=["organization", "model"]),
    )
    if draws is not None:
        _, lags = _organization_lag_draws(jnp.asarray(capability_draw_matrix(draws, caps.index)), *args)
        q = np.quantile(np.asarray(lags), [(1 - level) / 2, (1 + level) / 2], axis=0)
        out["lower"], out["upper"] = q[0], q[1]
    out = out[has].sort_values(["release_date"]).sort_index(level=0, sort_remaining=False, kind="stable")
    out.attrs["unassigned"] = int((~has).sum())
    out.attrs["level"] = float(level)
    return out


def _sweep_one(capability, year, taus, top_n, min_side):
    w = frontier_mask(capability, year, jnp.ones(year.shape, bool), top_n).astype(capability.dtype)
    sse, beta = piecewise_sse(taus, year, capability, w, min_side)
    s1 = beta[:, 1]
    return s1, s1 + beta[:, 2], sse


_sweep = jax.jit(_sweep_one, static_argnums=(3, 4))
_sweep_draws = jax.jit(jax.vmap(_sweep_one, in_axes=(0, None, None, None, None)), static_argnums=(3, 4))


def slope_ratio_sweep(
    capabilities: Any,
    *,
    breakpoints: Any = None,
    n_grid: int = 40,
    draws: Any = None,
    top_n: int = 1,
    min_side: int = 3,
    level: float = 0.90,
) -> pd.DataFrame:
    """Slope ratio ``s_2 / s_1`` of the two-piece frontier trend at each candidate breakpoint.

    Args:
        capabilities: a StitchingFit or a frame with ``capability`` and ``release_date``.
        breakpoints: dates to try (default ``n_grid`` evenly spaced between the ``min_side``-th
            first and last frontier releases).
        draws: a stitching bootstrap result or a frame of capability draws of the same fit; the
            frontier and both slopes are refitted per replicate.
        top_n: frontier = top ``top_n`` at release (recomputed per replicate).
        min_side: frontier models needed on each side of a breakpoint (fewer: NaN).
        level: interval level.

    Returns a frame indexed by ``breakpoint`` (date): ``year``, ``slope_before`` (s_1),
    ``slope_after`` (s_2), ``ratio`` (NaN where s_1 <= 0), ``sse``, and with draws ``lower``,
    ``upper`` (percentiles of the replicates' ratios, over replicates with s_1 > 0 and enough
    points) and ``n_valid`` (how many replicates that is).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    caps = as_capabilities(capabilities)
    year = decimal_year(caps["release_date"])
    c = caps["capability"].to_numpy()
    if breakpoints is None:
        on = np.asarray(frontier_mask(jnp.asarray(c), jnp.asarray(year), jnp.ones(len(c), bool), int(top_n)))
        fy = np.sort(year[on])
        if len(fy) < 2 * min_side + 1:
            raise ValueError(
                f"{len(fy)} frontier models: a two-piece trend needs at least {2 * min_side + 1} "
                f"(min_side={min_side} on each side); lower min_side or raise top_n"
            )
        taus = np.linspace(fy[min_side - 1], fy[-min_side - 1], int(n_grid))
    else:
        taus = decimal_year(pd.DatetimeIndex(pd.to_datetime(np.atleast_1d(breakpoints))))
    args = (jnp.asarray(taus), int(top_n), int(min_side))
    s1, s2, sse = (np.asarray(x) for x in _sweep(jnp.asarray(c), jnp.asarray(year), *args))
    ok = np.isfinite(sse)
    ratio = np.where(ok & (s1 > 0), s2 / np.where(s1 > 0, s1, 1.0), np.nan)
    out = pd.DataFrame(
        {"year": taus, "slope_before": np.where(ok, s1, np.nan),
         "slope_after": np.where(ok, s2, np.nan), "ratio": ratio, "sse": np.where(ok, sse, np.nan)},
        index=pd.Index(year_to_timestamp(taus).round("D"), name="breakpoint"),
    )
    if draws is not None:
        mat = jnp.asarray(capability_draw_matrix(draws, caps.index))
        d1, d2, dsse = (np.asarray(x) for x in _sweep_draws(mat, jnp.asarray(year), *args))
        valid = np.isfinite(dsse) & (d1 > 0)
        r = np.where(valid, d2 / np.where(valid, d1, 1.0), np.nan)
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
                lo, hi = np.nanquantile(r, [(1 - level) / 2, (1 + level) / 2], axis=0)
        out["lower"], out["upper"] = lo, hi
        out["n_valid"] = valid.sum(axis=0)
    out.attrs["level"] = float(level)
    return out
