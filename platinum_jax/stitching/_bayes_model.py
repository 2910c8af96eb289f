"""The Bayesian stitching preset: the paper's priors, data preparation, and the model as the
measurement-model engine builds it.

The model itself is declared once, on the protocol, in
:mod:`platinum_jax.models.rosetta_bayes` (:class:`~platinum_jax.models.rosetta_bayes.
RosettaBayes`); :func:`stitching_problem` binds it to a :class:`ScoreTable` and
:func:`stitching_model` returns the NumPyro model :func:`platinum_jax.inference.numpyro_model`
builds from it, to copy, extend or hand to any NumPyro inference.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float, Int

from platinum_jax.models.rosetta_bayes import CENTRED_NOISE_MIN_SCORES as _CENTRED_DEFAULT
from platinum_jax.models.rosetta_bayes import STDERR_FLOOR, Priors

from ._bayes_options import COUNT_LIKELIHOODS, LIKELIHOODS, check_likelihood
from ._model import BenchmarkAnchor, ParameterLayout

__all__ = [
    "LIKELIHOODS",
    "Priors",
    "BayesData",
    "anchored_benchmark",
    "deterministic_sites",
    "prepare_data",
    "stitching_model",
    "stitching_problem",
]

_COUNT_LIKELIHOODS = COUNT_LIKELIHOODS


class BayesData(NamedTuple):
    """Arrays the model conditions on, one entry per score (shape (n_scores,))."""

    model_index: Int[Array, " n"]
    benchmark_index: Int[Array, " n"]
    # What the likelihood sees (Beta: boundary-adjusted; Binomial: item counts).
    scores: Float[Array, " n"]
    stderr: Float[Array, " n"]  # 0 where unknown
    n_items: Float[Array, " n"]  # 1 where unknown (only the Binomial likelihood uses it)


# Benchmarks with at least this many scores get a centred log noise scale, the others a
# non-centred one (see Priors); read when a model is built, so it can be changed here.
CENTRED_NOISE_MIN_SCORES = _CENTRED_DEFAULT



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
    elif likelihood in _COUNT_LIKELIHOODS:
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


def anchored_benchmark(layout: ParameterLayout) -> int | None:
    """The benchmark whose difficulty and slope the anchor fixes, or None (a model anchor).

    With such an anchor the model derives the scale (mu_C, tau_C) from that benchmark's
    sampled intercept and slope instead of sampling it (see :class:`~platinum_jax.models.rosetta_bayes.RosettaReparameterisation`).
    """
    if (
        not layout.fixed_capability
        and len(layout.fixed_difficulty) == 1
        and layout.fixed_difficulty == layout.fixed_slope
        and layout.fixed_slope_values[0] > 0
    ):
        return int(layout.fixed_difficulty[0])
    return None


def deterministic_sites(layout: ParameterLayout, likelihood: str) -> tuple[str, ...]:
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
    ``trials`` (= ``n_items``), known standard errors the ``se`` column (0 = unknown)."""
    from platinum_jax.data import ResponseTable

    counts = likelihood in _COUNT_LIKELIHOODS
    n = np.asarray(data.n_items, dtype=np.float64)
    y = np.asarray(data.scores, dtype=np.float64)
    return ResponseTable(
        subjects=pd.Index(list(table.models), name="subject"),
        items=pd.Index(list(table.benchmarks), name="item"),
        subject_index=np.asarray(data.model_index, dtype=np.int32),
        item_index=np.asarray(data.benchmark_index, dtype=np.int32),
        response=y / n if counts else y,
        trials=n if counts else None,
        se=np.asarray(data.stderr, dtype=np.float64),
        source="the score table",
    )


def stitching_problem(table, anchor=None, *, likelihood: str = "gaussian",
                      priors: Priors | None = None, data: BayesData | None = None, **prepare):
    """The Bayesian Rosetta model bound to ``table``: an engine
    :class:`~platinum_jax.inference.Problem`, and the :class:`BayesData` it was built from.

    ``data``: prepared data (default :func:`prepare_data` with ``prepare`` options).
    """
    from platinum_jax.inference import Problem
    from platinum_jax.models.rosetta_bayes import RosettaBayes

    likelihood = check_likelihood(likelihood)
    priors = Priors() if priors is None else priors
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if data is None:
        data, _ = prepare_data(table, likelihood, **prepare)
    model = RosettaBayes.with_likelihood(likelihood, anchor=anchor, priors=priors,
                                         centred_min=int(CENTRED_NOISE_MIN_SCORES))
    return Problem(model, response_rows(table, data, likelihood)), data


def stitching_model(table, anchor=None, *, likelihood: str = "gaussian",
                    priors: Priors | None = None, **prepare):
    """The Bayesian stitching model as a NumPyro model: ``(model, data)`` with ``model(data,
    observed=True)`` the function :func:`platinum_jax.inference.numpyro_model` builds from
    :class:`~platinum_jax.models.rosetta_bayes.RosettaBayes` (site names as in
    :class:`Priors`; observed site ``y``, on the response table's scale: fractions for count
    likelihoods) and ``data`` the engine's row arrays.

    Example: the log joint density at a point::

        from numpyro.infer.util import log_density
        model, data = stitching_model(table, BenchmarkAnchor("x"))
        log_density(model, (data,), {}, point)
    """
    from platinum_jax.inference import numpyro_model

    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   **prepare)
    return numpyro_model(problem, plain_names=True), problem.data()


#: Parameter groups of the Bayesian Rosetta model for
#: :func:`platinum_jax.inference.run_sbc` (site -> group label).
SBC_GROUPS = {"capability": "capability", "difficulty": "difficulty", "slope": "slope",
              "sigma": "noise scale", "noise_log_mu": "hyper-parameter",
              "noise_log_tau": "hyper-parameter", "capability_mu": "hyper-parameter",
              "capability_tau": "hyper-parameter"}


def sbc_noise_scale(problem, values: dict) -> dict:
    """``{"sigma": sigma_b}``, the per-benchmark noise scale of one draw of the Gaussian
    likelihood (``extra`` of :func:`platinum_jax.inference.run_sbc`)."""
    from platinum_jax.inference import assemble_parameters as _assemble

    theta, _ = _assemble(problem, values, True)
    return {"sigma": jnp.exp(problem.item.unflatten(theta.items)["noise_log_sigma"])}
