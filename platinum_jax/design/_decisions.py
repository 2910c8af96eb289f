"""The designer's decisions under posterior uncertainty, one compiled function over draws.

For each posterior draw of the primitives of Haupt, Reuel, Kochenderfer and Koyejo, "Optimal
Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks" (loadings ``A`` (m, K), cost
``C`` (K, K), noise ``Σ = diag(d) + FFᵀ`` (m, m) with ``F`` (m, k), welfare weights ``w`` (m,)),
this module computes the optimal weights ``v* = (M + rΣ)⁻¹Mw``, the platinum flags of
Definition 1 and the welfare of ``v*`` against the best-scaled uniform and current weights, at a
grid of risk aversions ``r``.

Nothing is assumed diagonal and ``M`` and ``Σ`` need not commute.  The cost is linear in ``m``:

* ``M = AC⁻¹Aᵀ = BBᵀ`` with ``B = A L_C⁻ᵀ`` (m, K), ``C = L_C L_Cᵀ``: rank ``K``;
* ``Σ⁻¹X`` by Woodbury, ``D⁻¹X − D⁻¹F (I_k + FᵀD⁻¹F)⁻¹ FᵀD⁻¹X`` (a k × k Cholesky);
* with ``P = Σ⁻¹B`` and ``G = BᵀΣ⁻¹B`` (K, K), Woodbury on ``rΣ + BBᵀ`` gives
  ``v* = P (rI_K + G)⁻¹ Bᵀw`` (a K × K Cholesky per ``r``);
* the concepts of the generalised problem ``Mq = λΣq`` with ``λ > 0`` are
  ``q_j = P u_j / √λ_j`` for the eigenpairs ``(λ_j, u_j)`` of ``G`` (``q_jᵀΣq_j = 1``); the other
  ``m − K`` concepts have ``λ = 0``, hence a signal-to-noise-cost ratio of 0, and can never
  witness a platinum item, so Definition 1 needs only these ``K``.  The three thresholded
  quantities are those of :mod:`platinum_jax.agency` (scale-invariant): ``cos θ_ij = q_ij/‖q_j‖``,
  ``ω_j = ‖q_j‖ q_jᵀΣw/‖w‖`` with ``q_jᵀΣw = u_jᵀBᵀw/√λ_j``, and ``ρ_j = λ_j / r``.

Use float64 (``jax.config.update("jax_enable_x64", True)``); the package does not switch it on.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, Float

__all__ = ["DecisionDraws", "decisions_per_draw", "noise_solve", "welfare_lowrank"]


class DecisionDraws(NamedTuple):
    """Per-draw decisions: leading axis draws (D), then the ``r`` grid (R), then items (m)."""

    weights: Float[Array, "D R m"]
    platinum: Float[Array, "D R m"]  # 1.0 where the item is platinum (Definition 1), else 0.0
    welfare_optimal: Float[Array, "D R"]
    welfare_uniform: Float[Array, "D R"]  # best-scaled uniform weights
    welfare_current: Float[Array, "D R"]  # best-scaled current weights


def noise_solve(d: Float[Array, " m"], F: Float[Array, "m k"], X: Float[Array, "m p"]):
    """``Σ⁻¹X`` for ``Σ = diag(d) + FFᵀ`` by the Woodbury identity (``d > 0``)."""
    Dinv_X = X / d[:, None]
    Fd = F / d[:, None]
    cap = jnp.eye(F.shape[1], dtype=X.dtype) + F.T @ Fd
    return Dinv_X - Fd @ jsl.cho_solve(jsl.cho_factor(cap, lower=True), F.T @ Dinv_X)


def welfare_lowrank(v, B, d, F, w, r):
    """``W(v) = wᵀMv − ½vᵀMv − (r/2)vᵀΣv`` with ``M = BBᵀ``, ``Σ = diag(d) + FFᵀ``."""
    Bv = B.T @ v
    Fv = F.T @ v
    return (B.T @ w) @ Bv - 0.5 * Bv @ Bv - 0.5 * r * (v @ (d * v) + Fv @ Fv)


def _best_scaled_welfare(u, B, d, F, w, r):
    # max_c W(c u) = (wᵀMu)² / (2 uᵀ(M + rΣ)u): compares the shape of u, not its arbitrary scale.
    Bu = B.T @ u
    Fu = F.T @ u
    num = (B.T @ w) @ Bu
    den = Bu @ Bu + r * (u @ (d * u) + Fu @ Fu)
    return 0.5 * num**2 / den


def _one_draw(A, L_C, d, F, w, current, r_grid, tau_w, tau_m, tau_e):
    m = A.shape[0]
    B = jsl.solve_triangular(L_C, A.T, lower=True).T  # M = BBᵀ
    P = noise_solve(d, F, B)  # Σ⁻¹B
    G = B.T @ P
    G = 0.5 * (G + G.T)
    Btw = B.T @ w
    K = G.shape[0]
    eye = jnp.eye(K, dtype=A.dtype)

    # Concepts with λ > 0 (independent of r): q_j = P u_j / √λ_j.
    lam, U = jnp.linalg.eigh(G)
    scale = jnp.max(jnp.abs(lam))
    alive = lam > 1e-12 * jnp.where(scale > 0, scale, 1.0)
    safe = jnp.where(alive, lam, 1.0)
    coord = (U.T @ Btw) / jnp.sqrt(safe)  # q_jᵀΣw
    sign = jnp.where(coord < 0, -1.0, 1.0)
    Q = (P @ U) / jnp.sqrt(safe) * sign
    coord = coord * sign
    length = jnp.linalg.norm(Q, axis=0)
    cos_theta = Q / jnp.where(length > 0, length, 1.0)
    omega = length * coord / jnp.linalg.norm(w)

    uniform = jnp.full((m,), 1.0 / m, dtype=A.dtype)

    def at(r):
        v = P @ jsl.cho_solve(jsl.cho_factor(r * eye + G, lower=True), Btw)
        ratio = lam / r
        ok = alive & (omega >= tau_w) & (ratio >= tau_e)
        flags = jnp.any(ok[None, :] & (cos_theta >= tau_m), axis=1)
        w_opt = 0.5 * Btw @ (B.T @ v)  # W(v*) = ½ wᵀMv*
        return (v, flags.astype(A.dtype), w_opt,
                _best_scaled_welfare(uniform, B, d, F, w, r),
                _best_scaled_welfare(current, B, d, F, w, r))

    return jax.lax.map(at, r_grid)


@jax.jit
def decisions_per_draw(
    A: Float[Array, "D m K"],
    C: Float[Array, "K K"],
    d: Float[Array, "D m"],
    F: Float[Array, "D m k"],
    w: Float[Array, "D m"],
    current: Float[Array, " m"],
    r_grid: Float[Array, " R"],
    tau_w: Float[Array, ""],
    tau_m: Float[Array, ""],
    tau_e: Float[Array, ""],
) -> DecisionDraws:
    """Optimal weights, platinum flags and welfare per draw and per ``r`` (one compiled loop).

    Inputs are assumed valid (:func:`platinum_jax.design.posterior_decisions` checks them):
    ``C`` positive definite, ``d > 0``, every ``r > 0`` in ``r_grid``.  Cost ``O(D R m (K + k)²)``.
    """
    L_C = jnp.linalg.cholesky(C)

    # A loop over draws (and over r inside), not a vmap: batched LAPACK calls (the
    # eigendecomposition and the Cholesky factors) that XLA's CPU runtime runs at the same time
    # each wait on the same small thread pool for their batch, which deadlocks on a 2-core
    # machine. Unbatched calls run where they are issued.
    def draw(args):
        a, dd, ff, ww = args
        return _one_draw(a, L_C, dd, ff, ww, current, r_grid, tau_w, tau_m, tau_e)

    out = jax.lax.map(draw, (A, d, F, w))
    return DecisionDraws(*out)
