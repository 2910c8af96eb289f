"""Latent concepts and platinum items (Haupt et al., "Optimal Aggregation Mechanisms for AI
Benchmarking and Platinum Benchmarks", end of section 2).

Two bases are offered.  When ``M`` and ``Σ`` commute (the paper's assumption) they share an
orthonormal eigenbasis ``Q``: ``M = Q diag(λ) Qᵀ``, ``Σ = Q diag(σ) Qᵀ`` and, in rotated
coordinates, ``v̂_j = λ_j / (λ_j + rσ_j) · ŵ_j`` (eq. 2).

For any ``M ⪰ 0`` and ``Σ ≻ 0`` the *generalised* basis solves ``M q = λ Σ q`` with
``QᵀΣQ = I``.  Then ``M + rΣ = ΣQ diag(λ + r) QᵀΣ`` and

    v* = Σ_j q_j · λ_j / (λ_j + r) · q_jᵀΣw,

which is eq. 2 with ``σ_j = 1`` in the Σ-inner product: the simultaneous-diagonalisability
assumption is not needed.  Both bases are held by :class:`ConceptBasis`, whose ``metric`` is the
inner product the concept vectors are orthonormal in (``I`` or ``Σ``).

Definition 1 on the generalised basis
-------------------------------------
The raw ``q_j`` are Σ-normalised, so their entries carry the units of ``Σ^(-1/2)``: rescaling
``Σ → cΣ, r → r/c`` leaves ``v*`` unchanged but divides every ``q_j`` by ``√c``.  Thresholding
those entries as if they were cosines makes platinum flags depend on the units of ``Σ``.
Definition 1 is therefore applied to quantities built from the *directions* of the concepts,
``u_j = q_j / ‖q_j‖`` (Euclidean unit vectors; unique up to sign, which is fixed towards ``w``):

* item loading ``cos θ_ij = e_iᵀ u_j`` -- a true cosine, ``|cos θ_ij| ≤ 1``;
* welfare coordinate ``ω_j = ‖q_j‖ q_jᵀΣw / ‖w‖`` -- the coordinate of ``w/‖w‖`` on ``u_j`` in
  the expansion ``w = Σ_j u_j (‖q_j‖ q_jᵀΣw)`` (which holds because ``Q QᵀΣ = I``);
  dimensionless, and the Euclidean cosine ``u_jᵀw/‖w‖`` whenever the ``u_j`` are orthonormal;
* signal-to-noise-cost ratio ``ρ_j = u_jᵀM u_j / (r u_jᵀΣ u_j) = λ_j / r`` -- the Rayleigh
  quotient of signal over noise cost along the concept, dimensionless.

Derivation of the decomposition: substituting ``q_j = ‖q_j‖ u_j`` into ``v*`` above gives

    v*_i = ‖w‖ Σ_j cos θ_ij · ω_j · ρ_j / (1 + ρ_j),

the paper's ``‖w‖ Σ_j cos θ_ij cos φ_j / (1 + rσ_j/λ_j)`` with ``ω_j`` in place of ``cos φ_j``.
So the witness term and :func:`platinum_lower_bound` keep their meaning.  Invariances (each
leaves ``v*`` and all three quantities unchanged, so also the flags): ``Σ → cΣ, r → r/c``;
``M → cM, r → cr``; ``w → aw`` for ``a > 0``; a permutation of the items (flags permute).
Reduction: when ``M`` and ``Σ`` commute, the generalised vectors are ``q_j/√σ_j`` for the shared
orthonormal ``q_j`` and eigenvalues ``λ_j/σ_j``, so ``u_j = q_j``, ``ω_j = q_jᵀw/‖w‖ = cos φ_j``
and ``ρ_j = λ_j/(rσ_j)``: exactly the paper's Definition 1, whichever basis is used.

"Commute" and "diagonal" are judged to a relative tolerance that follows the working precision
(:func:`commute_rtol`): 1e-8 in float64, a small multiple of ``m · eps`` in float32.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pandas as pd
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from platinum_jax._validation import is_concrete, rounding_rtol, validate_primitives

__all__ = [
    "ConceptBasis",
    "concept_basis",
    "commutator_norm",
    "commute_rtol",
    "welfare_alignment",
    "item_loadings",
    "signal_noise_cost_ratio",
    "concept_shrinkage",
    "weight_decomposition",
    "platinum_lower_bound",
    "PlatinumItems",
    "platinum_items",
]

COMMUTE_RTOL = 1e-8  # the float64 tolerance, and the floor for every dtype

# Mixing weights t / (‖M‖_F/‖Σ‖_F) of the combinations M + tΣ whose eigenvectors are tried as the
# shared basis, in order.  Irrational and far apart, so that no pair of concepts ties for both.
_MIXING = (0.6180339887498949, 1.4142135623730951)


def commute_rtol(dtype, m: int) -> float:
    """Tolerance for "``M`` and ``Σ`` commute" and "``QᵀMQ``, ``QᵀΣQ`` are diagonal", relative
    to the matrices' Frobenius norms, for (m, m) matrices held in ``dtype``.

    ``max(1e-8, 10 · m · eps(dtype))``: exactly :data:`COMMUTE_RTOL` (1e-8) in float64; in
    float32 (``eps ≈ 1.2e-7``) the rounding of an exactly commuting pair already exceeds 1e-8,
    so the tolerance follows the precision (about 2.4e-5 for m = 20).
    """
    return rounding_rtol(dtype, m, COMMUTE_RTOL)


class ConceptBasis(eqx.Module):
    """Concept directions ``q_j`` (columns of ``vectors``), with ``λ_j`` and ``σ_j``.

    ``metric`` is ``I`` for the commuting (orthonormal) basis and ``Σ`` for the generalised one;
    ``vectors.T @ metric @ vectors = I`` in both cases.  Columns are ordered by decreasing
    signal-to-noise-cost ratio ``λ_j/σ_j`` and, when built with ``w``, signed so that
    ``q_jᵀ metric w ≥ 0`` (the paper's cosines are then non-negative for aligned concepts).
    """

    vectors: Float[Array, "m J"]
    eigenvalues: Float[Array, " J"]
    noise: Float[Array, " J"]
    metric: Float[Array, "m m"]
    kind: str = eqx.field(static=True)

    def coordinates(self, x: ArrayLike) -> Float[Array, "... J"]:
        """Concept coordinates ``x̂ = Qᵀ metric x`` (so that ``x = Q x̂``)."""
        return jnp.asarray(x) @ self.metric @ self.vectors


def commutator_norm(M: ArrayLike, Sigma: ArrayLike) -> Float[Array, ""]:
    """Relative commutator ``‖MΣ − ΣM‖_F / (‖M‖_F ‖Σ‖_F)``; zero iff ``M`` and ``Σ`` commute."""
    M, Sigma = jnp.asarray(M), jnp.asarray(Sigma)
    denom = jnp.linalg.norm(M) * jnp.linalg.norm(Sigma)
    return jnp.linalg.norm(M @ Sigma - Sigma @ M) / jnp.where(denom > 0, denom, 1.0)


def _commuting_basis(M, Sigma, mix=_MIXING[0]):
    # A generic combination M + tΣ has the shared eigenvectors (ties resolved jointly): an
    # eigenvector pair with λ_i + tσ_i = λ_k + tσ_k but (λ_i, σ_i) ≠ (λ_k, σ_k) is only determined
    # up to a rotation that mixes concepts, which offdiagonal_norm detects.
    t = mix * jnp.linalg.norm(M) / jnp.linalg.norm(Sigma)
    _, Q = jnp.linalg.eigh(M + t * Sigma)
    lam = jnp.einsum("ij,ik,kj->j", Q, M, Q)
    sig = jnp.einsum("ij,ik,kj->j", Q, Sigma, Q)
    return Q, lam, sig, jnp.eye(M.shape[0], dtype=M.dtype)


def offdiagonal_norm(Q, M, Sigma):
    """``max(‖off(QᵀMQ)‖_F / ‖M‖_F, ‖off(QᵀΣQ)‖_F / ‖Σ‖_F)``: zero iff ``Q`` diagonalises both."""

    def rel(X):
        D = Q.T @ X @ Q
        off = D - jnp.diag(jnp.diagonal(D))
        norm = jnp.linalg.norm(X)
        return jnp.linalg.norm(off) / jnp.where(norm > 0, norm, 1.0)

    return jnp.maximum(rel(M), rel(Sigma))


def _verified_commuting_basis(M, Sigma, tol):
    """The shared eigenbasis from the first mixing weight whose ``Q`` diagonalises ``M`` and
    ``Σ`` to ``tol``, and its residual; ``(None, smallest residual)`` when none does."""
    best = np.inf
    for mix in _MIXING:
        basis = _commuting_basis(M, Sigma, mix)
        resid = float(offdiagonal_norm(basis[0], M, Sigma))
        if resid <= tol:
            return basis, resid
        best = min(best, resid)
    return None, best


def _generalized_basis(M, Sigma):
    # Σ = LLᵀ turns M q = λ Σ q into the symmetric problem (L⁻¹ M L⁻ᵀ) u = λ u, q = L⁻ᵀ u.
    L = jnp.linalg.cholesky(Sigma)
    B = jsl.solve_triangular(L, jsl.solve_triangular(L, M, lower=True).T, lower=True)
    lam, U = jnp.linalg.eigh(0.5 * (B + B.T))
    Q = jsl.solve_triangular(L.T, U, lower=False)
    return Q, lam, jnp.ones_like(lam), Sigma


def concept_basis(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"] | None = None,
    *,
    method: Literal["auto", "commuting", "generalized"] = "auto",
) -> ConceptBasis:
    """The concept eigenbasis of ``(M, Σ)``.

    ``method="commuting"`` requires ``MΣ = ΣM`` (relative commutator ``‖MΣ − ΣM‖_F /
    (‖M‖_F ‖Σ‖_F)`` at most :func:`commute_rtol`, i.e. 1e-8 in float64, else ``ValueError``)
    and returns the shared orthonormal eigenbasis, taken from the eigenvectors of ``M + tΣ``
    and checked: ``QᵀMQ`` and ``QᵀΣQ`` must be diagonal to the same tolerance (a second ``t`` is
    tried when a pair of concepts ties in ``M + tΣ``; ``ValueError`` if neither separates them).
    ``"generalized"`` always applies.  ``"auto"`` picks ``"commuting"`` when the matrices are
    concrete, commute and the check passes, else ``"generalized"``.  Traced inputs skip the
    checks.  Pass ``w`` to orient each ``q_j`` towards the welfare vector.
    """
    if method not in ("auto", "commuting", "generalized"):
        raise ValueError(f"method must be 'auto', 'commuting' or 'generalized', got {method!r}")
    validate_primitives(M=M, Sigma=Sigma, w=w)
    M, Sigma = jnp.asarray(M), jnp.asarray(Sigma)
    concrete = is_concrete(M, Sigma)
    requested, found = method, None
    if method != "generalized" and concrete:
        tol = commute_rtol(jnp.result_type(M, Sigma, float), M.shape[0])
        c = float(commutator_norm(M, Sigma))
        if c > tol:
            if requested == "commuting":
                raise ValueError(
                    f"M and Sigma do not commute (relative commutator {c:.3g} > {tol:.3g}), so "
                    "they share no orthonormal eigenbasis; use method='generalized'"
                )
            method = "generalized"
        else:
            found, resid = _verified_commuting_basis(M, Sigma, tol)
            if found is None:
                if requested == "commuting":
                    raise ValueError(
                        "M and Sigma commute (relative commutator "
                        f"{c:.3g}), but no shared eigenbasis could be separated from the "
                        f"eigenvectors of M + t Sigma: for every t tried, Q^T M Q or Q^T Sigma Q "
                        f"keeps a relative off-diagonal part >= {resid:.3g} > {tol:.3g} (concepts "
                        "that tie, or a commutator just under the tolerance); use "
                        "method='generalized'"
                    )
                method = "generalized"
            else:
                method = "commuting"
    elif method == "auto":
        method = "generalized"
    if method == "commuting":
        Q, lam, sig, metric = found if found is not None else _commuting_basis(M, Sigma)
    else:
        Q, lam, sig, metric = _generalized_basis(M, Sigma)
    order = jnp.argsort(-lam / sig)
    Q, lam, sig = Q[:, order], lam[order], sig[order]
    if w is not None:
        sign = jnp.where(jnp.asarray(w) @ metric @ Q < 0, -1.0, 1.0)
        Q = Q * sign
    return ConceptBasis(Q, lam, sig, metric, method)


def _lengths(basis: ConceptBasis) -> Float[Array, " J"]:
    # Euclidean lengths ‖q_j‖ (all 1 in the commuting basis)
    return jnp.linalg.norm(basis.vectors, axis=0)


def welfare_alignment(basis: ConceptBasis, w: Float[ArrayLike, " m"]) -> Float[Array, " J"]:
    """Welfare alignment of each concept, the ``cos φ_j`` that Definition 1 thresholds.

    Commuting basis: ``cos φ_j = q_jᵀw / ‖w‖``, the paper's cosine.  Generalised basis: the
    welfare coordinate ``ω_j = ‖q_j‖ q_jᵀΣw / ‖w‖``, the coordinate of ``w/‖w‖`` on the unit
    concept direction ``u_j = q_j/‖q_j‖`` (see the module docstring for the derivation); it
    equals ``cos φ_j`` when ``M`` and ``Σ`` commute and is invariant to the units of ``Σ``.
    """
    w = jnp.asarray(w)
    return _lengths(basis) * basis.coordinates(w) / jnp.linalg.norm(w)


def item_loadings(basis: ConceptBasis) -> Float[Array, "m J"]:
    """``cos θ_ij = e_iᵀu_j`` with ``u_j = q_j/‖q_j‖``: the cosine between item ``i`` and the
    direction of concept ``j`` (``|cos θ_ij| ≤ 1`` in both bases; ``u_j = q_j`` in the commuting
    one)."""
    return basis.vectors / _lengths(basis)


def concept_shrinkage(basis: ConceptBasis, r: ArrayLike) -> Float[Array, " J"]:
    """``λ_j / (λ_j + rσ_j) = 1 / (1 + rσ_j/λ_j)``, the factor eq. 2 applies to ``ŵ_j``."""
    denom = basis.eigenvalues + r * basis.noise
    return jnp.where(denom > 0, basis.eigenvalues / jnp.where(denom > 0, denom, 1.0), 0.0)


def signal_noise_cost_ratio(basis: ConceptBasis, r: ArrayLike) -> Float[Array, " J"]:
    """``λ_j / (rσ_j)``, the signal-to-noise-cost ratio of Definition 1 (``inf`` when ``r = 0``).

    Both bases give ``u_jᵀMu_j / (r u_jᵀΣu_j)`` along the unit concept direction ``u_j``
    (``σ_j = 1`` and ``λ_j`` the generalised eigenvalue in the generalised basis).
    """
    return basis.eigenvalues / (r * basis.noise)


def weight_decomposition(
    basis: ConceptBasis, w: Float[ArrayLike, " m"], r: ArrayLike
) -> Float[Array, "m J"]:
    """Per-concept contributions to each item's optimal weight.

    ``v_i = ‖w‖ Σ_j cos θ_ij cos φ_j / (1 + rσ_j/λ_j)`` (with the generalised basis' loadings
    and welfare coordinates, :func:`item_loadings` and :func:`welfare_alignment`); entry
    ``(i, j)`` is the ``j`` term, so the rows sum to ``v*``.
    """
    w = jnp.asarray(w)
    coeff = concept_shrinkage(basis, r) * basis.coordinates(w)
    return basis.vectors * coeff


def platinum_lower_bound(tau_w: ArrayLike, tau_m: ArrayLike, tau_e: ArrayLike) -> Array:
    """``τ_w τ_m / (1 + 1/τ_e)``: the weight a platinum witness term guarantees when ``‖w‖ = 1``.

    It bounds ``v_i`` itself whenever no other concept contributes negatively to item ``i``.
    """
    return tau_w * tau_m / (1.0 + 1.0 / tau_e)


class PlatinumItems(NamedTuple):
    """Result of :func:`platinum_items`."""

    flags: Bool[Array, " m"]
    witness: Int[Array, " m"]  # best witnessing concept, -1 if the item is not platinum
    alignment: Float[Array, " J"]
    loadings: Float[Array, "m J"]
    ratio: Float[Array, " J"]
    basis: ConceptBasis

    def to_frame(self, item_names=None, concept_names=None) -> pd.DataFrame:
        """One row per item: ``platinum``, ``witness`` concept, its cosines and ratio."""
        flags = np.asarray(self.flags)
        witness = np.asarray(self.witness)
        m = flags.shape[0]
        items = list(item_names) if item_names is not None else [f"item_{i}" for i in range(m)]
        J = np.asarray(self.alignment).shape[0]
        concepts = (list(concept_names) if concept_names is not None
                    else [f"concept_{j}" for j in range(J)])
        safe = np.where(witness >= 0, witness, 0)
        ok = witness >= 0
        return pd.DataFrame(
            {
                "platinum": flags,
                "witness": [concepts[j] if o else None for j, o in zip(safe, ok, strict=True)],
                "cos_phi": np.where(ok, np.asarray(self.alignment)[safe], np.nan),
                "cos_theta": np.where(ok, np.asarray(self.loadings)[np.arange(m), safe], np.nan),
                "ratio": np.where(ok, np.asarray(self.ratio)[safe], np.nan),
            },
            index=pd.Index(items, name="item"),
        )


def _check_thresholds(tau_w, tau_m, tau_e):
    if not is_concrete(tau_w, tau_m, tau_e):
        return
    for name, value in (("tau_w", tau_w), ("tau_m", tau_m)):
        if not 0.0 < float(value) < 1.0:
            raise ValueError(f"{name} must lie in (0, 1) (Definition 1), got {float(value):g}")
    if not float(tau_e) > 0.0:
        raise ValueError(f"tau_e (minimum signal-to-noise-cost ratio) must be > 0, got {float(tau_e):g}")


def platinum_items(
    M: Float[ArrayLike, "m m"],
    Sigma: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: ArrayLike,
    tau_w: ArrayLike,
    tau_m: ArrayLike,
    tau_e: ArrayLike,
    *,
    basis: ConceptBasis | None = None,
    method: Literal["auto", "commuting", "generalized"] = "auto",
) -> PlatinumItems:
    """Definition 1: item ``i`` is platinum if some concept ``j`` has ``cos φ_j ≥ τ_w``,
    ``cos θ_ij ≥ τ_m`` and ``λ_j/(rσ_j) ≥ τ_e``.

    On the generalised basis (``M`` and ``Σ`` that do not commute) the three quantities are the
    welfare coordinate, the cosine of the item with the unit concept direction and the Rayleigh
    signal-to-noise-cost ratio of the module docstring: all dimensionless, unchanged by
    ``Σ → cΣ, r → r/c`` (and the other symmetries listed there), and equal to the paper's when
    ``M`` and ``Σ`` commute.

    The witness is the qualifying concept with the largest term
    ``cos θ_ij cos φ_j / (1 + rσ_j/λ_j)``.  Jittable when ``basis`` is given or
    ``method="generalized"``.
    """
    _check_thresholds(tau_w, tau_m, tau_e)
    validate_primitives(M=M, Sigma=Sigma, w=w, r=r)
    if basis is None:
        basis = concept_basis(M, Sigma, w, method=method)
    cos_phi = welfare_alignment(basis, w)
    cos_theta = item_loadings(basis)
    ratio = signal_noise_cost_ratio(basis, r)
    concept_ok = (cos_phi >= tau_w) & (ratio >= tau_e)
    qualifies = concept_ok[None, :] & (cos_theta >= tau_m)
    term = cos_theta * cos_phi * concept_shrinkage(basis, r)  # v_i / ‖w‖, one term per concept
    score = jnp.where(qualifies, term, -jnp.inf)
    flags = jnp.any(qualifies, axis=1)
    witness = jnp.where(flags, jnp.argmax(score, axis=1), -1)
    return PlatinumItems(flags, witness, cos_phi, cos_theta, ratio, basis)
