"""Data preparation for the Bayesian Rosetta model (:mod:`platinum_jax.models.rosetta`):
a score table (models x benchmarks, long, with optional ``stderr`` and ``n_items``) becomes
the arrays the model conditions on and the response table the engine fits.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float, Int

from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import COUNT_LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood

__all__ = [
    "COUNT_LIKELIHOODS",
    "LIKELIHOODS",
    "BayesData",
    "anchored_benchmark",
    "STDERR_FLOOR",
    "check_likelihood",
    "deterministic_sites",
    "floor_se",
    "prepare_data",
    "response_rows",
]

#: Known standard errors below this are raised to it: half of 0.01, the precision to which Epoch
#: reports them. A reported 0.00 (a score of 0 out of n) would claim an exactly known score,
#: whose likelihood grows without bound as the predicted score and the noise go to 0.
STDERR_FLOOR = 0.005


class BayesData(NamedTuple):
    """Arrays the model conditions on, one entry per score (shape (n_scores,))."""

    model_index: Int[Array, " n"]
    benchmark_index: Int[Array, " n"]
    # What the likelihood sees (Beta: boundary-adjusted; Binomial: item counts).
    scores: Float[Array, " n"]
    stderr: Float[Array, " n"]  # 0 where unknown
    n_items: Float[Array, " n"]  # 1 where unknown (only the Binomial likelihood uses it)


def prepare_data(
    table, likelihood: str, *, beta_boundary: float = 0.005, stderr_floor: float = STDERR_FLOOR
) -> tuple[BayesData, dict]:
    """Turn a :class:`ScoreTable` into :class:`BayesData` for ``likelihood``.

    Beta needs scores strictly inside (0, 1).  Exact 0 and 1 scores are moved inwards by half an
    item, 0.5 / n_items, when the benchmark size is known (the usual continuity correction), and
    by ``beta_boundary`` otherwise; the number moved is returned in ``info`` and reported.
    Binomial and beta-binomial need ``n_items`` for every score and use the count
    k_i = round(score_i n_i).

    Known standard errors below ``stderr_floor`` are raised to it, and their number is returned
    in ``info["n_stderr_floored"]``.  A reported standard error of 0 (Epoch's runs give
    ``0.00`` for a score of 0 out of n, or below 0.005 after rounding to two decimals) would
    claim an exactly known score: the likelihood of a score of 0 then grows without bound as
    the predicted score and the benchmark's noise both go to 0, and NUTS diverges there (69
    divergences on the Epoch raw data).  0.005 is half the reporting precision; pass
    ``stderr_floor=0`` to use the standard errors as given.
    Returns ``(data, info)``.
    """
    likelihood = check_likelihood(likelihood)
    frame = table.data
    scores = np.asarray(table.scores, dtype=np.float64)
    stderr = frame["stderr"].to_numpy(dtype=np.float64, na_value=np.nan)
    n_items = frame["n_items"].to_numpy(dtype=np.float64, na_value=np.nan)
    if np.any(stderr[np.isfinite(stderr)] < 0):
        raise ValueError("ScoreTable column 'stderr' has negative values; standard errors are >= 0")
    if not (np.isfinite(stderr_floor) and stderr_floor >= 0):
        raise ValueError(f"stderr_floor must be a finite number >= 0, got {stderr_floor!r}")
    low = np.isfinite(stderr) & (stderr < stderr_floor)
    stderr = np.where(low, stderr_floor, stderr)
    info: dict = {
        "likelihood": likelihood,
        "n_boundary_moved": 0,
        "n_stderr_floored": int(low.sum()),
        "stderr_floor": float(stderr_floor),
    }
    if likelihood == "beta":
        if not 0 < beta_boundary < 0.5:
            raise ValueError(f"beta_boundary must lie in (0, 0.5), got {beta_boundary!r}")
        eps = np.where(np.isfinite(n_items) & (n_items > 0), 0.5 / n_items, beta_boundary)
        at_zero, at_one = scores <= 0.0, scores >= 1.0
        info["n_boundary_moved"] = int(at_zero.sum() + at_one.sum())
        scores = np.where(at_zero, eps, np.where(at_one, 1.0 - eps, scores))
    elif likelihood in COUNT_LIKELIHOODS:
        missing = ~(np.isfinite(n_items) & (n_items >= 1))
        if missing.any():
            names = sorted(set(frame.loc[missing, "benchmark"]))
            raise ValueError(
                f"the {likelihood} likelihood needs n_items for every score; {int(missing.sum())} "
                f"score(s) lack it, on benchmark(s) {names[:8]}; add an 'n_items' column "
                "(number of questions) or use likelihood='gaussian' or 'beta'"
            )
        scores = np.round(scores * n_items)
    data = BayesData(
        model_index=jnp.asarray(table.model_index, dtype=jnp.int32),
        benchmark_index=jnp.asarray(table.benchmark_index, dtype=jnp.int32),
        scores=jnp.asarray(scores),
        stderr=jnp.asarray(np.nan_to_num(stderr, nan=0.0)),
        n_items=jnp.asarray(np.where(np.isfinite(n_items), n_items, 1.0)),
    )
    return data, info


def anchored_benchmark(layout) -> int | None:
    """The benchmark whose difficulty and slope the anchor fixes, or None (a model anchor).

    With such an anchor the model derives the scale (mu_C, tau_C) from that benchmark's
    sampled intercept and slope instead of sampling it (see :class:`~platinum_jax.models.rosetta.RosettaReparameterisation`).
    """
    if (
        not layout.fixed_capability
        and len(layout.fixed_difficulty) == 1
        and layout.fixed_difficulty == layout.fixed_slope
        and layout.fixed_slope_values[0] > 0
    ):
        return int(layout.fixed_difficulty[0])
    return None


def deterministic_sites(layout, likelihood: str) -> tuple[str, ...]:
    """Posterior variables computed from the sampled ones (not sampled) under ``layout``."""
    sites = ("capability", "difficulty", "slope", "noise_variance")
    if likelihood == "gaussian":
        sites += ("sigma",)
    if anchored_benchmark(layout) is not None:
        sites += ("capability_mu", "capability_tau")
    return sites


def response_rows(table, data: BayesData, likelihood: str):
    """The prepared scores as a :class:`~platinum_jax.data.ResponseTable` (subjects = models,
    items = benchmarks, rows in the score table's order): counts become fractions of their
    ``trials`` (= ``n_items``), known standard errors the ``se`` column (0 = unknown; no ``se``
    column when no score has one, as a file without standard errors reads)."""
    from platinum_jax.data import ResponseTable

    counts = likelihood in COUNT_LIKELIHOODS
    n = np.asarray(data.n_items, dtype=np.float64)
    y = np.asarray(data.scores, dtype=np.float64)
    se = np.asarray(data.stderr, dtype=np.float64)
    return ResponseTable(
        subjects=pd.Index(list(table.models), name="subject"),
        items=pd.Index(list(table.benchmarks), name="item"),
        subject_index=np.asarray(data.model_index, dtype=np.int32),
        item_index=np.asarray(data.benchmark_index, dtype=np.int32),
        response=y / n if counts else y,
        trials=n if counts else None,
        se=se if np.any(se > 0) else None,
        source="the score table",
    )


def floor_se(table, floor: float = STDERR_FLOOR):
    """``(table, n)``: the response table with its known standard errors (``se``) below
    ``floor`` raised to it (see :data:`STDERR_FLOOR`), and how many were raised; a table
    without ``se`` comes back as it is."""
    if not (np.isfinite(floor) and floor >= 0):
        raise ValueError(f"the standard-error floor must be a finite number >= 0, got {floor!r}")
    if table.se is None:
        return table, 0
    se = np.asarray(table.se, dtype=np.float64)
    low = se < floor
    return dataclasses.replace(table, se=np.where(low, floor, se)), int(low.sum())
