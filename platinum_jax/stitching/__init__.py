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

import functools
import importlib
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers and the API pages; at run time names load lazily
    from platinum_jax._names import UnknownNameError
    from platinum_jax.models import (
        BenchmarkAnchor,
        ModelAnchor,
        ParameterLayout,
        StitchingParams,
        predict_scores,
        stitching_cost,
        stitching_residuals,
    )

    from ._cv import cross_validate, kfold_assignments
    from ._fit import StitchingFit, anchor_for_table, fit_stitching
    from ._table import ScoreTable
    from ._uncertainty import (
        BootstrapResult,
        bootstrap,
        bootstrap_weights,
        by_kind,
        laplace,
        objective_hessian,
        sensitivity,
    )

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
}

# Deprecated array-level solvers on a layout vector -> their engine replacement (each call warns).
_DEPRECATED = {"LMResult": "MAPResult", "fit_theta": "solve_layout",
               "gauss_newton_system": "layout_system", "solve_stitching": "solve_layout"}

# Names that moved to another package: importable from here, with a DeprecationWarning naming
# the new home on every use.
_MOVED = {
    **dict.fromkeys(("read_benchmark_info", "read_distilled_models", "read_epoch_raw",
                     "read_metr_horizons", "read_model_compute"), "platinum_jax.importers"),
    **dict.fromkeys(("plot_capabilities", "plot_residuals"), "platinum_jax.plots"),
    **dict.fromkeys(("SyntheticTruth", "synthetic_score_table"), "platinum_jax.datasets"),
    **dict.fromkeys(("layout_problem", "to_engine_theta"), "platinum_jax.inference"),
}

__all__ = [
    "BenchmarkAnchor", "BootstrapResult", "ModelAnchor", "ParameterLayout", "ScoreTable",
    "StitchingFit", "StitchingParams", "UnknownNameError", "anchor_for_table", "bootstrap",
    "bootstrap_weights", "by_kind", "cross_validate", "fit_stitching", "kfold_assignments",
    "laplace", "objective_hessian", "predict_scores", "sensitivity", "stitching_cost",
    "stitching_residuals",
]


def __getattr__(name: str):
    # PEP 562. The Bayesian twin (platinum_jax.stitching.bayes) loads NumPyro: a sub-module.
    if name == "bayes":
        return importlib.import_module(f"{__name__}.bayes")
    if name in _DEPRECATED:
        return _deprecated(name)
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


def _deprecated(name: str):
    new = _DEPRECATED[name]
    target = getattr(importlib.import_module("platinum_jax.inference"), new)
    message = (f"platinum_jax.stitching.{name} is deprecated; use platinum_jax.inference.{new} "
               "(the engine's platinum_jax.inference.solve_map on a stitching layout)")
    if name == "LMResult":
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        return target

    @functools.wraps(target)  # its signature, so that jax.jit finds static arguments by name
    def shim(*args, damping=1e-3, **options):
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        if damping != 1e-3:
            raise ValueError(f"damping={damping!r} is no longer configurable: the engine's "
                             "solver starts at 1e-3 * max diag(J^T J); leave it at its default")
        out = target(*args, **options)
        return tuple(out[:3]) if name == "fit_theta" else out  # (theta, cost, converged)

    shim.__name__ = shim.__qualname__ = name
    shim.__doc__ = f"Deprecated: platinum_jax.inference.{new}; warns on every call."
    return shim


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MOVED) | set(_DEPRECATED))
