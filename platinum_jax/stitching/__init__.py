"""Benchmark stitching: put models and benchmarks on one scale (Ho et al., "A Rosetta Stone for AI
Benchmarks"), the paper's presets over the engine's :class:`~platinum_jax.models.Rosetta`.

``score(m, b) = sigmoid(alpha_b (C_m - D_b))``, fitted by L2-regularised least squares with one
anchor fixing the scale. Turn on float64 first (:func:`platinum_jax.enable_float64`).

    >>> from platinum_jax.stitching import ScoreTable, BenchmarkAnchor, fit_stitching
    >>> table = ScoreTable.from_csv("scores_long.csv")            # doctest: +SKIP
    >>> fit = fit_stitching(table, BenchmarkAnchor("Winogrande"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("capability").tail()          # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import warnings

_MODELS, _HERE = "platinum_jax.models", __name__
# Public name -> the module that defines it, loaded on first use (so `platinum-jax stitch` loads
# only what it needs). The parameter layout and the paper's objective live with the Rosetta model.
_EXPORTS = {
    **dict.fromkeys(("BenchmarkAnchor", "ModelAnchor", "ParameterLayout", "StitchingParams",
                     "predict_scores", "stitching_cost", "stitching_residuals"), _MODELS),
    "UnknownNameError": "platinum_jax._names",
    "ScoreTable": f"{_HERE}._table",
    **dict.fromkeys(("StitchingFit", "anchor_for_table", "fit_stitching"), f"{_HERE}._fit"),
    **dict.fromkeys(("cross_validate", "kfold_assignments"), f"{_HERE}._cv"),
    **dict.fromkeys(("BootstrapResult", "bootstrap", "bootstrap_weights", "by_kind", "laplace",
                     "objective_hessian", "sensitivity"), f"{_HERE}._uncertainty"),
    # deprecated array-level solvers: each warns when called, naming the engine's replacement
    **dict.fromkeys(("LMResult", "fit_theta", "gauss_newton_system", "solve_stitching"),
                    f"{_HERE}._deprecated"),
}

# Names that moved to another package: importable from here, with a DeprecationWarning naming
# the new home on every use.
_MOVED = {
    **dict.fromkeys(("read_benchmark_info", "read_distilled_models", "read_epoch_raw",
                     "read_metr_horizons", "read_model_compute"), "platinum_jax.importers"),
    **dict.fromkeys(("plot_capabilities", "plot_residuals"), "platinum_jax.plots"),
    **dict.fromkeys(("SyntheticTruth", "synthetic_score_table"), "platinum_jax.datasets"),
    **dict.fromkeys(("layout_problem", "to_engine_theta"), "platinum_jax.inference"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # PEP 562. The Bayesian twin (platinum_jax.stitching.bayes) loads NumPyro: a sub-module.
    if name == "bayes":
        return importlib.import_module(f"{__name__}.bayes")
    home = _MOVED.get(name)
    if home is not None:  # not cached, so that every use warns
        warnings.warn(f"platinum_jax.stitching.{name} moved; import it from {home} "
                      f"(from {home} import {name})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MOVED))
