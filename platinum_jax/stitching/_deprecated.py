"""Deprecated array-level entry points, now thin wrappers over the measurement engine.

The stitching package once had its own Levenberg-Marquardt for the Rosetta rows. Every fit now
goes through :func:`platinum_jax.inference.solve_map` (the bipartite solver that fits every
model); these names stay so that code written against them keeps working, and warn with a
:class:`DeprecationWarning` that names the replacement. They work on the flat stitching vector
``theta = concat(C_free, D_free, alpha_free)`` of a :class:`ParameterLayout` and remain
jittable (``layout`` static) and vmappable over starts, weights and the L2 strength.
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._engine import layout_entries, layout_problem, to_engine_blocks
from ._model import ParameterLayout

__all__ = ["LMResult", "fit_theta", "gauss_newton_system", "solve_stitching"]

_REPLACEMENT = (
    "platinum_jax.inference.solve_map on the Rosetta model (platinum_jax.models.Rosetta; "
    "fit_stitching for a labelled fit)"
)


def _warn(name: str) -> None:
    warnings.warn(f"platinum_jax.stitching.{name} is deprecated; use {_REPLACEMENT}",
                  DeprecationWarning, stacklevel=3)


class LMResult(NamedTuple):
    """Output of :func:`solve_stitching` (arrays; batched under vmap). Deprecated."""

    theta: Float[Array, " P"]
    cost: Float[Array, ""]
    converged: Bool[Array, ""]
    iterations: Int[Array, ""]
    gradient_norm: Float[Array, ""]


@functools.lru_cache(maxsize=16)
def _problem(layout: ParameterLayout, link: str):
    # Unit L2 strength: the caller's strength comes in as the engine's (traced) penalty scale.
    return layout_problem(layout, 1.0, link)


def _data(model_index, benchmark_index, scores, weights, dtype):
    from platinum_jax.inference import Data

    y = jnp.asarray(scores, dtype)
    w = jnp.ones_like(y) if weights is None else jnp.asarray(weights, dtype)
    return Data(jnp.asarray(model_index), jnp.asarray(benchmark_index), y, jnp.ones_like(y), w)


def _to_layout(layout: ParameterLayout, theta) -> Array:
    free_c, free_d, free_a = layout.free_positions()
    return jnp.concatenate([theta.subjects[free_c, 0], theta.items[free_d, 0],
                            theta.items[free_a, 1]])


def gauss_newton_system(
    theta: Float[Array, " P"],
    layout: ParameterLayout,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    scores: Float[ArrayLike, " N"],
    weights: Float[ArrayLike, " N"],
    l2: float | Float[ArrayLike, ""],
    link: str = "sigmoid",
    newton: bool = False,
) -> tuple[Float[Array, ""], Float[Array, " P"], Float[Array, "P P"]]:
    """Deprecated: cost ``0.5 |r|^2``, gradient (P,) and Gauss-Newton (or, with ``newton``,
    exact) Hessian (P, P) of the paper's objective over the layout's free parameters.

    Computed by the engine (:func:`platinum_jax.inference.gauss_newton_system`) and mapped to
    the layout. Where the L2 term is centred, the engine carries the centre ``t`` as a free
    global; it is set to its optimum ``mean(C, D)`` and profiled out (Schur complement), which
    is exactly the curvature of the centred penalty.
    """
    _warn("gauss_newton_system")
    return _system(theta, layout, model_index, benchmark_index, scores, weights, l2, link=link,
                   newton=newton)


@functools.partial(jax.jit, static_argnames=("layout", "link", "newton"))
def _system(theta, layout, model_index, benchmark_index, scores, weights, l2, *, link, newton):
    from platinum_jax.inference import gauss_newton_system as engine_system

    problem = _problem(layout, link)
    th = to_engine_blocks(layout, theta)
    sys = engine_system(problem, th, _data(model_index, benchmark_index, scores, weights,
                                           th.subjects.dtype),
                        "newton" if newton else "gauss-newton", penalty_scale=l2)
    n_s, p_s = sys.gS.shape
    n_i, p_i = sys.gI.shape
    a, b = n_s * p_s, n_i * p_i
    hss = jnp.einsum("ij,iab->iajb", jnp.eye(n_s), sys.HSS).reshape(a, a)
    hii = jnp.einsum("ij,iab->iajb", jnp.eye(n_i), sys.HII).reshape(b, b)
    hsi = jnp.transpose(sys.HSI, (0, 2, 1, 3)).reshape(a, b)
    hsg, hig = sys.HSG.reshape(a, -1), sys.HIG.reshape(b, -1)
    full = jnp.block([[hss, hsi, hsg], [hsi.T, hii, hig], [hsg.T, hig.T, sys.HGG]])
    grad_full = jnp.concatenate([sys.gS.ravel(), sys.gI.ravel(), sys.gG])
    x, g = layout_entries(problem, layout)
    hess = full[np.ix_(x, x)]
    if g.size:  # profile the free centre out: H_xx - H_xt H_tt^-1 H_tx
        h_xg, h_gg = full[np.ix_(x, g)], full[np.ix_(g, g)]
        hess = hess - h_xg @ jnp.linalg.solve(h_gg, h_xg.T)
    return sys.cost, grad_full[x], hess


@functools.partial(
    jax.jit,
    static_argnames=("layout", "max_steps", "gtol", "xtol", "ftol", "link", "damping", "newton"),
)
def _solve(theta0, layout, model_index, benchmark_index, scores, weights, l2, *, max_steps,
           gtol, xtol, ftol, link, damping, newton):
    from platinum_jax.inference import solve_map

    problem = _problem(layout, link)
    theta0 = jnp.asarray(theta0)
    res = solve_map(problem, to_engine_blocks(layout, theta0),
                    _data(model_index, benchmark_index, scores, weights, theta0.dtype),
                    max_steps=max_steps, gtol=gtol, xtol=xtol, ftol=ftol,
                    curvature="newton" if newton else "gauss-newton", penalty_scale=l2)
    return LMResult(_to_layout(layout, res.theta), res.objective, res.converged,
                    res.iterations, res.gradient_norm)


def solve_stitching(
    theta0: Float[ArrayLike, " P"],
    layout: ParameterLayout,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    scores: Float[ArrayLike, " N"],
    weights: Float[ArrayLike, " N"] | None = None,
    l2: float | Float[ArrayLike, ""] = 0.1,
    *,
    max_steps: int = 500,
    gtol: float = 1e-9,
    xtol: float = 1e-12,
    ftol: float = 1e-14,
    link: str = "sigmoid",
    damping: float = 1e-3,
    newton: bool = False,
) -> LMResult:
    """Deprecated: minimise the paper's objective from ``theta0`` with the engine's
    Levenberg-Marquardt (:func:`platinum_jax.inference.solve_map`, the L2 strength ``l2`` as
    its penalty scale); jit- and vmap-able. ``newton`` picks the exact Hessian instead of
    Gauss-Newton. The engine starts its damping at ``1e-3 * max diag``, so ``damping`` must
    keep that default.

    Raises:
        ValueError: ``damping`` other than 1e-3.
    """
    _warn("solve_stitching")
    if damping != 1e-3:
        raise ValueError(
            f"damping={damping!r} is no longer configurable: the engine's solver starts at "
            "1e-3 * max diag(J^T J); leave damping at its default"
        )
    return _solve(theta0, layout, model_index, benchmark_index, scores, weights, l2,
                  max_steps=max_steps, gtol=gtol, xtol=xtol, ftol=ftol, link=link,
                  damping=damping, newton=newton)


def fit_theta(
    theta0: Float[ArrayLike, " P"],
    layout: ParameterLayout,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    scores: Float[ArrayLike, " N"],
    weights: Float[ArrayLike, " N"] | None = None,
    l2: float | Float[ArrayLike, ""] = 0.1,
    **solver_options,
) -> tuple[Float[Array, " P"], Float[Array, ""], Bool[Array, ""]]:
    """Deprecated: ``(theta, cost, converged)`` of :func:`solve_stitching` (weights 0 mask
    scores); ``solver_options`` are its keyword options."""
    _warn("fit_theta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        res = solve_stitching(theta0, layout, model_index, benchmark_index, scores, weights, l2,
                              **solver_options)
    return res.theta, res.cost, res.converged
