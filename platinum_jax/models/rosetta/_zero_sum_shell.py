"""A direction on the zero-sum subspace, carried by a vector whose length is nearly fixed.

The Bayesian Rosetta model writes its standardised capabilities as ``z = |z| u / |u|`` (see
:class:`~platinum_jax.models.rosetta.RosettaReparameterisation`): only the direction of
``u`` matters, so any spherically symmetric law of ``u`` on the subspace ``sum(u) = 0`` gives
the uniform direction, and ``z`` keeps its zero-sum normal prior exactly. The length of ``u``
is a coordinate the data never see; under a zero-sum normal it would wander over a chi law
(sd 0.71 whatever the dimension) and NUTS would spend its steps moving every ``u_m`` along that
ray. :func:`zero_sum_shell` gives ``u`` a length law ``|u| = chi_K / sqrt(lambda)`` with
``K = lambda d`` (``d = n - 1`` the subspace's dimension): mean about ``sqrt(d)``, as under the
zero-sum normal, but a relative spread ``1 / sqrt(2 lambda d)``, as thin as the data make the
direction.
"""

from __future__ import annotations

from math import lgamma

import jax
import jax.numpy as jnp
import numpy as np

#: lambda: how much thinner the shell is than the zero-sum normal's (its K = lambda d degrees)
SHELL_SHARPNESS = 25.0


def zero_sum_shell(n: int, sharpness: float = SHELL_SHARPNESS):
    """NumPyro distribution of ``u`` in R^n with ``sum(u) = 0``: uniform direction on the
    subspace, length ``chi_K / sqrt(sharpness)`` with ``K = sharpness (n - 1)``. Needs n >= 2.
    Its log density is normalised on the (n - 1)-dimensional subspace, as NumPyro's
    ``ZeroSumNormal``'s is."""
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import ZeroSumTransform

    if int(n) < 2:
        raise ValueError(f"a direction on the zero-sum subspace needs n >= 2 entries, got {n}")
    return dist.TransformedDistribution(_radial(int(n) - 1, float(sharpness)),
                                        ZeroSumTransform(1))


def _radial(d: int, sharpness: float):
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    k = sharpness * d  # degrees of freedom of the length's chi law
    scale = 1.0 / np.sqrt(sharpness)
    # log of the area of the unit sphere in R^d, over which the direction is uniform
    log_area = float(np.log(2.0) + 0.5 * d * np.log(np.pi) - lgamma(0.5 * d))
    log_norm = (0.5 * k - 1.0) * np.log(2.0) + lgamma(0.5 * k) + np.log(scale)

    class _Radial(dist.Distribution):
        support = constraints.real_vector

        def __init__(self):
            super().__init__(batch_shape=(), event_shape=(d,))

        def sample(self, key, sample_shape=()):
            k_dir, k_len = jax.random.split(key)
            g = jax.random.normal(k_dir, sample_shape + (d,))
            length = scale * jnp.sqrt(2.0 * jax.random.gamma(k_len, 0.5 * k, sample_shape))
            return g / jnp.linalg.norm(g, axis=-1, keepdims=True) * length[..., None]

        def log_prob(self, value):
            rho = jnp.linalg.norm(value, axis=-1)
            x = rho / scale
            log_chi = (k - 1.0) * jnp.log(x) - 0.5 * x**2 - log_norm
            return log_chi - (d - 1) * jnp.log(rho) - log_area

    return _Radial()
