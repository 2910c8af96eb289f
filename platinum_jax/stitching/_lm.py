"""Array-level Levenberg-Marquardt specialised to the stitching rows (kept for its callers).

:func:`~platinum_jax.stitching.fit_stitching` fits through the measurement engine
(:func:`platinum_jax.inference.fit_map` on the Rosetta model); this solver stays for the
array-level, vmapped refits of :mod:`platinum_jax.analysis` and for code written against it.

The solver exploits the model's structure: score ``i`` depends on only three parameters
``(C_m, D_b, alpha_b)``, so the Gauss-Newton matrix ``J^T J`` is assembled by scatter-adding the
per-score 3 x 3 outer products of autodiff gradients (plus the rank-one term of the L2 residual)
and solved by Cholesky. Shapes are static, so :func:`fit_theta` can be vmapped over weights (the
bootstrap) or starting points without recompiling.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._model import (
    ParameterLayout,
    link_function,
    penalty_mask,
    penalty_vector,
    regularisation_denominator,
    stitching_residuals,
)

__all__ = [
    "LMResult",
    "fit_theta",
    "solve_stitching",
    "gauss_newton_system",
]

class LMResult(NamedTuple):
    """Output of :func:`solve_stitching` (arrays; batched under vmap)."""

    theta: Float[Array, " P"]
    cost: Float[Array, ""]
    converged: Bool[Array, ""]
    iterations: Int[Array, ""]
    gradient_norm: Float[Array, ""]


def _score_terms(params, model_index, benchmark_index, scores, weights, link, newton):
    """Per-score pieces of the normal equations in ``(C_m, D_b, alpha_b)``.

    Returns the index arrays, the weighted residuals ``r`` (N,), the weighted Jacobian rows
    (N, 3) from autodiff and the 3 x 3 blocks ``J_i^T J_i`` (N, 3, 3), to which ``newton`` adds
    the exact second-order term ``w_i (f_i - y_i) d^2 f_i``.
    """
    dtype = params.capability.dtype
    mi = jnp.asarray(model_index)
    bi = jnp.asarray(benchmark_index)
    y = jnp.asarray(scores, dtype=dtype)
    sw = jnp.sqrt(jnp.asarray(weights, dtype=dtype))
    f = link_function(link)

    def one(x):  # x = (C_m, D_b, alpha_b)
        return f(x[2] * (x[0] - x[1]))

    x = jnp.stack([params.capability[mi], params.difficulty[bi], params.slope[bi]], axis=1)
    pred, grads = jax.vmap(jax.value_and_grad(one))(x)
    r = sw * (pred - y)
    rows = grads * sw[:, None]
    blocks = rows[:, :, None] * rows[:, None, :]
    if newton:
        blocks = blocks + (sw * r)[:, None, None] * jax.vmap(jax.hessian(one))(x)
    return mi, bi, r, rows, blocks


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
    """Cost ``F = 0.5 |r|^2``, gradient ``J^T r`` (P,) and Gauss-Newton matrix (P, P).

    Per score, the gradient of ``f(alpha_b (C_m - D_b))`` in ``(C_m, D_b, alpha_b)`` comes from
    autodiff; the 3 x 3 products are scattered into the full (M + 2B) square matrix. The L2 term
    ``0.5 r_reg^2 = 0.5 (lambda / K) |v|^2`` (``v`` from
    :func:`~platinum_jax.stitching._model.penalty_vector`, ``K`` from
    :func:`~platinum_jax.stitching._model.regularisation_denominator`) is quadratic, so its exact Hessian
    (a scaled projector) is added instead of the rank-one ``g g^T`` of the single residual; the
    anchored rows and columns are then dropped.
    """
    m, b = layout.n_models, layout.n_benchmarks
    params = layout.unpack(theta)
    dtype = params.capability.dtype
    mi, bi, r, rows, blocks = _score_terms(
        params, model_index, benchmark_index, scores, weights, link, newton
    )
    cols = jnp.stack([mi, m + bi, m + b + bi], axis=1)  # where they sit among M + 2B params
    n_all = m + 2 * b
    hess = jnp.zeros((n_all, n_all), dtype=dtype)
    hess = hess.at[cols[:, :, None], cols[:, None, :]].add(blocks)
    grad = jnp.zeros((n_all,), dtype=dtype).at[cols].add(rows * r[:, None])

    scale = l2 / regularisation_denominator(layout)
    v = penalty_vector(params, layout)
    proj = np.diag(penalty_mask(layout).astype(float))
    if layout.center_penalty:  # d v / d(C, D) = I - 11^T / (M + B)
        proj[: m + b, : m + b] -= 1.0 / (m + b)
    hess = hess + scale * jnp.asarray(proj, dtype=dtype)
    grad = grad + scale * v
    cost = 0.5 * (jnp.sum(r**2) + scale * jnp.sum(v**2))

    free = np.concatenate(
        [ix + off for ix, off in zip(layout.free_positions(), (0, m, m + b), strict=True)]
    )
    return cost, grad[free], hess[jnp.ix_(free, free)]


class _Blocks(NamedTuple):
    """Normal matrix ``K - s u u^T`` in (C, D, alpha) space, kept in its sparse structure."""

    kc: Array  # (M,) diagonal C-C block (a score touches one capability)
    kcb: Array  # (M, 2B) C-(D, alpha) block
    kbb: Array  # (2B, 2B) (D, alpha) block
    u: Array  # (M + 2B,) unit direction of the centering term (0 when not centered)
    s: Array  # scalar weight of the centering term


def structured_system(theta, layout, model_index, benchmark_index, scores, weights, l2,
                      link="sigmoid", newton=False):
    """Like :func:`gauss_newton_system` but returns the matrix as :class:`_Blocks` and the
    gradient in full (C, D, alpha) space, anchored entries masked (zero gradient, unit diagonal).
    """
    m, b = layout.n_models, layout.n_benchmarks
    params = layout.unpack(theta)
    dtype = params.capability.dtype
    mi, bi, r, rows, blk = _score_terms(
        params, model_index, benchmark_index, scores, weights, link, newton
    )
    scale = l2 / regularisation_denominator(layout)
    fc, fd, fa = (np.zeros(n, bool) for n in (m, b, b))
    free_c, free_d, free_a = layout.free_positions()
    fc[free_c], fd[free_d], fa[free_a] = True, True, True
    fb = np.concatenate([fd, fa])
    pen_mask = penalty_mask(layout).astype(float)

    kc = jax.ops.segment_sum(blk[:, 0, 0], mi, num_segments=m) + scale * pen_mask[:m]
    # One flat segment sum per block (not one scatter per entry type): fewer kernels to compile.
    kcb = jax.ops.segment_sum(
        jnp.concatenate([blk[:, 0, 1], blk[:, 0, 2]]),
        jnp.concatenate([mi * (2 * b) + bi, mi * (2 * b) + b + bi]),
        num_segments=m * 2 * b,
    ).reshape(m, 2 * b)
    row_d, row_a = bi * (2 * b), (b + bi) * (2 * b)
    kbb = jax.ops.segment_sum(
        jnp.concatenate([blk[:, 1, 1], blk[:, 1, 2], blk[:, 2, 1], blk[:, 2, 2]]),
        jnp.concatenate([row_d + bi, row_d + b + bi, row_a + bi, row_a + b + bi]),
        num_segments=4 * b * b,
    ).reshape(2 * b, 2 * b)
    kbb = kbb + scale * jnp.diag(jnp.asarray(pen_mask[m:], dtype))
    v = penalty_vector(params, layout)
    grad = jnp.zeros((m + 2 * b,), dtype).at[
        jnp.concatenate([mi, m + bi, m + b + bi])
    ].add((rows * r[:, None]).T.reshape(-1)) + scale * v
    cost = 0.5 * (jnp.sum(r**2) + scale * jnp.sum(v**2))
    # anchored entries: no gradient, unit diagonal, no coupling
    fc_, fb_ = jnp.asarray(fc, dtype), jnp.asarray(fb, dtype)
    kc = kc * fc_ + (1.0 - fc_)
    kcb = kcb * fc_[:, None] * fb_[None, :]
    kbb = kbb * fb_[:, None] * fb_[None, :] + jnp.diag(1.0 - fb_)
    free_all = jnp.concatenate([fc_, fb_])
    grad = grad * free_all
    if layout.center_penalty:
        u = jnp.concatenate([jnp.ones(m + b, dtype), jnp.zeros(b, dtype)]) / np.sqrt(m + b)
        u = u * free_all
        s_ = jnp.asarray(scale, dtype)
    else:
        u = jnp.zeros(m + 2 * b, dtype)
        s_ = jnp.asarray(0.0, dtype)
    return cost, grad, _Blocks(kc, kcb, kbb, u, s_)


def _structured_solve(blocks: _Blocks, rhs, mu):
    """Solve ``(K - s u u^T + mu I) x = rhs`` via the Schur complement on the C block and
    Sherman-Morrison for the rank-one centering term (Cholesky of a 2B x 2B matrix only)."""
    m = blocks.kc.shape[0]
    kc = blocks.kc + mu
    kbb = blocks.kbb + mu * jnp.eye(blocks.kbb.shape[0], dtype=kc.dtype)
    scaled = blocks.kcb / kc[:, None]
    schur = kbb - blocks.kcb.T @ scaled
    chol = jax.scipy.linalg.cho_factor(schur, lower=True)

    # Solve for rhs and u together: one two-column solve instead of two traced solves.
    vec = jnp.stack([rhs, blocks.u], axis=1)
    vc, vb = vec[:m], vec[m:]
    xb = jax.scipy.linalg.cho_solve(chol, vb - scaled.T @ vc)
    xc = (vc - blocks.kcb @ xb) / kc[:, None]
    both = jnp.concatenate([xc, xb])
    x, ku = both[:, 0], both[:, 1]
    denom = 1.0 - blocks.s * jnp.dot(blocks.u, ku)
    x = x + blocks.s * ku * jnp.dot(blocks.u, x) / denom
    ok = jnp.all(kc > 0) & (denom > 0)  # K - s u u^T + mu I must be positive definite
    return jnp.where(ok, x, jnp.nan)


def _cost(theta, layout, mi, bi, y, w, l2, link="sigmoid"):
    r = stitching_residuals(theta, layout, mi, bi, y, l2, w, link)
    return 0.5 * jnp.sum(r**2)


@functools.partial(
    jax.jit, static_argnames=("layout", "max_steps", "gtol", "xtol", "ftol", "link", "damping", "newton")
)
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
    """Levenberg-Marquardt on the paper's objective, in one ``lax.while_loop`` (jit/vmap-able).

    Each step solves ``(J^T J + mu I) delta = -J^T r``: the capability block of ``J^T J`` is
    diagonal, so it is eliminated (Schur complement, Cholesky of a 2B x 2B matrix) and the
    rank-one centering of the L2 term is added back by Sherman-Morrison. ``mu`` follows Nielsen's gain
    ratio rule (shrink after a good step, double-and-grow after a rejected one). Stops when
    ``max|J^T r| <= gtol``, the accepted step is below ``xtol (|theta| + xtol)``, or the relative
    decrease of the cost falls below ``ftol``; ``converged`` is False only when ``max_steps`` ran out.
    The first damping is ``mu = damping * max diag(J^T J)``. ``newton=True`` swaps ``J^T J`` for the
    exact Hessian (adds ``sum_i r_i d^2 r_i``): fewer steps near a minimum (bootstrap refits from
    the MAP), but from far away it can stall in flat regions, so the default is Gauss-Newton.
    ``link`` picks the score link (``"sigmoid"``, or ``"clipped_linear"`` for comparisons).
    """
    theta0 = jnp.asarray(theta0)
    dtype = theta0.dtype
    w = jnp.ones(jnp.shape(scores), dtype=dtype) if weights is None else jnp.asarray(weights, dtype)
    args = (layout, model_index, benchmark_index, scores, w, l2, link)

    m, b = layout.n_models, layout.n_benchmarks
    free = np.concatenate(
        [ix + off for ix, off in zip(layout.free_positions(), (0, m, m + b), strict=True)]
    )

    def sys_at(theta):
        return structured_system(theta, *args, newton=newton)

    # The system (cost, gradient, blocks) is evaluated at the top of a pass, and only when the
    # previous pass moved theta ("stale"), so it appears once in the compiled loop: this halves
    # compilation against evaluating it before the loop as well.  A stop for a small step or a
    # small gain is taken one pass later, after the system is refreshed, so the returned
    # gradient always belongs to the returned theta.
    def cond(state):
        return (~state[7]) & (state[6] < max_steps)

    def body(state):
        theta, cost, g, h, mu, nu, step, _, stale, pending = state
        cost, g, h = jax.lax.cond(stale, sys_at, lambda _: (cost, g, h), theta)
        mu = jnp.where(
            mu < 0, damping * jnp.maximum(jnp.max(h.kc), jnp.max(jnp.diag(h.kbb))), mu
        )
        stop = pending | (jnp.max(jnp.abs(g)) <= gtol)
        delta_full = -_structured_solve(h, g, mu)
        delta = delta_full[free]
        new_theta = theta + delta
        new_cost = _cost(new_theta, *args)
        predicted = 0.5 * jnp.dot(delta_full, mu * delta_full - g)  # model decrease, > 0
        rho = (cost - new_cost) / jnp.maximum(predicted, 1e-300)
        accept = (rho > 0) & jnp.isfinite(new_cost) & ~stop
        theta_next = jnp.where(accept, new_theta, theta)
        cost_next = jnp.where(accept, new_cost, cost)
        mu_next = jnp.where(
            accept, mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), mu * nu
        )
        nu_next = jnp.where(accept, 2.0, 2.0 * nu)
        small_step = accept & (
            jnp.linalg.norm(delta) <= xtol * (jnp.linalg.norm(theta) + xtol)
        )
        small_gain = accept & ((cost - new_cost) <= ftol * jnp.maximum(cost, 1e-300))
        return (theta_next, cost_next, g, h, mu_next, nu_next, step + 1, stop, accept,
                small_step | small_gain)

    n_full = m + 2 * b
    zeros = functools.partial(jnp.zeros, dtype=dtype)
    blocks0 = _Blocks(zeros((m,)), zeros((m, 2 * b)), zeros((2 * b, 2 * b)), zeros((n_full,)),
                      zeros(()))
    init = (
        theta0,
        zeros(()),
        zeros((n_full,)),
        blocks0,
        jnp.asarray(-1.0, dtype),  # damping not set yet: taken from the first system
        jnp.asarray(2.0, dtype),
        jnp.asarray(0, jnp.int32),
        jnp.asarray(False),
        jnp.asarray(True),  # stale: evaluate the system at theta0 first
        jnp.asarray(False),
    )
    theta, cost, g, _, _, _, step, done, _, _ = jax.lax.while_loop(cond, body, init)
    return LMResult(theta, cost, done, step, jnp.max(jnp.abs(g)))


# A single fit is dominated by compilation (about a second) rather than by running (about
# 10 ms), so fit_stitching compiles the same solver with LLVM's optimisation turned down: it
# compiles about twice as fast and runs about twice as slow, a net gain for one fit.  Loops
# over many fits (bootstrap, cross-validation, vmapped restarts) use the optimised
# solve_stitching.
_solve_quick_compile = jax.jit(
    solve_stitching.__wrapped__,
    static_argnames=("layout", "max_steps", "gtol", "xtol", "ftol", "link", "damping", "newton"),
    compiler_options={"xla_backend_optimization_level": 0},
)


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
    """Array-level fit: ``(theta, cost, converged)``; jit- and vmap-able (weights 0 mask scores).

    ``solver_options`` (``max_steps``, ``gtol``, ``xtol``, ``ftol``) go to :func:`solve_stitching`.
    """
    res = solve_stitching(
        theta0, layout, model_index, benchmark_index, scores, weights, l2, **solver_options
    )
    return res.theta, res.cost, res.converged
