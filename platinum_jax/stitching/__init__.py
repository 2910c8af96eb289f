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

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers and IDEs; at run time names load lazily
    from ._cv import cross_validate, kfold_assignments
    from ._deprecated import LMResult, fit_theta, gauss_newton_system, solve_stitching
    from ._engine import layout_problem, to_engine_theta
    from ._fit import StitchingFit, anchor_for_table, fit_stitching
    from ._model import (
        BenchmarkAnchor,
        ModelAnchor,
        ParameterLayout,
        StitchingParams,
        predict_scores,
        stitching_cost,
        stitching_residuals,
    )
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

# Public name -> the private module that defines it. Nothing is imported until a name is
# used, so `platinum-jax stitch` (and `import platinum_jax.stitching._table`) load only what
# they need: the plots pull in matplotlib, the uncertainty code compiles its own programs.
_EXPORTS = {
    "BenchmarkAnchor": "_model",
    "BootstrapResult": "_uncertainty",
    "LMResult": "_deprecated",
    "ModelAnchor": "_model",
    "ParameterLayout": "_model",
    "ScoreTable": "_table",
    "StitchingFit": "_fit",
    "StitchingParams": "_model",
    "UnknownNameError": "_table",
    "anchor_for_table": "_fit",
    "bootstrap": "_uncertainty",
    "bootstrap_weights": "_uncertainty",
    "by_kind": "_uncertainty",
    "cross_validate": "_cv",
    "fit_stitching": "_fit",
    "fit_theta": "_deprecated",
    "gauss_newton_system": "_deprecated",
    "kfold_assignments": "_cv",
    "laplace": "_uncertainty",
    "layout_problem": "_engine",
    "objective_hessian": "_uncertainty",
    "predict_scores": "_model",
    "sensitivity": "_uncertainty",
    "solve_stitching": "_deprecated",
    "stitching_cost": "_model",
    "stitching_residuals": "_model",
    "to_engine_theta": "_engine",
}

# Public names that moved to another package: still importable from here, with a
# DeprecationWarning naming the new home.
_MOVED = {
    "read_benchmark_info": "platinum_jax.importers",
    "read_distilled_models": "platinum_jax.importers",
    "read_epoch_raw": "platinum_jax.importers",
    "read_metr_horizons": "platinum_jax.importers",
    "read_model_compute": "platinum_jax.importers",
    "plot_capabilities": "platinum_jax.plots",
    "plot_residuals": "platinum_jax.plots",
    "SyntheticTruth": "platinum_jax.datasets",
    "synthetic_score_table": "platinum_jax.datasets",
}

__all__ = [
    "BenchmarkAnchor",
    "BootstrapResult",
    "LMResult",
    "ModelAnchor",
    "ParameterLayout",
    "ScoreTable",
    "StitchingFit",
    "StitchingParams",
    "UnknownNameError",
    "anchor_for_table",
    "bootstrap",
    "bootstrap_weights",
    "by_kind",
    "cross_validate",
    "fit_stitching",
    "fit_theta",
    "gauss_newton_system",
    "kfold_assignments",
    "laplace",
    "layout_problem",
    "objective_hessian",
    "predict_scores",
    "sensitivity",
    "solve_stitching",
    "stitching_cost",
    "stitching_residuals",
    "to_engine_theta",
]


def __getattr__(name: str):
    # PEP 562: load the defining module on first use. The Bayesian twin
    # (platinum_jax.stitching.bayes) loads NumPyro, so it is a sub-module loaded the same way.
    import importlib

    if name == "bayes":
        return importlib.import_module(f"{__name__}.bayes")
    home = _MOVED.get(name)
    if home is not None:  # not cached, so that every use warns
        import warnings

        warnings.warn(f"platinum_jax.stitching.{name} moved; import it from {home} "
                      f"(from {home} import {name})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MOVED))
