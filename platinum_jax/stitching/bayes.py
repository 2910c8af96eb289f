"""Bayesian benchmark stitching, the preset of Ho et al., "A Rosetta Stone for AI Benchmarks":
:func:`fit_stitching_bayes` is the engine's :func:`~platinum_jax.inference.sample_posterior` of
the registered ``rosetta_bayes`` model (:mod:`platinum_jax.models.rosetta_bayes`) with the paper's
data preparation, sampler settings and labels; ``platinum-jax fit --model rosetta_bayes`` samples
the same model. Names that moved still import from here, with a ``DeprecationWarning``.

    >>> fit = fit_stitching_bayes(ScoreTable.from_csv("scores_long.csv"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("mean").tail()                       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from platinum_jax._deprecation import module_hooks
from platinum_jax._moved_names import MOVED
from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood
from platinum_jax.inference import (
    check_sampler_settings,
    compare_posteriors,
    hyper_mass_blocks,
    resolve_dense_mass,
    stitching_model,
    stitching_posterior,
    stitching_problem,
    threshold_names,
    warn_prepared,
)
from platinum_jax.models import BenchmarkAnchor, ModelAnchor, ParameterLayout
from platinum_jax.models.rosetta_bayes import (
    CENTRED_NOISE_MIN_SCORES,
    POOLED_NOISE_BELOW,
    STDERR_FLOOR,
    BayesData,
    prepare_data,
)
from platinum_jax.models.rosetta_bayes import Priors as _Priors  # its public home

from ._table import ScoreTable

__all__ = ["LIKELIHOODS", "BayesData", "BayesStitchingFit", "compare_likelihoods",
           "fit_stitching_bayes", "hyper_mass_blocks", "prepare_data", "stitching_model",
           "stitching_problem", *sorted(MOVED[__name__])]
__getattr__, __dir__ = module_hooks(__name__, globals(), moved=MOVED[__name__])


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


def fit_stitching_bayes(table: ScoreTable, anchor: BenchmarkAnchor | ModelAnchor | None = None,
                        *, likelihood: str = "gaussian", method: str = "nuts", chains: int = 4,
                        samples: int = 1500, warmup: int = 1000, seed: int = 0,
                        priors: _Priors | None = None, chain_method: str = "auto",
                        target_accept: float = 0.99, max_tree_depth: int = 10,
                        dense_mass: bool | str | Sequence[tuple[str, ...]] = True,
                        pooled_below: int = POOLED_NOISE_BELOW,
                        centred_min: int = CENTRED_NOISE_MIN_SCORES,
                        svi_guide: str = "normal", svi_steps: int = 5000,
                        svi_learning_rate: float = 0.01, beta_boundary: float = 0.005,
                        stderr_floor: float = STDERR_FLOOR, ess_min: float = 400.0,
                        rhat_max: float = 1.01, progress_bar: bool = False,
                        **deprecated) -> BayesStitchingFit:
    """Posterior of C_m, D_b, alpha_b and the noise given a connected ``table``: the paper's
    preset of :func:`platinum_jax.inference.sample_posterior` over the ``rosetta_bayes`` model.

    ``anchor`` as in :func:`fit_stitching`; ``method`` ``"nuts"`` or ``"svi"``. The defaults (4
    chains x 1,500 draws after 1,000 warmup, target acceptance 0.99, full dense mass matrix,
    Gaussian noise pooled below 30 scores and centred from 30: ``pooled_below``, ``centred_min``
    of :class:`~platinum_jax.models.rosetta_bayes.NoisyGaussian`) sampled Epoch's raw directory
    and random subsets of it, three seeds each, with no divergences, R-hat <= 1.01 and ESS >=
    400 over every coordinate (the Bayesian guide lists the runs). ``dense_mass="hyper"`` is
    quicker but mixes slowly more often. Runs short of those bars warn. Standard errors below ``stderr_floor`` are raised to
    it and exact 0/1 scores move by ``beta_boundary`` for the Beta likelihood (:func:`prepare_data`),
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
    table.check_connected()
    layout = ParameterLayout.from_table(table, anchor)
    data, info = prepare_data(table, likelihood, beta_boundary=beta_boundary,
                              stderr_floor=stderr_floor)
    warn_prepared(info, likelihood, stderr_floor=stderr_floor, beta_boundary=beta_boundary,
                  stacklevel=2)
    dense_mass = resolve_dense_mass(dense_mass, likelihood, layout, pooled_below=pooled_below)
    post, capabilities, benchmarks = stitching_posterior(
        table, layout, data, anchor=anchor, likelihood=likelihood, priors=priors,
        centred_min=centred_min, pooled_below=pooled_below, method=method,
        chains=chains, samples=samples, warmup=warmup, seed=seed, chain_method=chain_method,
        target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
        svi_guide=svi_guide, svi_steps=svi_steps, svi_learning_rate=svi_learning_rate,
        progress_bar=progress_bar, ess_min=ess_min, rhat_max=rhat_max)
    return BayesStitchingFit(table=table, anchor=anchor, likelihood=likelihood, method=method,
                             priors=priors, layout=layout, idata=post.idata,
                             summary=post.summary, capabilities=capabilities,
                             benchmarks=benchmarks, diagnostics=post.diagnostics,
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
