"""Benchmark stitching: put models and benchmarks on one scale (Ho et al., "A Rosetta Stone for AI
Benchmarks").

``score(m, b) = sigmoid(alpha_b (C_m - D_b))`` with a capability ``C_m`` per model, a difficulty
``D_b`` and slope ``alpha_b`` per benchmark, fitted by L2-regularised least squares with one
anchor fixing the scale. Turn on float64 first: ``jax.config.update("jax_enable_x64", True)``.

    >>> from platinum_jax.stitching import ScoreTable, BenchmarkAnchor, fit_stitching
    >>> table = ScoreTable.from_csv("scores_long.csv")            # doctest: +SKIP
    >>> fit = fit_stitching(table, BenchmarkAnchor("Winogrande"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("capability").tail()          # doctest: +SKIP
"""

from ._cv import cross_validate, kfold_assignments
from ._epoch import (
    read_benchmark_info,
    read_distilled_models,
    read_epoch_raw,
    read_metr_horizons,
    read_model_compute,
)
from ._fit import StitchingFit, fit_stitching
from ._lm import LMResult, fit_theta, gauss_newton_system, solve_stitching
from ._model import (
    BenchmarkAnchor,
    ModelAnchor,
    ParameterLayout,
    StitchingParams,
    predict_scores,
    stitching_cost,
    stitching_residuals,
)
from ._plots import plot_capabilities, plot_residuals
from ._synthetic import SyntheticTruth, synthetic_score_table
from ._table import ScoreTable, UnknownNameError
from ._uncertainty import (
    BootstrapResult,
    bootstrap,
    bootstrap_weights,
    by_kind,
    laplace,
    objective_hessian,
    sensitivity,
)

__all__ = [
    "BenchmarkAnchor",
    "BootstrapResult",
    "LMResult",
    "ModelAnchor",
    "ParameterLayout",
    "ScoreTable",
    "StitchingFit",
    "StitchingParams",
    "SyntheticTruth",
    "UnknownNameError",
    "bootstrap",
    "bootstrap_weights",
    "by_kind",
    "cross_validate",
    "fit_stitching",
    "fit_theta",
    "gauss_newton_system",
    "kfold_assignments",
    "laplace",
    "objective_hessian",
    "plot_capabilities",
    "plot_residuals",
    "predict_scores",
    "read_benchmark_info",
    "read_distilled_models",
    "read_epoch_raw",
    "read_metr_horizons",
    "read_model_compute",
    "sensitivity",
    "solve_stitching",
    "stitching_cost",
    "stitching_residuals",
    "synthetic_score_table",
]


def __getattr__(name: str):
    # The Bayesian twin (platinum_jax.stitching.bayes) loads NumPyro: imported on first use, so
    # the least-squares fit and its command line start without it.
    if name == "bayes":
        import importlib

        return importlib.import_module(f"{__name__}.bayes")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
