"""Bayesian benchmark stitching, the preset of the Rosetta paper (Ho et al., "A Rosetta Stone for
AI Benchmarks"): posteriors on C_m, D_b, alpha_b and on optimal weights.

The model is the MAP fit's ``score = sigmoid(alpha_b (C_m - D_b))`` with the same anchors, a
per-benchmark noise scale and a choice of likelihood (Gaussian, Beta, Binomial); it is declared
once on the measurement-model protocol (:class:`platinum_jax.models.rosetta_bayes.RosettaBayes`,
registered as ``rosetta_bayes``) and sampled by the engine
(:func:`platinum_jax.inference.run_nuts`); ``platinum-jax fit --model rosetta --method nuts``
samples the same model. :func:`fit_stitching_bayes` is the paper's preset: its data preparation,
sampler settings and labelled outputs. Turn on float64 first:
``jax.config.update("jax_enable_x64", True)``.

    >>> from platinum_jax.stitching import ScoreTable
    >>> from platinum_jax.stitching.bayes import fit_stitching_bayes
    >>> from platinum_jax.design import primitives_from_stitching, weights_table
    >>> table = ScoreTable.from_csv("scores_long.csv")                          # doctest: +SKIP
    >>> fit = fit_stitching_bayes(table, likelihood="gaussian", chains=4)       # doctest: +SKIP
    >>> fit.capabilities.sort_values("mean").tail()                            # doctest: +SKIP
    >>> weights_table(primitives_from_stitching(fit, np.ones(38), M=np.eye(38)), r=1.0)  # doctest: +SKIP

Names that moved to their own homes (priors to :mod:`platinum_jax.models.rosetta_bayes`,
summaries and diagnostics to :mod:`platinum_jax.inference`, the weights to
:mod:`platinum_jax.design`, the figures to :mod:`platinum_jax.plots`) still import from here,
with a ``DeprecationWarning`` that names the new home.
"""

from __future__ import annotations

import importlib
import warnings

from ._bayes_fit import (
    BayesStitchingFit,
    compare_likelihoods,
    fit_stitching_bayes,
    hyper_mass_blocks,
)
from ._bayes_model import (
    LIKELIHOODS,
    BayesData,
    prepare_data,
    stitching_model,
    stitching_problem,
)

# Old name -> (new module, new name).
_MOVED = {
    "Priors": ("platinum_jax.models.rosetta_bayes", "Priors"),
    "SamplingWarning": ("platinum_jax.inference", "SamplingWarning"),
    "check_diagnostics": ("platinum_jax.inference", "check_diagnostics"),
    "posterior_summary": ("platinum_jax.inference", "posterior_summary"),
    "choose_chain_method": ("platinum_jax.inference", "choose_chain_method"),
    "use_cpu_devices_for_chains": ("platinum_jax.inference", "use_cpu_devices_for_chains"),
    "load_weights_config": ("platinum_jax.design", "load_weights_config"),
    "optimal_weight_draws": ("platinum_jax.design", "optimal_weight_draws"),
    "posterior_optimal_weights": ("platinum_jax.design", "posterior_optimal_weights"),
    "plot_capabilities": ("platinum_jax.plots", "plot_posterior_capabilities"),
    "plot_ppc": ("platinum_jax.plots", "plot_ppc"),
}

__all__ = [
    "LIKELIHOODS",
    "BayesData",
    "BayesStitchingFit",
    "compare_likelihoods",
    "fit_stitching_bayes",
    "hyper_mass_blocks",
    "prepare_data",
    "stitching_model",
    "stitching_problem",
    *sorted(_MOVED),
]


def __getattr__(name: str):
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new = _MOVED[name]
    warnings.warn(f"platinum_jax.stitching.bayes.{name} moved to {module}.{new}; import it "
                  "from there", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), new)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
