"""Moved: the Bayesian Rosetta model's data preparation is in
:mod:`platinum_jax.models.rosetta_bayes`, its problem, NumPyro model and SBC groups in
:mod:`platinum_jax.inference`."""

from platinum_jax.inference import SBC_GROUPS, sbc_noise_scale, stitching_model, stitching_problem
from platinum_jax.models.rosetta_bayes import (
    CENTRED_NOISE_MIN_SCORES,
    COUNT_LIKELIHOODS,
    LIKELIHOODS,
    STDERR_FLOOR,
    BayesData,
    Priors,
    anchored_benchmark,
    deterministic_sites,
    prepare_data,
    response_rows,
)

_COUNT_LIKELIHOODS = COUNT_LIKELIHOODS
__all__ = ["CENTRED_NOISE_MIN_SCORES", "LIKELIHOODS", "STDERR_FLOOR", "Priors", "BayesData",
           "SBC_GROUPS", "anchored_benchmark", "deterministic_sites", "prepare_data",
           "response_rows", "sbc_noise_scale", "stitching_model", "stitching_problem"]
