"""Per-point kernels: the spectral fast path and the batched-solve general path.

Fast path.  With one concept basis ``M = P diag(λ) Pᵀ``, ``Σ = P diag(σ) Pᵀ`` and ``Q = P⁻ᵀ``
(computed once, O(m³)), the optimum of Haupt et al. eq. 1 is

    v* = (M + rΣ)⁻¹ M w = Q diag(λ / (λ + rσ)) Pᵀ w,

and with ``c = λ ⊙ Pᵀw / (λ + rσ)`` (so ``Pᵀv* = c``) welfare and effort cost are sums over
concepts: ``W(v*) = Σ_j λ_j (Pᵀw)_j c_j − ½ Σ_j λ_j c_j² − (r/2) Σ_j σ_j c_j²`` and
``½ v*ᵀMv* = ½ Σ_j λ_j c_j²``.  Each grid point then costs one (m, J) mat-vec, O(m²).

General path.  ``v* = cho_solve(M + rΣ, M w)``: one Cholesky per point, O(m³).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array

from platinum_jax.sweeps._axes import Basis, DenseState, SpectralState

__all__ = ["SweepPoint", "dense_point", "spectral_point", "base_basis", "platinum_flags"]


class SweepPoint(eqx.Module):
    """Everything known about one grid point; the argument of user output functions.

    ``M`` (m, m), ``Sigma`` (m, m), ``w`` (m,), ``r`` are the point's primitives, ``v`` (m,) the
    optimal weights ``v*``, ``welfare`` ``W(v*)`` and ``effort_cost`` ``½v*ᵀMv*``.  On the fast
    path ``spectral`` holds ``(λ, σ, Pᵀw, r)`` in ``basis``; on the general path both are None.
    Dense matrices built on the fast path are dropped by the compiler when no output uses them.
    """

    M: Array
    Sigma: Array
    w: Array
    r: Array
    v: Array
    welfare: Array
    effort_cost: Array
    spectral: SpectralState | None = None
    basis: Basis | None = None


def dense_point(state: DenseState) -> SweepPoint:
    """Solve one grid point directly: ``(M + rΣ) v = M w`` by Cholesky (never an inverse)."""
    M, Sigma, w, r = state
    # K = M + rΣ is symmetric, so factorise Kᵀ: LAPACK wants column-major operands and Kᵀ in
    # row-major order is exactly that, which spares XLA a strided transpose of every K.  potrf
    # reads one triangle only, so the symmetrising pass is skipped too.
    L = lax.linalg.cholesky((M + r * Sigma).T, symmetrize_input=False)
    # Two triangular solves with the Cholesky factor: K v = LLᵀ v = M w.
    y = lax.linalg.triangular_solve(L, (M @ w)[:, None], left_side=True, lower=True)
    v = lax.linalg.triangular_solve(L, y, left_side=True, lower=True, transpose_a=True)[:, 0]
    Mv = M @ v
    quad_m = v @ Mv
    W = w @ Mv - 0.5 * quad_m - 0.5 * r * (v @ (Sigma @ v))
    return SweepPoint(M, Sigma, w, r, v, W, 0.5 * quad_m)


def spectral_point(state: SpectralState, basis: Basis) -> SweepPoint:
    """Evaluate one grid point in the fixed concept basis in O(mJ)."""
    lam, sig, pw, r = state
    c = lam * pw / (lam + r * sig)
    v = basis.Q @ c
    quad_m = jnp.sum(lam * c * c)
    W = jnp.sum(lam * pw * c) - 0.5 * quad_m - 0.5 * r * jnp.sum(sig * c * c)
    # Dense primitives for user outputs; unused ones are dead code after tracing.
    M = (basis.P * lam) @ basis.P.T
    Sigma = (basis.P * sig) @ basis.P.T
    w = basis.Q @ pw
    return SweepPoint(M, Sigma, w, r, v, W, 0.5 * quad_m, state, basis)


def base_basis(M: np.ndarray, Sigma: np.ndarray, w: np.ndarray) -> Basis | None:
    """The concept basis of the base problem from :func:`platinum_jax.agency.concept_basis`.

    Written as ``M = P diag(λ) Pᵀ``, ``Σ = P diag(σ) Pᵀ`` with ``P = G Q`` (``G`` the basis
    metric, ``I`` or ``Σ``) so concept indices and orientation match the rest of the library.
    Returns None when the basis does not reproduce ``M`` and ``Σ`` to a relative tolerance of
    :func:`platinum_jax.agency.commute_rtol` in the dtype the basis was computed in (1e-8 in
    float64); then the sweep cannot take the fast path.
    """
    import hashlib

    # The basis is computed in JAX's default float dtype, so x64 on and off are cached apart.
    dtype = str(jnp.zeros(()).dtype).encode()
    key = hashlib.sha1(dtype + b"".join(np.ascontiguousarray(x, np.float64).tobytes()
                                        for x in (M, Sigma, w))).hexdigest()
    if key in _BASIS_CACHE:  # repeated sweeps of one base problem share its basis
        return _BASIS_CACHE[key]
    if len(_BASIS_CACHE) > 32:
        _BASIS_CACHE.clear()
    _BASIS_CACHE[key] = basis = _compute_basis(M, Sigma, w)
    return basis


_BASIS_CACHE: dict[str, Basis | None] = {}


def _compute_basis(M: np.ndarray, Sigma: np.ndarray, w: np.ndarray) -> Basis | None:
    from platinum_jax.agency import commute_rtol, concept_basis

    cb = concept_basis(M, Sigma, w)
    Q = np.asarray(cb.vectors, dtype=np.float64)
    if Q.shape != M.shape:
        return None
    P = np.asarray(cb.metric, dtype=np.float64) @ Q
    lam = np.asarray(cb.eigenvalues, dtype=np.float64)
    sig = np.asarray(cb.noise, dtype=np.float64)
    # A float32 basis (x64 off) reproduces M to float32 rounding only, far above 1e-8.
    tol = commute_rtol(cb.vectors.dtype, M.shape[0])
    scale_m = max(1.0, float(np.abs(M).max()))
    scale_s = max(1.0, float(np.abs(Sigma).max()))
    if (np.abs((P * lam) @ P.T - M).max() > tol * scale_m
            or np.abs((P * sig) @ P.T - Sigma).max() > tol * scale_s):
        return None
    return Basis(Q, P, lam, sig, str(cb.kind))


def _flags(align, load, ratio, tau_w, tau_m, tau_e):
    qualifies = ((align >= tau_w) & (ratio >= tau_e))[None, :] & (load >= tau_m)
    return jnp.any(qualifies, axis=1)


def platinum_flags(point: SweepPoint, tau_w: float, tau_m: float, tau_e: float) -> Array:
    """Platinum flags (m,) of one grid point, as :func:`platinum_jax.agency.platinum_items` decides.

    Fast path: the basis is fixed, so the point's own basis is the base one rescaled.  In the
    commuting kind ``cos φ_j = (Pᵀw)_j / ‖Pᵀw‖``, ``cos θ_ij = Q_ij``; in the generalized kind
    (re-normalised so that ``QᵀΣQ = I`` at the point) the welfare coordinate
    ``‖Q_j‖ (Pᵀw)_j / ‖w‖`` and ``cos θ_ij = Q_ij / ‖Q_j‖`` (unit concept directions, which the
    rescaling leaves unchanged); in both ``λ_j/(rσ_j)`` is the ratio.  Columns
    are signed towards ``w`` as the library does.  General path: the basis is recomputed, as
    ``concept_basis(method="auto")`` would: commuting when ``MΣ = ΣM`` and the shared eigenbasis
    diagonalises both (relative residuals ≤ :func:`platinum_jax.agency.commute_rtol`, 1e-8 in
    float64), generalized otherwise.
    """
    if point.spectral is not None:
        lam, sig, pw, r = point.spectral
        sign = jnp.where(pw < 0, -1.0, 1.0)
        if point.basis.kind == "commuting":
            align = jnp.abs(pw) / jnp.sqrt(pw @ pw)
            load = point.basis.Q * sign
        else:
            # Definition 1 on unit concept directions (see platinum_jax.agency._concepts): the
            # point's q_j = Q_j/√σ_j has direction Q_j/‖Q_j‖ and welfare coordinate
            # ‖Q_j‖ |(Pᵀw)_j| / ‖w‖, with w = Q Pᵀw.
            length = jnp.linalg.norm(point.basis.Q, axis=0)
            align = length * jnp.abs(pw) / jnp.linalg.norm(point.basis.Q @ pw)
            load = point.basis.Q * (sign / length)
        return _flags(align, load, lam / (r * sig), tau_w, tau_m, tau_e)
    from platinum_jax.agency import commutator_norm, commute_rtol, offdiagonal_norm, platinum_items

    args = (point.M, point.Sigma, point.w, point.r, tau_w, tau_m, tau_e)
    gen = platinum_items(*args, method="generalized").flags
    com = platinum_items(*args, method="commuting")
    # Traced, so no eager fallback: take the commuting flags only where its basis is verified.
    tol = commute_rtol(point.M.dtype, point.M.shape[0])
    ok = ((commutator_norm(point.M, point.Sigma) <= tol)
          & (offdiagonal_norm(com.basis.vectors, point.M, point.Sigma) <= tol))
    return jnp.where(ok, com.flags, gen)
