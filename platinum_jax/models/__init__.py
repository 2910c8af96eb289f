"""Measurement models: how a subject's parameters and an item's produce a response.

One protocol (:class:`MeasurementModel`: parameters per subject, per item and global, a mean
function, a likelihood, penalties and priors, an identification) and every model built on it,
each in one file (or, for the Rosetta model, one folder) and one line of :data:`MODELS`:

* :class:`Rosetta`: ``score = f(alpha_b (C_m - D_b))``, benchmarks as items (Ho et al. 2025,
  "A Rosetta Stone for AI Benchmarks"), fitted by the paper's least squares, and
  :class:`RosettaBayes` (registered as ``"rosetta_bayes"``): the Bayesian Rosetta model, a
  noise per benchmark, sampled in standardised coordinates (a :class:`Reparameterisation`).
  Their anchors, priors, likelihoods and the paper's flat objective are in
  :mod:`platinum_jax.models.rosetta`;
* :class:`OnePL`, :class:`TwoPL`, :class:`ThreePL`, :class:`FourPL`: item response theory for
  single questions; :class:`GroupGuessingThreePL`: a guessing floor per benchmark;
  :class:`BetaTwoPL`: the 2PL for continuous fractions; :class:`GradedResponse`: ordered
  categories; :class:`MultidimensionalTwoPL`: K abilities per subject;
  :class:`HierarchicalTwoPL`: items within benchmarks.

Likelihoods by name are :data:`LIKELIHOODS`. Every model gets every inference method of
:mod:`platinum_jax.inference` for free; NumPyro loads only when a prior is read.
"""

from ._check import check_responses, response_notes
from ._config import from_config, to_config
from ._graded import GradedResponse
from ._group_guessing import GroupGuessingThreePL
from ._hierarchical import HierarchicalTwoPL
from ._irt import BetaTwoPL, FourPL, OnePL, ThreePL, TwoPL
from ._likelihoods import (
    LIKELIHOODS,
    Bernoulli,
    Beta,
    BetaBinomial,
    Binomial,
    Categorical,
    Gaussian,
)
from ._mirt import MultidimensionalTwoPL, varimax
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
from ._registry import ENTRY_POINT_GROUP, MODELS, make_model, model_class, registered_models
from .rosetta import Rosetta, RosettaBayes

__all__ = [
    "Bernoulli",
    "Beta",
    "BetaBinomial",
    "BetaTwoPL",
    "Binomial",
    "Categorical",
    "DataInfo",
    "ENTRY_POINT_GROUP",
    "Fixed",
    "FourPL",
    "Gaussian",
    "GradedResponse",
    "GroupGuessingThreePL",
    "Hierarchical",
    "HierarchicalTwoPL",
    "Identification",
    "LIKELIHOODS",
    "Likelihood",
    "LogisticCurve",
    "MODELS",
    "MeasurementModel",
    "MultidimensionalTwoPL",
    "OnePL",
    "Param",
    "PriorSpec",
    "Reparameterisation",
    "Rosetta",
    "RosettaBayes",
    "ThreePL",
    "TwoPL",
    "check_responses",
    "fix_entries",
    "from_config",
    "make_model",
    "model_class",
    "registered_models",
    "response_notes",
    "to_config",
    "varimax",
]
