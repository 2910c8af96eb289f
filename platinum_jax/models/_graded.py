"""Samejima's graded response model for ordered categories ``0 .. K-1`` (partial credit,
"failed / partly / fully solved", a k-of-n pass count).

``P(Y_si >= k) = sigmoid(a_i (theta_s - b_ik))`` for ``k = 1 .. K-1`` with ordered thresholds
``b_i1 < b_i2 < ... < b_i,K-1``; category probabilities are differences of neighbouring
cumulative curves, ``P(Y = k) = P(Y >= k) - P(Y >= k+1)`` (``P(Y >= 0) = 1``,
``P(Y >= K) = 0``). With ``K = 2`` it is the 2PL.

The thresholds are fitted as an unconstrained vector ``r_i`` mapped to
``b_i1 = r_i1`` and ``b_ik = b_i,k-1 + softplus(r_ik)``, so they stay ordered at every step of
every fitter and every posterior draw; ``threshold[k]`` in the outputs is ``b_i,k+1`` on the
ability scale. The scale is identified by the ability prior ``theta ~ Normal(0, 1)``.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from ._likelihoods import Categorical
from ._protocol import Likelihood, MeasurementModel, Param, PriorSpec

__all__ = ["GradedResponse", "ordered_thresholds"]


def ordered_thresholds(raw):
    """Unconstrained ``(..., K-1)`` -> increasing thresholds: first entry as it is, then
    cumulative softplus steps."""
    steps = jnp.concatenate([raw[..., :1], jax.nn.softplus(raw[..., 1:])], axis=-1)
    return jnp.cumsum(steps, axis=-1)


class GradedResponse(MeasurementModel):
    """Graded response model with ``categories`` ordered categories (default 3).

    Item parameters: ``discrimination`` ``a_i > 0`` (fitted as ``log a_i``) and
    ``threshold`` ``(K-1,)`` ordered. ``mean`` returns the K category log-probabilities; the
    :class:`~platinum_jax.models.Categorical` likelihood reads them, and the
    expected category ``sum_k k P(Y = k)`` is what residuals and predictions report.
    """

    categories: int
    likelihood: Likelihood
    name: ClassVar[str] = "graded"

    def __init__(self, categories: int = 3, likelihood: Likelihood | None = None):
        if int(categories) != categories or int(categories) < 2:
            raise ValueError(f"categories must be a whole number >= 2 (got {categories})")
        self.categories = int(categories)
        self.likelihood = Categorical(self.categories) if likelihood is None else likelihood

    def __check_init__(self):
        lik = self.likelihood
        if not isinstance(lik, Categorical) or int(lik.categories) != self.categories:
            raise ValueError(
                f"the graded model needs Categorical({self.categories}) as its likelihood "
                f"(got {type(lik).__name__}); leave likelihood unset to get it"
            )

    def subject_params(self):
        return {"ability": Param(prior=PriorSpec("Normal", 0.0, 1.0), doc="ability theta_s")}

    def item_params(self):
        return {
            "discrimination": Param(prior=PriorSpec("Normal", 0.0, 1.0), transform=jnp.exp,
                                    doc="discrimination a_i (fitted as log a_i)"),
            # raw 0 everywhere starts the thresholds at 0, 0.69, 1.39, ...: ordered and spread
            "threshold": Param(shape=(self.categories - 1,), prior=PriorSpec("Normal", 0.0, 2.0),
                               transform=ordered_thresholds,
                               doc="ordered thresholds b_ik (K-1,): first, then softplus steps"),
        }

    def mean(self, subject, item, glob):
        """Log-probabilities of the K categories (stable in the tails, where differences of
        cumulative curves underflow): with ``x_k = a (theta - b_k)``,
        ``P(Y = k) = sigmoid(x_k) sigmoid(-x_k+1) (1 - exp(x_k+1 - x_k))``."""
        x = item["discrimination"] * (subject["ability"] - item["threshold"])  # (K-1,)
        inf = jnp.full((1,), jnp.inf, x.dtype)
        lo = jnp.concatenate([inf, x])  # x_k for k = 0..K-1 (x_0 = +inf)
        hi = jnp.concatenate([x, -inf])  # x_k+1 (x_K = -inf)
        gap = jnp.concatenate([inf, x[:-1] - x[1:], inf])  # x_k - x_k+1 > 0
        return (jax.nn.log_sigmoid(lo) + jax.nn.log_sigmoid(-hi)
                + jnp.log1p(-jnp.exp(-gap)))

    def describe(self):
        return {**super().describe(), "categories": self.categories}
