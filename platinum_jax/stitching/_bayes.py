"""Bayesian benchmark stitching, the preset of Ho et al., "A Rosetta Stone for AI Benchmarks":
:func:`fit_stitching_bayes` is the engine's :func:`~platinum_jax.inference.nuts` (or
:func:`~platinum_jax.inference.svi`) of the registered ``rosetta_bayes`` model
(:class:`~platinum_jax.models.RosettaBayes`) on the paper's score table, plus the paper's
labels: capabilities and benchmarks tables, and the check of the pooled noise. The sampler
settings are the model's own (``RosettaBayes.nuts_settings``), so ``platinum-jax fit --model
rosetta_bayes --method nuts`` samples the same posterior with the same draws.

    >>> from platinum_jax.data import ScoreTable
    >>> fit = fit_stitching_bayes(ScoreTable.from_csv("scores_long.csv"))  # doctest: +SKIP
    >>> fit.capabilities.sort_values("mean").tail()                       # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood
from platinum_jax.data import ScoreTable
from platinum_jax.inference import Fit, Problem, compare_posteriors, nuts, svi
from platinum_jax.models import RosettaBayes
from platinum_jax.models.rosetta import (
    CENTRED_NOISE_MIN_SCORES,
    POOLED_NOISE_BELOW,
    STDERR_FLOOR,
    Anchor,
    BenchmarkAnchor,
    ParameterLayout,
    Priors,
    pooled_noise_check,
    prepare_data,
    response_rows,
    warn_pooled_misfit,
)

__all__ = ["BayesStitchingFit", "compare_likelihoods", "fit_stitching_bayes",
           "stitching_problem"]


def stitching_problem(table: ScoreTable, anchor: Anchor | None = None, *,
                      likelihood: str = "gaussian", priors: Priors | None = None,
                      centred_min: int = CENTRED_NOISE_MIN_SCORES,
                      pooled_below: int = POOLED_NOISE_BELOW, beta_boundary: float = 0.005,
                      stderr_floor: float = STDERR_FLOOR):
    """The Bayesian Rosetta model bound to ``table`` as the preset samples it: an engine
    :class:`~platinum_jax.inference.Problem` (hand it to :func:`~platinum_jax.inference.nuts`,
    or to :func:`~platinum_jax.inference.numpyro_model` for a NumPyro model to copy and
    extend) and the notes of :func:`~platinum_jax.models.rosetta.prepare_data` (standard
    errors raised to ``stderr_floor``, Beta scores moved inwards by ``beta_boundary``).

    ``centred_min``: benchmarks with at least this many scores get a centred log noise scale;
    ``pooled_below``: benchmarks with fewer scores and no standard errors share the common
    noise level (0: none; :class:`~platinum_jax.models.rosetta.NoisyGaussian`)."""
    likelihood = check_likelihood(likelihood)
    anchor = BenchmarkAnchor() if anchor is None else anchor
    data, info = prepare_data(table, likelihood, beta_boundary=beta_boundary,
                              stderr_floor=stderr_floor)
    model = RosettaBayes.with_likelihood(likelihood, anchor=anchor, priors=priors,
                                         centred_min=centred_min, pooled_below=pooled_below)
    return Problem(model, response_rows(table, data, likelihood)), info


_PREPARED = (
    ("n_stderr_floored", "{n} standard error(s) below stderr_floor={floor:g} were raised to it: "
     "a standard error of 0 claims an exactly known score, which the noise model cannot follow "
     "(see prepare_data); pass stderr_floor=0 to keep them"),
    ("n_boundary_moved", "Beta likelihood: {n} score(s) equal to exactly 0 or 1 were moved "
     "inwards by half an item (or by beta_boundary={boundary:g} where n_items is unknown) so "
     "the Beta density is finite; use the binomial likelihood if n_items is known"),
)


def _warn_prepared(info: dict, likelihood: str, *, beta_boundary: float) -> None:
    for key, text in _PREPARED:
        if info[key] and (key == "n_boundary_moved" or likelihood in ("gaussian", "beta")):
            warnings.warn(text.format(n=info[key], floor=info["stderr_floor"],
                                      boundary=beta_boundary), UserWarning, stacklevel=3)


_STATS = ["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail"]


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


@dataclass(frozen=True, eq=False)
class BayesStitchingFit:
    """The posterior of the Bayesian stitching model, in the paper's labels: ``fit`` (the
    engine's :class:`~platinum_jax.inference.Fit`, whose ``inference_data``,
    ``posterior_summary`` and ``diagnostics`` these properties show), the inputs (``table``,
    ``anchor``, ``likelihood``, ``priors``, ``layout``), and the tables ``capabilities``
    (index model: the summary columns of C_m and ``release_date``) and ``benchmarks``
    (``difficulty_*``, ``slope_*``, ``noise_sd_mean`` = sqrt of the posterior mean Sigma_bb,
    ``release_date``; with pooled noise the columns of
    :func:`~platinum_jax.models.rosetta.pooled_noise_check`). ``info``: what the data
    preparation changed."""

    fit: Fit
    table: ScoreTable
    anchor: Anchor
    likelihood: str
    priors: Priors
    layout: ParameterLayout
    capabilities: pd.DataFrame = field(repr=False)
    benchmarks: pd.DataFrame = field(repr=False)
    info: Mapping[str, object] = field(default_factory=dict)

    @property
    def idata(self):
        """The ArviZ ``InferenceData`` (dims ``model``, ``benchmark``, ``score``)."""
        return self.fit.inference_data

    @property
    def summary(self) -> pd.DataFrame:
        return self.fit.posterior_summary

    @property
    def diagnostics(self) -> Mapping[str, object]:
        return self.fit.diagnostics

    @property
    def method(self) -> str:
        return self.fit.method

    def __repr__(self) -> str:
        d = self.diagnostics
        rhat = d.get("rhat_max", float("nan"))
        rhat = f"{rhat:.4f}" if isinstance(rhat, float) else str(rhat)
        return (f"BayesStitchingFit({self.likelihood}, {self.method}, {self.table.n_models} "
                f"models, {self.table.n_benchmarks} benchmarks, divergences="
                f"{d.get('divergences')}, rhat_max={rhat}, "
                f"ess_bulk_min={d.get('ess_bulk_min', float('nan')):.0f})")


def fit_stitching_bayes(table: ScoreTable, anchor: Anchor | None = None, *,
                        likelihood: str = "gaussian", method: str = "nuts", chains: int = 4,
                        samples: int | None = None, warmup: int | None = None, seed: int = 0,
                        priors: Priors | None = None, chain_method: str = "auto",
                        target_accept: float | None = None, max_tree_depth: int | None = None,
                        mass: str | None = None, warm_start=None,
                        pooled_below: int = POOLED_NOISE_BELOW,
                        centred_min: int = CENTRED_NOISE_MIN_SCORES,
                        svi_guide: str = "normal", svi_steps: int = 5000,
                        svi_learning_rate: float = 0.01, beta_boundary: float = 0.005,
                        stderr_floor: float = STDERR_FLOOR, ess_min: float = 400.0,
                        rhat_max: float = 1.01, progress_bar: bool = False) -> BayesStitchingFit:
    """Posterior of C_m, D_b, alpha_b and the noise given a connected ``table``: the engine's
    :func:`~platinum_jax.inference.nuts` (``method="nuts"``) or
    :func:`~platinum_jax.inference.svi` (``"svi"``: ``samples`` guide draws, default 1,500) of
    :class:`~platinum_jax.models.RosettaBayes`, labelled as the paper reads it.

    ``anchor`` as in :func:`fit_stitching`. Sampler settings left as None are the model's own
    (``RosettaBayes.nuts_settings``, checked over seeds and subsets of Epoch's raw data: the
    Bayesian guide lists the runs); ``mass`` ``"lowrank"`` or ``"diagonal"``; ``warm_start``
    a previous :class:`BayesStitchingFit` (or the engine's fit) of the same table shape, whose
    adapted step size and mass matrix this fit starts from, with a fifth of the warm-up
    (:func:`~platinum_jax.inference.nuts`).
    The Gaussian noise is pooled below ``pooled_below`` scores and centred from
    ``centred_min`` (:class:`~platinum_jax.models.rosetta.NoisyGaussian`). Standard errors
    below ``stderr_floor`` are raised to it and exact 0/1 scores move by ``beta_boundary``
    for the Beta likelihood (:func:`~platinum_jax.models.rosetta.prepare_data`), each with a
    warning; runs short of the bars (``ess_min``, ``rhat_max``) warn. Run in float64
    (:func:`platinum_jax.enable_float64`).
    """
    if not isinstance(table, ScoreTable):
        raise TypeError(f"table must be a platinum_jax.data.ScoreTable, got "
                        f"{type(table).__name__}")
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    if svi_guide not in ("normal", "lowrank"):
        raise ValueError(f"svi_guide must be 'normal' or 'lowrank', got {svi_guide!r}")
    likelihood = check_likelihood(likelihood)
    anchor = BenchmarkAnchor() if anchor is None else anchor
    table.check_connected()
    layout = ParameterLayout.from_table(table, anchor)
    problem, info = stitching_problem(table, anchor, likelihood=likelihood, priors=priors,
                                      centred_min=centred_min, pooled_below=pooled_below,
                                      beta_boundary=beta_boundary, stderr_floor=stderr_floor)
    _warn_prepared(info, likelihood, beta_boundary=beta_boundary)
    if isinstance(warm_start, BayesStitchingFit):
        warm_start = warm_start.fit
    if method == "nuts":
        fit = nuts(problem, problem.table, chains=chains, warmup=warmup, samples=samples,
                   target_accept=target_accept, max_tree_depth=max_tree_depth,
                   mass=mass, warm_start=warm_start, seed=seed, chain_method=chain_method,
                   progress_bar=progress_bar, ess_min=ess_min, rhat_max=rhat_max)
    else:
        fit = svi(problem, problem.table, steps=svi_steps, learning_rate=svi_learning_rate,
                  draws=1500 if samples is None else samples, guide=svi_guide, seed=seed,
                  progress_bar=progress_bar)
    capabilities, benchmarks = _named_tables(table, fit.posterior_summary)
    rep = problem.model.reparameterise(problem.table)
    if any(getattr(rep, "pooled", ())):  # does the common noise level fit the pooled benchmarks?
        t = problem.table
        check = pooled_noise_check(fit.inference_data.posterior, t.response, t.subject_index,
                                   t.item_index, rep.pooled)
        warn_pooled_misfit(check, t.item_index, pooled_below, stacklevel=2)
        benchmarks = benchmarks.join(check)
    return BayesStitchingFit(fit=fit, table=table, anchor=anchor, likelihood=likelihood,
                             priors=problem.model.priors, layout=layout,
                             capabilities=capabilities, benchmarks=benchmarks, info=info)


def compare_likelihoods(fits_or_table, likelihoods: Sequence[str] = ("gaussian", "beta"), *,
                        ic: str = "loo", **fit_kwargs) -> pd.DataFrame:
    """Rank likelihoods by PSIS-LOO or WAIC (:func:`platinum_jax.inference.compare_posteriors`)
    over fits already made (a mapping or a list of :class:`BayesStitchingFit`) or, given a
    :class:`~platinum_jax.data.ScoreTable`, over fits of each of ``likelihoods`` with
    ``fit_kwargs``. Every log likelihood is a density of the score on [0, 1] (counts divided
    by the bin width 1/n), so the elpd values compare. Returns ArviZ's comparison frame
    indexed by likelihood."""
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
    return compare_posteriors({k: getattr(v, "fit", v) for k, v in fits.items()}, ic=ic)
