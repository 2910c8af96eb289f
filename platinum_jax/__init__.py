"""platinum-jax: the science of AI benchmarks in JAX.

* :mod:`platinum_jax.agency` -- the principal-agent model of benchmark aggregation: optimal
  weights ``v* = (M + rΣ)⁻¹Mw``, concepts and platinum items, comparative statics
  (``import platinum_jax as pj; pj.agency.optimal_weights(...)``).
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

from platinum_jax._lazy import module_hooks

# Public names and the module that defines each, imported on first use (PEP 562), so that
# `import platinum_jax` and `platinum-jax --help` do not pay for JAX and Equinox (about 1 s).
_LAZY = {
    "enable_compilation_cache": "platinum_jax._runtime",
    "enable_float64": "platinum_jax._runtime",
}

if TYPE_CHECKING:  # static tools see the real imports
    from platinum_jax._runtime import enable_compilation_cache, enable_float64


_SUBPACKAGES = ("agency", "analysis", "compare", "data", "datasets", "design", "efficient",
                "export", "importers", "inference", "judge", "measured", "models", "plots",
                "rubric", "stitching", "sweeps")


# PEP 562: names and sub-packages load on first use (so the command line starts fast)
__getattr__, __dir__ = module_hooks(__name__, globals(), exports=_LAZY, submodules=_SUBPACKAGES)


__version__ = "0.1.0"

__all__ = ["enable_compilation_cache", "enable_float64"]
