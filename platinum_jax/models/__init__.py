"""Measurement models: how a subject's parameters and an item's produce a response.

One protocol (:class:`MeasurementModel`: parameters per subject, per item and global, a mean
function, a likelihood, penalties and priors, an identification) and the models built on it:

* :class:`Rosetta`: ``score = f(alpha_b (C_m - D_b))``, benchmarks as items (Ho et al. 2025,
  "A Rosetta Stone for AI Benchmarks"); its objective over a flat vector of free parameters is
  :func:`stitching_residuals` on a :class:`ParameterLayout`;
* :class:`OnePL`, :class:`TwoPL`, :class:`ThreePL`, :class:`FourPL`: item response theory for
  single questions; :class:`BetaTwoPL`: the 2PL for continuous fractions;
  :class:`GradedResponse`: ordered categories; :class:`MultidimensionalTwoPL`: K abilities per
  subject; :class:`HierarchicalTwoPL`: items within benchmarks;
* :class:`~platinum_jax.models.rosetta_bayes.RosettaBayes` (registered as
  ``"rosetta_bayes"``): the Bayesian Rosetta model, a noise per benchmark, sampled in
  standardised coordinates (a :class:`Reparameterisation`); NumPyro loads only when its
  priors are read.

Every model gets every inference method of :mod:`platinum_jax.inference` for free.
"""

from . import likelihoods
from ._anchors import Anchor, BenchmarkAnchor, ModelAnchor, anchor_for_table
from ._check import SCORE_MODELS, check_responses, response_notes
from ._protocol import (
    DataInfo,
    Fixed,
    Hierarchical,
    Identification,
    Likelihood,
    LogisticCurve,
    MeasurementModel,
    Param,
    PriorSpec,
    Reparameterisation,
    fix_entries,
)
from ._registry import MODELS, make_model
from ._rosetta_layout import (
    ParameterLayout,
    StitchingParams,
    link_function,
    penalty_mask,
    penalty_vector,
    predict_scores,
    regularisation_denominator,
    stitching_cost,
    stitching_residuals,
)
from .graded import GradedResponse
from .hierarchical import HierarchicalTwoPL
from .irt import BetaTwoPL, FourPL, OnePL, ThreePL, TwoPL
from .likelihoods import Bernoulli, Beta, BetaBinomial, Binomial, Categorical, Gaussian
from .mirt import MultidimensionalTwoPL, varimax
from .rosetta import Rosetta

__all__ = [
    "Anchor",
    "BenchmarkAnchor",
    "Bernoulli",
    "Beta",
    "BetaBinomial",
    "BetaTwoPL",
    "Binomial",
    "Categorical",
    "DataInfo",
    "Fixed",
    "FourPL",
    "Gaussian",
    "GradedResponse",
    "Hierarchical",
    "HierarchicalTwoPL",
    "Identification",
    "Likelihood",
    "LogisticCurve",
    "MODELS",
    "MeasurementModel",
    "ModelAnchor",
    "MultidimensionalTwoPL",
    "OnePL",
    "Param",
    "ParameterLayout",
    "PriorSpec",
    "Reparameterisation",
    "Rosetta",
    "StitchingParams",
    "anchor_for_table",
    "check_responses",
    "response_notes",
    "ThreePL",
    "TwoPL",
    "fix_entries",
    "likelihoods",
    "link_function",
    "penalty_mask",
    "penalty_vector",
    "predict_scores",
    "regularisation_denominator",
    "stitching_cost",
    "stitching_residuals",
    "make_model",
    "varimax",
    "SCORE_MODELS",
]
