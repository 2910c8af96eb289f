"""A NUTS warm-up that adapts the mass matrix from draws *and* gradients, for a potential
``U(x)`` of a flat unconstrained vector ``x``; the trajectories are NumPyro's own NUTS.

Why. Stan's windowed warm-up (NumPyro's default) estimates the inverse mass matrix from the
draws of windows of 25-200 iterations; a dense estimate in a few hundred dimensions from so few
draws is rank-deficient, and until it is good the trees run to the depth limit. Here the
estimate uses both the draws and the gradients at the draws, and is refreshed every iteration.

Diagonal (the Fisher-divergence estimate). For a Gaussian posterior with covariance Sigma the
gradient of U at a draw is ``g = Sigma^-1 (x - mu)``, so ``Cov(g) = Sigma^-1``. The affine map
``x -> mu + sqrt(sigma) * y`` that minimises the Fisher divergence between the scaled posterior
and a standard normal, restricted to diagonal ``sigma``, gives

    M^-1_ii = sigma_i = sqrt(Var(x_i) / Var(g_i)),

exact for a Gaussian with diagonal covariance, and for a correlated one the geometric mean of
the two one-sided estimates ``Var(x_i)`` (too large) and ``1 / Var(g_i)`` (too small). The first
draw has no variance yet, so the start is ``sigma_i = 1 / |g_i|`` (clipped): on a Gaussian with
sd s at a point about one sd out, ``|g| ~ 1 / s``.

Low rank (option). With ``D = diag(sigma)`` and the scaled draws ``D^-1/2 (x - mean)`` and
gradients ``D^1/2 (g - mean)``, the full Fisher-divergence estimate of the scaled covariance is
the SPD geometric mean ``A # B^-1`` of their covariances A and B, computed in the subspace their
columns span (:func:`lowrank_estimate`). Its eigenvectors whose eigenvalue lies outside
``[1/c, c]`` (and on which the draws and the gradients each agree) correct the diagonal:

    M^-1 = D^1/2 (I + U (Lambda - 1) U^T) D^1/2,  U orthonormal (d x r).

NumPyro's kernel is handed that as a dense matrix, with a square root S of the mass matrix,
``S S^T = M = D^-1/2 (I + U (Lambda^-1 - 1) U^T) D^-1/2``, i.e.
``S = D^-1/2 (I + U (Lambda^-1/2 - 1) U^T)``: no Cholesky factorisation needed.

Schedule (after nutpie). Two running estimators: the foreground one gives the mass matrix,
every draw; the background one collects too, and every ``switch_freq`` iterations
(``early_switch_freq`` during the first ``early_window`` of the warm-up) it becomes the
foreground and a fresh background starts, so the estimate forgets the draws from before the
chain reached the typical set. The last ``step_size_window`` of the warm-up keeps the mass fixed
and only adapts the step size. The step size follows dual averaging (Nesterov's, in Stan's
form) towards ``target_accept`` throughout, restarted by a doubling/halving search when the
first estimate replaces the gradient start; the sampling phase uses its averaged iterate.
Every decision depends only on the iteration number, so under ``vmap`` over chains the
branches stay ``lax.cond`` (not both-sides ``select``) and the linear algebra runs only when
its turn comes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["WarmupSettings", "AdaptState", "LowRankMap", "mass_forms", "lowrank_estimate",
           "dual_average", "step_size_search"]


@dataclass(frozen=True)
class WarmupSettings:
    """The warm-up's numbers (static: a change recompiles). The defaults are the ones that
    passed every run of the Rosetta convergence sweep (``benchmarks/bench_bayes_defaults.py --sweep``; with 600 warm-up
    iterations and 2,000 draws a chain): low rank; the Bayesian Rosetta model asks for target
    0.95 (at 0.9 two of 24 runs of its sweep had one divergent transition each).

    ``target_accept``: the dual averaging's target mean acceptance statistic.
    ``early_window``, ``step_size_window``: shares of the warm-up for the early phase (short
    estimator windows) and the final phase (mass fixed, step size only).
    ``switch_freq``, ``early_switch_freq``: iterations between estimator swaps.
    ``mass``: ``"diagonal"`` or ``"lowrank"``; ``lowrank_form``: ``"transform"`` (NumPyro's kernel
    keeps a diagonal mass and samples ``w`` with ``x = A w``, :class:`LowRankMap`, O(d r) a
    step) or ``"dense"`` (the d x d inverse mass handed to the kernel, O(d^2) a step);
    ``rank``, ``cutoff``, ``gamma``, ``buffer``,
    ``lowrank_every``: the low-rank correction's largest rank, eigenvalue band ``[1/c, c]``,
    regulariser, number of recent draws it reads and iterations between its updates.
    ``init_clip``: bounds of the gradient start ``1 / |g|``; ``clip``: bounds of the
    estimate. ``t0``, ``kappa``, ``gamma_da``: dual averaging (Hoffman and Gelman's defaults).
    """

    target_accept: float = 0.9
    max_tree_depth: int = 10
    early_window: float = 0.3
    step_size_window: float = 0.15
    switch_freq: int = 80
    early_switch_freq: int = 10
    mass: str = "lowrank"
    lowrank_form: str = "transform"
    rank: int = 16
    cutoff: float = 2.0
    gamma: float = 1e-3
    buffer: int = 160
    lowrank_every: int = 20
    init_step_size: float = 0.1
    init_clip: tuple = (1e-4, 1e4)
    clip: tuple = (1e-10, 1e10)
    t0: float = 10.0
    kappa: float = 0.75
    gamma_da: float = 0.05

    def __post_init__(self):
        if self.mass not in ("diagonal", "lowrank"):
            raise ValueError(f"mass must be 'diagonal' or 'lowrank', got {self.mass!r}")
        if self.lowrank_form not in ("transform", "dense"):
            raise ValueError(f"lowrank_form must be 'transform' or 'dense', got "
                             f"{self.lowrank_form!r}")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept}")


class Welford(NamedTuple):
    """Running mean and sum of squared deviations of the draws and the gradients (weights
    0/1: a divergent or non-finite draw counts for nothing)."""

    n: jax.Array
    mean_x: jax.Array
    m2_x: jax.Array
    mean_g: jax.Array
    m2_g: jax.Array

    @staticmethod
    def empty(d, dtype):
        z = jnp.zeros(d, dtype)
        return Welford(jnp.zeros((), dtype), z, z, z, z)

    def add(self, x, g, w):
        n = self.n + w
        safe = jnp.maximum(n, 1.0)
        dx, dg = x - self.mean_x, g - self.mean_g
        mean_x, mean_g = self.mean_x + w * dx / safe, self.mean_g + w * dg / safe
        return Welford(n, mean_x, self.m2_x + w * dx * (x - mean_x), mean_g,
                       self.m2_g + w * dg * (g - mean_g))

    def sigma(self, clip):
        # sqrt(Var x / Var g): the normalisations cancel; a zero variance falls to the clip
        return jnp.clip(jnp.sqrt(self.m2_x / jnp.maximum(self.m2_g, 1e-300)), *clip)


class DualAverage(NamedTuple):
    """Dual averaging of log step size: ``h_bar`` the mean of (target - accept), ``log_eps``
    the current iterate, ``log_eps_bar`` its weighted average, ``mu`` the prox centre."""

    t: jax.Array
    h_bar: jax.Array
    log_eps: jax.Array
    log_eps_bar: jax.Array
    mu: jax.Array

    @staticmethod
    def start(step_size, centre=10.0):
        z = jnp.zeros_like(step_size)
        # mu = log(10 eps) after a search, as in Stan: the iterates lean towards larger steps.
        # A warm start's step size is already adapted, so its centre is the step itself
        # (centre 1); with 10 the first iterates would try a step ten times too large
        return DualAverage(z, z, jnp.log(step_size), jnp.log(step_size),
                           jnp.log(centre * step_size))


def dual_average(da: DualAverage, accept, s: WarmupSettings) -> DualAverage:
    """One update: ``h_t = (1 - 1/(t+t0)) h_{t-1} + (delta - a_t)/(t+t0)``,
    ``log eps_t = mu - sqrt(t)/gamma h_t``, ``log eps_bar_t = t^-kappa log eps_t +
    (1 - t^-kappa) log eps_bar_{t-1}``."""
    accept = jnp.where(jnp.isfinite(accept), accept, 0.0)
    t = da.t + 1.0
    h = (1.0 - 1.0 / (t + s.t0)) * da.h_bar + (s.target_accept - accept) / (t + s.t0)
    log_eps = da.mu - jnp.sqrt(t) / s.gamma_da * h
    eta = t ** (-s.kappa)
    return DualAverage(t, h, log_eps, eta * log_eps + (1.0 - eta) * da.log_eps_bar, da.mu)


def mass_forms(sigma, u=None, lam=None):
    """``(inverse mass, mass sqrt S, S^-1)`` as NumPyro's kernel reads them: 1-D for a diagonal
    (``u`` None), dense for ``D^1/2 (I + U (Lambda - 1) U^T) D^1/2`` (module docstring)."""
    if u is None:
        root = jnp.sqrt(sigma)
        return sigma, 1.0 / root, root
    root = jnp.sqrt(sigma)
    eye = jnp.eye(sigma.shape[0], dtype=sigma.dtype)

    def inner(power):  # I + U (Lambda^power - 1) U^T
        return eye + (u * (lam ** power - 1.0)) @ u.T

    inv_mass = root[:, None] * inner(1.0) * root[None, :]
    sqrt_mass = inner(-0.5) / root[:, None]
    sqrt_inv = inner(0.5) * root[None, :]
    return inv_mass, sqrt_mass, sqrt_inv


class LowRankMap(NamedTuple):
    """``x = A w`` with ``A = D^1/2 R D^-1/2``, ``R = I + U (Lambda^1/2 - 1) U^T``: HMC on ``w``
    with the diagonal inverse mass D is HMC on ``x`` with ``M^-1 = A D A^T =
    D^1/2 (I + U (Lambda - 1) U^T) D^1/2`` (the dynamics are affine invariant), at O(d r) a
    gradient instead of O(d^2) a leapfrog step. ``p = D^1/2 U``, ``q = D^-1/2 U`` (so
    ``q^T p = I``), ``c = Lambda^1/2 - 1`` and ``ci = Lambda^-1/2 - 1`` (``(1+c)(1+ci) = 1``,
    which makes ``I + p ci q^T`` the inverse of ``A = I + p c q^T``)."""

    p: jax.Array
    q: jax.Array
    c: jax.Array
    ci: jax.Array

    @staticmethod
    def of(sigma, u, lam):
        root = jnp.sqrt(sigma)[:, None]
        return LowRankMap(root * u, u / root, jnp.sqrt(lam) - 1.0, 1.0 / jnp.sqrt(lam) - 1.0)

    def fwd(self, w):
        return w + self.p @ (self.c * (self.q.T @ w))

    def inv(self, x):
        return x + self.p @ (self.ci * (self.q.T @ x))

    def grad_x(self, g_w):
        # dU/dx = A^-T dU/dw
        return g_w + self.q @ (self.ci * (self.p.T @ g_w))

    def grad_w(self, g_x):
        # dU/dw = A^T dU/dx
        return g_x + self.q @ (self.c * (self.p.T @ g_x))


def _sym_fn(a, fn):
    w, v = jnp.linalg.eigh(a)
    return (v * fn(w)) @ v.T


def lowrank_estimate(xs, gs, w, s: WarmupSettings, clip):
    """The diagonal and low-rank parts from the buffered draws ``xs`` and gradients ``gs``
    ``(B, d)`` with weights ``w`` (0 for empty or excluded slots).

    1. ``sigma = sqrt(Var x / Var g)`` over the buffer; scale draws by ``sigma^-1/2``, gradients
       by ``sigma^1/2``.
    2. A basis Q of the span of both (eigenvectors of their Gram matrix; ``d`` x ``k`` with
       ``k = min(2B, d)``; when ``2B >= d`` the whole space, Q = I).
    3. In it, ``A = Q^T Cov(x) Q + gamma I``, ``B = Q^T Cov(g) Q + gamma I`` and the geometric
       mean ``A # B^-1 = B^-1/2 (B^1/2 A B^1/2)^1/2 B^-1/2``; directions outside the span get
       ``gamma`` in both and so eigenvalue 1 (no correction).
    4. Keep eigenvectors with eigenvalue beyond the band ``[1/c, c]`` on which the draws'
       variance and the gradients' inverse variance *each* lie beyond ``[c^-1/2, c^1/2]`` on the
       same side: with fewer draws than dimensions a direction the draws span but the
       gradients do not has a gradient variance of about 0 and a spurious large eigenvalue.
    5. The ``rank`` strongest (by ``|log lambda|``) become U; unused columns are zero with
       eigenvalue 1.
    """
    b, d = xs.shape
    n = jnp.maximum(w.sum(), 2.0)
    mx = (w[:, None] * xs).sum(0) / n
    mg = (w[:, None] * gs).sum(0) / n
    vx = (w[:, None] * (xs - mx) ** 2).sum(0)
    vg = (w[:, None] * (gs - mg) ** 2).sum(0)
    sigma = jnp.clip(jnp.sqrt(vx / jnp.maximum(vg, 1e-300)), *clip)
    root = jnp.sqrt(sigma)
    xsc = (xs - mx) / root * w[:, None]
    gsc = (gs - mg) * root * w[:, None]
    if 2 * b >= d:
        q = jnp.eye(d, dtype=xs.dtype)
    else:
        cols = jnp.concatenate([xsc, gsc])  # (2B, d)
        ev, vec = jnp.linalg.eigh(cols @ cols.T)
        keep = ev > 1e-10 * ev.max()
        q = (cols.T @ vec) * jnp.where(keep, 1.0 / jnp.sqrt(jnp.where(keep, ev, 1.0)), 0.0)
    xp, gp = xsc @ q, gsc @ q
    k = q.shape[1]
    eye = jnp.eye(k, dtype=xs.dtype)
    a = xp.T @ xp / n + s.gamma * eye
    bm = gp.T @ gp / n + s.gamma * eye
    b_half = _sym_fn(bm, jnp.sqrt)
    b_half_inv = _sym_fn(bm, lambda v: 1.0 / jnp.sqrt(v))
    mean = b_half_inv @ _sym_fn(b_half @ a @ b_half, lambda v: jnp.sqrt(jnp.maximum(v, 0.0))) \
        @ b_half_inv
    lam, vec = jnp.linalg.eigh(0.5 * (mean + mean.T))
    lam = jnp.maximum(lam, 1e-12)
    ax = jnp.einsum("ij,ik,kj->j", vec, a, vec)
    bx = jnp.einsum("ij,ik,kj->j", vec, bm, vec)
    c, h = s.cutoff, jnp.sqrt(s.cutoff)
    big = (lam > c) & (ax > h) & (1.0 / bx > h)
    small = (lam < 1.0 / c) & (ax < 1.0 / h) & (1.0 / bx < 1.0 / h)
    score = jnp.where(big | small, jnp.abs(jnp.log(lam)), -1.0)
    top, idx = jax.lax.top_k(score, s.rank)
    used = top > 0
    u = (q @ vec[:, idx]) * used
    # unit columns against round-off (Q is orthonormal to about 1e-8 when built from the Gram)
    u = u / jnp.maximum(jnp.linalg.norm(u, axis=0), 1e-300) * used
    return sigma, u, jnp.where(used, lam[idx], 1.0)


class AdaptState(NamedTuple):
    """The warm-up's state besides NumPyro's ``HMCState``."""

    fg: Welford
    bg: Welford
    since_switch: jax.Array  # iterations since the last swap (the same on every chain)
    da: DualAverage
    sigma: jax.Array
    u: jax.Array | None
    lam: jax.Array | None
    buf_x: jax.Array | None  # low rank: the last `buffer` draws, gradients, weights, iterations
    buf_g: jax.Array | None
    buf_w: jax.Array | None
    buf_it: jax.Array | None
    fg_start: jax.Array  # iteration at which the foreground estimator began


def step_size_search(vv_update, kinetic, z_info, inv_mass, sqrt_mass, key, eps0, target):
    """Stan's start heuristic: one leapfrog step from ``z_info`` with a fresh momentum; double
    the step while the acceptance ``min(1, exp(-dH))`` stays above ``target``, halve it while
    below (at most 100 times, between 1e-10 and 1e5)."""
    from numpyro.infer.hmc_util import IntegratorState

    r = sqrt_mass @ jax.random.normal(key, z_info.z.shape, z_info.z.dtype) \
        if sqrt_mass.ndim == 2 else sqrt_mass * jax.random.normal(key, z_info.z.shape,
                                                                   z_info.z.dtype)
    state = IntegratorState(z_info.z, r, z_info.potential_energy, z_info.z_grad)
    h0 = z_info.potential_energy + kinetic(inv_mass, r)

    def accept(eps):
        new = vv_update(eps, inv_mass, state)
        dh = new.potential_energy + kinetic(inv_mass, new.r) - h0
        return jnp.where(jnp.isfinite(dh), jnp.exp(jnp.minimum(-dh, 0.0)), 0.0)

    # one call site of the leapfrog step (each call site is traced and compiled): the first
    # pass only tries eps0 and picks the direction
    def body(c):
        eps, k, _, up = c
        nxt = jnp.where(k == 0, eps, jnp.where(up, 2.0 * eps, 0.5 * eps))
        a = accept(nxt)
        up = jnp.where(k == 0, a > target, up)
        stop = (k > 0) & jnp.where(up, (a <= target) | (nxt > 1e5),
                                   (a >= target) | (nxt < 1e-10))
        # going up, stop at the last step that still passed; going down, at the first
        return jnp.where(stop & up, eps, nxt), k + 1, stop, up

    c0 = (jnp.asarray(eps0), 0, jnp.array(False), jnp.array(False))
    eps, _, _, _ = jax.lax.while_loop(lambda c: (~c[2]) & (c[1] < 100), body, c0)
    return eps
