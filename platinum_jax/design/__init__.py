"""Benchmark design from evaluation data: optimal weights and platinum items with a posterior.

Joins the two halves of the package.  A fitted measurement model (:mod:`platinum_jax.inference`)
gives, per posterior draw, the primitives of Haupt, Reuel, Kochenderfer and Koyejo, "Optimal
Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks" (:func:`primitives_from_fit`);
the welfare weights come from what a user states (:func:`welfare_from_items`,
:func:`welfare_from_abilities`, :func:`welfare_from_regression`); and
:func:`posterior_decisions` carries every draw through ``v* = (M + rΣ)⁻¹Mw`` and Definition 1 in
one compiled function, using the low rank of ``M`` and the diagonal-plus-low-rank ``Σ``.
For Gaussian scores whose noise differs between items (benchmarks as items),
:func:`fit_heteroscedastic` gives the fit whose draws carry each item's own noise level: with a
single noise level the intervals of ``v*`` are too narrow.  :func:`bootstrap_subjects` resamples
the subjects and re-estimates the fit, the noise variances and the residual correlation per
replicate, so that their uncertainty reaches the intervals too; its intervals are
bias-corrected and accelerated (:func:`bca_interval`).
"""


from ._cluster_bootstrap import bootstrap_subjects
from ._decisions import decisions_per_draw, noise_solve
from ._from_fit import (
    item_noise_variance,
    primitives_from_fit,
    welfare_from_abilities,
    welfare_from_items,
    welfare_from_regression,
)
from ._heteroscedastic import fit_heteroscedastic
from ._intervals import bca_interval
from ._measured import gwa_loadings, measured_items, primitives_from_measurements
from ._measured_draws import (
    measured_draws,
    platinum_from_release,
    task_average_weights,
    welfare_variants,
)
from ._measured_plots import write_plots as write_measured_plots
from ._posterior import PrimitiveDraws, posterior_decisions, weight_draws
from ._runs import noise_from_runs
from ._stitching import (
    POSTERIOR_FILE,
    load_weights_config,
    primitives_from_stitching,
    weights_table,
)

__all__ = [
    "bca_interval",
    "bootstrap_subjects",
    "PrimitiveDraws",
    "decisions_per_draw",
    "fit_heteroscedastic",
    "gwa_loadings",
    "measured_draws",
    "measured_items",
    "platinum_from_release",
    "primitives_from_measurements",
    "task_average_weights",
    "welfare_variants",
    "item_noise_variance",
    "noise_from_runs",
    "noise_solve",
    "posterior_decisions",
    "primitives_from_fit",
    "primitives_from_stitching",
    "load_weights_config",
    "weight_draws",
    "weights_table",
    "welfare_from_abilities",
    "welfare_from_items",
    "welfare_from_regression",
    "POSTERIOR_FILE",
    "write_measured_plots",
]
