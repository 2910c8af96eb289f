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

import math
from typing import ClassVar

import jax
import jax.numpy as jnp

from ._likelihoods import Bernoulli, Beta
from ._protocol import Likelihood, LogisticCurve, MeasurementModel, Param, PriorSpec

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


def _check_prior(model, loc_field: str, scale_field: str) -> None:
    loc, scale = getattr(model, loc_field), getattr(model, scale_field)
    if not math.isfinite(loc):
        raise ValueError(f"{type(model).__name__}.{loc_field} must be a finite number on the "
                         f"logit scale (got {loc!r}); e.g. math.log(0.25 / 0.75) for 0.25")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{type(model).__name__}.{scale_field} must be a finite number > 0 "
                         f"(got {scale!r}); it is the prior's SD on the logit scale")


def _guessing(loc: float, scale: float) -> Param:
    return Param(init=loc, prior=PriorSpec("Normal", loc, scale), transform=jax.nn.sigmoid,
                 doc="lower asymptote c_i (fitted as logit c_i)")


class ThreePL(MeasurementModel):
    """``P = c_i + (1 - c_i) sigmoid(a_i (theta_s - b_i))``; ``c_i`` fitted as ``logit c_i``.

    Prior on the floor (guessing, chance score): ``logit c_i ~ Normal(guessing_loc,
    guessing_scale^2)``, by default ``Normal(-2, 0.75^2)``: median 0.12, 95% of its mass in
    (0.03, 0.37), 0.4% above 0.5. The floor is weakly identified exactly where it sits
    highest (easy items, answered wrongly by few subjects): the likelihood there has a ridge
    along which a higher floor trades against a higher difficulty and slope, and a wider prior
    (``Normal(-2, 1)``, 2.3% above 0.5) let a 3PL of 1,000 subjects x 50 items with true floors
    0.2 put an easy item's floor at 0.51 (``benchmarks/bench_irt.py --stability-models 3pl``).
    This is the logit-normal form of the Beta prior on ``c`` customary in 3PL calibration
    (BILOG-MG's is centred on the chance rate of the answer format), centred between the floor
    near 0 of free-response answers and 1/4 of four-option multiple choice. The EM starts each
    floor at the prior's centre.

    When the answer format is known, centre the prior on its chance rate, e.g. four-option
    multiple choice: ``ThreePL(guessing_loc=math.log(1 / 3))`` (``logit(1/4)``), or from the
    registry ``make_model("3pl", guessing_loc=...)``; a larger ``guessing_scale`` lets the data
    speak more. The values are recorded in the fit's ``fit.json`` (``model``) and read back by
    ``weights`` and ``score``. Any other prior: subclass and override :meth:`item_params`.
    """

    likelihood: Likelihood = Bernoulli()
    guessing_loc: float = -2.0
    guessing_scale: float = 0.75
    name: ClassVar[str] = "3pl"

    def __check_init__(self):
        _check_prior(self, "guessing_loc", "guessing_scale")

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {
            "difficulty": _difficulty(),
            "discrimination": _discrimination(),
            "guessing": _guessing(self.guessing_loc, self.guessing_scale),
        }

    def mean(self, subject, item, glob):
        p = _logistic(subject, item)
        return item["guessing"] + (1.0 - item["guessing"]) * p

    def describe(self):
        return {**super().describe(), "guessing_loc": float(self.guessing_loc),
                "guessing_scale": float(self.guessing_scale)}


class FourPL(MeasurementModel):
    """``P = c_i + (d_i - c_i) sigmoid(a_i (theta_s - b_i))``.

    Priors: the floor's as in :class:`ThreePL` (``logit c_i ~ Normal(guessing_loc,
    guessing_scale^2)``, default ``Normal(-2, 0.75^2)``) and the ceiling's
    ``logit d_i ~ Normal(upper_loc, upper_scale^2)``, default ``Normal(3, 1)`` (median 0.95,
    95% in (0.74, 0.99)). Set them as in :class:`ThreePL`, e.g.
    ``FourPL(upper_loc=4.0)``; they are recorded in the fit's ``fit.json``.
    """

    likelihood: Likelihood = Bernoulli()
    guessing_loc: float = -2.0
    guessing_scale: float = 0.75
    upper_loc: float = 3.0
    upper_scale: float = 1.0
    name: ClassVar[str] = "4pl"

    def __check_init__(self):
        _check_prior(self, "guessing_loc", "guessing_scale")
        _check_prior(self, "upper_loc", "upper_scale")

    def subject_params(self):
        return _ability()

    def item_params(self):
        return {
            "difficulty": _difficulty(),
            "discrimination": _discrimination(),
            "guessing": _guessing(self.guessing_loc, self.guessing_scale),
            "upper": Param(init=self.upper_loc,
                           prior=PriorSpec("Normal", self.upper_loc, self.upper_scale),
                           transform=jax.nn.sigmoid,
                           doc="upper asymptote d_i (fitted as logit d_i)"),
        }

    def mean(self, subject, item, glob):
        p = _logistic(subject, item)
        return item["guessing"] + (item["upper"] - item["guessing"]) * p

    def describe(self):
        return {**super().describe(), "guessing_loc": float(self.guessing_loc),
                "guessing_scale": float(self.guessing_scale),
                "upper_loc": float(self.upper_loc), "upper_scale": float(self.upper_scale)}


class BetaTwoPL(TwoPL):
    """``y ~ Beta(mu phi, (1 - mu) phi)`` with ``mu = sigmoid(a_i (theta_s - b_i))``: the 2PL
    for continuous fractions strictly inside (0, 1), with a global precision ``phi``."""

    likelihood: Likelihood = Beta()
    name: ClassVar[str] = "beta"
