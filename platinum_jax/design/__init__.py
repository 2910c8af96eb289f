"""Benchmark design from evaluation data: optimal weights and platinum items with a posterior.

Joins the two halves of the package.  A fitted measurement model (:mod:`platinum_jax.inference`)
gives, per posterior draw, the primitives of Haupt, Reuel, Kochenderfer and Koyejo, "Optimal
Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks" (:func:`primitives_from_fit`);
the welfare weights come from what a user states (:func:`welfare_from_items`,
:func:`welfare_from_abilities`, :func:`welfare_from_regression`); and
:func:`posterior_decisions` carries every draw through ``v* = (M + rΣ)⁻¹Mw`` and Definition 1 in
one compiled function, using the low rank of ``M`` and the diagonal-plus-low-rank ``Σ``.
"""

from ._decisions import DecisionDraws, decisions_per_draw, noise_solve, welfare_lowrank
from ._fit_files import read_fit
from ._from_fit import (
    primitives_from_fit,
    welfare_from_abilities,
    welfare_from_items,
    welfare_from_regression,
)
from ._posterior import PrimitiveDraws, WeightsPosterior, posterior_decisions
from ._runs import noise_from_runs

__all__ = [
    "DecisionDraws",
    "PrimitiveDraws",
    "WeightsPosterior",
    "decisions_per_draw",
    "noise_from_runs",
    "noise_solve",
    "posterior_decisions",
    "primitives_from_fit",
    "read_fit",
    "welfare_from_abilities",
    "welfare_from_items",
    "welfare_from_regression",
    "welfare_lowrank",
]
