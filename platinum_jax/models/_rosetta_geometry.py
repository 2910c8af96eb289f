"""The joint prior NUTS samples under a benchmark anchor: the scale of the capabilities and the
slopes in the coordinates the data pin down (see
:class:`~platinum_jax.models.rosetta_bayes.RosettaReparameterisation`).

Why a joint site: in the standardised coordinates (z ~ ZeroSumNormal(1), log slopes
eta_b = log_slope_loc + log_slope_scale v_b) the likelihood sees only exp(eta_b) z_m, so
multiplying every z_m by k and dividing every slope by k leaves it unchanged; only the prior
holds that direction, and NUTS with a diagonal mass matrix crosses it slowly (every benchmark's
slope moves along it at once). Here the sampled coordinates are the ones the likelihood reads,

    v_A             the anchored benchmark's standardised log slope, eta_A = loc + scale v_A,
    c = exp(eta_A) z  capabilities on the anchor's scale (times alpha_A), zero-sum,
    w_b = v_b - v_A   each free benchmark's log slope relative to the anchor's, over scale,

a linear change of variables from (v_A, z, v) with Jacobian exp(-(n - 1) eta_A): the prior on
the capabilities, difficulties and slopes is exactly that of :class:`Priors`, and

    v_A ~ N(0, 1),   c | v_A ~ ZeroSumNormal(exp(eta_A)),   w_b | v_A ~ N(-v_A, 1).

The scale exp(eta_A) now enters the prior only; the data fix c and w, and v_A follows from the
spread of c (to about 1 / sqrt(2 n)) without dragging any other coordinate along. Each prior
reads v_A, so the three are one NumPyro distribution over one vector
``[v_A, c' (n - 1), w (n_slopes)]``, with c' the coordinates of c in NumPyro's isometric
zero-sum basis (``ZeroSumTransform``), whose density is then that of n - 1 independent normals.
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
    """Joint prior of ``[v_A, c' (n_models - 1), w (n_slopes)]`` (see the module docstring):
    v_A ~ N(0, 1), c' ~ N(0, exp(log_slope_loc + log_slope_scale v_A)) each, w_b ~ N(-v_A, 1).
    """

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
        """``(v_A, c', w)`` of a value (leading axes kept)."""
        m = self.n_models
        return value[..., 0], value[..., 1:m], value[..., m:]

    def log_prob(self, value):
        v, c, w = self.split(value)
        eta = self.log_slope_loc + self.log_slope_scale * v
        lp = dist.Normal(0.0, 1.0).log_prob(v)
        lp = lp + jnp.sum(dist.Normal(0.0, jnp.exp(eta)[..., None]).log_prob(c), -1)
        return lp + jnp.sum(dist.Normal(-v[..., None], 1.0).log_prob(w), -1)

    def sample(self, key, sample_shape=()):
        k_v, k_c, k_w = jax.random.split(key, 3)
        shape = tuple(sample_shape)
        v = jax.random.normal(k_v, shape)
        scale = jnp.exp(self.log_slope_loc + self.log_slope_scale * v)[..., None]
        c = scale * jax.random.normal(k_c, (*shape, self.n_models - 1))
        w = jax.random.normal(k_w, (*shape, self.n_slopes)) - v[..., None]
        return jnp.concatenate([v[..., None], c, w], -1)
