"""Comparative statics (Haupt et al., "Optimal Aggregation Mechanisms for AI Benchmarking and
Platinum Benchmarks", section 3) and autodiff sensitivities of ``v*`` and ``W(v*)``."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pandas as pd
from jaxtyping import Array, ArrayLike, Float

from platinum_jax._validation import is_concrete, validate_primitives
from platinum_jax.agency._concepts import ConceptBasis, concept_basis
from platinum_jax.agency._core import optimal_weights, optimal_welfare
from platinum_jax.agency._primitives import Primitives

__all__ = [
    "uniform_cost_change",
    "concept_shift",
    "add_activity",
    "CostDecrease",
    "cost_decrease",
    "weight_jacobians",
    "welfare_gradient",
    "comparative_statics",
]


def uniform_cost_change(M: Float[ArrayLike, "m m"], kappa: ArrayLike) -> Float[Array, "m m"]:
    """``M ↦ M/κ``: every improvement ``κ`` times as costly.

    ``v*(M/κ, r) = v*(M, κr)``: a uniform cost rise acts like more measurement risk.
    """
    if is_concrete(kappa) and not float(kappa) > 0:
        raise ValueError(f"kappa (uniform cost factor) must be > 0, got {float(kappa):g}")
    return jnp.asarray(M) / kappa


def concept_shift(
    M: Float[ArrayLike, "m m"], basis: ConceptBasis, concept: int, delta: ArrayLike
) -> Float[Array, "m m"]:
    """Concept-separable change ``M + δ (G q_j)(G q_j)ᵀ`` with ``G`` the basis metric (eq. 3).

    In the commuting basis ``G = I`` and this is the paper's ``M + δ q_j q_jᵀ``; in the
    generalised basis the ``Σ``-weighted form is what keeps every other ``(λ_k, q_k)`` fixed.
    Only ``λ_j`` moves, to ``λ_j + δ``.
    """
    J = basis.vectors.shape[1]
    if not -J <= concept < J:
        raise ValueError(f"concept index {concept} out of range for a basis of {J} concepts")
    g = basis.metric @ basis.vectors[:, concept]
    return jnp.asarray(M) + delta * jnp.outer(g, g)


def add_activity(
    A: Float[ArrayLike, "m n"], C: Float[ArrayLike, "n n"], effect: Float[ArrayLike, " m"],
    cost: float = 1.0,
) -> tuple[Float[Array, "m n+1"], Float[Array, "n+1 n+1"]]:
    """A new improvement activity with effectiveness ``effect`` and independent cost ``cost``.

    Returns ``(A', C')`` with ``A' = [A | effect]`` and ``C' = diag(C, cost)``, so that
    ``M' = M + effect effectᵀ / cost``; with ``effect = q_j`` this is the paper's new-activity
    route to the rank-one change of eq. 3.
    """
    validate_primitives(A=A, C=C, v=effect)
    if is_concrete(cost) and not float(cost) > 0:
        raise ValueError(f"cost of the new activity must be > 0, got {float(cost):g}")
    A, C, effect = jnp.asarray(A), jnp.asarray(C), jnp.asarray(effect)
    n = C.shape[0]
    C_new = jnp.zeros((n + 1, n + 1), C.dtype).at[:n, :n].set(C).at[n, n].set(cost)
    return jnp.concatenate([A, effect[:, None]], axis=1), C_new


class CostDecrease(NamedTuple):
    """Result of :func:`cost_decrease`."""

    C: Float[Array, "n n"]  # the new cost matrix C − t d dᵀ
    direction: Float[Array, " n"]  # d = (AC⁻¹)⁻¹ q
    delta: Float[Array, ""]  # the induced rank-one change: M' = M + δ q qᵀ


def cost_decrease(
    A: Float[ArrayLike, "m n"], C: Float[ArrayLike, "n n"], q: Float[ArrayLike, " m"],
    t: ArrayLike = 1.0,
) -> CostDecrease:
    """Lower the cost of the activity bundle ``d = (AC⁻¹)⁻¹q``: ``C' = C − t ddᵀ``.

    By Sherman–Morrison, ``AC'⁻¹Aᵀ = M + δ qqᵀ`` with ``δ = t / (1 − t dᵀC⁻¹d)``, the rank-one
    concept change of eq. 3.  Conditions (checked): ``AC⁻¹`` must be square and invertible
    (``n = m``, ``A`` of full rank) for ``d`` to exist, and ``t dᵀC⁻¹d < 1`` for ``C' ≻ 0``.
    """
    validate_primitives(A=A, C=C, v=q)
    A, C, q = jnp.asarray(A), jnp.asarray(C), jnp.asarray(q)
    m, n = A.shape
    if m != n:
        raise ValueError(
            f"cost_decrease needs as many activities as tasks (A is {m} x {n}): only then is "
            "A C^-1 square and d = (A C^-1)^-1 q defined; use add_activity for the general case"
        )
    cho = jsl.cho_factor(C, lower=True)
    AC_inv = jsl.cho_solve(cho, A.T).T  # A C⁻¹ = (C⁻¹Aᵀ)ᵀ since C is symmetric
    if is_concrete(A, C):
        s = np.linalg.svd(np.asarray(AC_inv), compute_uv=False)
        if s[-1] <= 1e-12 * s[0]:
            raise ValueError(
                f"A C^-1 is singular (singular values {s[0]:.3g} ... {s[-1]:.3g}): no activity "
                "bundle d moves M along q alone; use add_activity instead"
            )
    d = jnp.linalg.solve(AC_inv, q)
    dCd = d @ jsl.cho_solve(cho, d)
    if is_concrete(t, dCd) and not float(t) * float(dCd) < 1.0:
        raise ValueError(
            f"C - t d d^T is not positive definite: t * d^T C^-1 d = {float(t) * float(dCd):.4g} >= 1; "
            f"choose t < {1.0 / float(dCd):.4g}"
        )
    return CostDecrease(C - t * jnp.outer(d, d), d, t / (1.0 - t * dCd))


def _v_star(p: Primitives) -> Array:
    return optimal_weights(p.M, p.Sigma, p.w, p.r, check="none")


def weight_jacobians(prims: Primitives) -> Primitives:
    """``∂v*/∂θ`` for every primitive θ ∈ {A, C, Σ, w, r}, by forward-mode autodiff.

    Returned as a :class:`Primitives`-shaped pytree whose leaves have shape ``(m, *θ.shape)``.
    """
    return jax.jacfwd(_v_star)(prims)


def welfare_gradient(prims: Primitives) -> Primitives:
    """``∂W(v*)/∂θ`` for every primitive, as a :class:`Primitives`-shaped pytree."""
    return jax.grad(lambda p: optimal_welfare(p.M, p.Sigma, p.w, p.r, check="none"))(prims)


class _Statics(NamedTuple):
    d_welfare: Array
    d_lambda: Array
    d_sigma: Array


@jax.jit
def _concept_derivatives(M, Sigma, w, r, Q, G):
    def concept_weight(M_, Sigma_, w_, j):
        v = optimal_weights(M_, Sigma_, w_, r, check="none")
        return Q[:, j] @ G @ v

    def one(j):
        g = G @ Q[:, j]
        P = jnp.outer(g, g)
        # Directional derivatives through the actual linear solve, not through eq. 2.
        _, dw = jax.jvp(lambda e: concept_weight(M, Sigma, w + e * Q[:, j], j), (0.0,), (1.0,))
        _, dl = jax.jvp(lambda e: concept_weight(M + e * P, Sigma, w, j), (0.0,), (1.0,))
        _, ds = jax.jvp(lambda e: concept_weight(M, Sigma + e * P, w, j), (0.0,), (1.0,))
        return _Statics(dw, dl, ds)

    return jax.vmap(one)(jnp.arange(Q.shape[1]))


def comparative_statics(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: ArrayLike,
    *,
    basis: ConceptBasis | None = None,
    concept_names=None,
) -> pd.DataFrame:
    """Signs of the three comparative statics of section 3 on this instance, per concept.

    For each concept ``j`` the derivative of its weight ``v̂_j = q_jᵀ G v*`` is taken, by
    autodiff through ``(M + rΣ)⁻¹Mw``, along: higher welfare relevance (``w + ε q_j``, so
    ``ŵ_j`` rises), cheaper improvement (``M + ε Gq_jq_jᵀG``, so ``λ_j`` rises) and more noise
    (``Σ + ε Gq_jq_jᵀG``, so ``σ_j`` rises).  Theory (eq. 2): for ``ŵ_j > 0`` the first two are
    positive and the third negative; ``matches_theory`` reports whether this instance agrees.

    Theory's sign is zero where eq. 2 makes the effect vanish: at ``r = 0`` (then ``v* = w``, so
    neither cheaper improvement nor more noise moves any weight), for the noise effect of a
    concept with ``λ_j = 0``, and for the welfare effect of such a concept. Where theory says
    zero, ``matches_theory`` asks for a derivative that is zero to rounding (relative 1e-9),
    not for a sign; concepts with ``ŵ_j <= 0`` are not judged.
    """
    validate_primitives(M=M, Sigma=Sigma, w=w, r=r)
    if basis is None:
        basis = concept_basis(M, Sigma, w)
    M, Sigma, w = jnp.asarray(M), jnp.asarray(Sigma), jnp.asarray(w)
    r = jnp.asarray(r, M.dtype)
    out = _concept_derivatives(M, Sigma, w, r, basis.vectors, basis.metric)
    w_hat = np.asarray(basis.coordinates(w))
    J = w_hat.shape[0]
    names = list(concept_names) if concept_names is not None else [f"concept_{j}" for j in range(J)]
    dw, dl, ds = (np.asarray(x) for x in out)
    scale = max(1.0, float(np.max(np.abs(np.concatenate([dw, dl, ds])))))
    tol = 1e-12 * scale
    active = w_hat > tol
    lam = np.asarray(basis.eigenvalues)
    lam_pos = lam > 1e-12 * max(1.0, float(np.max(np.abs(lam))))
    risky = float(r) > 0

    def agrees(d, sign):
        # sign: +1, -1 or 0 (theory says the effect vanishes: zero to rounding)
        zero = np.abs(d) <= 1e-9 * scale
        return np.where(sign > 0, d > 0, np.where(sign < 0, d < 0, zero))

    matches = (
        agrees(dw, np.where(lam_pos, 1, 0))
        & agrees(dl, np.full(lam.shape, 1 if risky else 0))
        & agrees(ds, np.where(lam_pos & risky, -1, 0))
    )
    return pd.DataFrame(
        {
            "w_hat": w_hat,
            "lambda": np.asarray(basis.eigenvalues),
            "sigma": np.asarray(basis.noise),
            "d_weight_d_welfare": dw,
            "d_weight_d_lambda": dl,
            "d_weight_d_sigma": ds,
            "matches_theory": np.where(active, matches, True),
        },
        index=pd.Index(names, name="concept"),
    )
