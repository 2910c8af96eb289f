"""Time horizons: log METR 50% time horizon regressed on stitched capability.

The mapping is ordinary least squares  log H_m = c_0 + c_1 C_m  over models with both a
capability and a METR horizon H_m (minutes).  Intervals are Student-t with n - 2 degrees of
freedom on the log scale, exponentiated back to minutes:

* confidence band for the mean log-horizon: +- t_q sigma sqrt(x0^T G^-1 x0),
* prediction band for one model:            +- t_q sigma sqrt(1 + x0^T G^-1 x0).

The paper reports R^2 ~ 0.85 for this regression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import stats

from ._trends import as_capabilities, weighted_least_squares

__all__ = ["PAPER_HORIZON_REFERENCE", "HorizonFit", "fit_time_horizons"]

PAPER_HORIZON_REFERENCE: dict[str, float] = {"r2": 0.85}


@dataclass(frozen=True, eq=False)
class HorizonFit:
    """log(horizon minutes) = intercept + slope * capability, fitted by OLS (immutable).

    ``data`` holds the matched models (capability, horizon_minutes, log_horizon, fitted),
    ``unmatched`` the horizon rows with no capability estimate.
    """

    intercept: float
    slope: float
    cov: np.ndarray
    sigma: float
    dof: int
    r2: float
    data: pd.DataFrame
    unmatched: pd.DataFrame
    _chol: np.ndarray
    _x_ref: float

    @property
    def doubling_capability(self) -> float:
        """Capability increase that doubles the time horizon: log 2 / slope."""
        return float(np.log(2.0) / self.slope)

    def predict(self, capability: Any, level: float = 0.95) -> pd.DataFrame:
        """Horizon (minutes) at ``capability`` values with confidence and prediction intervals.

        Columns: ``log_horizon``, ``horizon_minutes`` (exp of the mean log, i.e. the median
        horizon), ``ci_low``/``ci_high`` and ``pi_low``/``pi_high`` in minutes.
        """
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        c = np.atleast_1d(np.asarray(capability, dtype=np.float64))
        if not np.isfinite(c).all():
            raise ValueError("capability contains NaN or inf")
        X = np.stack([np.ones_like(c), c - self._x_ref], axis=1)
        mean = self.intercept + self.slope * c
        z = np.asarray(jax.scipy.linalg.solve_triangular(jnp.asarray(self._chol), jnp.asarray(X.T), lower=True))
        lev = np.sum(z**2, axis=0)
        q = stats.t.ppf(0.5 + level / 2, self.dof)
        hc, hp = q * self.sigma * np.sqrt(lev), q * self.sigma * np.sqrt(1 + lev)
        return pd.DataFrame(
            {
                "log_horizon": mean,
                "horizon_minutes": np.exp(mean),
                "ci_low": np.exp(mean - hc),
                "ci_high": np.exp(mean + hc),
                "pi_low": np.exp(mean - hp),
                "pi_high": np.exp(mean + hp),
            },
            index=pd.Index(c, name="capability"),
        )

    def capability_for(self, horizon_minutes: Any) -> pd.Series:
        """Inverse of the mean line: the capability whose predicted median horizon is given."""
        h = np.atleast_1d(np.asarray(horizon_minutes, dtype=np.float64))
        if not (np.isfinite(h) & (h > 0)).all():
            raise ValueError("horizon_minutes must be positive and finite")
        c = (np.log(h) - self.intercept) / self.slope
        return pd.Series(c, index=pd.Index(h, name="horizon_minutes"), name="capability")

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        q = stats.t.ppf(0.5 + level / 2, self.dof)
        se = float(np.sqrt(self.cov[1, 1]))
        rows = [
            ("r2", self.r2, np.nan, np.nan, PAPER_HORIZON_REFERENCE["r2"]),
            ("slope_log_minutes_per_unit", self.slope, self.slope - q * se, self.slope + q * se, np.nan),
            ("capability_per_doubling", self.doubling_capability, np.nan, np.nan, np.nan),
            ("residual_sd_log", self.sigma, np.nan, np.nan, np.nan),
            ("n_models", float(len(self.data)), np.nan, np.nan, np.nan),
        ]
        return pd.DataFrame(rows, columns=["quantity", "value", "low", "high", "paper_reference"]).set_index("quantity")


def fit_time_horizons(capabilities: Any, horizons: pd.DataFrame) -> HorizonFit:
    """Regress log METR time horizon on capability.

    ``capabilities``: a StitchingFit or a frame (``capability``; index model).
    ``horizons``: a frame with ``model`` and ``time_horizon_minutes`` (e.g.
    ``read_metr_horizons(raw_dir)``).  Names are matched exactly after stripping whitespace;
    unmatched rows are kept in ``HorizonFit.unmatched`` so nothing disappears silently.
    """
    caps = as_capabilities(capabilities)
    if not isinstance(horizons, pd.DataFrame):
        raise ValueError(f"horizons must be a DataFrame, got {type(horizons).__name__}")
    hz = horizons.reset_index() if "model" not in horizons.columns else horizons.copy()
    col = next((c for c in ("time_horizon_minutes", "horizon_minutes", "time_horizon", "Time horizon") if c in hz.columns), None)
    if "model" not in hz.columns or col is None:
        raise ValueError(
            f"horizons needs columns 'model' and 'time_horizon_minutes'; it has {list(hz.columns)}"
        )
    hz["model"] = hz["model"].astype(str).str.strip()
    h = pd.to_numeric(hz[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(h) & (h > 0))
    if bad.any():
        raise ValueError(
            f"horizons: {int(bad.sum())} non-positive or missing time horizons, e.g. "
            f"{hz.loc[bad, 'model'].tolist()[:5]}; drop them first"
        )
    hz["horizon_minutes"] = h
    if hz["model"].duplicated().any():
        raise ValueError(f"horizons lists models twice: {hz.loc[hz['model'].duplicated(), 'model'].tolist()[:5]}")
    matched = hz["model"].isin(caps.index)
    data = hz.loc[matched, ["model", "horizon_minutes"]].set_index("model")
    data["capability"] = caps.loc[data.index, "capability"]
    data["log_horizon"] = np.log(data["horizon_minutes"])
    n = len(data)
    if n < 4:
        raise ValueError(
            f"only {n} model(s) of the horizon table have a capability estimate; the regression "
            "needs >= 4 (check that model names match the score table)"
        )
    c, y = data["capability"].to_numpy(), data["log_horizon"].to_numpy()
    x_ref = float(c.mean())
    X = np.stack([np.ones(n), c - x_ref], axis=1)
    beta, sse, chol = weighted_least_squares(jnp.asarray(X), jnp.asarray(y), jnp.ones(n))
    beta, sse, chol = np.asarray(beta), float(sse), np.asarray(chol)
    dof = n - 2
    s2 = sse / dof
    cov = s2 * np.asarray(jax.scipy.linalg.cho_solve((jnp.asarray(chol), True), jnp.eye(2)))
    data["fitted_log_horizon"] = X @ beta
    sst = float(np.sum((y - y.mean()) ** 2))
    return HorizonFit(
        intercept=float(beta[0] - beta[1] * x_ref),
        slope=float(beta[1]),
        cov=cov,
        sigma=float(np.sqrt(s2)),
        dof=dof,
        r2=1 - sse / sst,
        data=data,
        unmatched=hz.loc[~matched, ["model", "horizon_minutes"]].reset_index(drop=True),
        _chol=chol,
        _x_ref=x_ref,
    )
