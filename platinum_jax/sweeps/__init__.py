"""Sensitivity sweeps over the primitives of the benchmark-design model.

From Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking
and Platinum Benchmarks", §2-3.

One entry point, :func:`sweep`, takes base :class:`platinum_jax.agency.Primitives`, a list of small
axis objects and a list of outputs, and returns a labelled ``xarray.Dataset``::

    from platinum_jax.sweeps import sweep, RiskAversion, CostScale, ConceptShift
    ds = sweep(prims, [RiskAversion(r_grid), CostScale(kappa_grid), ConceptShift(0, deltas)])
    ds["v"].sel(item="item_3")          # v*_3 over (r, kappa, delta)

Axes that keep the concept basis are evaluated by the spectral fast path (one O(m²) mat-vec a
point, whose time on a CPU grows about ×2 per doubling of m up to a few hundred items); others
fall back to batched Cholesky solves.  ``ds.attrs["path"]`` says which ran.
"""

from platinum_jax.sweeps._axes import (
    Axis,
    ConceptShift,
    CostScale,
    NoiseScale,
    RiskAversion,
    WelfareShift,
)
from platinum_jax.sweeps._grid import sweep
from platinum_jax.sweeps._outputs import (
    EffortCost,
    Output,
    Platinum,
    UserOutput,
    Weights,
    WeightSummary,
    Welfare,
)
from platinum_jax.sweeps._plots import (
    plot_measurement_shift,
    plot_weight_curves,
    plot_weight_heatmaps,
)
from platinum_jax.sweeps._random_axes import PrimitiveSamples, RandomPrimitives, wishart_noise
from platinum_jax.sweeps._shard import points_mesh
from platinum_jax.sweeps._store import ChunkStore, NetCDFStore, ZarrStore

__all__ = [
    "sweep",
    "Axis",
    "RiskAversion",
    "CostScale",
    "ConceptShift",
    "NoiseScale",
    "WelfareShift",
    "RandomPrimitives",
    "PrimitiveSamples",
    "wishart_noise",
    "Output",
    "Weights",
    "WeightSummary",
    "Welfare",
    "EffortCost",
    "Platinum",
    "UserOutput",
    "ChunkStore",
    "NetCDFStore",
    "ZarrStore",
    "points_mesh",
    "plot_weight_heatmaps",
    "plot_weight_curves",
    "plot_measurement_shift",
]
