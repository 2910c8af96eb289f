"""Item response theory for single questions: the 1PL, 2PL, 3PL and 4PL logistic models.

``P(correct) = c_i + (d_i - c_i) sigmoid(a_i (theta_s - b_i))`` with ability ``theta_s`` per
subject (an AI model) and, per item, difficulty ``b_i``, discrimination ``a_i > 0``, lower
asymptote ``c_i`` (guessing, chance score) and upper asymptote ``d_i`` (slips, label noise).
1PL shares one discrimination across items; 2PL frees it per item; 3PL adds ``c_i``; 4PL adds
``d_i``.

The scale is identified by the ability prior ``theta ~ Normal(0, 1)`` (point fits: its negative
log density is the penalty, so MAP is the posterior mode). Discrimination and asymptotes are
fitted on unconstrained scales (``log a``, ``logit c``, ``logit d``) and reported naturally.

Continuous scores (partial credit): :class:`BetaTwoPL` (registered as ``beta``) is the 2PL
mean with a Beta likelihood for fractions strictly inside (0, 1). The Gaussian and the
Binomial-with-trials variants are any of these models with another likelihood:
``TwoPL(likelihood=Gaussian())`` or ``TwoPL(likelihood=Binomial())`` (command line:
``--model 2pl --likelihood gaussian|binomial``; a ``trials`` column selects the binomial by
default).
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from ._protocol import Likelihood, LogisticCurve, MeasurementModel, Param, PriorSpec
from .likelihoods import Bernoulli, Beta

__all__ = ["OnePL", "TwoPL", "ThreePL", "FourPL", "BetaTwoPL"]


def _ability():
    return {"ability": Param(prior=PriorSpec("Normal", 0.0, 1.0), doc="ability theta_s")}


def _difficulty():
    return Param(prior=PriorSpec("Normal", 0.0, 3.0), doc="difficulty b_i")


def _logistic(subject, item):
    """``sigmoid(a_i (theta_s - b_i))``: the 2PL curve the 2PL, 3PL and 4PL share."""
    return jax.nn.sigmoid(item["discrimination"] * (subject["ability"] - item["difficulty"]))


def _discrimination():
    return Param(prior=PriorSpec("Normal", 0.0, 1.0), transform=jnp.exp,
                 doc="discrimination a_i (fitted as log a_i)")


class OnePL(MeasurementModel):
    """``P = sigmoid(a (theta_s - b_i))`` with one discrimination ``a`` for all items."""

    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "1pl"

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {"difficulty": _difficulty()}

    def global_params(self):
        return {"discrimination": _discrimination()}

    def mean(self, subject, item, glob):
        return jax.nn.sigmoid(glob["discrimination"] * (subject["ability"] - item["difficulty"]))

    def logistic_curve(self):
        """The logistic curve with one shared slope; a subclass with its own mean has none."""
        if type(self).mean is not OnePL.mean:
            return None
        return LogisticCurve("difficulty", "discrimination", shared=True)


class TwoPL(MeasurementModel):
    """``P = sigmoid(a_i (theta_s - b_i))``."""

    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "2pl"

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {"difficulty": _difficulty(), "discrimination": _discrimination()}

    def mean(self, subject, item, glob):
        return _logistic(subject, item)

    def logistic_curve(self):
        """The logistic curve with a slope per item; a subclass with its own mean has none."""
        if type(self).mean is not TwoPL.mean:
            return None
        return LogisticCurve("difficulty", "discrimination", shared=False)


class ThreePL(MeasurementModel):
    """``P = c_i + (1 - c_i) sigmoid(a_i (theta_s - b_i))``; ``c_i`` fitted as ``logit c_i``."""

    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "3pl"

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {
            "difficulty": _difficulty(),
            "discrimination": _discrimination(),
            "guessing": Param(init=-2.0, prior=PriorSpec("Normal", -2.0, 1.0), transform=jax.nn.sigmoid,
                              doc="lower asymptote c_i (fitted as logit c_i)"),
        }

    def mean(self, subject, item, glob):
        p = _logistic(subject, item)
        return item["guessing"] + (1.0 - item["guessing"]) * p


class FourPL(MeasurementModel):
    """``P = c_i + (d_i - c_i) sigmoid(a_i (theta_s - b_i))``."""

    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "4pl"

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {
            **ThreePL().item_params(),
            "upper": Param(init=3.0, prior=PriorSpec("Normal", 3.0, 1.0), transform=jax.nn.sigmoid,
                           doc="upper asymptote d_i (fitted as logit d_i)"),
        }

    def mean(self, subject, item, glob):
        p = _logistic(subject, item)
        return item["guessing"] + (item["upper"] - item["guessing"]) * p


class BetaTwoPL(TwoPL):
    """``y ~ Beta(mu phi, (1 - mu) phi)`` with ``mu = sigmoid(a_i (theta_s - b_i))``: the 2PL
    for continuous fractions strictly inside (0, 1), with a global precision ``phi``."""

    likelihood: Likelihood = Beta()
    name: ClassVar[str] = "beta"
