"""The closed-form fast path of marginal EM for a model whose mean is the logistic curve
``sigmoid(a_i (theta - b_i))`` (the package's 1PL and 2PL declare it through
:meth:`~platinum_jax.models.MeasurementModel.logistic_curve`; any model may).

It maximises the same objective as the generic steps (:mod:`._marginal_steps`) and differs
only in how the steps are computed, on a dense matrix: the E-step's ``sum_i K_si logit p_iq``
as one product of ``K`` with two columns, the M-step's gradient and Fisher information in
``(b, log a)`` in closed form (see :mod:`._marginal` for the whole list).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._marginal_steps import STEPS, penalty
from ._problem import Problem

__all__ = ["logistic_columns", "logistic_loglik", "logistic_m_step", "logistic_start"]


def logistic_columns(problem: Problem):
    """Where a model that declares the logistic curve keeps its raw difficulty and log
    discrimination: ``(item column of b, "item" or "global", column of log a)``; None when the
    model does not declare it (:meth:`MeasurementModel.logistic_curve`) or its likelihood has
    globals of its own (those take the generic steps)."""
    curve = problem.model.logistic_curve()
    if curve is None:
        return None
    items, glob = problem.item.slices(), problem.glob.slices()
    if not curve.shared:
        if problem.glob.size:  # the binary likelihoods have no globals; others take the loop
            return None
        return items[curve.difficulty][0], "item", items[curve.discrimination][0]
    if problem.item.size != 1 or problem.glob.size != 1:
        return None
    return items[curve.difficulty][0], "global", glob[curve.discrimination][0]


def logistic_loglik(cols, counts, arrays, nodes, items, g):
    """``l_sq`` of the 1PL/2PL on a dense matrix without a matrix product over the nodes.

    ``logit p_iq = a_i (theta_q - b_i)`` is linear in ``theta_q``, so
    ``sum_i K_si logit p_iq = theta_q (K a)_s - (K (a b))_s``: one product of ``K`` with two
    columns instead of ``Q``; the ``log(1 - p_iq)`` part is a column sum when every cell is
    observed once (else one product ``N @ log(1 - p)``)."""
    ib, where, ia = cols
    b = items[:, ib]
    a = jnp.exp(items[:, ia]) if where == "item" else jnp.full_like(b, jnp.exp(g[ia]))
    log_q = -jax.nn.softplus(a[:, None] * (nodes[None, :] - b[:, None]))  # log(1 - p_iq)
    if counts.split:
        # 1PL: (K a)_s = a (K 1)_s. The per-subject constant (K (a b))_s does not move the
        # posterior; only its total enters the log-likelihood, so every subject carries the
        # mean sum_i a b_i (K^T 1)_i / n_subjects instead.
        rows, cols_k, n32 = arrays
        rest = (n32 @ log_q.astype(jnp.float32)).astype(log_q.dtype)
        shift = jnp.sum(a * b * cols_k) / counts.n_subjects
        return (a[0] * rows)[:, None] * nodes[None, :] - shift + rest
    ab = jnp.stack([a, a * b], axis=1)
    if counts.single and not counts.grouped:  # float32 K (exact), (a, a b) rounded ~1e-7
        lin = (counts.k32(arrays) @ ab.astype(jnp.float32)).astype(ab.dtype)
    else:
        lin = arrays[0] @ ab
    if counts.complete:
        rest = jnp.sum(log_q, axis=0)[None, :]
    elif counts.single:  # float32 N (exact) and log(1 - p), as above
        rest = (counts.n32(arrays) @ log_q.astype(jnp.float32)).astype(log_q.dtype)
    else:
        rest = arrays[1] @ log_q
    return lin[:, :1] * nodes[None, :] - lin[:, 1:] + rest


def logistic_m_step(problem, cols, nodes, r0, r1, n, items, g, free_I, free_G, newton_steps):
    """The M-step of :func:`._marginal_steps.m_step` for the 1PL and 2PL, with the curve's derivatives in
    closed form on the ``(n_items, Q)`` grid (the penalties' by autodiff, as there).

    With ``z_iq = a_i (theta_q - b_i)``, ``p = sigmoid(z)``, ``e = r - n p`` and
    ``v = n p (1 - p)``, the expected negative log-likelihood of item ``i`` is
    ``sum_q n softplus(z) - r z``; its gradient in ``(b_i, log a_i)`` is
    ``(a_i sum_q e, -sum_q z e)`` and its Fisher information
    ``sum_q v [[a_i^2, -a_i z], [-a_i z, z^2]]``. The 2PL takes a Fisher-scoring step per item
    (2 x 2 Cholesky); the 1PL's shared ``log a`` couples the items, and its step eliminates
    each difficulty (a scalar) and solves the one global by its Schur complement. Of the
    generic step's step sizes the first at which the objective does not rise (beyond a
    rounding-level slack) is kept, where the generic step tries them all and keeps the best:
    the EM's fixed point is the same, and one evaluation usually suffices.

    The successes ``r_iq`` enter only through ``r0_i = sum_q r_iq`` and
    ``r1_i = sum_q theta_q r_iq`` (:meth:`._marginal_layout.Counts.moments`): ``sum_q r z = a_i (r1_i - b_i r0_i)``."""
    ib, where, ia = cols
    steps = jnp.asarray(STEPS, items.dtype)
    p_i = items.shape[1]
    pen_z = lambda z, f: problem.item_penalty(z[:p_i], f, z[p_i:])  # noqa: E731

    def curve(items, g):
        la = items[..., ia] if where == "item" else g[..., ia, None]
        a = jnp.exp(la)
        return a, a[..., None] * (nodes - items[..., ib, None])

    def r_dot_z(a, items):  # sum_q r_iq z_iq
        return a * (r1 - items[..., ib] * r0)

    def item_nll(items, g):  # (..., n_items)
        a, z = curve(items, g)
        return jnp.sum(n * jax.nn.softplus(z), axis=-1) - r_dot_z(a, items)

    def derivatives(items, g):
        a, z = curve(items, g)
        p = jax.nn.sigmoid(z)
        np_, v = n * p, n * p * (1.0 - p)
        sum_e = r0 - jnp.sum(np_, 1)  # sum_q e_iq
        sum_ze = r_dot_z(a, items) - jnp.sum(z * np_, 1)  # sum_q z_iq e_iq
        zpen = jnp.concatenate([items, jnp.broadcast_to(g, (items.shape[0], g.shape[0]))], 1)
        pg = jax.vmap(jax.grad(pen_z))(zpen, free_I)
        ph = jax.vmap(jax.hessian(pen_z))(zpen, free_I)
        return (a * sum_e, -sum_ze, a**2 * jnp.sum(v, 1),
                -a * jnp.sum(v * z, 1), jnp.sum(v * z * z, 1), pg, ph)

    def first_no_worse(objective, f0):
        """The first of ``STEPS`` at which ``objective`` (per item or scalar) is finite and
        no worse than ``f0`` (0, i.e. stay, when none is): usually the full step, so one
        evaluation instead of one per step size. Returns the step sizes and the objective
        there."""
        def cond(state):
            k, _, _, done = state
            return (k < len(STEPS) - 1) & ~jnp.all(done)

        def body(state):
            k, t, f, done = state
            fk = objective(steps[k])
            # A rounding-level slack, so that an item already at its optimum stops at once.
            ok = ~done & jnp.isfinite(fk) & (fk <= f0 + 1e-12 * jnp.abs(f0))
            return k + 1, jnp.where(ok, steps[k], t), jnp.where(ok, fk, f), done | ok

        zero = jnp.zeros_like(f0)
        _, t, f, _ = jax.lax.while_loop(
            cond, body, (jnp.asarray(0), zero, f0, jnp.zeros(f0.shape, bool)))
        return t, f

    if where == "item":
        item_pen = jax.vmap(lambda x, f: problem.item_penalty(x, f, g))

        def step(_, state):
            items, f0 = state
            gb, ga, hbb, hba, haa, pg, ph = derivatives(items, g)
            # The 2 x 2 system of each item in (b, log a), its Cholesky factor written out.
            fb, fa = free_I[:, ib], free_I[:, ia]
            u = (gb + pg[:, ib]) * fb
            w = (ga + pg[:, ia]) * fa
            A = (hbb + ph[:, ib, ib]) * fb + (1.0 - fb)
            B = (hba + ph[:, ib, ia]) * fb * fa
            C = (haa + ph[:, ia, ia]) * fa + (1.0 - fa)
            ridge = 1e-10 * (1.0 + jnp.maximum(jnp.abs(A), jnp.abs(C)))
            l11 = jnp.sqrt(A + ridge)
            l21 = B / l11
            l22 = jnp.sqrt(C + ridge - l21**2)
            y1 = u / l11
            y2 = (w - l21 * y1) / l22
            d_a = y2 / l22
            d_b = (y1 - l21 * d_a) / l11
            d = jnp.zeros_like(items).at[:, ib].set(d_b).at[:, ia].set(d_a)
            d = jnp.where(jnp.all(jnp.isfinite(d), axis=1, keepdims=True), d, 0.0)
            t, f = first_no_worse(
                lambda t: item_nll(items - t * d, g) + item_pen(items - t * d, free_I), f0)
            return items - t[:, None] * d, f

        f0 = item_nll(items, g) + item_pen(items, free_I)
        items, _ = jax.lax.fori_loop(0, newton_steps, step, (items, f0))
        return items, g

    def total(items, g):
        return jnp.sum(item_nll(items, g)) + penalty(problem, items, free_I, g)

    def joint(_, state):
        items, g, f0 = state
        gb, ga, hbb, hba, haa, pg, ph = derivatives(items, g)
        fI, fG = free_I[:, 0], free_G[0]
        gI = (gb + pg[:, 0]) * fI
        hII = (hbb + ph[:, 0, 0]) * fI + (1.0 - fI)
        hIG = (hba + ph[:, 0, 1]) * fI * fG
        gG = (jnp.sum(ga + pg[:, 1]) + jax.grad(problem.global_penalty)(g)[0]) * fG
        hGG = (jnp.sum(haa + ph[:, 1, 1]) + jax.hessian(problem.global_penalty)(g)[0, 0]) * \
            fG + (1.0 - fG)
        ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(hII)))
        hII = hII + ridge
        dG = (gG - jnp.sum(hIG * gI / hII)) / (hGG + ridge - jnp.sum(hIG**2 / hII))
        dI = (gI - hIG * dG) / hII
        ok = jnp.all(jnp.isfinite(dI)) & jnp.isfinite(dG)
        dI, dG = jnp.where(ok, dI, 0.0)[:, None], jnp.where(ok, dG, 0.0)
        t, f = first_no_worse(lambda t: total(items - t * dI, g - t * dG), f0)
        return items - t * dI, g - t * dG, f

    items, g, _ = jax.lax.fori_loop(0, newton_steps, joint, (items, g, total(items, g)))
    return items, g


def logistic_start(cols, counts, arrays, items, g, free_I):
    """Free difficulties started where the item's share of successes puts them: with
    ``theta ~ N(0, 1)``, ``E[sigmoid(a (theta - b))] ~ sigmoid(-a b / sqrt(1 + pi a^2 / 8))``,
    so ``b ~ -logit(share) sqrt(1 + pi a^2 / 8) / a`` at the starting ``a`` (the share is
    taken as ``(k + 1/2) / (n + 1)``, finite for items everyone or no one solves). A start
    only: the EM's fixed point does not depend on it, its step count does."""
    ib, where, ia = cols
    a = jnp.exp(items[:, ia] if where == "item" else g[ia])
    if counts.grouped:
        k = arrays[1] @ arrays[0]
    elif counts.split:
        k = arrays[1]  # the successes' column sums
    else:
        k = jnp.sum(arrays[0], axis=0)
    if counts.complete:
        n = jnp.full_like(k, counts.n_subjects)
    else:
        n = jnp.sum(counts.n32(arrays) if counts.single else arrays[1], axis=0)
    share = (k + 0.5) / (n + 1.0)
    b = -jnp.log(share / (1.0 - share)) * jnp.sqrt(1.0 + jnp.pi * a**2 / 8.0) / a
    return items.at[:, ib].set(jnp.where(free_I[:, ib] > 0, b, items[:, ib]))
