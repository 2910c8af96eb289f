"""Inference for any measurement model: one engine, every method.

    >>> import jax; jax.config.update("jax_enable_x64", True)       # doctest: +SKIP
    >>> from platinum_jax.data import ResponseTable
    >>> from platinum_jax.models import TwoPL
    >>> from platinum_jax.inference import fit
    >>> table = ResponseTable.read("responses.csv")                     # doctest: +SKIP
    >>> result = fit(TwoPL(), table, method="laplace")                  # doctest: +SKIP
    >>> result.items.head()                                             # doctest: +SKIP

Methods: ``map`` (penalised MAP by bipartite Levenberg-Marquardt, with restarts; or by a
first-order optax solver with ``solver="first_order"``, for data too large for the
Levenberg-Marquardt system, optionally sharded over devices), ``marginal`` (item parameters
with the abilities integrated out by quadrature, abilities by EAP), ``laplace``
(Gaussian at the MAP), ``bootstrap`` (refits over resampled responses), ``svi`` and ``nuts``
(NumPyro, the model built from the protocol); :func:`cross_validate` (K-fold) and :func:`loo`
(PSIS-LOO) compare models. This package names no model: every method is written once on the
measurement-model protocol of :mod:`platinum_jax.models`.
"""

from typing import TYPE_CHECKING

from platinum_jax._lazy import module_hooks

from ._cv import cross_validate, kfold_assignments
from ._diagnostics import DIAGNOSTIC_KEYS, choose_chain_method
from ._fit_files import DRAWS_FILE
from ._map import MAPResult, gauss_newton_system, map_solver, solve_map
from ._point import fit_map, laplace, laplace_covariance, noise_variance, objective_hessian
from ._problem import Data, Problem, Theta
from ._read_fit import read_fit
from ._resample import bootstrap, bootstrap_replicates, resample_counts
from ._results import Fit
from ._simulate import simulate
from ._summary import SamplingWarning, check_diagnostics, posterior_summary

if TYPE_CHECKING:
    from ._bayes import NUTS_SETTINGS, compare_posteriors, loo, nuts, nuts_settings, svi
    from ._bayes_model import numpyro_model
    from ._marginal import fit_marginal, marginal_log_likelihood, quadrature
    from ._nuts_run import read_adaptation
    from ._sbc import rank_uniformity, run_sbc, sbc_design, simulate_world
    from ._scalar import first_crossing, golden_minimum, loss_rise_shifts
    from ._stream import StreamedFit, fit_streamed_2pl, score_streamed_2pl

# Loaded on first use (PEP 562): NumPyro (the Bayesian methods and the marginal fit's prior
# check) and optax (the first-order solver) cost about a second to import, which a point fit
# from the command line would otherwise pay without using them.
_LAZY = {
    **dict.fromkeys(("NUTS_SETTINGS", "compare_posteriors", "loo", "nuts", "nuts_settings",
                     "svi"), "_bayes"),
    "numpyro_model": "_bayes_model",
    "read_adaptation": "_nuts_run",
    **dict.fromkeys(("fit_marginal", "marginal_log_likelihood", "quadrature"), "_marginal"),
    **dict.fromkeys(("rank_uniformity", "run_sbc", "sbc_design", "simulate_world"), "_sbc"),
    **dict.fromkeys(("first_crossing", "golden_minimum", "loss_rise_shifts"), "_scalar"),
    **dict.fromkeys(("StreamedFit", "fit_streamed_2pl", "score_streamed_2pl"), "_stream"),
}

__all__ = [
    "DIAGNOSTIC_KEYS",
    "DRAWS_FILE",
    "Data",
    "Fit",
    "MAPResult",
    "METHODS",
    "NUTS_SETTINGS",
    "Problem",
    "SamplingWarning",
    "StreamedFit",
    "Theta",
    "bootstrap",
    "bootstrap_replicates",
    "check_diagnostics",
    "choose_chain_method",
    "compare_posteriors",
    "cross_validate",
    "first_crossing",
    "fit",
    "fit_map",
    "fit_marginal",
    "fit_streamed_2pl",
    "gauss_newton_system",
    "golden_minimum",
    "kfold_assignments",
    "laplace",
    "laplace_covariance",
    "loo",
    "loss_rise_shifts",
    "map_solver",
    "marginal_log_likelihood",
    "noise_variance",
    "numpyro_model",
    "nuts",
    "nuts_settings",
    "objective_hessian",
    "posterior_summary",
    "quadrature",
    "rank_uniformity",
    "read_adaptation",
    "read_fit",
    "resample_counts",
    "run_sbc",
    "sbc_design",
    "score_streamed_2pl",
    "simulate",
    "simulate_world",
    "solve_map",
    "svi",
]

METHODS = ("map", "laplace", "bootstrap", "marginal", "svi", "nuts")


def fit(model, table, method: str = "map", **options) -> Fit:
    """Fit ``model`` to ``table`` by ``method`` (one of :data:`METHODS`); ``options`` go to
    the method's function (:func:`fit_map`, :func:`laplace`, :func:`bootstrap`,
    :func:`fit_marginal`, :func:`svi`, :func:`nuts`)."""
    if method == "map":
        return fit_map(model, table, **options)
    if method == "laplace":
        lap = {k: options.pop(k) for k in ("draws", "seed", "max_parameters", "noise_scale")
               if k in options}
        return laplace(fit_map(model, table, **options), **lap)
    if method == "bootstrap":
        return bootstrap(model, table, **options)
    if method == "marginal":
        from ._marginal import fit_marginal

        return fit_marginal(model, table, **options)
    if method == "svi":
        from ._bayes import svi

        return svi(model, table, **options)
    if method == "nuts":
        from ._bayes import nuts

        return nuts(model, table, **options)
    raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")


# PEP 562: NumPyro and the other heavy modules load on first use
__getattr__, __dir__ = module_hooks(
    __name__, globals(), exports={k: f"{__name__}.{v}" for k, v in _LAZY.items()})
