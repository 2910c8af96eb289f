"""Deprecated array-level entry points on the flat vector of a
:class:`~platinum_jax.models.ParameterLayout`; every fit now goes through the engine
(:func:`platinum_jax.inference.solve_map` on :func:`platinum_jax.inference.layout_problem`).
Each warns on use; all stay jittable (``layout`` static) and vmappable."""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp

from platinum_jax.models import penalty_vector, predict_scores, regularisation_denominator

__all__ = ["LMResult", "fit_theta", "gauss_newton_system", "solve_stitching"]

REPLACEMENT = ("platinum_jax.inference.solve_map on platinum_jax.inference.layout_problem "
               "(fit_stitching for a labelled fit)")


def _warn(name: str) -> None:
    warnings.warn(f"platinum_jax.stitching.{name} is deprecated; use {REPLACEMENT}",
                  DeprecationWarning, stacklevel=3)


class LMResult(NamedTuple):
    """Deprecated output of :func:`solve_stitching` (batched under vmap)."""

    theta: jax.Array
    cost: jax.Array
    converged: jax.Array
    iterations: jax.Array
    gradient_norm: jax.Array


def gauss_newton_system(theta, layout, model_index, benchmark_index, scores, weights, l2,
                        link="sigmoid", newton=False):
    """Deprecated: cost ``0.5 |r|^2``, gradient (P,) and Gauss-Newton (exact with ``newton``)
    Hessian (P, P) of the paper's objective over the layout's free parameters."""
    _warn("gauss_newton_system")
    return _system(theta, layout, model_index, benchmark_index, scores, weights, l2, link, newton)


@functools.partial(jax.jit, static_argnames=("layout", "link", "newton"))
def _system(theta, layout, mi, bi, y, w, l2, link, newton):
    def data_residuals(t):
        return jnp.sqrt(w) * (predict_scores(layout.unpack(t), mi, bi, link) - y)

    def penalty(t):  # quadratic: its Hessian is exact in the Gauss-Newton matrix too
        v = penalty_vector(layout.unpack(t), layout)
        return 0.5 * l2 * jnp.sum(v**2) / regularisation_denominator(layout)

    def cost(t):
        return 0.5 * jnp.sum(data_residuals(t) ** 2) + penalty(t)

    if newton:
        hess = jax.hessian(cost)(theta)
    else:
        jac = jax.jacfwd(data_residuals)(theta)
        hess = jac.T @ jac + jax.hessian(penalty)(theta)
    return cost(theta), jax.grad(cost)(theta), hess


def solve_stitching(theta0, layout, model_index, benchmark_index, scores, weights=None, l2=0.1,
                    *, max_steps=500, gtol=1e-9, xtol=1e-12, ftol=1e-14, link="sigmoid",
                    damping=1e-3, newton=False) -> LMResult:
    """Deprecated: the engine's Levenberg-Marquardt from ``theta0`` on the layout's problem
    (``l2`` its penalty scale); ``damping`` must stay 1e-3, where the engine starts."""
    _warn("solve_stitching")
    if damping != 1e-3:
        raise ValueError(f"damping={damping!r} is no longer configurable: the engine's solver "
                         "starts at 1e-3 * max diag(J^T J); leave damping at its default")
    return _solve(jnp.asarray(theta0), layout, model_index, benchmark_index, scores, weights, l2,
                  max_steps=max_steps, gtol=gtol, xtol=xtol, ftol=ftol, link=link, newton=newton)


@functools.partial(jax.jit, static_argnames=("layout", "max_steps", "gtol", "xtol", "ftol",
                                             "link", "newton"))
def _solve(theta0, layout, mi, bi, y, w, l2, *, link, newton, **tolerances):
    from platinum_jax.inference import Data, layout_problem, solve_map, to_engine_theta

    y = jnp.asarray(y, theta0.dtype)
    w = jnp.ones_like(y) if w is None else jnp.asarray(w, y.dtype)
    res = solve_map(layout_problem(layout, 1.0, link), to_engine_theta(layout, theta0),
                    Data(jnp.asarray(mi), jnp.asarray(bi), y, jnp.ones_like(y), w),
                    curvature="newton" if newton else "gauss-newton", penalty_scale=l2,
                    **tolerances)
    c, d, a = layout.free_positions()
    s, i = res.theta.subjects, res.theta.items
    theta = jnp.concatenate([s[c, 0], i[d, 0], i[a, 1]])
    return LMResult(theta, res.objective, res.converged, res.iterations, res.gradient_norm)


def fit_theta(theta0, layout, model_index, benchmark_index, scores, weights=None, l2=0.1,
              **solver_options):
    """Deprecated: ``(theta, cost, converged)`` of :func:`solve_stitching`."""
    _warn("fit_theta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        res = solve_stitching(theta0, layout, model_index, benchmark_index, scores, weights, l2,
                              **solver_options)
    return res.theta, res.cost, res.converged
