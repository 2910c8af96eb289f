"""The Rosetta model's flat parameter layout on the engine's blocks.

A :class:`~platinum_jax.models.ParameterLayout` orders the free parameters of the Rosetta model
(Ho et al. 2025, "A Rosetta Stone for AI Benchmarks") as ``theta = concat(C_free, D_free,
alpha_free)``; the engine keeps them as raw blocks ``S = C[:, None]``, ``I = [D, alpha]`` and
the globals (the centre ``t`` of the L2 penalty, a point-fit device the data never see). These
maps convert between the two, and :func:`layout_problem` builds the engine's problem from the
sizes of a layout alone, for array-level refits vmapped over weights, data and L2 strengths.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.models import (
    BenchmarkAnchor,
    Fixed,
    Identification,
    ParameterLayout,
    Rosetta,
    regularisation_denominator,
)

from ._problem import Problem, Theta

__all__ = ["from_engine_theta", "layout_batch", "layout_entries", "layout_problem",
           "to_engine_theta"]


def to_engine_theta(layout: ParameterLayout, theta) -> Theta:
    """Layout vector ``(P,)`` -> engine raw blocks, the penalty centre ``t`` at its optimum.

    The paper's penalty centres C and D on their mean when a benchmark fixes the scale; the
    engine keeps that centre as a free global whose best value given C and D is that mean.
    Concrete input is mapped in NumPy (float64), a traced one in JAX (jittable).
    """
    traced = isinstance(theta, jax.core.Tracer)
    xp = jnp if traced else np
    p = layout.unpack(theta if traced else np.asarray(theta, dtype=np.float64))
    c, d, a = (xp.asarray(x) for x in (p.capability, p.difficulty, p.slope))
    cd = xp.concatenate([c, d])
    shift = xp.mean(cd) if layout.center_penalty else xp.zeros((), cd.dtype)
    return Theta(c[:, None], xp.stack([d, a], axis=1), xp.reshape(shift, (1,)))


def from_engine_theta(layout: ParameterLayout, theta: Theta) -> np.ndarray:
    """Engine raw blocks -> layout vector ``(P,)`` (in NumPy: no compiled call per gather)."""
    return layout_batch(layout, np.asarray(theta.subjects)[None], np.asarray(theta.items)[None])[0]


def layout_batch(layout: ParameterLayout, subjects, items) -> np.ndarray:
    """Batched engine blocks ``S (R, M, 1)``, ``I (R, B, 2)`` -> layout vectors ``(R, P)``."""
    free_c, free_d, free_a = layout.free_positions()
    s, i = np.asarray(subjects), np.asarray(items)
    return np.concatenate([s[:, free_c, 0], i[:, free_d, 0], i[:, free_a, 1]], axis=1)


def layout_entries(problem: Problem, layout: ParameterLayout):
    """``(x, g)``: the flat positions, in the engine's ``concat(S.ravel(), I.ravel(), G)``, of
    the layout's free parameters (C, then D, then alpha) and of the free globals."""
    n_s, n_i, p_i = problem.table.n_subjects, problem.table.n_items, problem.item.size
    col = {name: k for k, name in enumerate(problem.item.names)}
    free_c, free_d, free_a = layout.free_positions()
    base_i = n_s * problem.subject.size
    x = np.concatenate([free_c * problem.subject.size, base_i + free_d * p_i + col["difficulty"],
                        base_i + free_a * p_i + col["slope"]]).astype(np.int64)
    g = base_i + n_i * p_i + np.flatnonzero(np.asarray(problem.free_G).ravel())
    return x, g


def layout_problem(layout: ParameterLayout, l2: float = 0.1, link: str = "sigmoid") -> Problem:
    """The engine's Rosetta :class:`Problem` for arrays laid out as ``layout`` says.

    The problem knows only the sizes (its rows are placeholders), so the rows come in as
    :class:`Data` at solve time. The L2 term is the layout's: centred on the best common shift
    of C and D when ``layout.center_penalty``, plain otherwise, normalised by
    :func:`~platinum_jax.models.regularisation_denominator`; a layout with no fixed entry (the
    scale held by the penalty alone) is allowed.
    """
    m, b = layout.n_models, layout.n_benchmarks
    table = ResponseTable.from_arrays(np.repeat(np.arange(m), b), np.tile(np.arange(b), m),
                                      np.full(m * b, 0.5), name="a stitching layout")

    def fixed(n, positions, values):
        mask, vals = np.zeros(n, bool), np.zeros(n)
        mask[list(positions)], vals[list(positions)] = True, values
        return Fixed(mask, vals)

    ident = Identification(
        subject={"capability": fixed(m, layout.fixed_capability, layout.fixed_capability_values)},
        item={"difficulty": fixed(b, layout.fixed_difficulty, layout.fixed_difficulty_values),
              "slope": fixed(b, layout.fixed_slope, layout.fixed_slope_values)},
        glob={} if layout.center_penalty else {"shift": Fixed(np.ones((), bool), np.zeros(()))},
        description="fixed entries of a stitching parameter layout",
    )
    # The model divides lambda by M + 2B - 1 (its benchmark-anchor count); rescale lambda so
    # the penalty is divided by the layout's own count instead.
    l2 = float(l2) * (m + 2 * b - 1) / regularisation_denominator(layout)
    return Problem(Rosetta(link=link, l2=l2, anchor=BenchmarkAnchor()), table,
                   identification=ident, validate=False)
