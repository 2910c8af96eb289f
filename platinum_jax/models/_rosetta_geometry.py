"""The joint prior NUTS samples under a benchmark anchor: the scale of the capabilities and the
slopes in the coordinates the data pin down (see
:class:`~platinum_jax.models.rosetta_bayes.RosettaReparameterisation`).

Why a joint site: in the standardised coordinates (z ~ ZeroSumNormal(1), log slopes
eta_b = log_slope_loc + log_slope_scale v_b) the likelihood sees only exp(eta_b) z_m, so
multiplying every z_m by k and dividing every slope by k leaves it unchanged; only the prior
holds that direction (the rms of z is 1 to within about 1 / sqrt(2 n)), and NUTS with a
diagonal mass matrix crosses it slowly, since every benchmark's slope moves along it at once.
Here the likelihood reads quantities that direction leaves alone:

    z               the standardised capabilities as before (zero-sum), l = log rms(z),
    lambda_b        = eta_b + l, the log slope of benchmark b on the unit-rms scale u = z / rms(z),
                      for every benchmark, the anchored one (lambda_A) included,

and exp(eta_b) z_m = exp(lambda_b) u_m. Along the direction above only rms(z), a radial
coordinate of z, moves. Where the anchored benchmark's own scores pin the scale only loosely
(it shares few models with the rest), the loose direction is lambda_A alone. Both are
directions NUTS's diagonal mass matrix fits. (v_A, z, v) -> (lambda_A, z, lambda) is a change
of variables with constant Jacobian log_slope_scale^B (B benchmarks), so the prior on the
capabilities, difficulties and slopes is exactly that of :class:`Priors`:

    z ~ ZeroSumNormal(1),   lambda_b | z ~ N(log_slope_loc + l(z), log_slope_scale).

Sampling z itself would still leave its radius, which only the prior holds, as a direction
wider than the data leave each z_m (NUTS then mixes it slowly). So z is sampled in polar form,
z = sqrt(n) exp(l) y / |y|: l = log rms(z) a coordinate of its own, with the log-chi density
of ZeroSumNormal(1)'s radius, and y any spherically symmetric vector in z's n - 1 isometric
zero-sum coordinates, whose direction is then uniform (ZeroSumNormal's). y's radius is a
nuisance the model never reads; its prior keeps it near sqrt(n - 1), with spread
:data:`NUISANCE_RADIUS_SD`, about as tight as the data leave the other directions of y.
Each lambda_b reads l, so everything is one NumPyro distribution over one vector
``[lambda_A, l, y (n - 1), lambda (n_slopes)]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax.scipy.special import gammaln, log_ndtr
from numpyro.distributions import constraints
from numpyro.distributions.transforms import ZeroSumTransform

__all__ = ["AnchoredScalePrior", "NUISANCE_RADIUS_SD", "zero_sum"]

#: Spread of the radius of y (see the module docstring), a nuisance of the sampler's geometry.
NUISANCE_RADIUS_SD = 0.25


def zero_sum(coords):
    """The zero-sum vector of length ``k + 1`` whose isometric coordinates are ``coords`` (k)."""
    return ZeroSumTransform(1)(coords)


class AnchoredScalePrior(dist.Distribution):
    """Joint prior of ``[lambda_A, l, y (n_models - 1), lambda (n_slopes)]`` (see the module
    docstring): l = log rms(z) with z ~ ZeroSumNormal(1), so sqrt(n) exp(l) ~ chi(n - 1);
    y spherically symmetric with radius ~ N(sqrt(n - 1), NUISANCE_RADIUS_SD) truncated to
    (0, inf); every lambda ~ N(log_slope_loc + l, log_slope_scale)."""

    support = constraints.real_vector

    def __init__(self, n_models: int, n_slopes: int, log_slope_loc: float,
                 log_slope_scale: float, *, validate_args=None):
        if n_models < 2:
            raise ValueError(f"the Bayesian Rosetta model needs at least 2 models, got {n_models}")
        self.n_models, self.n_slopes = int(n_models), int(n_slopes)
        self.log_slope_loc, self.log_slope_scale = float(log_slope_loc), float(log_slope_scale)
        super().__init__(batch_shape=(), event_shape=(1 + self.n_models + self.n_slopes,),
                         validate_args=validate_args)

    def split(self, value):
        """``(lambda_A, l, y, lambda)`` of a value (leading axes kept)."""
        m = self.n_models
        return value[..., 0], value[..., 1], value[..., 2:m + 1], value[..., m + 1:]

    def standardised(self, value):
        """z (zero-sum, length n_models) and u = z / rms(z) of a value."""
        _, log_rms, y, _ = self.split(value)
        u = zero_sum(y) * (np.sqrt(self.n_models) / jnp.linalg.norm(y, axis=-1))[..., None]
        return jnp.exp(log_rms)[..., None] * u, u

    def log_prob(self, value):
        lam_a, log_rms, y, lam = self.split(value)
        k = self.n_models - 1
        # log rms(z): rho = sqrt(n) exp(l) ~ chi(k), plus log rho for d rho / d l.
        rho = np.sqrt(self.n_models) * jnp.exp(log_rms)
        lp = (k * jnp.log(rho) - 0.5 * rho**2 - (0.5 * k - 1.0) * np.log(2.0)
              - gammaln(0.5 * k))
        # y: radius r ~ N(R, sd) on (0, inf), direction uniform on the sphere S^(k-1).
        r, big_r = jnp.linalg.norm(y, axis=-1), np.sqrt(k)
        log_sphere = np.log(2.0) + 0.5 * k * np.log(np.pi) - gammaln(0.5 * k)
        lp = lp + (dist.Normal(big_r, NUISANCE_RADIUS_SD).log_prob(r)
                   - log_ndtr(big_r / NUISANCE_RADIUS_SD) - log_sphere - (k - 1) * jnp.log(r))
        slopes = jnp.concatenate([lam_a[..., None], lam], -1)
        loc = (self.log_slope_loc + log_rms)[..., None]
        return lp + jnp.sum(dist.Normal(loc, self.log_slope_scale).log_prob(slopes), -1)

    def sample(self, key, sample_shape=()):
        k_z, k_y, k_r, k_s = jax.random.split(key, 4)
        shape, k = tuple(sample_shape), self.n_models - 1
        z = jax.random.normal(k_z, (*shape, k))
        log_rms = 0.5 * jnp.log(jnp.sum(z**2, -1) / self.n_models)
        y = jax.random.normal(k_y, (*shape, k))
        big_r = np.sqrt(k)
        r = big_r + NUISANCE_RADIUS_SD * jax.random.truncated_normal(
            k_r, -big_r / NUISANCE_RADIUS_SD, np.inf, shape)
        y = y * (r / jnp.linalg.norm(y, axis=-1))[..., None]
        slopes = (self.log_slope_loc + log_rms[..., None] + self.log_slope_scale
                  * jax.random.normal(k_s, (*shape, 1 + self.n_slopes)))
        return jnp.concatenate([slopes[..., :1], log_rms[..., None], y, slopes[..., 1:]], -1)
