"""Capability trends: the frontier at release, its linear trend and forecasts with intervals.

Given stitched capabilities C_m with release dates t_m, a model is on the *frontier* when, at its
release, at most ``top_n - 1`` models released on or before t_m had a higher capability.  The
trend is ordinary least squares C_m = a + s (t_m - t_ref) over frontier models (t in decimal
years, t_ref their mean, which keeps the 2x2 normal equations well conditioned).  Intervals use
the Student-t quantile with n - 2 degrees of freedom:

* confidence band for the mean line: a + s x0 +- t_q sigma sqrt(x0^T G^-1 x0),
* prediction band for a new frontier model: +- t_q sigma sqrt(1 + x0^T G^-1 x0),

where G = X^T X and sigma^2 = SSE / (n - 2).  ``x0^T G^-1 x0`` is ``||L^-1 x0||^2`` with L the
Cholesky factor of G (a triangular solve, never an inverse).

Forecast bands can also propagate uncertainty of the capabilities themselves: pass a
``(n_replicates, n_models)`` table of capability draws (a stitching bootstrap or posterior) and
the frontier selection plus trend are refitted per draw under ``vmap``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Bool, Float
from scipy import stats

__all__ = [
    "PAPER_TREND_REFERENCE",
    "TrendFit",
    "as_capabilities",
    "bootstrap_capabilities",
    "decimal_year",
    "fit_frontier_trend",
    "forecast_capability",
    "frontier_line_fit",
    "frontier_mask",
    "frontier_models",
    "weighted_least_squares",
    "year_to_timestamp",
]

# The paper's headline figures on scores_long.csv (Winogrande anchor, l2 = 0.1).
PAPER_TREND_REFERENCE: dict[str, Any] = {
    "slope_per_year": 0.55,
    "forecast_date": "2028-10-01",
    "forecast_capability": 4.4,
}

_DAYS_PER_YEAR = 365.25
_EPOCH = pd.Timestamp("1970-01-01")


def decimal_year(dates: Any) -> np.ndarray:
    """Calendar dates -> decimal years (1970 + days since 1970-01-01 / 365.25), float64."""
    ts = pd.to_datetime(pd.Series(np.asarray(dates).ravel() if not isinstance(dates, pd.Series) else dates))
    if ts.isna().any():
        raise ValueError(
            f"{int(ts.isna().sum())} release date(s) are missing (NaT); drop those models or fill "
            "in their release dates before fitting a trend"
        )
    days = (ts - _EPOCH).dt.total_seconds().to_numpy() / 86400.0
    return 1970.0 + days / _DAYS_PER_YEAR


def year_to_timestamp(year: Any) -> pd.DatetimeIndex:
    """Inverse of :func:`decimal_year`."""
    days = (np.asarray(year, dtype=np.float64) - 1970.0) * _DAYS_PER_YEAR
    return pd.DatetimeIndex(_EPOCH + pd.to_timedelta(np.atleast_1d(days), unit="D"))


def as_capabilities(obj: Any, *, name: str = "capabilities") -> pd.DataFrame:
    """Normalise a stitching fit or a frame to columns ``capability`` and ``release_date``.

    Accepts a :class:`~platinum_jax.stitching.StitchingFit` (its ``.capabilities``) or a frame
    indexed by model (or with a ``model`` column) holding ``capability`` and ``release_date``.
    """
    frame = getattr(obj, "capabilities", obj)
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(
            f"{name} must be a StitchingFit or a DataFrame with columns capability and "
            f"release_date, got {type(obj).__name__}"
        )
    frame = frame.copy()
    if "model" in frame.columns:
        frame = frame.set_index("model")
    frame.index = frame.index.astype(str)
    frame.index.name = "model"
    missing = [c for c in ("capability", "release_date") if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} lacks column(s) {missing}; it has {list(frame.columns)}. Pass the "
            "capabilities of a stitching fit (fit.capabilities) or rename your columns"
        )
    if frame.index.duplicated().any():
        dup = frame.index[frame.index.duplicated()].unique().tolist()[:5]
        raise ValueError(f"{name} lists some models more than once, e.g. {dup}; keep one row each")
    cap = pd.to_numeric(frame["capability"], errors="coerce").astype(np.float64)
    if not np.isfinite(cap.to_numpy()).all():
        bad = cap.index[~np.isfinite(cap.to_numpy())].tolist()[:5]
        raise ValueError(f"{name} has non-finite capabilities for {bad}; drop or fix them")
    dates = pd.to_datetime(frame["release_date"], errors="coerce")
    if dates.isna().any():
        bad = dates.index[dates.isna()].tolist()[:5]
        raise ValueError(
            f"{name} has {int(dates.isna().sum())} model(s) without a release date, e.g. {bad}; "
            "a trend over time needs every date: drop them (frame.dropna(subset=['release_date'])) "
            "or add the dates"
        )
    out = pd.DataFrame({"capability": cap, "release_date": dates.astype("datetime64[ns]")})
    if len(out) < 3:
        raise ValueError(f"{name} has {len(out)} model(s); a trend needs at least 3")
    return out


def frontier_mask(
    capability: Float[Array, " n"],
    year: Float[Array, " n"],
    valid: Bool[Array, " n"],
    top_n: int = 1,
) -> Bool[Array, " n"]:
    """Frontier-at-release indicator (pure, jittable, static shapes).

    Model m is on the frontier when ``valid[m]`` and fewer than ``top_n`` valid models j with
    t_j <= t_m have C_j > C_m.  ``valid`` masks padding or not-yet-released models.
    """
    earlier = year[None, :] <= year[:, None]
    better = capability[None, :] > capability[:, None]
    n_better = jnp.sum(earlier & better & valid[None, :], axis=1)
    return valid & (n_better < top_n)


def weighted_least_squares(
    X: Float[Array, "n p"], y: Float[Array, " n"], w: Float[Array, " n"]
) -> tuple[Float[Array, " p"], Float[Array, ""], Float[Array, "p p"]]:
    """Weighted least squares by Cholesky: returns (beta, SSE, L) with G = X^T W X = L L^T.

    Weights of zero mask rows out, so shapes stay static under ``vmap``.
    """
    Xw = X * w[:, None]
    gram = X.T @ Xw
    chol = jnp.linalg.cholesky(gram)
    beta = jax.scipy.linalg.cho_solve((chol, True), Xw.T @ y)
    resid = y - X @ beta
    return beta, jnp.sum(w * resid**2), chol


def frontier_line_fit(capability, year, valid, x_ref, top_n):
    """``(intercept, slope)`` of the least-squares line ``C = a + s (t - x_ref)`` through the
    frontier (top ``top_n`` at release among ``valid``); pure and jittable (static ``top_n``)."""
    on = frontier_mask(capability, year, valid, top_n)
    X = jnp.stack([jnp.ones_like(year), year - x_ref], axis=1)
    beta, _, _ = weighted_least_squares(X, capability, on.astype(capability.dtype))
    return beta


# Refit the frontier and its trend per capability draw; top_n is a Python int (static).
_line_fit_draws = jax.jit(
    jax.vmap(frontier_line_fit, in_axes=(0, None, None, None, None)), static_argnums=(4,)
)


@dataclass(frozen=True, eq=False)
class TrendFit:
    """Linear trend of frontier capability against release year (immutable).

    Attributes: ``intercept`` a (capability at ``year_ref``), ``slope`` s (units per year),
    ``cov`` (2x2 covariance of (a, s)), ``sigma`` (residual sd), ``dof`` (n - 2), ``r2``,
    ``year_ref``, ``models`` (every model with ``year``, ``capability`` and ``frontier``), and
    ``top_n``.
    """

    intercept: float
    slope: float
    cov: np.ndarray
    sigma: float
    dof: int
    r2: float
    year_ref: float
    models: pd.DataFrame
    top_n: int
    _chol: np.ndarray = field(repr=False)

    @property
    def frontier(self) -> pd.DataFrame:
        """The frontier models only."""
        return self.models[self.models["frontier"]]

    @property
    def n_frontier(self) -> int:
        return int(self.models["frontier"].sum())

    def slope_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided Student-t interval for the slope s."""
        q = stats.t.ppf(0.5 + level / 2, self.dof)
        se = float(np.sqrt(self.cov[1, 1]))
        return self.slope - q * se, self.slope + q * se

    def predict(self, dates: Any, level: float = 0.95) -> pd.DataFrame:
        """Trend at ``dates`` with confidence (mean line) and prediction (new model) bands.

        Returns a frame indexed by ``date`` with columns ``year``, ``capability``, ``ci_low``,
        ``ci_high``, ``pi_low``, ``pi_high``.
        """
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        dates = pd.DatetimeIndex(pd.to_datetime(np.atleast_1d(np.asarray(dates))))
        year = decimal_year(dates)
        X = np.stack([np.ones_like(year), year - self.year_ref], axis=1)
        mean = X @ np.array([self.intercept, self.slope])
        # x0^T G^-1 x0 = ||L^-1 x0||^2 (triangular solve)
        z = np.asarray(jax.scipy.linalg.solve_triangular(jnp.asarray(self._chol), jnp.asarray(X.T), lower=True))
        lev = np.sum(z**2, axis=0)
        q = stats.t.ppf(0.5 + level / 2, self.dof)
        half_ci = q * self.sigma * np.sqrt(lev)
        half_pi = q * self.sigma * np.sqrt(1.0 + lev)
        return pd.DataFrame(
            {
                "year": year,
                "capability": mean,
                "ci_low": mean - half_ci,
                "ci_high": mean + half_ci,
                "pi_low": mean - half_pi,
                "pi_high": mean + half_pi,
            },
            index=pd.Index(dates, name="date"),
        )

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        """Tidy summary: one row per quantity, ours beside the paper's where it reports one."""
        lo, hi = self.slope_interval(level)
        rows = [
            ("slope_per_year", self.slope, lo, hi, PAPER_TREND_REFERENCE["slope_per_year"]),
            ("intercept_at_year_ref", self.intercept, np.nan, np.nan, np.nan),
            ("year_ref", self.year_ref, np.nan, np.nan, np.nan),
            ("r2", self.r2, np.nan, np.nan, np.nan),
            ("residual_sd", self.sigma, np.nan, np.nan, np.nan),
            ("n_frontier", float(self.n_frontier), np.nan, np.nan, np.nan),
            ("n_models", float(len(self.models)), np.nan, np.nan, np.nan),
        ]
        return pd.DataFrame(
            rows, columns=["quantity", "value", "low", "high", "paper_reference"]
        ).set_index("quantity")


def frontier_models(capabilities: Any, top_n: int = 1) -> pd.DataFrame:
    """Every model with its ``year`` and a boolean ``frontier`` (top ``top_n`` at release).

    ``capabilities``: a StitchingFit or a frame with ``capability`` and ``release_date``.
    Returns the frame sorted by release date.
    """
    if int(top_n) < 1:
        raise ValueError(f"top_n must be a positive integer, got {top_n!r}")
    caps = as_capabilities(capabilities).sort_values(["release_date", "capability"])
    year = decimal_year(caps["release_date"])
    on = frontier_mask(
        jnp.asarray(caps["capability"].to_numpy()),
        jnp.asarray(year),
        jnp.ones(len(caps), dtype=bool),
        int(top_n),
    )
    out = caps.copy()
    out["year"] = year
    out["frontier"] = np.asarray(on)
    return out


def fit_frontier_trend(
    capabilities: Any,
    *,
    top_n: int = 1,
    start: Any = None,
    end: Any = None,
) -> TrendFit:
    """Fit the linear trend C = a + s (t - t_ref) to frontier-at-release models.

    Parameters
    ----------
    capabilities : StitchingFit or DataFrame (``capability``, ``release_date``; index model)
    top_n : a model is frontier when it is among the ``top_n`` most capable at its release.
    start, end : optional dates restricting the models considered (inclusive).
    """
    caps = as_capabilities(capabilities)
    if start is not None:
        caps = caps[caps["release_date"] >= pd.Timestamp(start)]
    if end is not None:
        caps = caps[caps["release_date"] <= pd.Timestamp(end)]
    models = frontier_models(caps, top_n=top_n)
    front = models[models["frontier"]]
    n = len(front)
    if n < 3:
        raise ValueError(
            f"only {n} frontier model(s) in the window; a trend with intervals needs >= 3 "
            "(widen start/end or raise top_n)"
        )
    year = front["year"].to_numpy()
    y = front["capability"].to_numpy()
    year_ref = float(year.mean())
    X = np.stack([np.ones(n), year - year_ref], axis=1)
    beta, sse, chol = weighted_least_squares(jnp.asarray(X), jnp.asarray(y), jnp.ones(n))
    beta, sse, chol = np.asarray(beta), float(sse), np.asarray(chol)
    dof = n - 2
    sigma2 = sse / dof
    eye = np.eye(2)
    cov = sigma2 * np.asarray(jax.scipy.linalg.cho_solve((jnp.asarray(chol), True), jnp.asarray(eye)))
    sst = float(np.sum((y - y.mean()) ** 2))
    return TrendFit(
        intercept=float(beta[0]),
        slope=float(beta[1]),
        cov=cov,
        sigma=float(np.sqrt(sigma2)),
        dof=dof,
        r2=1.0 - sse / sst if sst > 0 else np.nan,
        year_ref=year_ref,
        models=models,
        top_n=int(top_n),
        _chol=chol,
    )


def forecast_capability(
    trend: TrendFit,
    dates: Any = None,
    *,
    until: Any = PAPER_TREND_REFERENCE["forecast_date"],
    freq: str = "MS",
    level: float = 0.95,
    capability_draws: Any = None,
) -> pd.DataFrame:
    """Forecast frontier capability at ``dates`` (default: monthly from the last release to ``until``).

    Bands: ``ci_*`` (confidence band of the trend line, from the regression's parameter
    uncertainty) and ``pi_*`` (prediction band for a single new frontier model).  When
    ``capability_draws`` is given (a frame with rows = replicates and columns = models, or a
    stitching bootstrap result, see :func:`bootstrap_capabilities`), the frontier and trend are refitted per draw and ``draw_low``/``draw_high``
    (quantiles at ``level``) and ``draw_median`` propagate the capability uncertainty too.
    The ``uncertainty_source`` column says which bands are present.
    """
    if dates is None:
        last = trend.models["release_date"].max()
        until_ts = pd.Timestamp(until)
        if until_ts <= last:
            raise ValueError(f"until={until!r} is not after the last release ({last.date()})")
        dates = pd.date_range(last, until_ts, freq=freq)
        if len(dates) == 0 or dates[-1] != until_ts:
            dates = dates.append(pd.DatetimeIndex([until_ts]))
    out = trend.predict(dates, level=level)
    source = "regression parameters (t-interval)"
    if capability_draws is not None:
        draws = _align_draws(capability_draws, trend.models.index)
        year = jnp.asarray(trend.models["year"].to_numpy())
        valid = jnp.ones(len(year), dtype=bool)
        betas = np.asarray(
            _line_fit_draws(jnp.asarray(draws), year, valid, trend.year_ref, trend.top_n)
        )
        X = np.stack([np.ones(len(out)), out["year"].to_numpy() - trend.year_ref], axis=1)
        paths = betas @ X.T  # (n_draws, n_dates)
        alpha = (1 - level) / 2
        out["draw_low"] = np.quantile(paths, alpha, axis=0)
        out["draw_median"] = np.quantile(paths, 0.5, axis=0)
        out["draw_high"] = np.quantile(paths, 1 - alpha, axis=0)
        source += f" + capability draws ({draws.shape[0]} replicates)"
    out["uncertainty_source"] = source
    return out


def bootstrap_capabilities(boot: Any) -> pd.DataFrame:
    """Capability draws (replicates x models) from a stitching bootstrap result.

    ``boot`` is what :func:`platinum_jax.stitching.bootstrap` returns: replicate
    parameter vectors ``boot.thetas`` (R, P) of the fit ``boot.fit``; each is unpacked with the
    fit's layout (anchored entries inserted) under ``vmap``.  Replicates that did not converge
    (``boot.converged`` False) are left out, as in the bootstrap's own summary.
    """
    fit, thetas = getattr(boot, "fit", None), getattr(boot, "thetas", None)
    if fit is None or thetas is None:
        raise ValueError(
            "expected a stitching bootstrap result with .fit and .thetas (from "
            f"platinum_jax.stitching.bootstrap), got {type(boot).__name__}"
        )
    converged = getattr(boot, "converged", None)
    if converged is not None:  # the replicates the bootstrap's own summary uses
        thetas = np.asarray(thetas)[np.asarray(converged, dtype=bool)]
    caps = jax.vmap(lambda t: fit.layout.unpack(t).capability)(jnp.asarray(thetas))
    return pd.DataFrame(np.asarray(caps), columns=pd.Index(fit.table.models, name="model"))


def _align_draws(draws: Any, models: Sequence[str]) -> np.ndarray:
    if hasattr(draws, "thetas") and hasattr(draws, "fit"):
        draws = bootstrap_capabilities(draws)
    if not isinstance(draws, pd.DataFrame):
        raise ValueError(
            "capability_draws must be a DataFrame with one column per model and one row per "
            f"replicate, got {type(draws).__name__}"
        )
    missing = [m for m in models if m not in draws.columns]
    if missing:
        raise ValueError(
            f"capability_draws lacks {len(missing)} model(s) of the trend, e.g. {missing[:5]}; "
            "draw capabilities for the same models the trend was fitted on"
        )
    arr = draws.loc[:, list(models)].to_numpy(dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError("capability_draws contains NaN or inf; drop failed replicates first")
    return arr
