"""The stitching parameter layout, now in :mod:`platinum_jax.models` (kept for the Bayesian
stitching modules' imports)."""

from platinum_jax.models import (  # noqa: F401
    Anchor,
    BenchmarkAnchor,
    ModelAnchor,
    ParameterLayout,
    StitchingParams,
    link_function,
    regularisation_denominator,
    stitching_cost,
)
