"""The joint prior NUTS samples under a benchmark anchor: the scale of the capabilities and the
slopes in coordinates the data pin down (see
:class:`~platinum_jax.models.rosetta_bayes.RosettaReparameterisation`).

Why: in the standardised coordinates (z ~ ZeroSumNormal(1), log slopes
eta_b = log_slope_loc + log_slope_scale v_b) the likelihood sees only exp(eta_b) z_m, so
multiplying every z_m by k and dividing every slope by k leaves it unchanged; only the prior
holds that direction, and NUTS with a diagonal mass matrix crosses it slowly, since every
benchmark's slope moves along it at once. Here a reference benchmark R (the one with the most
scores, whose own data pin its slope best) carries the scale:

    v_R               R's standardised log slope, eta_R = loc + scale v_R,
    c = exp(eta_R) z  the capabilities on R's scale, zero-sum,
    w_b = v_b - v_R   every other benchmark's log slope relative to R's, over scale
                      (the anchored one included when it is not R),

a linear change of variables from (v, z) with Jacobian exp(-(n - 1) eta_R), so the prior on
capabilities, difficulties and slopes is exactly that of :class:`Priors`:

    v_R ~ N(0, 1),   c | v_R ~ ZeroSumNormal(exp(eta_R)),   w_b | v_R ~ N(-v_R, 1),

and exp(eta_b) (z_m - zbar_b) = exp(scale w_b) (c_m - cbar_b). The data fix c and w; the
direction above is v_R alone (set by the spread of c, to about 1 / sqrt(2 n)), and where the
anchored benchmark's own scores pin the scale only loosely, the loose direction is its w_A
alone. Each prior reads v_R, so the three are one NumPyro distribution over one vector
``[v_R, c' (n - 1), w (n_benchmarks - 1)]``, c' the coordinates of c in NumPyro's isometric
zero-sum basis (``ZeroSumTransform``), whose density is then that of n - 1 normals.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.distributions.transforms import ZeroSumTransform

__all__ = ["ReferenceScalePrior", "zero_sum"]


def zero_sum(coords):
    """The zero-sum vector of length ``k + 1`` whose isometric coordinates are ``coords`` (k)."""
    return ZeroSumTransform(1)(coords)


class ReferenceScalePrior(dist.Distribution):
    """Joint prior of ``[v_R, c' (n_models - 1), w (n_others)]`` (see the module docstring):
    v_R ~ N(0, 1), c' ~ N(0, exp(log_slope_loc + log_slope_scale v_R)) each, w ~ N(-v_R, 1)."""

    support = constraints.real_vector

    def __init__(self, n_models: int, n_others: int, log_slope_loc: float,
                 log_slope_scale: float, *, validate_args=None):
        if n_models < 2:
            raise ValueError(f"the Bayesian Rosetta model needs at least 2 models, got {n_models}")
        self.n_models, self.n_others = int(n_models), int(n_others)
        self.log_slope_loc, self.log_slope_scale = float(log_slope_loc), float(log_slope_scale)
        super().__init__(batch_shape=(), event_shape=(self.n_models + self.n_others,),
                         validate_args=validate_args)

    def split(self, value):
        """``(v_R, c', w)`` of a value (leading axes kept)."""
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
        w = jax.random.normal(k_w, (*shape, self.n_others)) - v[..., None]
        return jnp.concatenate([v[..., None], c, w], -1)
