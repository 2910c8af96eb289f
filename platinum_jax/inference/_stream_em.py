"""The EM of the streamed 2PL (:mod:`._stream`): the per-item M-step and the two ways of
reaching plain EM's fixed point quickly, the scale step (default) and SQUAREM.

Plain EM's slow direction. With hundreds or thousands of items a subject, each subject's
posterior is nearly its likelihood, and only the N(0, 1) prior of the abilities holds the
common location and scale of the items: moving every item along the orbit
``b -> (b - mu) / s``, ``a -> a s`` changes the marginal likelihood only through that prior,
while the complete-data likelihood (abilities known) pins it. The fraction of missing
information along that orbit is nearly one, so plain EM creeps along it (a rate of about
``1 - 1 / (items a subject)``).

The scale step removes that direction exactly: the orbit is the same as moving the nodes,
``theta_q -> mu + s theta_q``, so the marginal log-likelihood along it has its gradient from
the E-step's item statistics (Fisher's identity) and its Hessian by Louis's identity (one more
product in the pass, :mod:`._stream_passes`). Each pass then takes the plain EM step and a
Newton step in ``(mu, log s)`` on the objective (minus the marginal log-likelihood plus the
priors), less what the EM step already moved along the orbit. Both parts vanish exactly at
plain EM's fixed points, so the fixed point is plain EM's, on any grid; a step whose
objective turns out worse at the next pass is replaced by the plain EM step.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._stream_passes import _e_pass

_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)


def _item_objective(b, la, r0, r1, n, nodes):
    """Per item: ``sum_q n softplus(z) - sum_q r z`` plus the 2PL's priors (``b ~ N(0, 9)``,
    ``log a ~ N(0, 1)``, constants dropped), with ``sum_q r z = a (r1 - b r0)``."""
    a = jnp.exp(la)
    z = a[:, None] * (nodes[None, :] - b[:, None])
    return (jnp.sum(n * jax.nn.softplus(z), axis=1) - a * (r1 - b * r0)
            + b**2 / 18.0 + la**2 / 2.0)


@functools.partial(jax.jit, static_argnames=("newton_steps",))
def _m_step(b, la, r0, r1, n, nodes, newton_steps):
    """Fisher scoring per item in ``(b, log a)``: gradient ``(a sum e + b/9, -sum z e + log a)``,
    information ``sum_q v [[a^2, -a z], [-a z, z^2]] + diag(1/9, 1)`` with ``e = r - n p``,
    ``v = n p (1 - p)``; the first step size of 1, 1/2, ... that does not raise the item's
    objective."""
    steps = jnp.asarray(_STEPS, b.dtype)

    def one(state, _):
        b, la = state
        a = jnp.exp(la)
        z = a[:, None] * (nodes[None, :] - b[:, None])
        p = jax.nn.sigmoid(z)
        v = n * p * (1.0 - p)
        sum_e = r0 - jnp.sum(n * p, axis=1)
        sum_ze = a * (r1 - b * r0) - jnp.sum(z * n * p, axis=1)
        gb = a * sum_e + b / 9.0
        ga = -sum_ze + la
        hbb = a**2 * jnp.sum(v, axis=1) + 1.0 / 9.0
        hba = -a * jnp.sum(v * z, axis=1)
        haa = jnp.sum(v * z * z, axis=1) + 1.0
        det = hbb * haa - hba**2
        db = (haa * gb - hba * ga) / det
        da = (hbb * ga - hba * gb) / det
        ok = jnp.isfinite(db) & jnp.isfinite(da)
        db, da = jnp.where(ok, db, 0.0), jnp.where(ok, da, 0.0)
        f0 = _item_objective(b, la, r0, r1, n, nodes)
        trial = jax.vmap(lambda t: _item_objective(b - t * db, la - t * da, r0, r1, n,
                                                   nodes))(steps)
        good = jnp.isfinite(trial) & (trial <= f0 + 1e-12 * jnp.abs(f0))
        t = steps[jnp.argmax(good, axis=0)]  # the first good one; the last (0) always is
        return (b - t * db, la - t * da), None

    (b, la), _ = jax.lax.scan(one, (b, la), None, length=newton_steps)
    return b, la


@jax.jit
def _expand(b, la, mom):
    """The parameter-expanded step (Liu, Rubin and Wu 1998, "Parameter expansion to accelerate
    EM: the PX-EM algorithm"): in the complete data the abilities are ``N(mu, sigma^2)`` and the
    items ``(b*, a*)`` those just fitted on the nodes; the observed data see only
    ``a = a* sigma``, ``b = (b* - mu) / sigma``. ``(mu, log sigma)`` maximise the abilities'
    expected complete-data log-likelihood plus the items' priors at the reduced ``(b, log a)``,
    ``-S log sigma - (S2 - 2 mu S1 + S mu^2 + sum_j (b*_j - mu)^2 / 9) / (2 sigma^2)
    - sum_j (log a*_j + log sigma)^2 / 2`` (``S, S1, S2`` in ``mom``: the count and the sums of
    ``E[theta]`` and ``E[theta^2]``): ``mu = (S1 + sum b* / 9) / (S + J / 9)``, and
    ``log sigma`` the root of the decreasing ``-S + A sigma^-2 - sum_j (log a*_j + log sigma)``
    (Newton steps; ``A`` the bracket above at ``mu``). Without the priors: the mean and
    variance of the abilities. It moves the common location and scale of all items at once, the
    direction plain EM creeps along when each subject answers many items. It treats the
    abilities as continuous, so on a grid coarser than the posteriors it is no ascent step of
    the quadrature's likelihood (:func:`_scale_em` uses it only in its first steps)."""
    count, s1, s2 = mom[0], mom[1], mom[2]
    n_items = b.shape[0]
    mu = (s1 + jnp.sum(b) / 9.0) / (count + n_items / 9.0)
    big_a = s2 - 2.0 * mu * s1 + count * mu**2 + jnp.sum((b - mu) ** 2) / 9.0
    sum_la = jnp.sum(la)

    def newton(ls, _):
        g = -count + big_a * jnp.exp(-2.0 * ls) - sum_la - n_items * ls
        h = -2.0 * big_a * jnp.exp(-2.0 * ls) - n_items
        return ls - g / h, None

    # the root function is decreasing and convex: after the first Newton step every iterate
    # lies at or left of the root and they rise to it
    ls, _ = jax.lax.scan(newton, jnp.zeros((), b.dtype), None, length=30)
    ok = jnp.isfinite(ls) & jnp.isfinite(mu) & (count > 0)
    ls, mu = jnp.where(ok, ls, 0.0), jnp.where(ok, mu, 0.0)
    return (b - mu) * jnp.exp(-ls), la + ls


def _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps, max_iter, tol, mesh):
    """Plain EM steps ``F`` accelerated by squared extrapolation (SQUAREM; Varadhan and Roland
    2008, "Simple and globally convergent methods for accelerating the convergence of any EM
    algorithm"), as :func:`~platinum_jax.inference.fit_marginal` does: from ``x0``,
    ``x1 = F(x0)`` and ``x2 = F(x1)`` give ``r = x1 - x0``, ``v = x2 - 2 x1 + x0`` and the point
    ``x' = x0 - 2 alpha r + alpha^2 v``, ``alpha = -|r| / |v|`` in ``[-step_max, -1]``;
    ``F(x')`` is kept when the objective at ``x'`` is no worse than at ``x0``, else ``x2``.
    Stops when the plain EM step from ``x0`` moves no parameter more than ``tol``.
    Returns ``(b, log a, EM steps, last change, log-likelihood at the end)``."""
    def em(b, la):
        r1, n, ll, _, _ = _e_pass(blocks, jnp.exp(la), b, x, log_w, cdt, mesh)
        return _m_step(b, la, r0, r1, n, x, newton_steps), _objective(ll, b, la), float(ll)

    def dist(u, w):
        return float(jnp.maximum(jnp.max(jnp.abs(u[0] - w[0])), jnp.max(jnp.abs(u[1] - w[1]))))

    x0, it, step_max, change, ll = (b, la), 0, 1.0, np.inf, np.nan
    while it < max_iter:
        x1, f0, ll = em(*x0)
        it += 1
        change = dist(x1, x0)
        if change <= tol or it >= max_iter:
            x0 = x1
            break
        x2, _, _ = em(*x1)
        it += 1
        r = (x1[0] - x0[0], x1[1] - x0[1])
        v = (x2[0] - 2 * x1[0] + x0[0], x2[1] - 2 * x1[1] + x0[1])
        rr = float(jnp.sum(r[0] ** 2) + jnp.sum(r[1] ** 2))
        vv = float(jnp.sum(v[0] ** 2) + jnp.sum(v[1] ** 2))
        alpha = min(-1.0, max(-step_max, -np.sqrt(rr / vv) if vv > 0 else -1.0))
        xp = tuple(x0[k] - 2 * alpha * r[k] + alpha**2 * v[k] for k in range(2))
        if it >= max_iter:
            x0 = tuple(x2)
            break
        fx, fp, _ = em(*xp)
        it += 1
        if np.isfinite(fp) and fp <= f0 and all(bool(jnp.all(jnp.isfinite(u))) for u in fx):
            x0 = tuple(fx)
            step_max = 4.0 * step_max if alpha <= -step_max else step_max
        else:
            x0 = tuple(x2)
            step_max = max(1.0, step_max / 4.0)
    return x0[0], x0[1], it, change, ll


def _objective(ll, b, la):
    """Minus the marginal log-likelihood plus the priors ``b ~ N(0, 9)``, ``log a ~ N(0, 1)``."""
    return float(-ll + jnp.sum(b**2 / 18.0 + la**2 / 2.0))


@jax.jit
def _scale_step(b, la, em_b, em_la, r0, r1, n, cov, nodes):
    """The move ``(mu, log s)`` along the orbit ``b -> (b - mu) / s``, ``log a -> log a + log s``
    that still remains after the EM step ``(b, la) -> (em_b, em_la)``.

    At ``(b, la)``, with ``theta_q -> mu + s theta_q``: the gradient of the marginal
    log-likelihood is ``(sum_j a_j (r0_j - sum_q n_jq p_jq), sum_j a_j (r1_j - sum_q n_jq p_jq
    theta_q))`` (Fisher's identity) and its Hessian ``-sum_jq a_j^2 n_jq p_jq (1 - p_jq)
    [[1, theta_q], [theta_q, theta_q^2]]`` plus ``cov`` (Louis's identity), taken to
    ``log s`` by the chain rule; the priors' terms are in closed form. The Newton step of the
    objective (with the absolute values of the Hessian's eigenvalues where one is negative,
    which runs downhill along it) is then less the orbit's share of the EM step (its
    least-squares coordinates on the orbit's tangents ``(-1, 0)`` and ``(-b, 1)`` per item).
    Returns the step, whether it is finite, and whether the objective is convex there."""
    a = jnp.exp(la)
    p = jax.nn.sigmoid(a[:, None] * (nodes[None, :] - b[:, None]))
    npq = n * p
    g_mu = jnp.sum(a * (r0 - jnp.sum(npq, axis=1)))
    g_s = jnp.sum(a * (r1 - npq @ nodes))
    v = (a**2)[:, None] * npq * (1.0 - p)
    h_mm = -jnp.sum(v) + cov[0]
    h_ms = -jnp.sum(v @ nodes) + cov[1]
    h_ss = -jnp.sum(v @ nodes**2) + cov[2] + g_s  # d2/d(log s)^2 = d2/ds2 + d/ds at s = 1
    n_items = b.shape[0]
    sb, sbb = jnp.sum(b), jnp.sum(b**2)
    # objective = -loglik + sum ((b - mu) / s)^2 / 18 + sum (log a + log s)^2 / 2
    grad = jnp.stack([-g_mu - sb / 9.0, -g_s - sbb / 9.0 + jnp.sum(la)])
    prior = jnp.stack([jnp.stack([n_items / 9.0, 2.0 * sb / 9.0]),
                       jnp.stack([2.0 * sb / 9.0, 2.0 * sbb / 9.0 + n_items])])
    hess = prior - jnp.stack([jnp.stack([h_mm, h_ms]), jnp.stack([h_ms, h_ss])])
    # Newton's step where the objective is convex along the orbit; elsewhere the same with
    # the curvatures' absolute values (the step then runs downhill along a negative one)
    curv, vec = jnp.linalg.eigh(hess)
    convex = curv[0] > 0
    size = jnp.maximum(jnp.abs(curv), 1e-6 * jnp.max(jnp.abs(curv)))
    newton = -vec @ ((vec.T @ grad) / size)
    ok = jnp.all(jnp.isfinite(newton))
    gram = jnp.stack([jnp.stack([n_items, sb]), jnp.stack([sb, sbb + n_items])])
    db, dla = em_b - b, em_la - la
    done = jnp.linalg.solve(gram, jnp.stack([-jnp.sum(db), -(b @ db) + jnp.sum(dla)]))
    return jnp.where(ok, newton - done, 0.0), ok, convex


def _move(b, la, step):
    """``(b, log a)`` moved along the orbit by ``step = (mu, log s)``."""
    return (b - step[0]) * jnp.exp(-step[1]), la + step[1]


def _scale_em(blocks, b, la, r0, x, log_w, cdt, newton_steps, max_iter, tol, mesh,
              expanded=True):
    """EM steps each followed by the scale step (:func:`_scale_step`), one pass over the data
    each, its length limited to a trust region in ``(mu, log s)`` (doubled after a kept step,
    quartered after a replaced one). Where the objective is not convex along the orbit, the
    first steps take the parameter-expanded step (:func:`_expand`, with ``expanded``) instead,
    until the objective first rises. A point whose objective is worse than that of the point
    before it (by more than the products' rounding) is replaced by that point's plain EM step,
    which never is. Stops when a step that is not an expanded one moves no parameter more than
    ``tol``.
    Returns ``(b, log a, passes, last change, log-likelihood at the end, (scale steps,
    expanded steps, steps replaced))``."""
    def dist(u, w):
        return float(jnp.maximum(jnp.max(jnp.abs(u[0] - w[0])), jnp.max(jnp.abs(u[1] - w[1]))))

    # the objective's rounding: float32 products round each subject's log-likelihood at ~1e-7
    slack = 1e-7 if cdt == jnp.float32 else 1e-11
    point, fallback, f_ref = (b, la), None, np.inf
    it, change, ll, px = 0, np.inf, np.nan, expanded
    radius, last = 0.05, None  # a trust region for the scale step, in (mu, log s)
    counts = {"scale_steps": 0, "expanded_steps": 0, "steps_replaced": 0}
    while it < max_iter:
        r1, n, ll_here, mom, cov = _e_pass(blocks, jnp.exp(point[1]), point[0], x, log_w,
                                           cdt, mesh, scale=True)
        it += 1
        f = _objective(ll_here, *point)
        if fallback is not None and not f <= f_ref + slack * abs(f_ref):
            point, fallback = fallback, None
            if last == "scale_steps":
                radius /= 4.0
            else:
                px = False
            counts["steps_replaced"] += 1
            continue
        ll, f_ref = ll_here, f
        em = _m_step(point[0], point[1], r0, r1, n, x, newton_steps)
        step, ok, convex = _scale_step(point[0], point[1], em[0], em[1], r0, r1, n, cov, x)
        if last == "scale_steps" and fallback is not None:
            radius = min(1.0, 2.0 * radius)  # the last one was kept
        if px and not bool(convex):
            new, kind = _expand(*em, mom), "expanded_steps"
        elif bool(ok):
            step = step * min(1.0, radius / max(float(jnp.max(jnp.abs(step))), 1e-300))
            new, kind = _move(em[0], em[1], step), "scale_steps"
        else:
            new, kind = em, None
        change = dist(new, point)
        fallback, point, last = em, new, kind
        if kind:
            counts[kind] += 1
        if change <= tol:
            if kind != "expanded_steps":
                break
            point, px = em, False  # the expanded step's fixed point is not plain EM's
    return point[0], point[1], it, change, ll, counts
