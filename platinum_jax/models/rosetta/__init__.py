"""The Rosetta model of Ho et al. (2025), "A Rosetta Stone for AI Benchmarks", in one place.

``score(m, b) = f(alpha_b (C_m - D_b))``: a capability ``C_m`` per AI model, a difficulty
``D_b`` and a slope ``alpha_b`` per benchmark, the scale fixed by an anchor.

* the point-fit model :class:`~platinum_jax.models.Rosetta` (the paper's L2-penalised least
  squares) and the Bayesian model :class:`~platinum_jax.models.RosettaBayes` (a noise per
  benchmark, sampled in standardised coordinates); both classes are exported from
  :mod:`platinum_jax.models` beside every other model, and defined here;
* the anchors (:class:`BenchmarkAnchor`, :class:`ModelAnchor`);
* the paper's objective over a flat vector of free parameters (:class:`ParameterLayout`,
  :func:`stitching_residuals`, :func:`stitching_cost`, :func:`predict_scores`), for array-level
  refits vmapped over data and penalties;
* the Bayesian model's priors (:class:`Priors`), likelihoods (:class:`NoisyGaussian`,
  :class:`NoisyBeta`, :class:`ItemBetaBinomial`), sampling coordinates
  (:class:`RosettaReparameterisation`), data preparation (:func:`prepare_data`) and the check of
  its pooled noise (:func:`pooled_noise_check`).

Files: ``_model.py`` (the point-fit model), ``_bayes.py`` (the Bayesian one), ``_anchors.py``,
``_layout.py`` (the flat objective), ``_data.py`` (data preparation), ``_reparam.py``,
``_zero_sum_shell.py``, ``_noise.py`` and ``_pooled.py`` (the Bayesian model's coordinates).
"""

from ._anchors import Anchor, BenchmarkAnchor, ModelAnchor, anchor_for_table
from ._bayes import (
    CENTRED_NOISE_MIN_SCORES,
    POOLED_NOISE_BELOW,
    ItemBetaBinomial,
    NoisyBeta,
    NoisyGaussian,
    Priors,
)
from ._bayes import (
    RosettaBayes as RosettaBayes,
)
from ._data import STDERR_FLOOR, anchored_benchmark, floor_se, prepare_data, response_rows
from ._layout import (
    ParameterLayout,
    StitchingParams,
    penalty_vector,
    predict_scores,
    regularisation_denominator,
    stitching_cost,
    stitching_residuals,
)
from ._model import Rosetta as Rosetta
from ._pooled import pooled_noise_check, warn_pooled_misfit
from ._reparam import RosettaReparameterisation

__all__ = [
    "Anchor",
    "BenchmarkAnchor",
    "CENTRED_NOISE_MIN_SCORES",
    "ItemBetaBinomial",
    "ModelAnchor",
    "NoisyBeta",
    "NoisyGaussian",
    "POOLED_NOISE_BELOW",
    "ParameterLayout",
    "Priors",
    "RosettaReparameterisation",
    "STDERR_FLOOR",
    "StitchingParams",
    "anchor_for_table",
    "anchored_benchmark",
    "floor_se",
    "penalty_vector",
    "pooled_noise_check",
    "predict_scores",
    "prepare_data",
    "regularisation_denominator",
    "response_rows",
    "stitching_cost",
    "stitching_residuals",
    "warn_pooled_misfit",
]
