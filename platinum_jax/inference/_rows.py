"""The responses of a bound model as one NumPyro distribution (imported only when sampling)."""

from __future__ import annotations

import dataclasses

import jax
import numpyro.distributions as dist
from numpyro.distributions import constraints

from ._problem import Data, Problem, Theta

__all__ = ["Responses"]


class Responses(dist.Distribution):
    """Every response row given the raw parameters ``theta``: the protocol's likelihood as a
    NumPyro distribution with batch shape ``(n_rows,)``.

    ``log_prob(y)`` is ``weight * log p(y | mu, theta)`` per row (the rows' weights scale their
    log density, as in point fits); ``sample`` draws new responses from the likelihood, on the
    response table's scale (fractions for count families).
    """

    support = constraints.real

    def __init__(self, problem: Problem, theta: Theta, data: Data):
        self.problem, self.theta, self.data = problem, theta, data
        super().__init__(batch_shape=data.response.shape, event_shape=())

    def log_prob(self, value):
        rows = dataclasses.replace(self.data, response=value)
        return self.data.weight * self.problem.pointwise_log_lik(self.theta, rows)

    def sample(self, key, sample_shape=()):
        p, d = self.problem, self.data
        mu = p.predict(self.theta, d.subject_index, d.item_index)
        lik_theta = p.likelihood_rows(self.theta, d)

        def one(k):
            return p.model.likelihood.sample(k, mu, d.trials, lik_theta)

        if not sample_shape:
            return one(key)
        n = int(jax.numpy.prod(jax.numpy.asarray(sample_shape)))
        out = jax.vmap(one)(jax.random.split(key, n))
        return out.reshape(*sample_shape, *out.shape[1:])
