"""The generic E- and M-steps of marginal EM, for any unidimensional binary model: the
model's own curve on every (item, node) pair, Fisher scoring per item with step halving, and
items and globals moved together by their Schur complement when the model has free globals.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from ._problem import Problem

__all__ = ["STEPS", "m_step", "penalty", "probabilities"]

# Step sizes tried by the M-step's step halving (0 keeps the current values).
STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)


def probabilities(problem: Problem, nodes, items, g):
    """``p_iq`` ``(n_items, Q)`` kept a few epsilons inside (0, 1)."""
    node_rows = nodes[:, None]
    p = jax.vmap(lambda i_row: jax.vmap(lambda s_row: problem.mean(s_row, i_row, g))(node_rows))(
        items)
    eps = 8 * jnp.finfo(p.dtype).eps
    return jnp.clip(p, eps, 1.0 - eps)


def _item_objective(problem, nodes, r, n, i_row, free_row, g):
    """One item's expected negative complete-data log-likelihood plus its penalty."""
    p = jax.vmap(lambda s: problem.mean(s[None], i_row, g))(nodes)
    eps = 8 * jnp.finfo(p.dtype).eps
    p = jnp.clip(p, eps, 1.0 - eps)
    nll = -jnp.sum(xlogy(r, p) + xlogy(n - r, 1.0 - p))
    return nll + problem.item_penalty(i_row, free_row, g)


def _scoring_step(fun_p, fun_pen, x, free, n, r, nodes_args):
    """One Fisher-scoring direction for parameters ``x`` of a Bernoulli-type objective:
    ``fun_p(x) -> p_q``; ``fun_pen(x)`` the penalty. Fixed entries do not move."""
    p, jac = jax.vmap(lambda *a: jax.value_and_grad(fun_p)(x, *a))(*nodes_args)
    eps = 8 * jnp.finfo(p.dtype).eps
    p = jnp.clip(p, eps, 1.0 - eps)
    v = p * (1.0 - p)
    grad = -jnp.einsum("q,qa->a", (r - n * p) / v, jac) + jax.grad(fun_pen)(x)
    info = jnp.einsum("q,qa,qb->ab", n / v, jac, jac) + jax.hessian(fun_pen)(x)
    # Fixed entries: identity curvature, no gradient, so their step is zero.
    info = info * jnp.outer(free, free) + jnp.diag(1.0 - free)
    grad = grad * free
    # A tiny ridge keeps the solve defined for an item whose responses carry no information.
    ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(jnp.diag(info))))
    chol = jnp.linalg.cholesky(info + ridge * jnp.eye(x.shape[0], dtype=x.dtype))
    d = jax.scipy.linalg.cho_solve((chol, True), grad)
    return jnp.where(jnp.all(jnp.isfinite(d)), d, 0.0)


def m_step(problem: Problem, nodes, r, n, items, g, free_I, free_G, newton_steps: int):
    steps = jnp.asarray(STEPS, items.dtype)

    def item_update(i_row, free_row, r_i, n_i):
        obj = functools.partial(_item_objective, problem, nodes, r_i, n_i, free_row=free_row,
                                g=g)
        fun_p = lambda x, s: problem.mean(s[None], x, g)  # noqa: E731
        fun_pen = lambda x: problem.item_penalty(x, free_row, g)  # noqa: E731

        def one(x, _):
            d = _scoring_step(fun_p, fun_pen, x, free_row, n_i, r_i, (nodes,))
            trial = jax.vmap(lambda t: obj(x - t * d))(steps)
            best = jnp.argmin(jnp.where(jnp.isfinite(trial), trial, jnp.inf))
            return x - steps[best] * d, None

        out, _ = jax.lax.scan(one, i_row, None, length=newton_steps)
        return out

    if not problem.free_G.any():
        return jax.vmap(item_update)(items, free_I, r, n), g
    # With free globals (a shared slope) items and globals move together: alternating them
    # zig-zags, since every difficulty is measured in units of the slope.
    # A loop, not unrolled: one copy of the step in the compiled program.
    return jax.lax.fori_loop(
        0, newton_steps,
        lambda _, x: _joint_step(problem, nodes, r, n, x[0], x[1], free_I, free_G, steps),
        (items, g))


def _joint_step(problem, nodes, r, n, items, g, free_I, free_G, steps):
    """One Fisher-scoring step on (every item, globals) together: the information is an arrow
    (block-diagonal over items, dense in the globals), solved by eliminating the items with one
    small Cholesky each and the globals by their Schur complement; then step halving."""
    p_i = items.shape[1]

    def per_item(x, f, r_i, n_i):
        z = jnp.concatenate([x, g])
        fun_p = lambda z, s: problem.mean(s[None], z[:p_i], z[p_i:])  # noqa: E731
        p, jac = jax.vmap(lambda s: jax.value_and_grad(fun_p)(z, s))(nodes)
        eps = 8 * jnp.finfo(p.dtype).eps
        p = jnp.clip(p, eps, 1.0 - eps)
        v = p * (1.0 - p)
        pen = lambda z: problem.item_penalty(z[:p_i], f, z[p_i:])  # noqa: E731
        grad = -jnp.einsum("q,qa->a", (r_i - n_i * p) / v, jac) + jax.grad(pen)(z)
        info = jnp.einsum("q,qa,qb->ab", n_i / v, jac, jac) + jax.hessian(pen)(z)
        return grad, info

    grads, infos = jax.vmap(per_item)(items, free_I, r, n)
    gI = grads[:, :p_i] * free_I
    gG = (grads[:, p_i:].sum(0) + jax.grad(problem.global_penalty)(g)) * free_G
    HII = infos[:, :p_i, :p_i] * free_I[:, :, None] * free_I[:, None, :] + \
        jax.vmap(jnp.diag)(1.0 - free_I)
    HIG = infos[:, :p_i, p_i:] * free_I[:, :, None] * free_G[None, None, :]
    HGG = (infos[:, p_i:, p_i:].sum(0) + jax.hessian(problem.global_penalty)(g)) * \
        jnp.outer(free_G, free_G) + jnp.diag(1.0 - free_G)
    ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(jax.vmap(jnp.diag)(HII))))
    chol = jnp.linalg.cholesky(HII + ridge * jnp.eye(p_i, dtype=items.dtype))
    solve = jax.vmap(lambda c, b: jax.scipy.linalg.cho_solve((c, True), b))
    X = solve(chol, HIG)  # (n_items, p_i, p_g)
    xg = solve(chol, gI[..., None])[..., 0]
    schur = HGG - jnp.einsum("iap,iaq->pq", HIG, X)
    rhs = gG - jnp.einsum("iap,ia->p", HIG, xg)
    chol_g = jnp.linalg.cholesky(schur + ridge * jnp.eye(g.shape[0], dtype=g.dtype))
    dG = jax.scipy.linalg.cho_solve((chol_g, True), rhs)
    dI = xg - jnp.einsum("iap,p->ia", X, dG)
    ok = jnp.all(jnp.isfinite(dI)) & jnp.all(jnp.isfinite(dG))
    dI, dG = jnp.where(ok, dI, 0.0), jnp.where(ok, dG, 0.0)

    def total(t):
        it, gv = items - t * dI, g - t * dG
        per = jax.vmap(lambda i_row, f, r_i, n_i: _item_objective(
            problem, nodes, r_i, n_i, i_row, f, gv))(it, free_I, r, n)
        return jnp.sum(per) + problem.global_penalty(gv)

    trial = jax.vmap(total)(steps)
    best = jnp.argmin(jnp.where(jnp.isfinite(trial), trial, jnp.inf))
    return items - steps[best] * dI, g - steps[best] * dG


def penalty(problem, items, free_I, g):
    pen = jax.vmap(lambda i_row, f: problem.item_penalty(i_row, f, g))(items, free_I)
    return jnp.sum(pen) + problem.global_penalty(g)
