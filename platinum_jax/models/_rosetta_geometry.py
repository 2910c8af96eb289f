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

Each lambda_b reads z, so they are one NumPyro distribution over one vector
``[lambda_A, z' (n - 1), lambda (n_slopes)]``, z' the coordinates of z in NumPyro's isometric
zero-sum basis (``ZeroSumTransform``), whose density is then that of n - 1 standard normals.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.distributions.transforms import ZeroSumTransform

__all__ = ["AnchoredScalePrior", "zero_sum"]


def zero_sum(coords):
    """The zero-sum vector of length ``k + 1`` whose isometric coordinates are ``coords`` (k)."""
    return ZeroSumTransform(1)(coords)


class AnchoredScalePrior(dist.Distribution):
    """Joint prior of ``[lambda_A, z' (n_models - 1), lambda (n_slopes)]`` (see the module
    docstring): z' ~ N(0, I), every lambda ~ N(log_slope_loc + log rms(z), log_slope_scale)
    with rms(z) = |z'| / sqrt(n_models)."""

    support = constraints.real_vector

    def __init__(self, n_models: int, n_slopes: int, log_slope_loc: float,
                 log_slope_scale: float, *, validate_args=None):
        if n_models < 2:
            raise ValueError(f"the Bayesian Rosetta model needs at least 2 models, got {n_models}")
        self.n_models, self.n_slopes = int(n_models), int(n_slopes)
        self.log_slope_loc, self.log_slope_scale = float(log_slope_loc), float(log_slope_scale)
        super().__init__(batch_shape=(), event_shape=(self.n_models + self.n_slopes,),
                         validate_args=validate_args)

    def split(self, value):
        """``(lambda_A, z', lambda, log rms(z))`` of a value (leading axes kept)."""
        m = self.n_models
        z = value[..., 1:m]
        log_rms = 0.5 * jnp.log(jnp.sum(z**2, -1) / m)
        return value[..., 0], z, value[..., m:], log_rms

    def log_prob(self, value):
        lam_a, z, lam, log_rms = self.split(value)
        loc = (self.log_slope_loc + log_rms)[..., None]
        slopes = jnp.concatenate([lam_a[..., None], lam], -1)
        lp = jnp.sum(dist.Normal(0.0, 1.0).log_prob(z), -1)
        return lp + jnp.sum(dist.Normal(loc, self.log_slope_scale).log_prob(slopes), -1)

    def sample(self, key, sample_shape=()):
        k_z, k_s = jax.random.split(key)
        shape = tuple(sample_shape)
        z = jax.random.normal(k_z, (*shape, self.n_models - 1))
        log_rms = 0.5 * jnp.log(jnp.sum(z**2, -1, keepdims=True) / self.n_models)
        slopes = (self.log_slope_loc + log_rms + self.log_slope_scale
                  * jax.random.normal(k_s, (*shape, 1 + self.n_slopes)))
        return jnp.concatenate([slopes[..., :1], z, slopes[..., 1:]], -1)
