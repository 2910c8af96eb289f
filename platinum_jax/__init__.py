"""platinum-jax: the science of AI benchmarks in JAX.

* :mod:`platinum_jax.agency` -- the principal-agent model of benchmark aggregation: optimal
  weights ``v* = (M + rΣ)⁻¹Mw``, concepts and platinum items, comparative statics.
* :mod:`platinum_jax.stitching` -- put models and benchmarks on one scale,
  ``score = σ(α_b(C_m − D_b))``, by MAP and Bayesian fits.
* :mod:`platinum_jax.sweeps`, :mod:`platinum_jax.rubric`, :mod:`platinum_jax.judge`,
  :mod:`platinum_jax.analysis` build on those two.

Numerics follow JAX's default precision; for fits and linear algebra enable float64 first
(the command line does, for every command)::

    import platinum_jax
    platinum_jax.enable_float64()   # jax.config.update("jax_enable_x64", True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platinum_jax._deprecation import module_hooks

# Public names and the module that defines each.  They are imported on first use (PEP 562), so
# `import platinum_jax` and `platinum-jax --help` do not pay for JAX and Equinox (about 1 s).
_LAZY = {
    "enable_compilation_cache": "platinum_jax._runtime",
    "enable_float64": "platinum_jax._runtime",
    "validate_primitives": "platinum_jax._validation",
    **{
        name: "platinum_jax.agency"
        for name in (
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
            "weight_decomposition",
            "weight_jacobians",
            "welfare",
            "welfare_alignment",
            "welfare_gradient",
        )
    },
}

if TYPE_CHECKING:  # static tools see the real imports
    from platinum_jax._runtime import enable_compilation_cache, enable_float64
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


_SUBPACKAGES = ("agency", "analysis", "datasets", "judge", "plots", "rubric", "stitching", "sweeps")


# PEP 562: names and sub-packages load on first use (so the command line starts fast)
__getattr__, __dir__ = module_hooks(__name__, globals(), exports=_LAZY, submodules=_SUBPACKAGES)


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
    "enable_float64",
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
