"""The Bayesian Rosetta model (:class:`~platinum_jax.models.rosetta_bayes.RosettaBayes`)
bound to a score table: the engine :class:`Problem` and the NumPyro model it builds, to copy,
extend or hand to any NumPyro inference, and the parameter groups :func:`run_sbc` reports.
"""

from __future__ import annotations

import jax.numpy as jnp

from platinum_jax.models import BenchmarkAnchor
from platinum_jax.models.rosetta_bayes import (
    CENTRED_NOISE_MIN_SCORES,
    BayesData,
    Priors,
    check_likelihood,
    prepare_data,
    response_rows,
)

from ._bayes import assemble_parameters as _assemble
from ._bayes import numpyro_model
from ._problem import Problem

__all__ = ["SBC_GROUPS", "sbc_noise_scale", "stitching_model", "stitching_problem"]


def stitching_problem(table, anchor=None, *, likelihood: str = "gaussian",
                      priors: Priors | None = None, data: BayesData | None = None,
                      centred_min: int = CENTRED_NOISE_MIN_SCORES, **prepare):
    """The Bayesian Rosetta model bound to ``table``: an engine
    :class:`~platinum_jax.inference.Problem`, and the :class:`BayesData` it was built from.

    ``data``: prepared data (default :func:`prepare_data` with ``prepare`` options);
    ``centred_min``: benchmarks with at least this many scores get a centred log noise scale.
    """
    from platinum_jax.models.rosetta_bayes import RosettaBayes

    likelihood = check_likelihood(likelihood)
    priors = Priors() if priors is None else priors
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if data is None:
        data, _ = prepare_data(table, likelihood, **prepare)
    model = RosettaBayes.with_likelihood(likelihood, anchor=anchor, priors=priors,
                                         centred_min=int(centred_min))
    return Problem(model, response_rows(table, data, likelihood)), data


def stitching_model(table, anchor=None, *, likelihood: str = "gaussian",
                    priors: Priors | None = None, centred_min: int = CENTRED_NOISE_MIN_SCORES,
                    **prepare):
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
    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   centred_min=centred_min, **prepare)
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
    theta, _ = _assemble(problem, values, True)
    return {"sigma": jnp.exp(problem.item.unflatten(theta.items)["noise_log_sigma"])}
