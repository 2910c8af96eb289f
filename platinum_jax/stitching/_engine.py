"""The stitching presets as the Rosetta model on the measurement engine.

A :class:`ScoreTable` is the engine's :class:`~platinum_jax.data.ResponseTable` with models as
subjects and benchmarks as items (same order, same rows), and the stitching parameter vector
``theta = concat(C_free, D_free, alpha_free)`` of a :class:`ParameterLayout` is the engine's
raw blocks ``S = C[:, None]``, ``I = [D, alpha]`` and the globals (the centre ``t`` of the
L2 penalty, a point-fit device that the data never see). Nothing here fits anything: fitting
is :func:`platinum_jax.inference.fit_map` and friends, for this model as for any other.
"""

from __future__ import annotations

import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.inference import Theta
from platinum_jax.models import Rosetta

from ._model import Anchor, BenchmarkAnchor, ParameterLayout, StitchingParams

__all__ = [
    "capability_of",
    "engine_problem",
    "from_engine_theta",
    "layout_batch",
    "layout_entries",
    "layout_problem",
    "rosetta_model",
    "to_engine_theta",
    "to_engine_blocks",
]


def rosetta_model(anchor: Anchor, l2: float, link: str) -> Rosetta:
    """The paper's preset: least squares (Gaussian, noise 1), L2 strength ``l2``, ``anchor``."""
    return Rosetta(link=link, l2=float(l2), anchor=anchor)


def to_engine_theta(layout: ParameterLayout, theta) -> Theta:
    """Stitching vector ``(P,)`` -> engine raw blocks (penalty centre ``t`` at its optimum).

    The paper's penalty centres C and D on their mean when a benchmark fixes the scale; the
    engine keeps that centre as a free global, whose best value given C and D is that mean.
    """
    p = layout.unpack(np.asarray(theta, dtype=np.float64))
    c, d, a = (np.asarray(x, dtype=np.float64) for x in (p.capability, p.difficulty, p.slope))
    shift = np.mean(np.concatenate([c, d])) if layout.center_penalty else 0.0
    return Theta(c[:, None], np.stack([d, a], axis=1), np.asarray([shift]))


def params_of(theta: Theta) -> StitchingParams:
    """Engine raw blocks -> :class:`StitchingParams` (C_m, D_b, alpha_b)."""
    s, i = np.asarray(theta.subjects), np.asarray(theta.items)
    return StitchingParams(capability=s[:, 0], difficulty=i[:, 0], slope=i[:, 1])


def from_engine_theta(layout: ParameterLayout, theta: Theta) -> np.ndarray:
    """Engine raw blocks -> stitching vector ``(P,)`` of ``layout``'s free entries.

    :meth:`ParameterLayout.pack` in NumPy: on host arrays, JAX would compile a program for
    each indexing step, a few hundredths of a second each in a command-line run."""
    p = params_of(theta)
    free_c, free_d, free_a = layout.free_positions()
    return np.concatenate([p.capability[free_c], p.difficulty[free_d], p.slope[free_a]])


def engine_problem(fit):
    """The engine's :class:`~platinum_jax.inference.Problem` and raw blocks behind a
    :class:`StitchingFit` (its own, or rebuilt from its table, anchor, L2 strength and link)."""
    if fit.engine is not None:
        return fit.engine.problem, fit.engine.theta
    from platinum_jax.inference import Problem

    problem = Problem(rosetta_model(fit.anchor, fit.l2, fit.link), fit.table.responses)
    return problem, to_engine_theta(fit.layout, fit.theta)


def layout_entries(problem, layout: ParameterLayout):
    """Where the layout's free entries sit in the engine's flat raw vector.

    The engine's flat vector is ``concat(S.ravel(), I.ravel(), G)``. Returns ``(x, g)``:
    ``x[k]`` the flat position of the layout's ``k``-th free parameter (C, then D, then alpha),
    ``g`` the positions of the free globals (the L2 centre, profiled out where it is free).
    """
    n_s, n_i = problem.table.n_subjects, problem.table.n_items
    p_i = problem.item.size
    col = {name: k for k, name in enumerate(problem.item.names)}
    free_c, free_d, free_a = layout.free_positions()
    base_i = n_s * problem.subject.size
    x = np.concatenate([
        np.asarray(free_c) * problem.subject.size,
        base_i + np.asarray(free_d) * p_i + col["difficulty"],
        base_i + np.asarray(free_a) * p_i + col["slope"],
    ]).astype(np.int64)
    g = base_i + n_i * p_i + np.flatnonzero(np.asarray(problem.free_G).ravel())
    return x, g


def layout_batch(layout: ParameterLayout, subjects, items) -> np.ndarray:
    """Batched engine blocks ``S (R, M, 1)``, ``I (R, B, 2)`` -> layout vectors ``(R, P)``."""
    free_c, free_d, free_a = layout.free_positions()
    s, i = np.asarray(subjects), np.asarray(items)
    return np.concatenate([s[:, free_c, 0], i[:, free_d, 0], i[:, free_a, 1]], axis=1)


def layout_problem(layout: ParameterLayout, l2: float = 0.1, link: str = "sigmoid"):
    """The engine's Rosetta :class:`~platinum_jax.inference.Problem` for arrays laid out as
    ``layout`` says (``M`` models, ``B`` benchmarks, its fixed entries and penalty).

    For array-level refits (the analyses' vmapped refits over weights, data, starts and L2
    strengths): the problem knows only the sizes, so its rows come in as
    :class:`~platinum_jax.inference.Data` at solve time. The L2 term is the layout's: centred on
    the best common shift of C and D when ``layout.center_penalty`` (the engine's free global
    ``shift``), plain otherwise (``shift`` fixed at 0), normalised by
    :func:`~platinum_jax.stitching._model.regularisation_denominator`; a layout with no fixed
    entry at all (the scale held by the penalty alone) is allowed.
    """
    from platinum_jax.inference import Problem
    from platinum_jax.models import Fixed, Identification

    from ._model import regularisation_denominator

    m, b = layout.n_models, layout.n_benchmarks
    # A placeholder table (every pair once) gives the problem its sizes; responses are dummies.
    table = ResponseTable.from_arrays(np.repeat(np.arange(m), b), np.tile(np.arange(b), m),
                                      np.full(m * b, 0.5), name="a stitching layout")

    def fixed(n, positions, values):
        mask, vals = np.zeros((n, 1), bool), np.zeros((n, 1))
        mask[list(positions), 0] = True
        vals[list(positions), 0] = values
        return mask, vals

    mc, vc = fixed(m, layout.fixed_capability, layout.fixed_capability_values)
    md, vd = fixed(b, layout.fixed_difficulty, layout.fixed_difficulty_values)
    ma, va = fixed(b, layout.fixed_slope, layout.fixed_slope_values)
    ident = Identification(
        subject={"capability": Fixed(mc[:, 0], vc[:, 0])},
        item={"difficulty": Fixed(md[:, 0], vd[:, 0]), "slope": Fixed(ma[:, 0], va[:, 0])},
        glob={} if layout.center_penalty else {"shift": Fixed(np.ones((), bool), np.zeros(()))},
        description="fixed entries of a stitching parameter layout",
    )
    # The model divides lambda by M + 2B - 1 (its benchmark-anchor count); rescale lambda so
    # the penalty is divided by the layout's own count instead.
    model = rosetta_model(BenchmarkAnchor(), float(l2) * (m + 2 * b - 1)
                          / regularisation_denominator(layout), link)
    return Problem(model, table, identification=ident, validate=False)


def to_engine_blocks(layout: ParameterLayout, theta) -> Theta:
    """Stitching vector ``(P,)`` -> engine raw blocks (jittable: the traced counterpart of
    :func:`to_engine_theta`, with the penalty centre at its optimum, the mean of C and D)."""
    import jax.numpy as jnp

    p = layout.unpack(jnp.asarray(theta))
    cd = jnp.concatenate([p.capability, p.difficulty])
    shift = jnp.mean(cd) if layout.center_penalty else jnp.zeros((), cd.dtype)
    return Theta(p.capability[:, None], jnp.stack([p.difficulty, p.slope], axis=1),
                 shift[None])


def capability_of(theta: Theta):
    """Capabilities ``C_m`` (M,) from engine raw blocks (batched blocks give ``(..., M)``)."""
    return theta.subjects[..., 0]
