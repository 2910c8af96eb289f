"""Acceleration of marginal EM by squared extrapolation (SQUAREM, Varadhan and Roland 2008,
"Simple and globally convergent methods for accelerating the convergence of any EM
algorithm"), for any EM map on a pair of arrays ``(items, globals)``.

Each iteration takes two EM steps ``x1 = F(x0)``, ``x2 = F(x1)``, extrapolates along
``r = x1 - x0`` and ``v = x2 - 2 x1 + x0`` to ``x' = x0 - 2 alpha r + alpha^2 v`` with
``alpha = -|r| / |v|`` (at most ``-1``, which gives ``x2``; at least ``-step_max``), and keeps
``F(x')`` when the objective at ``x'`` is no worse than at ``x0``, else ``x2`` (a plain EM step
pair, which never makes it worse). EM's linear rate is slow where the abilities' posteriors
carry much of the information (the shared scale of a 1PL); the extrapolation removes most of
those iterations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["squarem"]


def squarem(em, x_start, max_iter, tol):
    """Iterate ``em`` from ``x_start`` with SQUAREM until a plain EM step moves no entry more
    than ``tol`` or ``max_iter`` EM steps were taken (traceable: call it inside ``jit``).

    Args:
        em: ``(items, globals) -> (F items, F globals, objective at the input)``.
        x_start: ``(items, globals)``.

    Returns:
        ``((items, globals), iterations, change)``: the last accepted point, the EM steps
        taken and the largest move of the last plain EM step (``<= tol`` when converged).
    """
    # One EM step per pass of the loop (a single copy of the E- and M-steps in the compiled
    # program, which keeps compilation short); ``phase`` says which of the three it is.
    def body(state):
        phase, x, x0, x1, f0, step_max, it, change, last_alpha = state
        fx_i, fx_g, fx = em(*x)
        # phase 0: x = x0, F(x0) = x1; phase 1: x = x1, F(x1) = x2, extrapolate;
        # phase 2: x = x', keep F(x') if the objective at x' is no worse than at x0, else x2.
        r = (x1[0] - x0[0], x1[1] - x0[1])
        v = (fx_i - 2.0 * x1[0] + x0[0], fx_g - 2.0 * x1[1] + x0[1])
        rr = jnp.sum(r[0] ** 2) + jnp.sum(r[1] ** 2)
        vv = jnp.sum(v[0] ** 2) + jnp.sum(v[1] ** 2)
        alpha = jnp.where(vv > 0, -jnp.sqrt(rr / jnp.where(vv > 0, vv, 1.0)), -1.0)
        alpha = jnp.clip(alpha, -step_max, -1.0)
        alpha = jnp.where(phase == 1, alpha, last_alpha)
        ext = (x0[0] - 2.0 * alpha * r[0] + alpha**2 * v[0],
               x0[1] - 2.0 * alpha * r[1] + alpha**2 * v[1])
        ok = jnp.isfinite(fx) & (fx <= f0) & jnp.all(jnp.isfinite(fx_i)) & \
            jnp.all(jnp.isfinite(fx_g))
        res0 = jnp.maximum(jnp.max(jnp.abs(fx_i - x[0]), initial=0.0),
                           jnp.max(jnp.abs(fx_g - x[1]), initial=0.0))
        pick = lambda a0, a1, a2: jax.tree.map(  # noqa: E731
            lambda u, w, z: jnp.select([phase == 0, phase == 1], [u, w], z), a0, a1, a2)
        # x2 is kept in x1's slot during phase 2 (x1 itself is no longer needed).
        kept = jax.tree.map(lambda u, w: jnp.where(ok, u, w), (fx_i, fx_g), x1)
        new_x = pick((fx_i, fx_g), ext, kept)
        new_x0 = pick(x, x0, kept)
        new_x1 = pick((fx_i, fx_g), (fx_i, fx_g), x1)
        new_f0 = jnp.where(phase == 0, fx, f0)
        # Longer extrapolations once the longest allowed one succeeded; shorter after a miss.
        grown = jnp.where(ok & (alpha <= -step_max), 4.0 * step_max,
                          jnp.where(ok, step_max, jnp.maximum(1.0, step_max / 4.0)))
        new_step = jnp.where(phase == 2, grown, step_max)
        new_change = jnp.where(phase == 0, res0, change)
        # Converged at x0: stop with F(x0), which is the better of the two.
        stop = (phase == 0) & (res0 <= tol)
        new_phase = jnp.where(stop, 0, (phase + 1) % 3)
        return (new_phase, new_x, new_x0, new_x1, new_f0, new_step, it + 1, new_change, alpha)

    def cond(state):
        return (state[6] < max_iter) & (state[7] > tol)

    dt = x_start[0].dtype
    inf = jnp.asarray(jnp.inf, dt)
    state = jax.lax.while_loop(cond, body, (
        jnp.asarray(0, jnp.int32), x_start, x_start, x_start, inf, jnp.asarray(1.0, dt),
        jnp.asarray(0, jnp.int32), inf, jnp.asarray(-1.0, dt)))
    # Out of steps before the extrapolated point was evaluated: keep x2 instead.
    x = jax.tree.map(lambda u, w: jnp.where(state[0] == 2, w, u), state[1], state[3])
    return x, state[6], state[7]
