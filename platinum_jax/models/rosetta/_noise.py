"""Noise-scaled intercepts: the Bayesian Rosetta model's coordinates for a benchmark whose few
scores carry no standard error (an opt-in geometry, ``RosettaBayes(noise_scaled=True)``).

With the Gaussian likelihood such a benchmark's scores pin its intercept beta_b (the logit of
its typical model's score) to within about ``sigma_b / (p_b (1 - p_b) sqrt(n_b))``, with p_b
its mean score and n_b its number of scores, while its noise scale sigma_b is left to the
hierarchical prior (a few scores say little about it). Sampled as they are, beta_b and
log sigma_b form a funnel: on Epoch's raw data a benchmark with 3 scores had the posterior sd
of its intercept move 33-fold across its noise scale's range, and every divergent transition
of the full dense mass matrix sat in the funnel's neck. Here each such intercept is sampled as

    delta_b = (beta_b - betahat_b) / (k_b sigma_b),   betahat_b = logit(p_b),
    k_b = 1 / (p_b (1 - p_b) sqrt(n_b)),

whose posterior scale no longer moves with sigma_b. The prior of beta_b is unchanged
(N(intercept_loc, intercept_scale)); only the coordinates are new. A site's prior cannot depend
on another site's value, so the noise hierarchy (nu, log s, the per-benchmark noise coordinates,
centred or not as before) and every free intercept are one site, ``noise_intercept``, with the
joint prior :func:`noise_intercept_prior`; the model's names (``noise_log_mu``,
``noise_log_tau``, ``noise_log_sigma``, ``intercept``) are recorded from it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats.norm import logpdf as normal

from ._reparam import RosettaReparameterisation, _take

__all__ = ["ScaledNoiseReparameterisation", "extended", "hyper_log_prob", "hyper_sample",
           "noise_intercept_prior", "scaled_noise_constants", "score_counts"]

#: mean scores are kept within [P_CLIP, 1 - P_CLIP] for betahat and k (a constant of the
#: coordinates, not of the model: any value gives the same posterior)
P_CLIP = 0.02


def score_counts(table):
    """Per benchmark (item) of ``table``: its number of scores, and how many of them carry a
    known standard error."""
    items = np.asarray(table.item_index)
    n = np.bincount(items, minlength=table.n_items)
    with_se = (np.zeros(table.n_items) if table.se is None else
               np.bincount(items, weights=np.asarray(table.se) > 0, minlength=table.n_items))
    return n, with_se


def hyper_sample(priors, key_nu, key_s, sample_shape):
    """Draws of the noise's common level nu and log spread log s from their priors."""
    p = priors
    nu = p.log_noise_loc + p.log_noise_loc_scale * jax.random.normal(key_nu, sample_shape)
    log_s = (float(np.log(p.log_noise_spread))
             + p.log_noise_spread_sd * jax.random.normal(key_s, sample_shape))
    return nu, log_s


def hyper_log_prob(priors, nu, log_s):
    """Log prior density of nu and log s (both normal)."""
    p = priors
    return (normal(nu, p.log_noise_loc, p.log_noise_loc_scale)
            + normal(log_s, float(np.log(p.log_noise_spread)), p.log_noise_spread_sd))


def extended(base: RosettaReparameterisation, cls, **constants):
    """``base``'s fields in the subclass ``cls``, with its data-derived ``constants``."""
    import dataclasses

    return cls(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)}, **constants)


def scaled_noise_constants(table, centred_min: int, free_difficulty) -> dict:
    """The data-derived constants of the coordinates, per free difficulty: ``scaled`` (fewer
    than ``centred_min`` scores and no known standard error), ``beta_hat`` and ``k``; and
    ``centred`` per benchmark (at least ``centred_min`` scores), as the likelihood's rule."""
    items = np.asarray(table.item_index)
    n, with_se = score_counts(table)
    p = np.bincount(items, weights=np.asarray(table.response, dtype=np.float64),
                    minlength=table.n_items) / np.maximum(n, 1)
    p = np.clip(p, P_CLIP, 1.0 - P_CLIP)
    fd = np.asarray(free_difficulty, dtype=int)
    return {"centred": tuple(bool(c) for c in n >= int(centred_min)),
            "scaled": tuple(bool(s) for s in ((n < int(centred_min)) & (with_se == 0))[fd]),
            "beta_hat": tuple(float(b) for b in np.log(p / (1.0 - p))[fd]),
            "k": tuple(float(k) for k in (1.0 / (p * (1.0 - p) * np.sqrt(np.maximum(n, 1))))[fd])}


def _split(value, n_b: int):
    return value[..., 0], value[..., 1], value[..., 2:2 + n_b], value[..., 2 + n_b:]


def noise_intercept_prior(priors, *, centred, scaled, beta_hat, k, free_difficulty):
    """NumPyro distribution of ``v = [nu, log s, r_1..r_B, delta_1..delta_F]``: nu ~
    N(log_noise_loc, log_noise_loc_scale), s ~ LogNormal(log log_noise_spread,
    log_noise_spread_sd) (so log s is normal), log sigma_b = r_b (centred) or nu + s r_b, and
    beta_f ~ N(intercept_loc, intercept_scale) with delta_f = (beta_f - betahat_f) /
    (k_f sigma_b(f)) where ``scaled`` and delta_f = beta_f elsewhere. Its log density is the
    model's prior of these quantities times the Jacobian of the coordinates."""
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    c = np.asarray(centred, dtype=bool)
    sc = np.asarray(scaled, dtype=bool)
    bh, kk = np.asarray(beta_hat, dtype=float), np.asarray(k, dtype=float)
    fd = np.asarray(free_difficulty, dtype=int)
    n_b, n_f = len(c), len(fd)
    p = priors

    class NoiseIntercept(dist.Distribution):
        support = constraints.real_vector

        def __init__(self):
            super().__init__(batch_shape=(), event_shape=(2 + n_b + n_f,))

        def sample(self, key, sample_shape=()):
            keys = jax.random.split(key, 4)
            nu, log_s = hyper_sample(p, keys[0], keys[1], sample_shape)
            s = jnp.exp(log_s)[..., None]
            x = nu[..., None] + s * jax.random.normal(keys[2], sample_shape + (n_b,))
            r = jnp.where(c, x, (x - nu[..., None]) / s)
            beta = p.intercept_loc + p.intercept_scale * jax.random.normal(
                keys[3], sample_shape + (n_f,))
            delta = jnp.where(sc, (beta - bh) / (kk * jnp.exp(x[..., fd])), beta)
            return jnp.concatenate([nu[..., None], log_s[..., None], r, delta], axis=-1)

        def log_prob(self, value):
            nu, log_s, r, delta = _split(value, n_b)
            s = jnp.exp(log_s)
            lp = hyper_log_prob(p, nu, log_s)
            nu_, s_ = nu[..., None], s[..., None]
            lp += jnp.sum(jnp.where(c, normal(r, nu_, s_), normal(r, 0.0, 1.0)), axis=-1)
            x = jnp.where(c, r, nu_ + s_ * r)
            scale = kk * jnp.exp(_take(x, fd, axis=-1))
            beta = jnp.where(sc, bh + scale * delta, delta)
            lp += jnp.sum(normal(beta, p.intercept_loc, p.intercept_scale)
                          + jnp.where(sc, jnp.log(scale), 0.0), axis=-1)
            return lp

    return NoiseIntercept()


class ScaledNoiseReparameterisation(RosettaReparameterisation):
    """:class:`RosettaReparameterisation` with the Gaussian likelihood's noise hierarchy and the
    intercepts in one site, ``noise_intercept`` (see the module docstring); replaces the
    noise's parameters too and records ``intercept`` (beta_b of every free difficulty)."""

    centred: tuple[bool, ...] = ()  # per benchmark: log sigma_b sampled centred
    scaled: tuple[bool, ...] = ()  # per free difficulty: intercept scaled by the noise
    beta_hat: tuple[float, ...] = ()
    k: tuple[float, ...] = ()
    replaces: ClassVar[tuple[str, ...]] = ("capability", "difficulty", "slope", "noise_log_mu",
                                           "noise_log_tau", "noise_log_sigma")

    def _prior(self):
        return noise_intercept_prior(self.priors, centred=self.centred, scaled=self.scaled,
                                     beta_hat=self.beta_hat, k=self.k,
                                     free_difficulty=self.free_difficulty)

    def sites(self):
        out = super().sites()
        out.pop("intercept")
        out["noise_intercept"] = self._prior()
        return out

    def parameters(self, values):
        nu, log_s, r, delta = _split(values["noise_intercept"], self.n_benchmarks)
        s = jnp.exp(log_s)
        x = jnp.where(np.asarray(self.centred, dtype=bool), r, nu + s * r)
        fd = np.asarray(self.free_difficulty, dtype=int)
        scale = np.asarray(self.k) * jnp.exp(_take(x, fd))
        beta = jnp.where(np.asarray(self.scaled, dtype=bool),
                         np.asarray(self.beta_hat) + scale * delta, delta)
        out = super().parameters({**values, "intercept": beta})
        return {**out, "intercept": beta, "noise_log_mu": nu, "noise_log_tau": s,
                "noise_log_sigma": x}


def scaled_noise(base: RosettaReparameterisation, table, centred_min: int) -> Any:
    """``base`` in the noise-scaled coordinates, with the constants of ``table``."""
    return extended(base, ScaledNoiseReparameterisation,
                    **scaled_noise_constants(table, centred_min, base.free_difficulty))
