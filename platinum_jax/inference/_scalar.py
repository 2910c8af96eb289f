"""Compiled scalar searches for intervals read off a loss: where a loss first reaches a level
(bracket, then bisection), a golden-section minimum on a bounded range, and the per-coordinate
shifts at which an objective rises by a given fraction. Pure JAX, so each can be vmapped over
parameters and jitted; none returns a clipped number where a search fails.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["first_crossing", "golden_minimum", "loss_rise_shifts"]

_GOLDEN = 0.5 * (np.sqrt(5.0) - 1.0)


def first_crossing(excess: Callable, start, max_shift, n_bisect: int = 60):
    """Smallest ``d > 0`` with ``excess(d) = 0`` given ``excess(0) <= 0``: a bracket doubling
    from ``start`` (capped at ``max_shift``), then ``n_bisect`` bisection steps; ``inf`` where
    ``excess`` stays below 0 up to ``max_shift``."""

    def growing(bounds):
        return (bounds[2] < 0) & (bounds[1] < max_shift)

    def grow(bounds):
        hi = jnp.minimum(2.0 * bounds[1], max_shift)
        return bounds[1], hi, excess(hi)

    lo, hi, last = jax.lax.while_loop(growing, grow, (jnp.zeros_like(start), start, excess(start)))
    reached = last >= 0

    def halve(_, bounds):
        a, b = bounds
        mid = 0.5 * (a + b)
        below = excess(mid) < 0
        return jnp.where(below, mid, a), jnp.where(below, b, mid)

    a, b = jax.lax.fori_loop(0, n_bisect, halve, (lo, hi))
    return jnp.where(reached, 0.5 * (a + b), jnp.inf)


def golden_minimum(loss: Callable, lo, hi, steps: int = 60):
    """The midpoint of the bracket that ``steps`` golden-section steps leave of ``[lo, hi]``:
    the minimiser of ``loss`` there when it is unimodal on the range (arrays of one dtype)."""

    def step(_, bounds):
        a, b = bounds
        x1 = b - _GOLDEN * (b - a)
        x2 = a + _GOLDEN * (b - a)
        left = loss(x1) < loss(x2)
        return jnp.where(left, a, x1), jnp.where(left, x2, b)

    a, b = jax.lax.fori_loop(0, steps, step, (lo, hi))
    return 0.5 * (a + b)


def loss_rise_shifts(objective: Callable, theta, rise, max_shift, n_bisect: int = 60):
    """Per coordinate j of ``theta`` (P,), the shifts down and up at which ``objective(theta
    +- d e_j)`` first reaches ``(1 + rise) objective(theta)`` (:func:`first_crossing`), all
    coordinates in one vmap. The search starts at the quadratic model's answer
    ``d0 = sqrt(2 rise F / H_jj)`` (H the exact Hessian). Returns ``(d0, minus, plus)``."""
    f0 = objective(theta)
    h = jnp.diag(jax.hessian(objective)(theta))
    d0 = jnp.sqrt(2.0 * rise * f0 / jnp.maximum(h, 1e-12))
    eye = jnp.eye(theta.shape[0], dtype=theta.dtype)

    def side(sign):
        def one(e, start):
            return first_crossing(lambda d: objective(theta + sign * d * e) - (1.0 + rise) * f0,
                                  start, max_shift, n_bisect)
        return jax.vmap(one)(eye, d0)

    return d0, side(-1.0), side(1.0)
