"""The multitask principal-agent model of benchmark aggregation.

From Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking
and Platinum Benchmarks", section 2.

A designer publishes weights ``v`` (m,), a lab with CARA coefficient ``r`` best-responds with
effort ``a`` (n,) at cost ½ aᵀCa, task performance is ``y = A a + ε`` with ``ε ~ N(0, Σ)``, and
society values performance by ``w``.  Every function here is pure, jittable and differentiable;
concrete inputs are validated once at the boundary.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import optax
from jaxtyping import Array, ArrayLike, Float

from platinum_jax._validation import (
    check_solvable,
    is_concrete,
    runtime_checks,
    validate_primitives,
)

__all__ = [
    "output_cost",
    "lab_best_response",
    "certainty_equivalent",
    "welfare",
    "effort_cost",
    "optimal_weights",
    "optimal_welfare",
    "optimal_weights_by_ascent",
]

Check = Literal["auto", "runtime", "none"]


def output_cost(A: Float[ArrayLike, "m n"], C: Float[ArrayLike, "n n"]) -> Float[Array, "m m"]:
    """Output-level cost structure ``M = A C⁻¹ Aᵀ``.

    Computed as ``XᵀX`` with ``X = L⁻¹Aᵀ`` and ``C = LLᵀ`` (one Cholesky factorisation and a
    triangular solve), so ``M`` is symmetric positive semi-definite by construction.
    """
    validate_primitives(A=A, C=C)
    A, C = jnp.asarray(A), jnp.asarray(C)
    L = jnp.linalg.cholesky(C)
    X = jsl.solve_triangular(L, A.T, lower=True)
    return X.T @ X


def lab_best_response(
    v: Float[ArrayLike, " m"], A: Float[ArrayLike, "m n"], C: Float[ArrayLike, "n n"]
) -> Float[Array, " n"]:
    """The lab's optimal effort ``a*(v) = C⁻¹Aᵀv`` (first-order condition ``Aᵀv = Ca``)."""
    validate_primitives(A=A, C=C, v=v)
    A, C, v = jnp.asarray(A), jnp.asarray(C), jnp.asarray(v)
    return jsl.cho_solve(jsl.cho_factor(C, lower=True), A.T @ v)


def certainty_equivalent(
    a: Float[ArrayLike, " n"],
    v: Float[ArrayLike, " m"],
    A: Float[ArrayLike, "m n"],
    C: Float[ArrayLike, "n n"],
    Sigma: Float[ArrayLike, "m m"],
    r: Float[ArrayLike, ""],
) -> Float[Array, ""]:
    """The lab's certainty equivalent ``CE(a; v) = vᵀAa − ½aᵀCa − (r/2)vᵀΣv``.

    ``a`` is an effort vector (n,), one entry per column (activity) of ``A`` (m, n).
    """
    validate_primitives(A=A, C=C, Sigma=Sigma, v=v, r=r)
    # Shapes are static even under jit, so this check also runs when traced.
    n = jnp.shape(A)[-1]
    if jnp.ndim(a) != 1 or jnp.shape(a)[0] != n:
        raise ValueError(
            f"a (the lab's effort) must have shape ({n},), one entry per column (activity) of "
            f"A, got shape {tuple(jnp.shape(a))}"
        )
    a, v, A, C, Sigma = map(jnp.asarray, (a, v, A, C, Sigma))
    return v @ (A @ a) - 0.5 * a @ (C @ a) - 0.5 * r * v @ (Sigma @ v)


def welfare(
    v: Float[ArrayLike, " m"],
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: Float[ArrayLike, ""],
) -> Float[Array, ""]:
    """Total welfare of publishing ``v``: ``W(v) = wᵀMv − ½vᵀMv − (r/2)vᵀΣv``."""
    validate_primitives(M=M, Sigma=Sigma, w=w, r=r, v=v)
    v, M, Sigma, w = map(jnp.asarray, (v, M, Sigma, w))
    Mv = M @ v
    return w @ Mv - 0.5 * v @ Mv - 0.5 * r * v @ (Sigma @ v)


def effort_cost(v: Float[ArrayLike, " m"], M: Float[ArrayLike, "m m"]) -> Float[Array, ""]:
    """The lab's effort cost at its best response, ``c(a*(v)) = ½vᵀMv``."""
    validate_primitives(M=M, v=v)
    v, M = jnp.asarray(v), jnp.asarray(M)
    return 0.5 * v @ (M @ v)


def _check_system(M, Sigma, w, r, check: Check):
    if check not in ("auto", "runtime", "none"):
        raise ValueError(f"check must be 'auto', 'runtime' or 'none', got {check!r}")
    if check != "none" and is_concrete(M, Sigma, w, r):
        validate_primitives(M=M, Sigma=Sigma, w=w, r=r)
        # Overflow, singularity relative to scale, and a precision warning, in the dtype the
        # solve will run in (float32 unless jax_enable_x64 is on).
        check_solvable(M, Sigma, w, r, jnp.result_type(M, Sigma, w, float))
    M, Sigma, w = jnp.asarray(M), jnp.asarray(Sigma), jnp.asarray(w)
    r = jnp.asarray(r, dtype=M.dtype)
    if check == "runtime" and not is_concrete(M, Sigma, w, r):
        M = runtime_checks(M, Sigma, w, r)
    return M, Sigma, w, r


def optimal_weights(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: Float[ArrayLike, ""],
    *,
    check: Check = "auto",
) -> Float[Array, " m"]:
    """Welfare-maximising aggregation weights ``v* = (M + rΣ)⁻¹Mw`` (Haupt et al., eq. 1).

    Solved with a Cholesky factorisation of ``M + rΣ`` (positive definite when ``Σ ≻ 0`` and
    ``r > 0``).  ``check="auto"`` validates concrete inputs and does nothing under tracing;
    ``"runtime"`` adds ``eqx.error_if`` guards when traced; ``"none"`` skips all checks.
    Use float64 (``jax.config.update("jax_enable_x64", True)``) for ill-conditioned problems.
    """
    M, Sigma, w, r = _check_system(M, Sigma, w, r, check)
    K = M + r * Sigma
    return jsl.cho_solve(jsl.cho_factor(K, lower=True), M @ w)


def optimal_welfare(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: Float[ArrayLike, ""],
    *,
    check: Check = "auto",
) -> Float[Array, ""]:
    """Welfare at the optimum, ``W(v*) = ½ wᵀMv*`` (from ``(M + rΣ)v* = Mw``)."""
    M, Sigma, w, r = _check_system(M, Sigma, w, r, check)
    v = jsl.cho_solve(jsl.cho_factor(M + r * Sigma, lower=True), M @ w)
    return 0.5 * w @ (M @ v)


def optimal_weights_by_ascent(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: Float[ArrayLike, ""],
    *,
    steps: int = 200,
) -> Float[Array, " m"]:
    """Reach ``v*`` by maximising ``W(v)`` with optax's L-BFGS, starting from ``v = w``.

    An independent route to the closed form (used to test it): it only needs the gradient of
    the welfare function, so it also applies to welfare functions users extend.
    """
    M, Sigma, w, r = _check_system(M, Sigma, w, r, "auto")
    return _ascent(M, Sigma, w, r, steps)


@jax.jit(static_argnames="steps")
def _ascent(M, Sigma, w, r, steps):
    def loss(v):
        Mv = M @ v
        return -(w @ Mv - 0.5 * v @ Mv - 0.5 * r * v @ (Sigma @ v))

    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def step(_, carry):
        v, state = carry
        value, grad = value_and_grad(v, state=state)
        updates, state = opt.update(grad, state, v, value=value, grad=grad, value_fn=loss)
        return optax.apply_updates(v, updates), state

    v0 = w
    v, _ = jax.lax.fori_loop(0, steps, step, (v0, opt.init(v0)))
    return v
