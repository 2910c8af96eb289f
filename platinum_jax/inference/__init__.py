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
(PSIS-LOO) compare models; :func:`score_subjects` estimates new subjects against fixed items.
"""

from typing import TYPE_CHECKING

from platinum_jax._deprecation import module_hooks

from ._cv import cross_validate, kfold_assignments
from ._diagnostics import (
    DIAGNOSTIC_KEYS,
    Diagnostics,
    canonical_diagnostics,
    choose_chain_method,
    sampler_diagnostics,
    use_cpu_devices_for_chains,
)
from ._fit_files import DRAWS_FILE, draws_bytes, with_integrity
from ._map import MAPResult, gauss_newton_system, map_solver, solve_map
from ._point import (
    NOISE_SCALES,
    fit_map,
    laplace,
    laplace_covariance,
    noise_variance,
    objective_hessian,
    score_subjects,
)
from ._problem import Data, Problem, Theta
from ._read_fit import read_fit
from ._resample import bootstrap, bootstrap_replicates, resample_counts
from ._results import Fit
from ._rosetta_bayes import (
    SBC_GROUPS,
    hyper_mass_blocks,
    resolve_dense_mass,
    sbc_noise_scale,
    stitching_model,
    stitching_posterior,
    stitching_problem,
    warn_prepared,
)
from ._simulate import simulate
from ._summary import (
    HDI_PROB,
    SamplingWarning,
    check_diagnostics,
    posterior_summary,
    summary_diagnostics,
    threshold_names,
    warn_on_diagnostics,
)

if TYPE_CHECKING:
    from ._bayes import (
        assemble_parameters,
        loo,
        numpyro_model,
        nuts,
        posterior_theta,
        posterior_values,
        run_nuts,
        run_svi,
        svi,
    )
    from ._bayes_fit import (
        Posterior,
        check_sampler_settings,
        compare_posteriors,
        push_forward,
        sample_posterior,
    )
    from ._first_order import row_mesh, shard_rows, solve_first_order
    from ._marginal import fit_marginal, marginal_log_likelihood, quadrature
    from ._rosetta_layout import (
        BootstrapResult,
        from_engine_theta,
        layout_batch,
        layout_bootstrap,
        layout_entries,
        layout_hessian,
        layout_laplace,
        layout_laplace_sd,
        layout_problem,
        layout_system,
        solve_layout,
        to_engine_theta,
    )
    from ._sbc import rank_uniformity, run_sbc, sbc_design, simulate_world
    from ._scalar import first_crossing, golden_minimum, loss_rise_shifts
    from ._stream import StreamedFit, fit_streamed_2pl, score_streamed_2pl

# Loaded on first use (PEP 562): NumPyro (the Bayesian methods and the marginal fit's prior
# check) and optax (the first-order solver) cost about a second to import, which a point fit
# from the command line would otherwise pay without using them.
_LAZY = {
    "assemble_parameters": "_bayes",
    "loo": "_bayes",
    "numpyro_model": "_bayes",
    "nuts": "_bayes",
    "posterior_theta": "_bayes",
    "posterior_values": "_bayes",
    "run_nuts": "_bayes",
    "run_svi": "_bayes",
    "svi": "_bayes",
    "Posterior": "_bayes_fit",
    "check_sampler_settings": "_bayes_fit",
    "compare_posteriors": "_bayes_fit",
    "push_forward": "_bayes_fit",
    "sample_posterior": "_bayes_fit",
    "row_mesh": "_first_order",
    "shard_rows": "_first_order",
    "solve_first_order": "_first_order",
    "fit_marginal": "_marginal",
    "marginal_log_likelihood": "_marginal",
    "quadrature": "_marginal",
    "StreamedFit": "_stream",
    "fit_streamed_2pl": "_stream",
    "score_streamed_2pl": "_stream",
    "from_engine_theta": "_rosetta_layout",
    "layout_batch": "_rosetta_layout",
    "layout_entries": "_rosetta_layout",
    "BootstrapResult": "_rosetta_layout",
    "layout_bootstrap": "_rosetta_layout",
    "layout_hessian": "_rosetta_layout",
    "layout_laplace": "_rosetta_layout",
    "layout_laplace_sd": "_rosetta_layout",
    "first_crossing": "_scalar",
    "golden_minimum": "_scalar",
    "loss_rise_shifts": "_scalar",
    "layout_problem": "_rosetta_layout",
    "layout_system": "_rosetta_layout",
    "solve_layout": "_rosetta_layout",
    "to_engine_theta": "_rosetta_layout",
    "rank_uniformity": "_sbc",
    "run_sbc": "_sbc",
    "sbc_design": "_sbc",
    "simulate_world": "_sbc",
}

__all__ = [
    "BootstrapResult",
    "DIAGNOSTIC_KEYS",
    "DRAWS_FILE",
    "HDI_PROB",
    "SamplingWarning",
    "Data",
    "Diagnostics",
    "Fit",
    "MAPResult",
    "METHODS",
    "NOISE_SCALES",
    "Posterior",
    "Problem",
    "SBC_GROUPS",
    "hyper_mass_blocks",
    "resolve_dense_mass",
    "sbc_noise_scale",
    "stitching_model",
    "stitching_posterior",
    "stitching_problem",
    "StreamedFit",
    "Theta",
    "assemble_parameters",
    "bootstrap",
    "bootstrap_replicates",
    "check_sampler_settings",
    "compare_posteriors",
    "push_forward",
    "sample_posterior",
    "canonical_diagnostics",
    "check_diagnostics",
    "choose_chain_method",
    "cross_validate",
    "draws_bytes",
    "fit",
    "fit_map",
    "fit_marginal",
    "fit_streamed_2pl",
    "from_engine_theta",
    "gauss_newton_system",
    "laplace",
    "laplace_covariance",
    "layout_batch",
    "layout_entries",
    "layout_bootstrap",
    "layout_hessian",
    "layout_laplace_sd",
    "layout_problem",
    "layout_system",
    "loo",
    "marginal_log_likelihood",
    "map_solver",
    "noise_variance",
    "numpyro_model",
    "objective_hessian",
    "posterior_values",
    "run_nuts",
    "run_svi",
    "nuts",
    "posterior_summary",
    "posterior_theta",
    "quadrature",
    "read_fit",
    "rank_uniformity",
    "resample_counts",
    "row_mesh",
    "run_sbc",
    "sampler_diagnostics",
    "score_streamed_2pl",
    "sbc_design",
    "score_subjects",
    "shard_rows",
    "simulate",
    "simulate_world",
    "solve_first_order",
    "solve_layout",
    "solve_map",
    "summary_diagnostics",
    "svi",
    "threshold_names",
    "to_engine_theta",
    "with_integrity",
    "use_cpu_devices_for_chains",
    "warn_on_diagnostics",
    "warn_prepared",
    "kfold_assignments",
    "layout_laplace",
    "first_crossing",
    "golden_minimum",
    "loss_rise_shifts",
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
