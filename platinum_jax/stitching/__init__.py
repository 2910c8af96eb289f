"""Benchmark stitching as Ho et al., "A Rosetta Stone for AI Benchmarks" run it: the paper's
presets over the Rosetta models of :mod:`platinum_jax.models`.

``score(m, b) = sigmoid(alpha_b (C_m - D_b))``, fitted by L2-regularised least squares with one
anchor fixing the scale (:func:`fit_stitching`), with the paper's sensitivity analysis, Laplace
and bootstrap intervals, its Table 9 cross-validation of the link, and the Bayesian fit
(:func:`fit_stitching_bayes`: the engine's NUTS of :class:`~platinum_jax.models.RosettaBayes`
with the paper's labels). The array-level refits on a parameter layout (:func:`solve_layout`,
vmapped over data and penalties) serve the analyses. Turn on float64 first
(:func:`platinum_jax.enable_float64`).

    >>> from platinum_jax.data import ScoreTable
    >>> from platinum_jax.models.rosetta import BenchmarkAnchor
    >>> from platinum_jax.stitching import fit_stitching
    >>> table = ScoreTable.from_csv("scores_long.csv")            # doctest: +SKIP
    >>> fit = fit_stitching(table, BenchmarkAnchor("Winogrande"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("capability").tail()          # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platinum_jax._lazy import module_hooks

if TYPE_CHECKING:  # for type checkers and the API pages; at run time names load lazily
    from ._bayes import (
        BayesStitchingFit,
        compare_likelihoods,
        fit_stitching_bayes,
        stitching_problem,
    )
    from ._fit import StitchingFit, cross_validate, fit_stitching
    from ._layout import layout_problem, layout_system, solve_layout, to_engine_theta
    from ._uncertainty import (
        BootstrapResult,
        bootstrap,
        by_kind,
        laplace,
        objective_hessian,
        sensitivity,
    )

_HERE = __name__
# Public name -> the module that defines it, loaded on first use (so `platinum-jax stitch`
# loads only what it needs, and NumPyro only with the Bayesian fit).
_EXPORTS = {
    **dict.fromkeys(("BayesStitchingFit", "compare_likelihoods", "fit_stitching_bayes",
                     "stitching_problem"), f"{_HERE}._bayes"),
    **dict.fromkeys(("StitchingFit", "cross_validate", "fit_stitching"), f"{_HERE}._fit"),
    **dict.fromkeys(("layout_problem", "layout_system", "solve_layout", "to_engine_theta"),
                    f"{_HERE}._layout"),
    **dict.fromkeys(("BootstrapResult", "bootstrap", "by_kind", "laplace", "objective_hessian",
                     "sensitivity"), f"{_HERE}._uncertainty"),
}

__all__ = [
    "BayesStitchingFit",
    "BootstrapResult",
    "StitchingFit",
    "bootstrap",
    "by_kind",
    "compare_likelihoods",
    "cross_validate",
    "fit_stitching",
    "fit_stitching_bayes",
    "laplace",
    "layout_problem",
    "layout_system",
    "objective_hessian",
    "sensitivity",
    "solve_layout",
    "stitching_problem",
    "to_engine_theta",
]
__getattr__, __dir__ = module_hooks(__name__, globals(), exports=_EXPORTS)
