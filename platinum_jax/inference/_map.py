"""Penalised MAP by Levenberg-Marquardt on the bipartite subject-item structure, for any model.

Each response row depends on one subject's parameters ``s``, one item's ``i`` and the globals
``g``. With ``z = (mu, likelihood globals)`` the row's outputs and ``l(z)`` its loss, the
generalised Gauss-Newton matrix of the objective is ``sum_rows J^T H_z J`` (``H_z`` the
row loss's Hessian in ``z``, projected onto the positive semi-definite cone) plus the exact
Hessian of the penalties. It is block-sparse: block-diagonal over subjects, block-diagonal
over items, dense only between a subject and the items it answered and with the globals.

The solver eliminates the larger side (one small Cholesky per subject or per item) and solves
the Schur complement of the smaller side and the globals densely, so an iteration costs
``O(rows)`` plus a dense solve of the smaller side. For the Rosetta model (one capability per
model, two parameters per benchmark) this is the Gauss-Newton system of the paper's least
squares exactly; for Bernoulli and Binomial likelihoods it is Fisher scoring.

Damping follows Nielsen's rule (Madsen, Nielsen and Tingleff, "Methods for non-linear least
squares problems", 2004): a step is taken when it lowers the objective, and the damping shrinks
by the gain ratio or doubles after a rejection.
"""

from __future__ import annotations

import functools
import inspect
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve

from platinum_jax._programs import kept_program

from ._dense import _psd, _spd_solve
from ._problem import Data, Problem, Theta

__all__ = ["MAPResult", "solve_map", "gauss_newton_system"]


class MAPResult(NamedTuple):
    """Output of :func:`solve_map` (a pytree, so it vmaps)."""

    theta: Theta
    objective: jax.Array
    converged: jax.Array
    iterations: jax.Array
    gradient_norm: jax.Array


class _System(NamedTuple):
    cost: jax.Array
    gS: jax.Array  # (S, ps)
    gI: jax.Array  # (I, pi)
    gG: jax.Array  # (G,)
    HSS: jax.Array  # (S, ps, ps)
    HII: jax.Array  # (I, pi, pi)
    HGG: jax.Array  # (G, G)
    HSI: jax.Array  # (S, I, ps, pi)
    HSG: jax.Array  # (S, ps, G)
    HIG: jax.Array  # (I, pi, G)


def gauss_newton_system(problem: Problem, theta: Theta, data: Data,
                        curvature: str = "gauss-newton", penalty_scale=1.0) -> _System:
    """Objective, gradient and curvature blocks at ``theta`` (masked: fixed entries have zero
    gradient and identity curvature). ``curvature``: ``"gauss-newton"`` (the generalised
    Gauss-Newton matrix, positive semi-definite) or ``"newton"`` (each row's exact Hessian;
    the damping keeps steps safe where the sum is indefinite). ``penalty_scale`` multiplies
    every penalty (a traced scalar is fine; see :func:`solve_map`)."""
    S, I, G = theta  # noqa: E741
    n_s, n_i = S.shape[0], I.shape[0]
    n_lik = problem.glob.size - sum(p.size for _, p in problem.glob.decl[: problem.n_model_globals])

    # the mean may be a vector (category log-probabilities): z = (mu flattened, likelihood globals)
    mu_shape = jax.eval_shape(problem.mean, S[0], I[0], G).shape
    n_mu = max(1, int(np.prod(mu_shape)))

    def outputs(s, i, g):
        mu = problem.mean(s, i, g)
        return jnp.concatenate([jnp.reshape(mu, (n_mu,)), g[g.shape[0] - n_lik:]])

    def loss_z(z, y, n):
        lik = problem.glob.unflatten(jnp.concatenate([jnp.zeros(G.shape[0] - n_lik, z.dtype),
                                                      z[n_mu:]]))
        lik = {k: lik[k] for k in problem.glob.names[problem.n_model_globals:]}
        return problem.model.likelihood.loss(y, jnp.reshape(z[:n_mu], mu_shape), n, lik)

    ps, pi_ = S.shape[1], I.shape[1]

    def per_row_newton(s, i, y, n, w):
        x = jnp.concatenate([s, i, G])
        fun = lambda x: problem.row_loss(x[:ps], x[ps:ps + pi_], x[ps + pi_:], y, n)  # noqa: E731
        loss, gr = jax.value_and_grad(fun)(x)
        h = jax.hessian(fun)(x) * w
        gr = gr * w
        a, b = ps, ps + pi_
        return (w * loss, gr[:a], gr[a:b], gr[b:], h[:a, :a], h[a:b, a:b], h[b:, b:],
                h[:a, a:b], h[:a, b:], h[a:b, b:])

    def per_row(s, i, y, n, w):
        (js, ji, jg), z = jax.jacfwd(lambda a, b, c: (outputs(a, b, c),) * 2, argnums=(0, 1, 2),
                                     has_aux=True)(s, i, G)
        loss, gz = jax.value_and_grad(loss_z)(z, y, n)
        hz = _psd(jax.hessian(loss_z)(z, y, n)) * w
        gz = gz * w
        hjs, hji, hjg = hz @ js, hz @ ji, hz @ jg
        return (w * loss, js.T @ gz, ji.T @ gz, jg.T @ gz, js.T @ hjs, ji.T @ hji, jg.T @ hjg,
                js.T @ hji, js.T @ hjg, ji.T @ hjg)

    row_fn = per_row_newton if curvature == "newton" else per_row
    out = jax.vmap(row_fn)(S[data.subject_index], I[data.item_index], data.response,
                            data.trials, data.weight)
    loss, gs, gi, gg, hss, hii, hgg, hsi, hsg, hig = out
    si, ii = data.subject_index, data.item_index
    seg = functools.partial(jax.ops.segment_sum, indices_are_sorted=False)
    gS, HSS, HSG = seg(gs, si, n_s), seg(hss, si, n_s), seg(hsg, si, n_s)
    gI, HII, HIG = seg(gi, ii, n_i), seg(hii, ii, n_i), seg(hig, ii, n_i)
    gG, HGG = jnp.sum(gg, 0), jnp.sum(hgg, 0)
    # one flat segment sum (a 1-D scatter) rather than a 2-D scatter: much faster under vmap
    HSI = seg(hsi.reshape(hsi.shape[0], -1), si * n_i + ii, n_s * n_i).reshape(
        n_s, n_i, S.shape[1], I.shape[1])
    cost = jnp.sum(loss)

    # Penalties: exact gradient and Hessian over (own block, globals).
    def pen_blocks(fn, rows, free):
        p = rows.shape[1]

        def one(r, f):
            x = jnp.concatenate([r, G])
            fun = lambda x: fn(x[:p], f, x[p:])  # noqa: E731
            return fun(x), jax.grad(fun)(x), jax.hessian(fun)(x)

        v, gr, h = jax.vmap(one)(rows, jnp.asarray(free))
        v, gr, h = v * penalty_scale, gr * penalty_scale, h * penalty_scale
        return jnp.sum(v), gr[:, :p], gr[:, p:].sum(0), h[:, :p, :p], h[:, :p, p:], \
            h[:, p:, p:].sum(0)

    v, g1, g2, h11, h12, h22 = pen_blocks(problem.subject_penalty, S, problem.free_S)
    cost, gS, gG, HSS, HSG, HGG = cost + v, gS + g1, gG + g2, HSS + h11, HSG + h12, HGG + h22
    v, g1, g2, h11, h12, h22 = pen_blocks(problem.item_penalty, I, problem.free_I)
    cost, gI, gG, HII, HIG, HGG = cost + v, gI + g1, gG + g2, HII + h11, HIG + h12, HGG + h22
    cost = cost + penalty_scale * problem.global_penalty(G)
    gG = gG + penalty_scale * jax.grad(problem.global_penalty)(G)
    HGG = HGG + penalty_scale * jax.hessian(problem.global_penalty)(G)

    # Fixed entries: no gradient, identity curvature, no coupling.
    fS = jnp.asarray(problem.free_S, S.dtype)
    fI = jnp.asarray(problem.free_I, S.dtype)
    fG = jnp.asarray(problem.free_G, S.dtype)

    def mask_sq(h, f):
        return h * f[..., :, None] * f[..., None, :] + jax.vmap(jnp.diag)(1.0 - f) \
            if h.ndim == 3 else h * jnp.outer(f, f) + jnp.diag(1.0 - f)

    return _System(
        cost,
        gS * fS, gI * fI, gG * fG,
        mask_sq(HSS, fS), mask_sq(HII, fI), mask_sq(HGG, fG),
        HSI * fS[:, None, :, None] * fI[None, :, None, :],
        HSG * fS[:, :, None] * fG[None, None, :],
        HIG * fI[:, :, None] * fG[None, None, :],
    )


def _block_diag(blocks):
    n, p, _ = blocks.shape
    eye = jnp.eye(n, dtype=blocks.dtype)
    return jnp.einsum("ij,iab->iajb", eye, blocks).reshape(n * p, n * p)


def _solve(sys: _System, damping, free, eliminate: str):
    """Solve ``(H + damping * diag(free)) delta = g`` by eliminating one side; returns the step
    blocks and whether the dense factorisation succeeded."""
    fS, fI, fG = free
    HSS = sys.HSS + damping * jax.vmap(jnp.diag)(fS)
    HII = sys.HII + damping * jax.vmap(jnp.diag)(fI)
    HGG = sys.HGG + damping * jnp.diag(fG)
    if eliminate == "subjects":
        HEE, gE, HKK_side, gK_side, HEG, HKG = HSS, sys.gS, HII, sys.gI, sys.HSG, sys.HIG
        HEK_side = sys.HSI  # (E, K, pe, pk)
    else:
        HEE, gE, HKK_side, gK_side, HEG, HKG = HII, sys.gI, HSS, sys.gS, sys.HIG, sys.HSG
        HEK_side = jnp.transpose(sys.HSI, (1, 0, 3, 2))
    n_e, n_k, pe, pk = HEK_side.shape
    n_g = HGG.shape[0]
    HEK = jnp.concatenate(
        [jnp.transpose(HEK_side, (0, 2, 1, 3)).reshape(n_e, pe, n_k * pk), HEG], axis=2
    )
    top = jnp.concatenate([_block_diag(HKK_side), HKG.reshape(n_k * pk, n_g)], axis=1)
    bottom = jnp.concatenate([HKG.reshape(n_k * pk, n_g).T, HGG], axis=1)
    HKK = jnp.concatenate([top, bottom], axis=0)
    gK = jnp.concatenate([gK_side.reshape(-1), sys.gG])

    if pe == 1:
        # One parameter per entity (a capability, an ability): divide instead of thousands of
        # 1 x 1 Cholesky factorisations, which dominate the step when the solver is vmapped.
        h = HEE[:, 0, 0]
        inv = jnp.where(h > 0, 1.0 / jnp.where(h > 0, h, 1.0), jnp.nan)
        X = HEK * inv[:, None, None]  # (E, 1, K)
        xg = gE * inv[:, None]  # (E, 1)
    else:
        chol_e = jnp.linalg.cholesky(HEE)
        solve_e = jax.vmap(lambda c, b: cho_solve((c, True), b))
        X = solve_e(chol_e, HEK)  # (E, pe, K)
        xg = solve_e(chol_e, gE[..., None])[..., 0]  # (E, pe)
    schur = HKK - jnp.einsum("epk,epl->kl", HEK, X)
    rhs = gK - jnp.einsum("epk,ep->k", HEK, xg)
    dK = _spd_solve(schur, rhs)
    dE = xg - jnp.einsum("epk,k->ep", X, dK)
    ok = jnp.all(jnp.isfinite(dK)) & jnp.all(jnp.isfinite(dE))
    dK_side = dK[: n_k * pk].reshape(n_k, pk)
    dG = dK[n_k * pk:]
    if eliminate == "subjects":
        return (dE, dK_side, dG), ok
    return (dK_side, dE, dG), ok


def solve_map(
    problem: Problem,
    theta0: Theta,
    data: Data,
    *,
    max_steps: int = 1000,
    gtol: float = 1e-9,
    ftol: float = 1e-13,
    xtol: float = 1e-12,
    curvature: str = "auto",
    penalty_scale=1.0,
) -> MAPResult:
    """Minimise :meth:`Problem.objective` from ``theta0`` (jittable and vmappable over
    ``theta0``, ``data`` and ``penalty_scale``; ``problem`` is closed over, so build the jitted
    function once per problem with :func:`map_solver`).

    ``curvature``: ``"gauss-newton"``, ``"newton"`` or ``"auto"`` (Gauss-Newton for least
    squares, i.e. a Gaussian likelihood, where it is the classic choice; Newton otherwise,
    where the Fisher matrix of a bilinear predictor such as ``a_i (theta_s - b_i)`` converges
    only linearly).

    ``penalty_scale`` (a number or a traced scalar, >= 0) multiplies every penalty of the
    objective, e.g. the Rosetta model's L2 strength ``lambda`` becomes ``penalty_scale *
    lambda``: refits over a grid of strengths, or with a strength that depends on the data,
    vmap over it with one compiled program. The data weights ``data.weight`` mask rows (0 =
    left out) and ``theta0`` may be any start (warm starts), so refits that vary all three run
    under :func:`jax.vmap`. ``max_steps`` is a static cap on the iterations: under
    :func:`jax.vmap` the loop runs until every member has stopped or the cap is reached."""
    if curvature == "auto":
        from platinum_jax.models import Gaussian

        curvature = "gauss-newton" if isinstance(problem.model.likelihood, Gaussian) else "newton"
    if curvature not in ("gauss-newton", "newton"):
        raise ValueError(f"curvature must be 'auto', 'gauss-newton' or 'newton' (got {curvature!r})")
    free = tuple(jnp.asarray(f, theta0[0].dtype)
                 for f in (problem.free_S, problem.free_I, problem.free_G))
    dtype = theta0[0].dtype

    def cond(state):
        return (~state["done"]) & (state["step"] < max_steps)

    def body(state):
        theta = state["theta"]
        sys = gauss_newton_system(problem, theta, data, curvature, penalty_scale)
        diag_max = jnp.maximum(
            jnp.max(jnp.concatenate([jnp.diagonal(sys.HSS, axis1=1, axis2=2).ravel(),
                                     jnp.diagonal(sys.HII, axis1=1, axis2=2).ravel(),
                                     jnp.diag(sys.HGG)])), 1e-12)
        mu = jnp.where(state["mu"] < 0, 1e-3 * diag_max, state["mu"])
        (dS, dI, dG), ok = _solve(sys, mu, free, problem.eliminate)
        new = Theta(theta[0] - dS, theta[1] - dI, theta[2] - dG)
        new_cost = problem.objective(new, data, penalty_scale)
        gnorm = jnp.max(jnp.abs(jnp.concatenate([sys.gS.ravel(), sys.gI.ravel(), sys.gG])))
        step_vec = jnp.concatenate([dS.ravel(), dI.ravel(), dG.ravel()])
        predicted = 0.5 * (mu * jnp.sum(step_vec**2) + jnp.sum(
            jnp.concatenate([sys.gS.ravel(), sys.gI.ravel(), sys.gG]) * step_vec))
        gain = (sys.cost - new_cost) / jnp.maximum(predicted, 1e-300)
        accept = ok & jnp.isfinite(new_cost) & (new_cost <= sys.cost)
        theta_next = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, b, a), theta, new)
        mu_next = jnp.where(accept, mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3),
                            mu * state["nu"])
        nu_next = jnp.where(accept, 2.0, 2.0 * state["nu"])
        theta_scale = jnp.max(jnp.abs(jnp.concatenate([t.ravel() for t in theta])))
        small_grad = gnorm <= gtol
        # Relative to |cost|: a Gaussian likelihood with a free noise has a negative objective.
        floor = ftol * jnp.maximum(jnp.abs(sys.cost), 1e-300)
        # A rejected step converges too when both its actual and its predicted change are
        # under ftol (MINPACK's rule): at the minimum the cost's rounding can refuse every step.
        small_gain = (accept & ((sys.cost - new_cost) <= floor)) | (
            ok & jnp.isfinite(new_cost) & (jnp.abs(sys.cost - new_cost) <= floor)
            & (predicted <= floor))
        small_step = accept & (jnp.max(jnp.abs(step_vec)) <= xtol * (theta_scale + xtol))
        stuck = mu_next > 1e16 * diag_max
        done = small_grad | small_gain | small_step | stuck
        return {
            "theta": theta_next,
            "cost": jnp.where(accept, new_cost, sys.cost),
            "mu": mu_next,
            "nu": nu_next,
            "step": state["step"] + 1,
            "done": done,
            "converged": small_grad | small_gain | small_step,
            "gnorm": gnorm,
        }

    state = {
        "theta": theta0,
        "cost": jnp.asarray(jnp.inf, dtype),
        "mu": jnp.asarray(-1.0, dtype),
        "nu": jnp.asarray(2.0, dtype),
        "step": jnp.asarray(0, jnp.int32),
        "done": jnp.asarray(False),
        "converged": jnp.asarray(False),
        "gnorm": jnp.asarray(jnp.inf, dtype),
    }
    out = jax.lax.while_loop(cond, body, state)
    final_cost = problem.objective(out["theta"], data, penalty_scale)
    return MAPResult(out["theta"], final_cost, out["converged"], out["step"], out["gnorm"])


# Jitted solvers by problem structure: refitting the same model to data of the same shape (a
# second fit in one process, a preset run twice) reuses the traced and compiled program.
_SOLVERS: dict = {}
_MAX_SOLVERS = 32


def _structure_key(problem: Problem, batched, compiler_options, options):
    """What the compiled solver depends on, or None when it cannot be keyed (a model with
    unhashable fields, e.g. arrays): the model, the data sizes and the fixed entries."""
    try:
        model_key = hash(problem.model)
    except TypeError:
        return None
    arrays = tuple((a.shape, a.dtype.str, a.tobytes()) for a in (
        problem.free_S, problem.free_I, problem.free_G,
        problem.init_S, problem.init_I, problem.init_G))
    return (type(problem.model), model_key, problem.model, problem.info, str(problem.dtype),
            arrays, batched, tuple(sorted((compiler_options or {}).items())),
            tuple(sorted(options.items())))


def per_structure(cache: dict, problem: Problem, tag, build, *, compiler_options=None,
                  options: dict | None = None, limit: int = _MAX_SOLVERS, keep=None):
    """``build(bare)``, a compiled program for ``problem``, kept in ``cache`` by problem
    structure (:func:`_structure_key` with ``tag``), so a second call for an equal problem
    returns the same program. ``bare`` is ``problem`` without its table: a kept program holds
    no table alive and reads its rows from an argument. ``keep`` wraps a program before it is
    kept; once ``limit`` are kept the oldest goes. A structure that cannot be hashed (a model
    with array fields, an unhashable option) is built afresh every time."""
    try:
        key = _structure_key(problem, tag, compiler_options, options or {})
        hash(key)
    except TypeError:
        key = None
    return kept_program(cache, key, problem, build, limit=limit, keep=keep)


_PLAIN = (bool, int, float, str, type(None), np.bool_, np.integer, np.floating)


def _plain(x) -> bool:
    """Whether ``repr(x)`` pins ``x``'s value: numbers, strings, and tuples and dataclasses
    (an anchor) of them."""
    import dataclasses

    if isinstance(x, _PLAIN):
        return True
    if isinstance(x, tuple):
        return all(_plain(v) for v in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return all(_plain(getattr(x, f.name)) for f in dataclasses.fields(x))
    return False


def _disk_key(problem: Problem, batched, compiler_options, options) -> str | None:
    """The structure key as text that means the same in every process, or None when the model
    holds anything but plain numbers and strings (an array, a function), whose text would not
    pin its value. The model class's own source file is hashed in, for models defined outside
    the package."""
    import hashlib
    import inspect

    leaves, tree = jax.tree_util.tree_flatten(problem.model)
    if not all(_plain(leaf) for leaf in leaves):
        return None
    cls = type(problem.model)
    try:
        source = hashlib.sha256(inspect.getsource(inspect.getmodule(cls))).hexdigest() \
            if not cls.__module__.startswith("platinum_jax.") else "package"
    except (OSError, TypeError):
        return None
    digest = hashlib.sha256()
    for a in (problem.free_S, problem.free_I, problem.free_G,
              problem.init_S, problem.init_I, problem.init_G):
        a = np.asarray(a)
        digest.update(f"{a.shape}{a.dtype.str}".encode())
        digest.update(a.tobytes())
    return "\n".join([
        f"solver map {cls.__module__}.{cls.__qualname__} ({source})",
        f"model {tree} {[repr(leaf) for leaf in leaves]}",
        f"info {problem.info} dtype {problem.dtype} eliminate {problem.eliminate}",
        f"entries {digest.hexdigest()}",
        f"batched {batched} compiler {sorted((compiler_options or {}).items())}",
        f"options {sorted(options.items())}",
    ])


# The keyword options of solve_map, read from its signature so the two cannot drift apart.
_SOLVER_OPTIONS = frozenset(
    name for name, prm in inspect.signature(solve_map).parameters.items()
    if prm.kind is inspect.Parameter.KEYWORD_ONLY)


def map_solver(problem: Problem, *, batched: str | None = None,
               compiler_options: dict | None = None, **options):
    """A jitted ``(theta0, data) -> MAPResult`` for ``problem``; ``batched`` = ``"theta"``
    (restarts), ``"data"`` (bootstrap, cross-validation) or None. ``compiler_options`` go to
    :func:`jax.jit` (e.g. ``{"xla_backend_optimization_level": 0}`` compiles a one-off fit
    about twice as fast and runs it about twice as slowly: a gain when compiling dominates).

    Solvers are kept by problem structure (model, sizes, fixed entries, options), so a second
    call for an equal problem returns the same compiled function. The kept solver never sees
    the problem's table: its data always come in as the ``data`` argument."""
    unknown = sorted(set(options) - _SOLVER_OPTIONS)
    if unknown:
        raise TypeError(f"unknown solver option(s) {unknown}; the Levenberg-Marquardt solver "
                        f"takes {sorted(_SOLVER_OPTIONS)} as keywords")
    from platinum_jax._runtime import disk_cached, executables_directory

    def build(bare):
        fn = functools.partial(solve_map, bare, **options)
        if batched == "theta":
            fn = jax.vmap(fn, in_axes=(0, None))
        elif batched == "data":
            fn = jax.vmap(fn, in_axes=(None, Data(None, None, None, None, 0)))
        return jax.jit(fn, compiler_options=compiler_options)

    def keep(fn):
        # Kept in memory whether or not the disk cache is on (a library session, a test run).
        if executables_directory() is None:
            return fn
        return disk_cached(fn, _disk_key(problem, batched, compiler_options, options))

    return per_structure(_SOLVERS, problem, batched, build, compiler_options=compiler_options,
                         options=options, keep=keep)
