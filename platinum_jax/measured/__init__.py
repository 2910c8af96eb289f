"""Per-item primitives measured from evaluation runs and judges.

Haupt et al.'s principal–agent model needs, per item, measurement noise σ²_i (the diagonal of
Σ), the cost of improving it C_i and its welfare w_i. These functions estimate each from raw
measurements, the way the authors' release ("Welfare, Improvability, and Noise: A
Principal–Agent Theory of Optimal Benchmark Item Aggregation") built its tables;
:func:`platinum_jax.importers.read_principal_agent_release` reads the tables they shipped.

| quantity | estimator | from |
|---|---|---|
| noise σ² | :func:`estimate_noise` (:func:`pooled_variance`) | p̂ per item × seed × checkpoint |
| cost C | :func:`estimate_cost`, :func:`cost_from_slopes` | p̂ per item along intervention axes |
| welfare w | :func:`welfare_from_rankings`, :func:`welfare_table`, :func:`rescale_welfare` | judge GWA rankings × GWA scores |

The paper's findings from the release: Tables 1, 2 and 4 (:func:`cost_quantile_table`,
:func:`noise_quantile_table`, :func:`noise_decomposition`), Figure 2 (:func:`concept_quadrants`),
Figure 3 (:func:`welfare_frontier`, :func:`pareto_frontier`), robustness sets 1 and 2
(:func:`welfare_robustness`, :func:`heldout_rater_check`), all at once with
:func:`reproduce_findings` (``platinum-jax findings``).

Example::

    from platinum_jax.importers import read_principal_agent_release
    from platinum_jax.measured import rescale_welfare, welfare_table

    release = read_principal_agent_release("principal-agent-benchmarks/data")
    w = welfare_table(release.loadings, release.concept_scores, judge="openai", top_k=3)
    w15 = rescale_welfare(w, top_k=3)   # onto [1, 5]
"""

from platinum_jax.measured._cost import RELEASE_PRICES_USD, cost_from_slopes, estimate_cost
from platinum_jax.measured._findings import Findings, compute_findings, reproduce_findings
from platinum_jax.measured._findings_tables import (
    cost_quantile_table,
    noise_decomposition,
    noise_quantile_table,
    quantile_bands,
)
from platinum_jax.measured._findings_welfare import (
    ConceptQuadrants,
    HeldoutCheck,
    WelfareFrontier,
    concept_quadrants,
    dominated_by,
    heldout_rater_check,
    task_family,
    welfare_frontier,
    welfare_robustness,
)
from platinum_jax.measured._noise import estimate_noise, pooled_variance
from platinum_jax.measured._welfare import (
    rank_weights,
    rescale_welfare,
    welfare_bounds,
    welfare_from_rankings,
    welfare_table,
)

__all__ = [
    "RELEASE_PRICES_USD",
    "cost_from_slopes",
    "estimate_cost",
    "estimate_noise",
    "pooled_variance",
    "rank_weights",
    "rescale_welfare",
    "welfare_bounds",
    "welfare_from_rankings",
    "welfare_table",
    # the paper's findings from the release
    "ConceptQuadrants",
    "Findings",
    "HeldoutCheck",
    "WelfareFrontier",
    "compute_findings",
    "concept_quadrants",
    "cost_quantile_table",
    "dominated_by",
    "heldout_rater_check",
    "noise_decomposition",
    "noise_quantile_table",
    "quantile_bands",
    "reproduce_findings",
    "task_family",
    "welfare_frontier",
    "welfare_robustness",
]
