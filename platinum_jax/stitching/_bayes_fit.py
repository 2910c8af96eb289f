"""Posterior inference for the stitching model: NUTS or SVI, results as ArviZ InferenceData.

Longer than the package's 500-line guide: NUTS and SVI share the data preparation, the
thresholds and the diagnostics that decide the warning, which stay beside both samplers.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.inference import (
    SamplingWarning,
    check_diagnostics,
    choose_chain_method,
    numpyro_model,
    posterior_summary,
    run_nuts,
    run_svi,
    summary_diagnostics,
    threshold_names,
    use_cpu_devices_for_chains,
    warn_on_diagnostics,
)
from platinum_jax.inference import assemble_parameters as _assemble

from ._bayes_model import (
    _COUNT_LIKELIHOODS,
    LIKELIHOODS,
    STDERR_FLOOR,
    BayesData,
    Priors,
    anchored_benchmark,
    deterministic_sites,
    prepare_data,
    stitching_problem,
)
from ._bayes_options import check_likelihood
from ._model import BenchmarkAnchor, ModelAnchor, ParameterLayout
from ._table import ScoreTable

__all__ = [
    "SamplingWarning",
    "BayesStitchingFit",
    "fit_stitching_bayes",
    "check_diagnostics",
    "choose_chain_method",
    "use_cpu_devices_for_chains",
    "hyper_mass_blocks",
    "posterior_summary",
    "compare_likelihoods",
]

_DIMS = {
    "capability_z": ["free_capability"],
    "intercept": ["free_difficulty"],
    "slope_z": ["free_slope"],
    "sigma": ["benchmark"],
    "noise_log_sigma": ["benchmark"],
    "log_precision": ["benchmark"],
    "capability": ["model"],
    "difficulty": ["benchmark"],
    "slope": ["benchmark"],
    "noise_variance": ["benchmark"],
    "y": ["score"],
}


@dataclass(frozen=True, eq=False)
class BayesStitchingFit:
    """Posterior of the stitching model.

    Attributes:
        table, anchor, likelihood, method, priors: the inputs.
        idata: ``arviz.InferenceData`` with groups posterior, sample_stats (NUTS), log_likelihood,
            posterior_predictive, observed_data and constant_data; dims ``model``, ``benchmark``,
            ``score`` (one per row of ``table.data``), ``chain`` and ``draw``.
        summary: tidy frame, one row per scalar parameter: ``variable, name, mean, sd, hdi_3%,
            hdi_97%, r_hat, ess_bulk, ess_tail`` (anchored entries have sd 0 and no diagnostics).
        capabilities: index ``model``; ``mean, sd, hdi_3%, hdi_97%, r_hat, ess_bulk, ess_tail,
            release_date`` of C_m.
        benchmarks: index ``benchmark``; the same columns prefixed ``difficulty_`` and ``slope_``
            for D_b and alpha_b, plus ``noise_sd_mean`` (posterior mean of sqrt(Sigma_bb)).
        diagnostics: ``divergences``, ``rhat_max``, ``ess_bulk_min``, ``ess_tail_min`` over
            every sampled quantity (free capabilities, difficulties, slopes, the noise and all
            hyper-parameters), the worst parameter of each (``worst_rhat_parameter``, ...),
            ``chains``, ``samples``, ``chain_method`` and ``seconds``: the package's one
            vocabulary (:data:`platinum_jax.inference.DIAGNOSTIC_KEYS`; the old names
            ``n_divergent``, ``max_r_hat``, ... still read, with a ``DeprecationWarning``).
            ``rhat_max`` is ``"unavailable with one chain"`` for one chain, NaN for SVI.
        info: data handling notes (e.g. ``n_boundary_moved`` for the Beta likelihood).
    """

    table: ScoreTable
    anchor: BenchmarkAnchor | ModelAnchor
    likelihood: str
    method: str
    priors: Priors
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
        return (
            f"BayesStitchingFit({self.likelihood}, {self.method}, {self.table.n_models} models, "
            f"{self.table.n_benchmarks} benchmarks, divergences={d.get('divergences')}, "
            f"rhat_max={rhat}, ess_bulk_min={d.get('ess_bulk_min', float('nan')):.0f})"
        )


_STAT_COLS = ["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail"]


def _named_tables(table: ScoreTable, summary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    def block(var, index_name):
        part = summary.loc[summary["variable"] == var].set_index("name")[_STAT_COLS]
        part.index.name = index_name
        return part

    capabilities = block("capability", "model").copy()
    capabilities["release_date"] = (
        table.model_release_dates().reindex(capabilities.index).to_numpy()
    )
    diff = block("difficulty", "benchmark").add_prefix("difficulty_")
    slope = block("slope", "benchmark").add_prefix("slope_")
    noise = block("noise_variance", "benchmark")["mean"]
    benchmarks = diff.join(slope)
    benchmarks["noise_sd_mean"] = np.sqrt(noise)
    benchmarks["release_date"] = (
        table.benchmark_release_dates().reindex(benchmarks.index).to_numpy()
    )
    return capabilities, benchmarks


def hyper_mass_blocks(likelihood: str, *, model_anchor: bool = False) -> list[tuple[str, ...]]:
    """The dense blocks of the default NUTS mass matrix: the hyper-parameters.

    For the Gaussian likelihood ``noise_log_mu`` and ``noise_log_tau`` set every benchmark's
    noise; they touch all scores, so their posteriors are correlated with each other and a
    diagonal mass matrix makes NUTS take short steps along them.  With a model anchor
    (``model_anchor=True``) the shift and stretch of the scale, ``capability_mu`` and
    ``capability_tau``, are sampled too and join the block; with a benchmark anchor they are
    computed from the anchored benchmark (see :mod:`platinum_jax.models.rosetta_bayes`).  A dense block of at
    most 4 x 4 (every other site diagonal) is cheap to adapt.  Returns NumPyro's list of
    site-name tuples (empty when there is nothing to couple).
    """
    likelihood = check_likelihood(likelihood)
    block: tuple[str, ...] = ("capability_mu", "capability_tau") if model_anchor else ()
    if likelihood == "gaussian":
        block += ("noise_log_mu", "noise_log_tau")
    return [block] if len(block) > 1 else []


def _check_connected(table: ScoreTable) -> None:
    comps = table.components()
    if len(comps) > 1:
        sizes = sorted(((len(m), len(b)) for m, b in comps), reverse=True)
        raise ValueError(
            f"the score table falls into {len(comps)} disconnected groups (models, benchmarks) = "
            f"{sizes[:5]}; scores in different groups cannot be put on one scale; keep one group "
            "with table.select_models(...) or add scores that link them"
        )


def fit_stitching_bayes(
    table: ScoreTable,
    anchor: BenchmarkAnchor | ModelAnchor | None = None,
    *,
    likelihood: Literal["gaussian", "beta", "binomial", "beta_binomial"] = "gaussian",
    method: Literal["nuts", "svi"] = "nuts",
    chains: int = 4,
    samples: int = 1500,
    warmup: int = 1000,
    seed: int = 0,
    priors: Priors | None = None,
    chain_method: str = "auto",
    target_accept: float = 0.99,
    max_tree_depth: int = 10,
    dense_mass: bool | Literal["hyper"] | Sequence[tuple[str, ...]] = "hyper",
    svi_guide: Literal["normal", "lowrank"] = "normal",
    svi_steps: int = 5000,
    svi_learning_rate: float = 0.01,
    beta_boundary: float = 0.005,
    stderr_floor: float = STDERR_FLOOR,
    ess_min: float = 400.0,
    rhat_max: float = 1.01,
    progress_bar: bool = False,
    **deprecated,
) -> BayesStitchingFit:
    """Posterior of C_m, D_b, alpha_b (and the noise) given the scores of ``table``.

    Args:
        table: a connected :class:`ScoreTable`.
        anchor: as in :func:`fit_stitching` (default ``BenchmarkAnchor()``: Winogrande,
            D = 0, alpha = 1); anchored entries are fixed, not sampled.
        likelihood: ``"gaussian"`` (the Bayesian twin of least squares), ``"beta"``,
            ``"binomial"`` or ``"beta_binomial"`` (both need ``n_items``; the second adds a
            per-benchmark noise scale); see :mod:`platinum_jax.models.rosetta_bayes`.
        method: ``"nuts"`` (exact MCMC, ``chains`` x ``samples`` draws after ``warmup``) or
            ``"svi"`` (variational; ``svi_guide`` AutoNormal or AutoLowRankMultivariateNormal,
            then ``samples`` draws from the guide; fast on large tables, no R-hat).
        svi_guide: the variational family of ``method="svi"``.  ``"normal"`` (AutoNormal, the
            default) treats every parameter as independent: cheapest, with good posterior
            means, but its intervals can be too narrow where parameters trade off (a
            benchmark's difficulty against its slope).  ``"lowrank"``
            (AutoLowRankMultivariateNormal) adds a low-rank covariance that captures such
            trade-offs, at more cost per step; prefer it when the SVI intervals matter.
        chain_method: ``"auto"`` uses :func:`choose_chain_method`.
        target_accept, max_tree_depth: NUTS settings.  With the defaults (4 chains, 1,000
            warmup steps, 1,500 draws each, target acceptance 0.99) the Epoch data, the tidy
            table and the raw directory alike, sample with no divergences, R-hat <= 1.01 and
            bulk and tail ESS >= 400 for every parameter (see the README for the figures).
            The slowest coordinate is the scale itself (``capability_tau``, set by the
            anchor benchmark's slope), at about 0.1 effective draws per draw.
        dense_mass: the NUTS mass matrix.  ``"hyper"`` (default): dense over the scale
            hyper-parameters (:func:`hyper_mass_blocks`), diagonal elsewhere; ``False``: all
            diagonal; ``True``: fully dense (needs a long warmup to estimate ~300 x 300
            entries); or NumPyro's list of site-name tuples.
        beta_boundary: how far exact 0/1 scores move inwards for the Beta likelihood when
            ``n_items`` is unknown (otherwise half an item).
        stderr_floor: smallest known standard error the Gaussian and Beta likelihoods use
            (default 0.005, half of Epoch's reporting precision); see :func:`prepare_data`.
        ess_min, rhat_max: thresholds of the :class:`SamplingWarning`, named as in
            :func:`platinum_jax.inference.nuts` (``min_ess`` and ``max_r_hat`` are deprecated
            spellings, read with a ``DeprecationWarning``).

    Run in float64 (``jax.config.update("jax_enable_x64", True)``) for reliable diagnostics.
    Returns a :class:`BayesStitchingFit`.
    """
    if not isinstance(table, ScoreTable):
        raise TypeError(f"table must be a ScoreTable, got {type(table).__name__}")
    ess_min, rhat_max = threshold_names(ess_min, rhat_max, deprecated, "fit_stitching_bayes")
    likelihood = check_likelihood(likelihood)
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    for name, value in (("chains", chains), ("samples", samples)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if int(warmup) != warmup or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    if not 0.0 < target_accept < 1.0:
        raise ValueError(
            f"target_accept is a probability and must lie strictly between 0 and 1, got "
            f"{target_accept!r}; 0.8-0.99 are the useful values"
        )
    if int(max_tree_depth) != max_tree_depth or max_tree_depth < 1:
        raise ValueError(f"max_tree_depth must be a positive integer, got {max_tree_depth!r}")
    priors = Priors() if priors is None else priors
    anchor = BenchmarkAnchor() if anchor is None else anchor
    _check_connected(table)
    layout = ParameterLayout.from_table(table, anchor)
    data, info = prepare_data(
        table, likelihood, beta_boundary=beta_boundary, stderr_floor=stderr_floor
    )
    if info["n_stderr_floored"] and likelihood in ("gaussian", "beta"):
        warnings.warn(
            f"{info['n_stderr_floored']} standard error(s) below stderr_floor={stderr_floor:g} "
            "were raised to it: a standard error of 0 claims an exactly known score, which the "
            "noise model cannot follow (see prepare_data); pass stderr_floor=0 to keep them",
            UserWarning,
            stacklevel=2,
        )
    if info["n_boundary_moved"]:
        warnings.warn(
            f"Beta likelihood: {info['n_boundary_moved']} score(s) equal to exactly 0 or 1 were "
            f"moved inwards by half an item (or by beta_boundary={beta_boundary:g} where n_items "
            "is unknown) so the Beta density is finite; use the binomial likelihood if n_items "
            "is known",
            UserWarning,
            stacklevel=2,
        )
    problem, _ = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                   data=data)
    engine_data = problem.data()
    key_fit, key_pp = jax.random.split(jax.random.PRNGKey(seed))
    start = time.perf_counter()
    stats: dict[str, np.ndarray] | None = None
    if method == "nuts":
        cm = choose_chain_method(chains) if chain_method == "auto" else chain_method
        if isinstance(dense_mass, str):
            if dense_mass != "hyper":
                raise ValueError(
                    f"dense_mass must be 'hyper', True, False or a list of site-name tuples, "
                    f"got {dense_mass!r}"
                )
            blocks = hyper_mass_blocks(
                likelihood, model_anchor=anchored_benchmark(layout) is None
            )
            dense_mass = blocks if blocks else False
        mcmc = run_nuts(
            problem,
            engine_data,
            chains=int(chains),
            warmup=int(warmup),
            samples=int(samples),
            rng_key=key_fit,
            target_accept=target_accept,
            max_tree_depth=int(max_tree_depth),
            dense_mass=dense_mass,
            chain_method=cm,
            plain_names=True,
            extra_fields=("diverging", "num_steps", "energy", "accept_prob", "potential_energy"),
            progress_bar=progress_bar,
        )
        grouped = mcmc.get_samples(group_by_chain=True)
        extra = mcmc.get_extra_fields(group_by_chain=True)
        stats = {
            "diverging": np.asarray(extra["diverging"]),
            "n_steps": np.asarray(extra["num_steps"]),
            "acceptance_rate": np.asarray(extra["accept_prob"]),
            "energy": np.asarray(extra["energy"]),
            "lp": -np.asarray(extra["potential_energy"]),
        }
        info = {**info, "chain_method": cm}
    else:
        import numpyro
        from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal

        guides = {"normal": AutoNormal, "lowrank": AutoLowRankMultivariateNormal}
        if svi_guide not in guides:
            raise ValueError(f"svi_guide must be one of {tuple(guides)}, got {svi_guide!r}")
        draws, losses = run_svi(
            numpyro_model(problem, plain_names=True),
            lambda model, _: guides[svi_guide](model),
            numpyro.optim.Adam(svi_learning_rate), engine_data, steps=int(svi_steps),
            draws=int(samples), rng_key=key_fit, posterior_key=key_fit,
            progress_bar=progress_bar)
        grouped = {k: v[None] for k, v in draws.items()}  # one "chain" of independent draws
        losses = np.asarray(losses)
        info = {**info, "svi_guide": svi_guide, "final_elbo_loss": float(losses[-100:].mean())}
        chains = 1
    jax.block_until_ready(grouped)
    wall = time.perf_counter() - start

    computed = deterministic_sites(layout, likelihood)
    latent = {k: v for k, v in grouped.items() if k not in computed and k != "y"}
    flat_latent = {k: v.reshape((-1,) + v.shape[2:]) for k, v in latent.items()}
    derived, loglik = _push_forward(problem, key_pp, flat_latent, engine_data)
    if likelihood in _COUNT_LIKELIHOODS:
        # Count pmf -> density of the score k/n (bin width 1/n), comparable with Gaussian / Beta;
        # predictions on the count scale of the observed data.
        loglik = loglik + jnp.log(data.n_items)
        derived["y"] = jnp.round(derived["y"] * data.n_items)

    def by_chain(x):
        x = np.asarray(x)
        return x.reshape((chains, -1) + x.shape[1:])

    posterior = {k: np.asarray(v) for k, v in latent.items()}
    posterior.update({k: by_chain(v) for k, v in derived.items() if k != "y"})
    idata = _to_inference_data(
        table, layout, data, likelihood, posterior, stats, by_chain(loglik), by_chain(derived["y"])
    )
    idata.attrs.update(
        {"likelihood": likelihood, "method": method, "anchor": anchor.describe(), "seed": int(seed)}
    )
    if method == "nuts":
        # The run's settings, so advice after a poor run builds on what was actually run.
        idata.attrs.update(
            {
                "target_accept": float(target_accept),
                "warmup": int(warmup),
                "samples": int(samples),
                "chains": int(chains),
                "max_tree_depth": int(max_tree_depth),
                "chain_method": cm,
            }
        )
    summary = posterior_summary(idata, with_diagnostics=(method == "nuts"))
    capabilities, benchmarks = _named_tables(table, summary)
    diagnostics = summary_diagnostics(idata, summary, method, wall)
    fit = BayesStitchingFit(
        table=table,
        anchor=anchor,
        likelihood=likelihood,
        method=method,
        priors=priors,
        layout=layout,
        idata=idata,
        summary=summary,
        capabilities=capabilities,
        benchmarks=benchmarks,
        diagnostics=diagnostics,
        info=info,
    )
    if method == "nuts":
        warn_on_diagnostics(diagnostics, ess_min=ess_min, rhat_max=rhat_max,
                            run=dict(idata.attrs))
    return fit


def _push_forward(problem, key, flat_latent, data):
    """Derived variables, posterior predictive ``y`` and pointwise log likelihood per draw, in
    one compiled program from the engine's pieces: the model's reparameterisation gives
    ``capability``, ``difficulty``, ``slope`` (and the scale), the likelihood the noise
    (``sigma``), the variance of each score (``noise_variance``: its mean over a benchmark's
    scores, the Sigma_bb of the optimal-weights problem) and new scores.
    """
    lik = problem.model.likelihood
    n_b = problem.table.n_items
    bi = data.item_index
    count = jax.ops.segment_sum(jnp.ones_like(data.response), bi, num_segments=n_b)

    def one(values, k):
        theta, extras = _assemble(problem, values, True)
        out = {name: extras[name] for name in extras}
        items = problem.item.unflatten(theta.items)
        if "noise_log_sigma" in items:
            out["sigma"] = jnp.exp(items["noise_log_sigma"])
        mu = problem.predict(theta, data.subject_index, bi)
        rows = problem.likelihood_rows(theta, data)
        _, var = lik.moments(mu, data.trials, rows)
        out["noise_variance"] = jax.ops.segment_sum(var, bi, num_segments=n_b) / count
        out["y"] = lik.sample(k, mu, data.trials, rows)
        return out, problem.pointwise_log_lik(theta, data)

    n = next(iter(flat_latent.values())).shape[0]
    keys = jax.random.split(key, n)
    return jax.jit(jax.vmap(one))(flat_latent, keys)


def _to_inference_data(table, layout, data: BayesData, likelihood, posterior, stats, loglik, pp):
    import arviz as az

    free_c, free_d, free_s = layout.free_positions()
    models, benchmarks = np.asarray(table.models), np.asarray(table.benchmarks)
    coords = {
        "model": list(table.models),
        "benchmark": list(table.benchmarks),
        "free_capability": list(models[free_c]),
        "free_difficulty": list(benchmarks[free_d]),
        "free_slope": list(benchmarks[free_s]),
        "score": np.arange(table.n_scores),
    }
    dims = {k: v for k, v in _DIMS.items()}
    constant = {
        "model_index": np.asarray(data.model_index),
        "benchmark_index": np.asarray(data.benchmark_index),
        "stderr": np.asarray(data.stderr),
        "n_items": np.asarray(data.n_items),
    }
    dims.update({k: ["score"] for k in constant})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        idata = az.from_dict(
            posterior=posterior,
            sample_stats=stats,
            log_likelihood={"y": loglik},
            posterior_predictive={"y": pp},
            observed_data={"y": np.asarray(data.scores)},
            constant_data=constant,
            coords=coords,
            dims=dims,
        )
    # Label every score with its model and benchmark (non-index coordinates on ``score``).
    labels = {
        "score_model": ("score", models[np.asarray(data.model_index)]),
        "score_benchmark": ("score", benchmarks[np.asarray(data.benchmark_index)]),
    }
    for group in ("observed_data", "constant_data"):
        setattr(idata, group, getattr(idata, group).assign_coords(labels))
    idata.observed_data.attrs["scale"] = (
        "item counts k = round(score * n_items)"
        if likelihood in _COUNT_LIKELIHOODS
        else "scores in [0, 1]"
    )
    return idata


def compare_likelihoods(
    fits_or_table: ScoreTable | Mapping[str, BayesStitchingFit] | Sequence[BayesStitchingFit],
    likelihoods: Sequence[str] = ("gaussian", "beta"),
    *,
    ic: Literal["loo", "waic"] = "loo",
    **fit_kwargs,
) -> pd.DataFrame:
    """Rank likelihoods by expected log predictive density (PSIS-LOO or WAIC, via ArviZ).

    Pass a :class:`ScoreTable` (each of ``likelihoods`` is fitted with ``fit_kwargs``) or fits
    already made.  All log likelihoods are densities of the score on [0, 1] (the Binomial's
    pmf of k is divided by the bin width 1/n), so the elpd values are comparable; Beta fits
    evaluate moved boundary scores (see ``BayesStitchingFit.info``).  Returns ArviZ's
    comparison frame (``rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, warning``), indexed by
    likelihood.
    """
    import arviz as az

    if isinstance(fits_or_table, ScoreTable):
        for lik in likelihoods:
            if lik not in LIKELIHOODS:
                raise ValueError(f"unknown likelihood {lik!r}; choose from {LIKELIHOODS}")
        fits = {
            lik: fit_stitching_bayes(fits_or_table, likelihood=lik, **fit_kwargs)
            for lik in likelihoods
        }
    elif isinstance(fits_or_table, Mapping):
        fits = dict(fits_or_table)
    else:
        fits = {f.likelihood: f for f in fits_or_table}
    if len(fits) < 2:
        raise ValueError(f"compare_likelihoods needs at least two fits, got {list(fits)}")
    if ic not in ("loo", "waic"):
        raise ValueError(f"ic must be 'loo' or 'waic', got {ic!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return az.compare({k: f.idata for k, f in fits.items()}, ic=ic)
