"""Bayesian benchmark stitching, the preset of Ho et al., "A Rosetta Stone for AI Benchmarks":
:func:`fit_stitching_bayes` is the engine's :func:`~platinum_jax.inference.sample_posterior` of
the registered ``rosetta_bayes`` model (:mod:`platinum_jax.models.rosetta_bayes`) with the paper's
data preparation, sampler settings and labels; ``platinum-jax fit --model rosetta_bayes`` samples
the same model. Names that moved still import from here, with a ``DeprecationWarning``.

    >>> fit = fit_stitching_bayes(ScoreTable.from_csv("scores_long.csv"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("mean").tail()                       # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import COUNT_LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood
from platinum_jax.inference import (
    check_sampler_settings,
    compare_posteriors,
    sample_posterior,
    stitching_model,
    stitching_problem,
    threshold_names,
)
from platinum_jax.models import BenchmarkAnchor, ModelAnchor, ParameterLayout
from platinum_jax.models.rosetta_bayes import (
    STDERR_FLOOR,
    BayesData,
    anchored_benchmark,
    deterministic_sites,
    prepare_data,
)
from platinum_jax.models.rosetta_bayes import Priors as _Priors  # its public home

from ._table import ScoreTable

# Old name -> (new module, new name).
_MOVED = {
    "Priors": ("platinum_jax.models.rosetta_bayes", "Priors"),
    "SamplingWarning": ("platinum_jax.inference", "SamplingWarning"),
    "check_diagnostics": ("platinum_jax.inference", "check_diagnostics"),
    "posterior_summary": ("platinum_jax.inference", "posterior_summary"),
    "choose_chain_method": ("platinum_jax.inference", "choose_chain_method"),
    "use_cpu_devices_for_chains": ("platinum_jax.inference", "use_cpu_devices_for_chains"),
    "load_weights_config": ("platinum_jax.design", "load_weights_config"),
    "optimal_weight_draws": ("platinum_jax.design", "optimal_weight_draws"),
    "posterior_optimal_weights": ("platinum_jax.design", "posterior_optimal_weights"),
    "plot_capabilities": ("platinum_jax.plots", "plot_posterior_capabilities"),
    "plot_ppc": ("platinum_jax.plots", "plot_ppc"),
}
__all__ = ["LIKELIHOODS", "BayesData", "BayesStitchingFit", "compare_likelihoods",
           "fit_stitching_bayes", "hyper_mass_blocks", "prepare_data", "stitching_model",
           "stitching_problem", *sorted(_MOVED)]
_STATS = ["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail"]
_DIMS = {"capability_z": ["free_capability"], "intercept": ["free_difficulty"],
         "slope_z": ["free_slope"], "sigma": ["benchmark"], "noise_log_sigma": ["benchmark"],
         "log_precision": ["benchmark"], "capability": ["model"], "difficulty": ["benchmark"],
         "slope": ["benchmark"], "noise_variance": ["benchmark"], "y": ["score"]}


@dataclass(frozen=True, eq=False)
class BayesStitchingFit:
    """Posterior of the stitching model: the inputs (``table``, ``anchor``, ``likelihood``,
    ``method``, ``priors``, ``layout``), the engine's ``idata``, ``summary``, ``diagnostics``
    (:data:`platinum_jax.inference.DIAGNOSTIC_KEYS`) and ``info`` (see
    :class:`platinum_jax.inference.Posterior`; dims ``model``, ``benchmark``, ``score``), and
    the labelled tables ``capabilities`` (index model: the summary columns of C_m and
    ``release_date``) and ``benchmarks`` (``difficulty_*``, ``slope_*``, ``noise_sd_mean`` =
    sqrt of the posterior mean Sigma_bb, ``release_date``)."""

    table: ScoreTable
    anchor: BenchmarkAnchor | ModelAnchor
    likelihood: str
    method: str
    priors: _Priors
    layout: ParameterLayout
    idata: object
    summary: pd.DataFrame = field(repr=False)
    capabilities: pd.DataFrame = field(repr=False)
    benchmarks: pd.DataFrame = field(repr=False)
    diagnostics: Mapping[str, float] = field(default_factory=dict)
    info: Mapping[str, object] = field(default_factory=dict)

    def __repr__(self) -> str:
        d = self.diagnostics
        rhat = d.get("rhat_max", float("nan"))
        rhat = f"{rhat:.4f}" if isinstance(rhat, float) else str(rhat)
        return (f"BayesStitchingFit({self.likelihood}, {self.method}, {self.table.n_models} "
                f"models, {self.table.n_benchmarks} benchmarks, divergences="
                f"{d.get('divergences')}, rhat_max={rhat}, "
                f"ess_bulk_min={d.get('ess_bulk_min', float('nan')):.0f})")


def hyper_mass_blocks(likelihood: str, *, model_anchor: bool = False) -> list[tuple[str, ...]]:
    """The dense blocks of the default NUTS mass matrix (NumPyro's list of site-name tuples).

    The scale of the capabilities and every slope in one block: the scores see a benchmark's
    slope only through ``|z| exp(eta_b)`` (see :class:`~platinum_jax.models.rosetta_bayes.Priors`),
    so ``log |z|^2`` (``capability_r2``) and the slopes' coordinates (``anchor_slope_z``,
    ``slope_z``; with a model anchor ``capability_mu``, ``capability_tau`` and ``slope_z``)
    move together along a ridge that only the priors bound, which a dense block crosses in
    one step. The noise hyper-parameters ``noise_log_mu``, ``noise_log_tau`` (Gaussian
    likelihood), which touch every score, in a second block."""
    likelihood = check_likelihood(likelihood)
    scale = (("capability_mu", "capability_tau", "capability_r2", "slope_z") if model_anchor
             else ("capability_r2", "anchor_slope_z", "slope_z"))
    return [scale] + ([("noise_log_mu", "noise_log_tau")] if likelihood == "gaussian" else [])


def _noise_scale(problem, theta) -> dict:
    items = problem.item.unflatten(theta.items)
    return {"sigma": jnp.exp(items["noise_log_sigma"])} if "noise_log_sigma" in items else {}


def _named_tables(table: ScoreTable, summary: pd.DataFrame):
    def block(var, index_name):
        part = summary.loc[summary["variable"] == var].set_index("name")[_STATS]
        part.index.name = index_name
        return part

    capabilities = block("capability", "model").copy()
    capabilities["release_date"] = (
        table.model_release_dates().reindex(capabilities.index).to_numpy())
    benchmarks = block("difficulty", "benchmark").add_prefix("difficulty_").join(
        block("slope", "benchmark").add_prefix("slope_"))
    benchmarks["noise_sd_mean"] = np.sqrt(block("noise_variance", "benchmark")["mean"])
    benchmarks["release_date"] = (
        table.benchmark_release_dates().reindex(benchmarks.index).to_numpy())
    return capabilities, benchmarks


def _check_connected(table: ScoreTable) -> None:
    comps = table.components()
    if len(comps) > 1:
        sizes = sorted(((len(m), len(b)) for m, b in comps), reverse=True)
        raise ValueError(
            f"the score table falls into {len(comps)} disconnected groups (models, benchmarks) = "
            f"{sizes[:5]}; scores in different groups cannot be put on one scale; keep one group "
            "with table.select_models(...) or add scores that link them")


_MOVED_WARNINGS = (
    ("n_stderr_floored", "{n} standard error(s) below stderr_floor={floor:g} were raised to it: "
     "a standard error of 0 claims an exactly known score, which the noise model cannot follow "
     "(see prepare_data); pass stderr_floor=0 to keep them"),
    ("n_boundary_moved", "Beta likelihood: {n} score(s) equal to exactly 0 or 1 were moved "
     "inwards by half an item (or by beta_boundary={boundary:g} where n_items is unknown) so "
     "the Beta density is finite; use the binomial likelihood if n_items is known"),
)


def fit_stitching_bayes(table: ScoreTable, anchor: BenchmarkAnchor | ModelAnchor | None = None,
                        *, likelihood: str = "gaussian", method: str = "nuts", chains: int = 4,
                        samples: int = 1500, warmup: int = 1000, seed: int = 0,
                        priors: _Priors | None = None, chain_method: str = "auto",
                        target_accept: float = 0.99, max_tree_depth: int = 10,
                        dense_mass: bool | str | Sequence[tuple[str, ...]] = "hyper",
                        svi_guide: str = "normal", svi_steps: int = 5000,
                        svi_learning_rate: float = 0.01, beta_boundary: float = 0.005,
                        stderr_floor: float = STDERR_FLOOR, ess_min: float = 400.0,
                        rhat_max: float = 1.01, progress_bar: bool = False,
                        **deprecated) -> BayesStitchingFit:
    """Posterior of C_m, D_b, alpha_b and the noise given a connected ``table``: the paper's
    preset of :func:`platinum_jax.inference.sample_posterior` over the ``rosetta_bayes`` model.

    ``anchor`` as in :func:`fit_stitching` (default Winogrande, D = 0, alpha = 1; anchored
    entries are fixed); ``likelihood`` one of :data:`LIKELIHOODS`; ``method`` ``"nuts"`` or
    ``"svi"`` (``svi_guide`` ``"normal"`` or ``"lowrank"``). The defaults (4 chains x 1,500
    draws after 1,000 warmup steps, target acceptance 0.99, ``dense_mass="hyper"``:
    :func:`hyper_mass_blocks`) sample the Epoch data with no divergences, R-hat <= 1.01 and
    ESS >= 400 (README). Known standard errors below ``stderr_floor`` are raised to it and
    exact 0/1 scores move by ``beta_boundary`` for the Beta likelihood (:func:`prepare_data`),
    each with a warning. Run in float64 (:func:`platinum_jax.enable_float64`).
    """
    if not isinstance(table, ScoreTable):
        raise TypeError(f"table must be a ScoreTable, got {type(table).__name__}")
    ess_min, rhat_max = threshold_names(ess_min, rhat_max, deprecated, "fit_stitching_bayes")
    likelihood = check_likelihood(likelihood)
    check_sampler_settings(method=method, chains=chains, samples=samples, warmup=warmup,
                           target_accept=target_accept, max_tree_depth=max_tree_depth)
    priors = _Priors() if priors is None else priors
    anchor = BenchmarkAnchor() if anchor is None else anchor
    _check_connected(table)
    layout = ParameterLayout.from_table(table, anchor)
    data, info = prepare_data(table, likelihood, beta_boundary=beta_boundary,
                              stderr_floor=stderr_floor)
    for key, text in _MOVED_WARNINGS:
        if info[key] and (key == "n_boundary_moved" or likelihood in ("gaussian", "beta")):
            warnings.warn(text.format(n=info[key], floor=stderr_floor, boundary=beta_boundary),
                          UserWarning, stacklevel=2)
    if isinstance(dense_mass, str):
        if dense_mass != "hyper":
            raise ValueError(f"dense_mass must be 'hyper', True, False or a list of site-name "
                             f"tuples, got {dense_mass!r}")
        model_anchor = anchored_benchmark(layout) is None
        dense_mass = hyper_mass_blocks(likelihood, model_anchor=model_anchor) or False
    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   data=data)
    models, benchmarks = np.asarray(table.models), np.asarray(table.benchmarks)
    free_c, free_d, free_s = layout.free_positions()
    mi, bi = np.asarray(data.model_index), np.asarray(data.benchmark_index)
    counts = likelihood in COUNT_LIKELIHOODS
    post = sample_posterior(
        problem, method=method, chains=chains, samples=samples, warmup=warmup, seed=seed,
        chain_method=chain_method, target_accept=target_accept, max_tree_depth=max_tree_depth,
        dense_mass=dense_mass, svi_guide=svi_guide, svi_steps=svi_steps,
        svi_learning_rate=svi_learning_rate, progress_bar=progress_bar,
        computed=deterministic_sites(layout, likelihood), derive=_noise_scale,
        coords={"model": list(models), "benchmark": list(benchmarks),
                "free_capability": list(models[free_c]),
                "free_difficulty": list(benchmarks[free_d]),
                "free_slope": list(benchmarks[free_s]), "score": np.arange(table.n_scores)},
        dims=_DIMS, observed=np.asarray(data.scores),
        constant={"model_index": mi, "benchmark_index": bi,
                  "stderr": np.asarray(data.stderr), "n_items": np.asarray(data.n_items)},
        row_labels={"score_model": models[mi], "score_benchmark": benchmarks[bi]},
        count_scale=data.n_items if counts else None,
        attrs={"likelihood": likelihood, "anchor": anchor.describe()},
        ess_min=ess_min, rhat_max=rhat_max)
    post.idata.observed_data.attrs["scale"] = (
        "item counts k = round(score * n_items)" if counts else "scores in [0, 1]")
    capabilities, benchmark_table = _named_tables(table, post.summary)
    return BayesStitchingFit(table=table, anchor=anchor, likelihood=likelihood, method=method,
                             priors=priors, layout=layout, idata=post.idata,
                             summary=post.summary, capabilities=capabilities,
                             benchmarks=benchmark_table, diagnostics=post.diagnostics,
                             info={**info, **post.info})


def compare_likelihoods(fits_or_table, likelihoods: Sequence[str] = ("gaussian", "beta"), *,
                        ic: str = "loo", **fit_kwargs) -> pd.DataFrame:
    """Rank likelihoods by PSIS-LOO or WAIC (:func:`platinum_jax.inference.compare_posteriors`)
    over fits already made (a mapping or a list of :class:`BayesStitchingFit`) or, given a
    :class:`ScoreTable`, over fits of each of ``likelihoods`` with ``fit_kwargs``. Every log
    likelihood is a density of the score on [0, 1] (counts divided by the bin width 1/n), so
    the elpd values compare. Returns ArviZ's comparison frame indexed by likelihood."""
    if isinstance(fits_or_table, ScoreTable):
        for lik in likelihoods:
            if lik not in LIKELIHOODS:
                raise ValueError(f"unknown likelihood {lik!r}; choose from {LIKELIHOODS}")
        fits = {lik: fit_stitching_bayes(fits_or_table, likelihood=lik, **fit_kwargs)
                for lik in likelihoods}
    elif isinstance(fits_or_table, Mapping):
        fits = dict(fits_or_table)
    else:
        fits = {f.likelihood: f for f in fits_or_table}
    return compare_posteriors(fits, ic=ic)


def __getattr__(name: str):
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new = _MOVED[name]
    warnings.warn(f"platinum_jax.stitching.bayes.{name} moved to {module}.{new}; import it "
                  "from there", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), new)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
