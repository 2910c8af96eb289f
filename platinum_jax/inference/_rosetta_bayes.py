"""The Bayesian Rosetta model (:class:`~platinum_jax.models.rosetta_bayes.RosettaBayes`)
bound to a score table: the engine :class:`Problem` and the NumPyro model it builds, to copy,
extend or hand to any NumPyro inference, the parameter groups :func:`run_sbc` reports, and its
posterior sampled and labelled by model and benchmark (:func:`stitching_posterior`).
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.models import BenchmarkAnchor
from platinum_jax.models.rosetta_bayes import (
    CENTRED_NOISE_MIN_SCORES,
    COUNT_LIKELIHOODS,
    POOLED_NOISE_BELOW,
    BayesData,
    Priors,
    anchored_benchmark,
    check_likelihood,
    deterministic_sites,
    pooled_noise_check,
    prepare_data,
    response_rows,
    warn_pooled_misfit,
)

from ._bayes import assemble_parameters as _assemble
from ._bayes import numpyro_model
from ._problem import Problem

__all__ = ["SBC_GROUPS", "hyper_mass_blocks", "resolve_dense_mass", "sbc_noise_scale", "stitching_model", "stitching_posterior",
           "stitching_problem", "warn_prepared"]


def stitching_problem(table, anchor=None, *, likelihood: str = "gaussian",
                      priors: Priors | None = None, data: BayesData | None = None,
                      centred_min: int = CENTRED_NOISE_MIN_SCORES,
                      pooled_below: int = POOLED_NOISE_BELOW, **prepare):
    """The Bayesian Rosetta model bound to ``table``: an engine
    :class:`~platinum_jax.inference.Problem`, and the :class:`BayesData` it was built from.

    ``data``: prepared data (default :func:`prepare_data` with ``prepare`` options);
    ``centred_min``: benchmarks with at least this many scores get a centred log noise scale;
    ``pooled_below``: benchmarks with fewer scores and no standard errors share the common
    noise level (0: none; :class:`~platinum_jax.models.rosetta_bayes.NoisyGaussian`).
    """
    from platinum_jax.models.rosetta_bayes import RosettaBayes

    likelihood = check_likelihood(likelihood)
    priors = Priors() if priors is None else priors
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if data is None:
        data, _ = prepare_data(table, likelihood, **prepare)
    model = RosettaBayes.with_likelihood(likelihood, anchor=anchor, priors=priors,
                                         centred_min=centred_min, pooled_below=pooled_below)
    return Problem(model, response_rows(table, data, likelihood)), data


def stitching_model(table, anchor=None, *, likelihood: str = "gaussian",
                    priors: Priors | None = None, centred_min: int = CENTRED_NOISE_MIN_SCORES,
                    pooled_below: int = POOLED_NOISE_BELOW, **prepare):
    """The Bayesian stitching model as a NumPyro model: ``(model, data)`` with ``model(data,
    observed=True)`` the function :func:`platinum_jax.inference.numpyro_model` builds from
    :class:`~platinum_jax.models.rosetta_bayes.RosettaBayes` (site names as in
    :class:`Priors`; observed site ``y``, on the response table's scale: fractions for count
    likelihoods) and ``data`` the engine's row arrays.

    Example: the log joint density at a point::

        from numpyro.infer.util import log_density
        model, data = stitching_model(table, BenchmarkAnchor("x"))
        log_density(model, (data,), {}, point)
    """
    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   centred_min=centred_min, pooled_below=pooled_below,
                                   **prepare)
    return numpyro_model(problem, plain_names=True), problem.data()


#: Parameter groups of the Bayesian Rosetta model for
#: :func:`platinum_jax.inference.run_sbc` (site -> group label).
SBC_GROUPS = {"capability": "capability", "difficulty": "difficulty", "slope": "slope",
              "sigma": "noise scale", "noise_log_mu": "hyper-parameter",
              "noise_log_tau": "hyper-parameter", "capability_mu": "hyper-parameter",
              "capability_tau": "hyper-parameter"}


def hyper_mass_blocks(likelihood: str, *, model_anchor: bool = False,
                      pooled_below: int = POOLED_NOISE_BELOW) -> list[tuple[str, ...]]:
    """The dense blocks of the ``"hyper"`` NUTS mass matrix (NumPyro's list of site-name tuples).

    The scale of the capabilities and every slope in one block: the scores see a benchmark's
    slope only through ``|z| exp(eta_b)`` (see :class:`~platinum_jax.models.rosetta_bayes.Priors`),
    so ``log |z|^2`` (``capability_r2``) and the slopes' coordinates (``anchor_slope_z``,
    ``slope_z``; with a model anchor ``capability_mu``, ``capability_tau`` and ``slope_z``)
    move together along a ridge that only the priors bound, which a dense block crosses in
    one step. The Gaussian noise's common level and spread, which touch every score, in a
    second block: the site ``noise`` of the pooled noise (``pooled_below`` > 0, the default),
    ``noise_log_mu`` and ``noise_log_tau`` without pooling.

    Not the preset's default: a direction of the capabilities' ``capability_u`` against the
    slopes (newer models and benchmarks against older ones) mixes slowly under these blocks,
    which the full dense mass matrix (``dense_mass=True``) follows."""
    likelihood = check_likelihood(likelihood)
    scale = (("capability_mu", "capability_tau", "capability_r2", "slope_z") if model_anchor
             else ("capability_r2", "anchor_slope_z", "slope_z"))
    if likelihood != "gaussian":
        return [scale]
    return [scale, ("noise",) if int(pooled_below) > 0 else ("noise_log_mu", "noise_log_tau")]


def resolve_dense_mass(dense_mass, likelihood: str, layout, *,
                       pooled_below: int = POOLED_NOISE_BELOW):
    """The mass matrix NUTS gets: ``"hyper"`` gives :func:`hyper_mass_blocks` for ``layout``'s
    anchor and ``pooled_below``; True (the Bayesian Rosetta preset's default), False or a list
    of site-name tuples pass through."""
    if not isinstance(dense_mass, str):
        return dense_mass
    if dense_mass != "hyper":
        raise ValueError(f"dense_mass must be True (full), 'hyper', False (diagonal) or a list "
                         f"of site-name tuples, got {dense_mass!r}")
    model_anchor = anchored_benchmark(layout) is None
    return hyper_mass_blocks(likelihood, model_anchor=model_anchor,
                             pooled_below=pooled_below) or False


def _noise_scale(problem, theta) -> dict:
    # sigma_b = exp(log sigma_b), the Gaussian likelihood's noise scale per benchmark
    items = problem.item.unflatten(theta.items)
    return {"sigma": jnp.exp(items["noise_log_sigma"])} if "noise_log_sigma" in items else {}


def sbc_noise_scale(problem, values: dict) -> dict:
    """``{"sigma": sigma_b}``, the per-benchmark noise scale of one draw of the Gaussian
    likelihood (``extra`` of :func:`platinum_jax.inference.run_sbc`)."""
    theta, _ = _assemble(problem, values, True)
    return _noise_scale(problem, theta)


_PREPARED = (
    ("n_stderr_floored", "{n} standard error(s) below stderr_floor={floor:g} were raised to it: "
     "a standard error of 0 claims an exactly known score, which the noise model cannot follow "
     "(see prepare_data); pass stderr_floor=0 to keep them"),
    ("n_boundary_moved", "Beta likelihood: {n} score(s) equal to exactly 0 or 1 were moved "
     "inwards by half an item (or by beta_boundary={boundary:g} where n_items is unknown) so "
     "the Beta density is finite; use the binomial likelihood if n_items is known"),
)


def warn_prepared(info: dict, likelihood: str, *, stderr_floor: float, beta_boundary: float,
                  stacklevel: int = 1) -> None:
    """Warn about the scores :func:`prepare_data` changed (``info`` is its second output):
    standard errors raised to ``stderr_floor`` (Gaussian and Beta likelihoods, which read
    them) and exact 0/1 scores moved inwards for the Beta likelihood. ``stacklevel`` 1 points
    the warnings at the caller."""
    for key, text in _PREPARED:
        if info[key] and (key == "n_boundary_moved" or likelihood in ("gaussian", "beta")):
            warnings.warn(text.format(n=info[key], floor=stderr_floor, boundary=beta_boundary),
                          UserWarning, stacklevel=stacklevel + 1)


_STATS = ["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail"]
_DIMS = {"capability_z": ["free_capability"], "intercept": ["free_difficulty"],
         "slope_z": ["free_slope"], "sigma": ["benchmark"], "noise_log_sigma": ["benchmark"],
         "log_precision": ["benchmark"], "capability": ["model"], "difficulty": ["benchmark"],
         "slope": ["benchmark"], "noise_variance": ["benchmark"], "y": ["score"]}


def _named_tables(table, summary: pd.DataFrame):
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


def stitching_posterior(table, layout, data: BayesData, *, anchor, likelihood: str,
                        priors: Priors, centred_min: int = CENTRED_NOISE_MIN_SCORES,
                        pooled_below: int = POOLED_NOISE_BELOW, **sampler):
    """The posterior of the Bayesian Rosetta model on ``table`` (a connected score table,
    prepared as ``data`` by :func:`prepare_data`, parameters laid out by ``layout`` under
    ``anchor``; the Gaussian noise's ``centred_min`` and ``pooled_below`` as in
    :func:`stitching_problem`), sampled by :func:`platinum_jax.inference.sample_posterior` with
    ``sampler`` options and labelled: dims ``model``, ``benchmark``, ``score`` (and ``free_*`` for the
    sampled coordinates); count likelihoods observe item counts.

    Returns ``(posterior, capabilities, benchmarks)``: the :class:`Posterior` and the summary
    tables indexed by model (C_m and ``release_date``) and benchmark (``difficulty_*``,
    ``slope_*``, ``noise_sd_mean`` = sqrt of the posterior mean Sigma_bb, ``release_date``; with
    pooled noise also the columns of :func:`~platinum_jax.models.rosetta_bayes.pooled_noise_check`,
    and a warning naming any pooled benchmark whose scores scatter more than the common level).
    """
    from ._bayes_fit import sample_posterior

    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   data=data, centred_min=centred_min,
                                   pooled_below=pooled_below)
    models, benchmarks = np.asarray(table.models), np.asarray(table.benchmarks)
    free_c, free_d, free_s = layout.free_positions()
    mi, bi = np.asarray(data.model_index), np.asarray(data.benchmark_index)
    counts = likelihood in COUNT_LIKELIHOODS
    coords = {"model": list(models), "benchmark": list(benchmarks),
              "free_capability": list(models[free_c]), "free_difficulty": list(benchmarks[free_d]),
              "free_slope": list(benchmarks[free_s]), "score": np.arange(table.n_scores)}
    dims = dict(_DIMS)
    # the pooled noise's sites: their entries by name (nu, log_s, benchmarks), not by position
    rep = problem.model.reparameterise(problem.table)
    labels = getattr(rep, "entry_labels", None)
    for site, names in (labels(benchmarks) if labels else {}).items():
        if names:  # a site with no entries is not sampled
            coords[f"{site}_entry"], dims[site] = names, [f"{site}_entry"]
    post = sample_posterior(
        problem, **sampler, computed=deterministic_sites(layout, likelihood),
        derive=_noise_scale, coords=coords, dims=dims, observed=np.asarray(data.scores),
        constant={"model_index": mi, "benchmark_index": bi,
                  "stderr": np.asarray(data.stderr), "n_items": np.asarray(data.n_items)},
        row_labels={"score_model": models[mi], "score_benchmark": benchmarks[bi]},
        count_scale=data.n_items if counts else None,
        attrs={"likelihood": likelihood, "anchor": anchor.describe()})
    post.idata.observed_data.attrs["scale"] = (
        "item counts k = round(score * n_items)" if counts else "scores in [0, 1]")
    capabilities, bench = _named_tables(table, post.summary)
    if any(getattr(rep, "pooled", ())):  # does the common noise level fit the pooled benchmarks?
        check = pooled_noise_check(post.idata.posterior, data.scores, mi, bi, rep.pooled)
        warn_pooled_misfit(check, bi, pooled_below, stacklevel=3)
        bench = bench.join(check)
    return post, capabilities, bench
