"""platinum-jax: the science of AI benchmarks in JAX.

* :mod:`platinum_jax.agency` -- the principal-agent model of benchmark aggregation: optimal
  weights ``v* = (M + rΣ)⁻¹Mw``, concepts and platinum items, comparative statics.
* :mod:`platinum_jax.stitching` -- put models and benchmarks on one scale,
  ``score = σ(α_b(C_m − D_b))``, by MAP and Bayesian fits.
* :mod:`platinum_jax.sweeps`, :mod:`platinum_jax.rubric`, :mod:`platinum_jax.judge`,
  :mod:`platinum_jax.analysis` build on those two.

Numerics follow JAX's default precision; for fits and linear algebra enable float64 first::

    import jax
    jax.config.update("jax_enable_x64", True)
"""

from platinum_jax._runtime import enable_compilation_cache
from platinum_jax._validation import validate_primitives
from platinum_jax.agency import (
    ConceptBasis,
    CostDecrease,
    PlatinumItems,
    Primitives,
    add_activity,
    certainty_equivalent,
    commutator_norm,
    comparative_statics,
    concept_basis,
    concept_shift,
    concept_shrinkage,
    cost_decrease,
    effort_cost,
    item_loadings,
    lab_best_response,
    optimal_weights,
    optimal_weights_by_ascent,
    optimal_welfare,
    output_cost,
    platinum_items,
    platinum_lower_bound,
    signal_noise_cost_ratio,
    uniform_cost_change,
    weight_decomposition,
    weight_jacobians,
    welfare,
    welfare_alignment,
    welfare_gradient,
)

__version__ = "0.1.0"

__all__ = [
    "ConceptBasis",
    "CostDecrease",
    "PlatinumItems",
    "Primitives",
    "add_activity",
    "certainty_equivalent",
    "commutator_norm",
    "comparative_statics",
    "concept_basis",
    "concept_shift",
    "concept_shrinkage",
    "cost_decrease",
    "effort_cost",
    "enable_compilation_cache",
    "item_loadings",
    "lab_best_response",
    "optimal_weights",
    "optimal_weights_by_ascent",
    "optimal_welfare",
    "output_cost",
    "platinum_items",
    "platinum_lower_bound",
    "signal_noise_cost_ratio",
    "uniform_cost_change",
    "validate_primitives",
    "weight_decomposition",
    "weight_jacobians",
    "welfare",
    "welfare_alignment",
    "welfare_gradient",
]
