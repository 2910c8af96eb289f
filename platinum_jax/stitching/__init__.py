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

from typing import TYPE_CHECKING

from platinum_jax._deprecation import Moved, module_hooks

if TYPE_CHECKING:  # for type checkers and the API pages; at run time names load lazily
    from platinum_jax._names import UnknownNameError
    from platinum_jax.inference import kfold_assignments
    from platinum_jax.models import (
        BenchmarkAnchor,
        ModelAnchor,
        ParameterLayout,
        StitchingParams,
        anchor_for_table,
        predict_scores,
        stitching_cost,
        stitching_residuals,
    )

    from ._cv import cross_validate
    from ._fit import StitchingFit, fit_stitching
    from ._table import ScoreTable
    from ._uncertainty import (
        BootstrapResult,
        bootstrap,
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
                     "anchor_for_table", "predict_scores", "stitching_cost",
                     "stitching_residuals"), _MODELS),
    "UnknownNameError": "platinum_jax._names",
    "ScoreTable": f"{_HERE}._table",
    **dict.fromkeys(("StitchingFit", "fit_stitching"), f"{_HERE}._fit"),
    "kfold_assignments": "platinum_jax.inference",
    "cross_validate": f"{_HERE}._cv",
    **dict.fromkeys(("BootstrapResult", "bootstrap", "by_kind", "laplace", "objective_hessian",
                     "sensitivity"), f"{_HERE}._uncertainty"),
}


_INFERENCE = "platinum_jax.inference"
# The old array-level solvers: the engine's, warning on every call; fit_theta returned
# (theta, cost, converged) and both took a damping the engine no longer exposes.
_SOLVER = {"note": " (the engine's platinum_jax.inference.solve_map on a stitching layout)",
           "per_call": True, "dropped": {"damping": (1e-3, "the engine's solver starts at "
                                                     "1e-3 * max diag(J^T J)")}}
# Old names -> their homes: importable from here, with a DeprecationWarning naming the new home.
_MOVED = {
    "LMResult": Moved(_INFERENCE, "MAPResult", _SOLVER["note"]),
    "bootstrap_weights": Moved(_INFERENCE, "resample_counts"),
    "fit_theta": Moved(_INFERENCE, "solve_layout", **_SOLVER, prefix=3),
    "gauss_newton_system": Moved(_INFERENCE, "layout_system", **_SOLVER),
    "solve_stitching": Moved(_INFERENCE, "solve_layout", **_SOLVER),
    **{name: Moved(home, name) for names, home in (
        (("read_benchmark_info", "read_distilled_models", "read_epoch_raw",
          "read_metr_horizons", "read_model_compute"), "platinum_jax.importers"),
        (("plot_capabilities", "plot_residuals"), "platinum_jax.plots"),
        (("SyntheticTruth", "synthetic_score_table"), "platinum_jax.datasets"),
        (("layout_problem", "to_engine_theta"), _INFERENCE)) for name in names},
}

__all__ = [
    "BenchmarkAnchor", "BootstrapResult", "ModelAnchor", "ParameterLayout", "ScoreTable",
    "StitchingFit", "StitchingParams", "UnknownNameError", "anchor_for_table", "bootstrap",
    "by_kind", "cross_validate", "fit_stitching", "kfold_assignments",
    "laplace", "objective_hessian", "predict_scores", "sensitivity", "stitching_cost",
    "stitching_residuals",
]
# PEP 562. The Bayesian twin (platinum_jax.stitching.bayes) loads NumPyro: a sub-module.
__getattr__, __dir__ = module_hooks(__name__, globals(), exports=_EXPORTS, moved=_MOVED,
                                    submodules=("bayes",))
