"""Bayesian benchmark stitching with NumPyro: posteriors on C_m, D_b, alpha_b and on optimal weights.

The model is the MAP fit's ``score = sigmoid(alpha_b (C_m - D_b))`` with the same anchors, a
per-benchmark noise scale and a choice of likelihood (Gaussian, Beta, Binomial); it is declared
once on the measurement-model protocol (:mod:`platinum_jax.models.rosetta_bayes`) and sampled by
the engine (:func:`platinum_jax.inference.run_nuts`). :class:`Priors` gives the priors and the
coordinates NUTS samples; :func:`stitching_model` returns the NumPyro model the engine builds.  Turn on float64 first:
``jax.config.update("jax_enable_x64", True)``.

    >>> from platinum_jax.stitching import ScoreTable
    >>> from platinum_jax.stitching.bayes import fit_stitching_bayes, posterior_optimal_weights
    >>> table = ScoreTable.from_csv("scores_long.csv")                          # doctest: +SKIP
    >>> fit = fit_stitching_bayes(table, likelihood="gaussian", chains=4)       # doctest: +SKIP
    >>> fit.capabilities.sort_values("mean").tail()                            # doctest: +SKIP
    >>> posterior_optimal_weights(fit, M=np.eye(38), w=np.ones(38), r=1.0)      # doctest: +SKIP
"""

from ._bayes_fit import (
    BayesStitchingFit,
    SamplingWarning,
    check_diagnostics,
    choose_chain_method,
    compare_likelihoods,
    fit_stitching_bayes,
    hyper_mass_blocks,
    plot_capabilities,
    plot_ppc,
    posterior_summary,
    use_cpu_devices_for_chains,
)
from ._bayes_model import (
    LIKELIHOODS,
    BayesData,
    Priors,
    prepare_data,
    stitching_model,
    stitching_problem,
)
from ._bayes_weights import load_weights_config, optimal_weight_draws, posterior_optimal_weights

__all__ = [
    "LIKELIHOODS",
    "BayesData",
    "BayesStitchingFit",
    "Priors",
    "SamplingWarning",
    "check_diagnostics",
    "choose_chain_method",
    "compare_likelihoods",
    "fit_stitching_bayes",
    "hyper_mass_blocks",
    "load_weights_config",
    "optimal_weight_draws",
    "plot_capabilities",
    "plot_ppc",
    "posterior_optimal_weights",
    "posterior_summary",
    "prepare_data",
    "stitching_model",
    "stitching_problem",
    "use_cpu_devices_for_chains",
]
