"""Per-item primitives measured from evaluation runs and judges.

Haupt et al.'s principal–agent model needs, per item, measurement noise σ²_i (Σ), the cost of
improving it C_i and its welfare w_i. These functions estimate each from raw measurements, the
way the authors' release ("Welfare, Improvability, and Noise: A Principal–Agent Theory of
Optimal Benchmark Item Aggregation") built its tables; :func:`platinum_jax.importers.
read_principal_agent_release` reads the tables they shipped.

| quantity | estimator | from |
|---|---|---|
| welfare w | :func:`welfare_from_rankings`, :func:`rescale_welfare` | judge GWA rankings × GWA scores |
"""

from platinum_jax.measured._welfare import (
    rank_weights,
    rescale_welfare,
    welfare_bounds,
    welfare_from_rankings,
)

__all__ = ["rank_weights", "rescale_welfare", "welfare_bounds", "welfare_from_rankings"]
