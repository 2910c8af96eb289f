"""Time horizons: log METR 50% time horizon regressed on stitched capability.

The mapping is ordinary least squares  log H_m = c_0 + c_1 C_m  over models with both a
capability and a METR horizon H_m (minutes).  Intervals are Student-t with n - 2 degrees of
freedom on the log scale, exponentiated back to minutes:

* confidence band for the mean log-horizon: +- t_q sigma sqrt(x0^T G^-1 x0),
* prediction band for one model:            +- t_q sigma sqrt(1 + x0^T G^-1 x0).

The paper reports R^2 ~ 0.85 for this regression. That figure is not a full-sample R^2: in
Epoch's public analysis code (``analysis/model_fit.ipynb`` of ``epoch-research/benchmark-stitching``)
the matched models, in the row order of ``external_benchmark_metr.csv``, are split by
scikit-learn's ``train_test_split(test_size=0.4, random_state=42)``; the line is fitted to the
60% training part and 0.85 is its R^2 on that part (0.8519 there; the held-out 40% gives 0.7535).
That split is a shuffle: NumPy's legacy ``RandomState(42).permutation(n)``, the first
``ceil(0.4 n)`` positions held out, the rest for training. :func:`paper_split` reproduces it
without scikit-learn, and :class:`HorizonFit` reports the full-sample R^2 beside both parts of
the paper's split. The split depends on the number and the row order of the matched models: a
METR table in another order, or a capability fit that matches other models, gives another split.
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

__all__ = ["PAPER_HORIZON_REFERENCE", "HorizonFit", "fit_time_horizons", "paper_split"]

# r2: the paper's figure (training part of its split); r2_test: the held-out part in Epoch's code
PAPER_HORIZON_REFERENCE: dict[str, float] = {"r2": 0.85, "r2_test": 0.7535}
PAPER_SPLIT_TEST_SIZE = 0.4
PAPER_SPLIT_SEED = 42


def paper_split(n: int, test_size: float = PAPER_SPLIT_TEST_SIZE,
                seed: int = PAPER_SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` positions of the paper's random split of ``n`` rows.

    The shuffle of scikit-learn's ``train_test_split`` (``ShuffleSplit``): a permutation from
    NumPy's legacy ``RandomState(seed)``, whose first ``ceil(test_size * n)`` entries are the
    test rows and the rest the training rows (both in permutation order).
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"the split needs n >= 2 rows (got {n!r})")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must lie strictly between 0 and 1 (got {test_size!r})")
    n_test = int(np.ceil(test_size * n))
    if n_test >= n:
        raise ValueError(f"test_size {test_size} leaves no training rows out of {n}")
    perm = np.random.RandomState(seed).permutation(n)
    return perm[n_test:], perm[:n_test]


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - np.mean(y)) ** 2))


@dataclass(frozen=True, eq=False)
class HorizonFit:
    """log(horizon minutes) = intercept + slope * capability, fitted by OLS (immutable).

    ``data`` holds the matched models (capability, horizon_minutes, log_horizon, fitted, and
    ``paper_split``: "train" or "test" in the paper's split), ``unmatched`` the horizon rows
    with no capability estimate. ``r2`` is the full-sample R^2 of the line fitted to every
    matched model; ``split_r2_train`` / ``split_r2_test`` are the R^2 of a line fitted to the
    training part of the paper's split only, on that part (the paper's 0.85) and on the
    held-out part; ``split_slope`` / ``split_intercept`` are that line's.
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
    split_r2_train: float = np.nan
    split_r2_test: float = np.nan
    split_slope: float = np.nan
    split_intercept: float = np.nan

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
        """Full-sample fit and R^2 beside both parts of the paper's split (``r2``: full
        sample, no paper figure; ``r2_paper_split_train``: the paper's 0.85)."""
        q = stats.t.ppf(0.5 + level / 2, self.dof)
        se = float(np.sqrt(self.cov[1, 1]))
        rows = [
            ("r2", self.r2, np.nan, np.nan, np.nan),
            ("r2_paper_split_train", self.split_r2_train, np.nan, np.nan,
             PAPER_HORIZON_REFERENCE["r2"]),
            ("r2_paper_split_test", self.split_r2_test, np.nan, np.nan,
             PAPER_HORIZON_REFERENCE["r2_test"]),
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
    The paper's split (:func:`paper_split`) runs over the matched rows in the order of
    ``horizons``, as Epoch's code does; it needs at least 4 training and 2 test models and is
    left NaN otherwise.
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
    split = {}
    train, test = paper_split(n)
    data["paper_split"] = "train"
    data.iloc[test, data.columns.get_loc("paper_split")] = "test"
    if len(train) >= 4 and len(test) >= 2:
        slope_s, icpt_s = np.polyfit(c[train], y[train], 1)
        split = dict(split_r2_train=_r2(y[train], icpt_s + slope_s * c[train]),
                     split_r2_test=_r2(y[test], icpt_s + slope_s * c[test]),
                     split_slope=float(slope_s), split_intercept=float(icpt_s))
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
        **split,
    )
