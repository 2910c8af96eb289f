"""Efficient evaluation: a new AI model's full-benchmark score from a few items, with honest
intervals.

    >>> import jax; jax.config.update("jax_enable_x64", True)       # doctest: +SKIP
    >>> from platinum_jax.efficient import item_bank, select_items, estimate_scores
    >>> bank = item_bank(fit)                       # a Fit of a 1PL-4PL model  # doctest: +SKIP
    >>> subset = select_items(bank, 100, method="fisher")               # doctest: +SKIP
    >>> estimate_scores(bank, new_responses_on_subset)                  # doctest: +SKIP

* :func:`item_bank`: a fitted model's items on an ability grid (means, Fisher information,
  the ability prior, an over-dispersion factor);
* :func:`select_items`: fixed subsets by Fisher information, anchor points (k-means of
  response patterns), stratified random or random;
* :func:`estimate_scores`: ability (exact grid posterior) and full-benchmark score (observed
  responses plus the predicted rest, with the finite-item term) with intervals;
* :func:`assisted_scores`: the model-assisted (difference) estimate from a random subset: the
  item model's prediction corrected by the design-weighted mean residual of the drawn items,
  with a design-based interval (finite-population corrected) that holds even when the item
  model is wrong about a new subject;
* :func:`combined_scores`: the shrunk difference estimate, the item model's prediction plus
  the observed residuals shrunk by an empirical-Bayes weight, for any design (random,
  stratified, Fisher, anchor subsets and adaptive tests); :func:`fit_bias_sd` chooses the
  bias spread behind the weight by cross-validation on calibration models and calibrates the
  interval for the selection method and ``k`` replayed on them (split-conformal, studentised
  or one width by cross-conformal coverage; ``**BiasFit.options`` applies it);
* :func:`interval_scale`: widens (or narrows) the score intervals so that they cover at the
  stated rate on training subjects held out from the item fit;
* :class:`AdaptiveTest`: adaptive testing a harness drives item by item (an immutable
  :class:`CatState`, ``next_item`` / ``update`` / ``summary``), with randomesque and
  Sympson-Hetter exposure control (:func:`sympson_hetter`), content balancing and stopping by
  standard error or budget; :func:`simulate_adaptive` runs it for many test-takers (``vmap``)
  and reports item exposure and the overlap of their tests;
* :func:`screen_items`: items a subset should not rely on (negative or near-zero
  discrimination, solved by all or none, negative item-rest correlation, infit/outfit misfit),
  each with its reason; ``select_items(..., exclude=...)`` leaves them out;
* :func:`irt_mdad` / :func:`irt_mdad_subjects`: the minimum detectable ability difference
  of a subset or of each adaptive test, ``(z_{1-alpha/2} + z_power) sqrt(SE_a^2 + SE_b^2)``
  with ``SE = 1/sqrt(I(theta))`` from the test information, and its score-scale equivalent;
* :func:`item_measurability`: per item, how much signal it carries (information, its
  parameters, saturation), beside its platinum status when given.

Item parameters are taken as known (fixed at the fit); with few fitted subjects their error
adds to every estimate and is not in the intervals of :func:`estimate_scores`. The
design-based interval of :func:`assisted_scores` does not rely on the item model being right.
"""

from ._adaptive import AdaptiveRun, AdaptiveTest, CatState, simulate_adaptive, sympson_hetter
from ._assisted import PROBABILITY_SAMPLES, assisted_scores
from ._bank import ItemBank, item_bank
from ._calibrate import BiasFit, cross_fitted_banks, fit_bias_sd, interval_scale
from ._combined import combined_scores
from ._estimate import estimate_scores, grid_posterior
from ._io import load_fit
from ._mdad import irt_mdad, irt_mdad_subjects
from ._measurability import item_measurability
from ._screen import screen_items
from ._select import SELECTION_METHODS, select_items

__all__ = [
    "SELECTION_METHODS",
    "AdaptiveRun",
    "AdaptiveTest",
    "BiasFit",
    "CatState",
    "ItemBank",
    "assisted_scores",
    "combined_scores",
    "cross_fitted_banks",
    "estimate_scores",
    "fit_bias_sd",
    "grid_posterior",
    "item_bank",
    "interval_scale",
    "irt_mdad",
    "irt_mdad_subjects",
    "item_measurability",
    "screen_items",
    "select_items",
    "simulate_adaptive",
    "sympson_hetter",
    "load_fit",
    "PROBABILITY_SAMPLES",
]
