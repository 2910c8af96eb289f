"""Completely pooled noise for sparse benchmarks: the Bayesian Rosetta model's Gaussian noise
when a benchmark has too few scores, and no standard errors, to say anything about its own
noise level (``NoisyGaussian(pooled_below=k)``).

A modelling choice, not only a change of coordinates. With the hierarchical noise of
:class:`~platinum_jax.models.rosetta.Priors` a benchmark with 3 scores and no standard
errors has its noise scale sigma_b left to the prior: its scores pin its intercept (and its
slope) only to within about sigma_b, and intercept, slope and log sigma_b form a funnel in
which NUTS diverges (ScienceQA and LAMBADA on random subsets of Epoch's raw data). Here a
benchmark with fewer than ``pooled_below`` scores and no known standard error borrows the
common level of the noise,

    sigma_b = exp(nu)                 (pooled: no noise coordinate of its own)
    log sigma_b ~ N(nu, s)            (every other benchmark, as before)

so its scores weigh as much as a typical benchmark's and its intercept and slope have no
funnel to fall into. The posterior of nu is pinned by every benchmark with enough scores.

A site's prior cannot depend on another site's value, so the common level nu, the log of the
spread s and the log noise scales of the benchmarks sampled centred (at least ``centred_min``
scores) are one site, ``noise``, with the joint prior :func:`pooled_noise_prior`; the
non-centred offsets of the other unpooled benchmarks are the site ``noise_offset``
(standard normal). The model's names (``noise_log_mu``, ``noise_log_tau``,
``noise_log_sigma``, the last now log sigma_b for every benchmark) are recorded from them.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats.norm import logpdf as normal

from ._layout import StitchingParams, predict_scores
from ._noise import extended, hyper_log_prob, hyper_sample, score_counts
from ._reparam import RosettaReparameterisation

__all__ = ["PooledNoiseReparameterisation", "pooled_noise_check", "pooled_noise_masks",
           "pooled_noise_prior", "warn_pooled_misfit"]


def pooled_noise_masks(table, centred_min: int, pooled_below: int) -> dict:
    """Per benchmark of ``table``: ``pooled`` (fewer than ``pooled_below`` scores and no known
    standard error) and ``centred`` (at least ``centred_min`` scores and not pooled)."""
    n, with_se = score_counts(table)
    pooled = (n < int(pooled_below)) & (with_se == 0)
    centred = (n >= int(centred_min)) & ~pooled
    return {"pooled": tuple(bool(p) for p in pooled), "centred": tuple(bool(c) for c in centred)}


def pooled_noise_prior(priors, n_centred: int):
    """NumPyro distribution of ``v = [nu, log s, x_1..x_K]`` (the ``noise`` site): nu ~
    N(log_noise_loc, log_noise_loc_scale), s ~ LogNormal(log log_noise_spread,
    log_noise_spread_sd) (log s normal) and each centred benchmark's log sigma_b = x_k ~
    N(nu, s)."""
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    p = priors

    class NoiseLevels(dist.Distribution):
        support = constraints.real_vector

        def __init__(self):
            super().__init__(batch_shape=(), event_shape=(2 + n_centred,))

        def sample(self, key, sample_shape=()):
            k1, k2, k3 = jax.random.split(key, 3)
            nu, log_s = hyper_sample(p, k1, k2, sample_shape)
            x = nu[..., None] + jnp.exp(log_s)[..., None] * jax.random.normal(
                k3, sample_shape + (n_centred,))
            return jnp.concatenate([nu[..., None], log_s[..., None], x], axis=-1)

        def log_prob(self, value):
            nu, log_s, x = value[..., 0], value[..., 1], value[..., 2:]
            lp = hyper_log_prob(p, nu, log_s)
            return lp + jnp.sum(normal(x, nu[..., None], jnp.exp(log_s)[..., None]), axis=-1)

    return NoiseLevels()


class PooledNoiseReparameterisation(RosettaReparameterisation):
    """:class:`RosettaReparameterisation` with the Gaussian noise's sites: ``noise`` (nu,
    log s and the centred log noise scales; :func:`pooled_noise_prior`) and ``noise_offset``
    (the non-centred benchmarks' standard normal offsets); pooled benchmarks have none."""

    pooled: tuple[bool, ...] = ()  # per benchmark: sigma_b = exp(nu)
    centred: tuple[bool, ...] = ()  # per benchmark: log sigma_b sampled centred
    replaces: ClassVar[tuple[str, ...]] = ("capability", "difficulty", "slope", "noise_log_mu",
                                           "noise_log_tau", "noise_log_sigma")

    def _offset_mask(self):
        return ~np.asarray(self.pooled, dtype=bool) & ~np.asarray(self.centred, dtype=bool)

    def sites(self):
        import numpyro.distributions as dist

        out = super().sites()
        out["noise"] = pooled_noise_prior(self.priors, int(np.sum(self.centred)))
        n_offset = int(self._offset_mask().sum())
        if n_offset:
            out["noise_offset"] = dist.Normal(0.0, 1.0).expand([n_offset]).to_event(1)
        return out

    def entry_labels(self, benchmarks) -> dict[str, list[str]]:
        """Names of the entries of the sites ``noise`` (``nu``, ``log_s``, then the centred
        benchmarks) and ``noise_offset`` (its benchmarks), for labelled posteriors."""
        names = np.asarray(benchmarks, dtype=object)
        return {"noise": ["nu", "log_s", *names[np.asarray(self.centred, dtype=bool)]],
                "noise_offset": list(names[self._offset_mask()])}

    def coords(self, subjects, items):
        out = super().coords(subjects, items)
        for site, names in self.entry_labels(items).items():
            if names:  # a site with no entries is not sampled
                out[site] = [(f"{site}_entry", names)]
        return out

    def parameters(self, values):
        v = values["noise"]
        nu, log_s = v[0], v[1]
        s = jnp.exp(log_s)
        dtype = jnp.result_type(v)
        centred = np.flatnonzero(np.asarray(self.centred, dtype=bool))
        offset = np.flatnonzero(self._offset_mask())
        pooled = np.setdiff1d(np.arange(self.n_benchmarks), np.r_[centred, offset])
        parts = [v[2:], jnp.full((len(pooled),), 1.0, dtype) * nu]  # pooled: nu
        if len(offset):
            parts.insert(1, nu + s * values["noise_offset"])
        # the benchmarks' order from the parts': a constant permutation matrix (a product,
        # where two scatters and their gathers in the gradient cost more)
        order = np.r_[centred, offset, pooled].astype(int)
        to_benchmarks = np.zeros((self.n_benchmarks, len(order)))
        to_benchmarks[order, np.arange(len(order))] = 1.0
        x = jnp.asarray(to_benchmarks, dtype) @ jnp.concatenate(parts)
        out = super().parameters(values)
        return {**out, "noise_log_mu": nu, "noise_log_tau": s, "noise_log_sigma": x}


def pooled_noise(base: RosettaReparameterisation, table, centred_min: int,
                 pooled_below: int) -> PooledNoiseReparameterisation:
    """``base`` with the pooled noise's sites for ``table``."""
    return extended(base, PooledNoiseReparameterisation,
                    **pooled_noise_masks(table, centred_min, pooled_below))


def pooled_noise_check(posterior, scores, model_index, benchmark_index, pooled):
    """Do the scores of each pooled benchmark scatter as much as the common noise level it is
    given? A posterior predictive check of the complete pooling.

    ``posterior``: draws (dims chain, draw) of ``capability`` (per model), ``difficulty``,
    ``slope`` and ``noise_variance`` (per benchmark, labelled by their last coordinate);
    ``scores`` with each score's ``model_index`` and ``benchmark_index``; ``pooled`` per
    benchmark. For a pooled benchmark b with n_b scores and each draw, T = sum_i (y_i -
    mu_i)^2 / sigma_b^2, which is chi^2(n_b) if the common level is right. Returns a frame
    indexed by benchmark: ``noise_pooled``; ``noise_scatter`` = sqrt(mean T / n_b), the scores'
    scatter in units of the pooled level; ``noise_ppp`` = the posterior mean of
    P(chi^2(n_b) >= T) (both NaN where not pooled). A small ``noise_ppp`` says the scores
    scatter more than the pooled noise allows, so that benchmark's difficulty and slope
    intervals are too narrow; a benchmark's own residuals shrink as the fit adapts to them,
    so the check errs towards passing."""
    import pandas as pd
    from scipy.stats import chi2

    y, mi, bi = (np.asarray(a) for a in (scores, model_index, benchmark_index))
    names = list(posterior["difficulty"][posterior["difficulty"].dims[-1]].values)
    out = pd.DataFrame({"noise_pooled": np.asarray(pooled, dtype=bool),
                        "noise_scatter": np.nan, "noise_ppp": np.nan},
                       index=pd.Index(names, name="benchmark"))

    def draws(var):  # (chains x draws, last dimension)
        x = np.asarray(posterior[var].values, dtype=np.float64)
        return x.reshape(-1, x.shape[-1])

    cap, diff, slope, var = (draws(v) for v in ("capability", "difficulty", "slope",
                                                 "noise_variance"))
    pooled_b = np.flatnonzero(out["noise_pooled"].to_numpy())
    rows = np.flatnonzero(np.isin(bi, pooled_b))
    # the model's mean at every draw (draws x pooled rows)
    mu = np.asarray(jax.vmap(lambda c, d, a: predict_scores(
        StitchingParams(c, d, a), mi[rows], bi[rows]))(cap, diff, slope))
    for b in pooled_b:
        own = bi[rows] == b
        t = np.sum((y[rows][own] - mu[:, own]) ** 2, axis=1) / var[:, b]
        out.iloc[b, 1:] = np.sqrt(t.mean() / own.sum()), chi2.sf(t, own.sum()).mean()
    return out


def warn_pooled_misfit(check, benchmark_index, pooled_below: int, *, p: float = 0.01,
                       stacklevel: int = 2) -> None:
    """Warn, naming them, about the pooled benchmarks of ``check`` (:func:`pooled_noise_check`)
    whose scores scatter more than the common level allows (``noise_ppp`` below ``p``)."""
    import warnings

    bad = check.index[check["noise_ppp"].to_numpy() < p]
    if len(bad):
        n = np.bincount(np.asarray(benchmark_index), minlength=len(check))
        where = [check.index.get_loc(b) for b in bad]
        said = ", ".join(f"{b} ({n[i]} scores, {check['noise_scatter'].iloc[i]:.1f} times)"
                         for b, i in zip(bad, where, strict=True))
        warnings.warn(
            f"pooled noise: the scores of {said} scatter more than the common noise level "
            f"that benchmarks with fewer than {pooled_below} scores and no standard errors "
            f"share (posterior predictive p < {p}), so their difficulty and slope intervals "
            f"are too narrow; give them noise scales of their own with a pooled_below "
            f"(--pooled-below) of at most {min(n[where])}, or 0 (see noise_scatter and "
            "noise_ppp in the benchmarks table)", UserWarning, stacklevel=stacklevel + 1)
