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

from platinum_jax._deprecation import module_hooks
from platinum_jax._moved_names import MOVED

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

    from ._fit import StitchingFit, cross_validate, fit_stitching
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
    **dict.fromkeys(("StitchingFit", "cross_validate", "fit_stitching"), f"{_HERE}._fit"),
    "kfold_assignments": "platinum_jax.inference",
    **dict.fromkeys(("BootstrapResult", "bootstrap", "by_kind", "laplace", "objective_hessian",
                     "sensitivity"), f"{_HERE}._uncertainty"),
}

__all__ = [
    "BenchmarkAnchor", "BootstrapResult", "ModelAnchor", "ParameterLayout", "ScoreTable",
    "StitchingFit", "StitchingParams", "UnknownNameError", "anchor_for_table", "bootstrap",
    "by_kind", "cross_validate", "fit_stitching", "kfold_assignments", "laplace",
    "objective_hessian", "predict_scores", "sensitivity", "stitching_cost", "stitching_residuals"]
# PEP 562. The Bayesian twin (platinum_jax.stitching.bayes) loads NumPyro: a sub-module.
# Names that moved out (to the engine, importers/, plots, datasets) still import from here, with
# a DeprecationWarning (their table is in platinum_jax._moved_names).
__getattr__, __dir__ = module_hooks(__name__, globals(), exports=_EXPORTS, moved=MOVED[__name__],
                                    submodules=("bayes",))
