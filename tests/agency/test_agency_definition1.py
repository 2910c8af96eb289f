"""Definition 1 on the generalised concept basis: true cosines, invariances, exact reduction.

Truth: the symmetries of ``v* = (M + rΣ)⁻¹Mw`` (checked on v* itself with NumPy), a SciPy
generalised eigen-solve written here, and the paper's commuting-basis formulas.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import platinum_jax as pj

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _instance(seed, m=5):
    """Non-commuting M ⪰ 0 (rank m), Σ ≻ 0, w > 0 and r, from a NumPy seed."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T / m + 0.05 * np.eye(m)
    X = rng.normal(size=(m, m))
    Sigma = X @ X.T / m + 0.3 * np.eye(m)
    w = rng.uniform(0.1, 1.0, m)
    r = float(rng.uniform(0.2, 3.0))
    return M, Sigma, w / np.linalg.norm(w), r


def _quantities(M, Sigma, w, r):
    res = pj.agency.platinum_items(M, Sigma, w, r, 0.3, 0.4, 0.5, method="generalized")
    return (np.asarray(res.alignment), np.asarray(res.loadings), np.asarray(res.ratio),
            np.asarray(res.flags))


def _same(a, b):
    for x, y in zip(a[:3], b[:3], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-7, atol=1e-9)


def _flags_agree(a, b, taus=(0.3, 0.4, 0.5)):
    """Flags equal wherever no quantity sits within 1e-6 of its threshold (rounding could flip
    those)."""
    align, load, ratio, flags = a
    tw, tm, te = taus
    margin = min(np.min(np.abs(align - tw)), np.min(np.abs(load - tm)),
                 np.min(np.abs(ratio - te) / np.maximum(1.0, ratio)))
    if margin > 1e-6:
        np.testing.assert_array_equal(flags, b[3])


@SETTINGS
@given(seed=st.integers(0, 10_000), log_c=st.floats(-4.0, 4.0))
def test_noise_units_do_not_change_platinum_items(seed, log_c):
    M, Sigma, w, r = _instance(seed)
    c = float(np.exp(log_c))
    np.testing.assert_allclose(  # the symmetry: v* is unchanged
        np.linalg.solve(M + (r / c) * c * Sigma, M @ w), np.linalg.solve(M + r * Sigma, M @ w),
        rtol=1e-9)
    a, b = _quantities(M, Sigma, w, r), _quantities(M, c * Sigma, w, r / c)
    _same(a, b)
    _flags_agree(a, b)


@SETTINGS
@given(seed=st.integers(0, 10_000), log_c=st.floats(-4.0, 4.0), log_a=st.floats(-3.0, 3.0))
def test_cost_units_and_welfare_scale_do_not_change_platinum_items(seed, log_c, log_a):
    M, Sigma, w, r = _instance(seed)
    c, a = float(np.exp(log_c)), float(np.exp(log_a))
    base = _quantities(M, Sigma, w, r)
    for other in (_quantities(c * M, Sigma, w, c * r), _quantities(M, Sigma, a * w, r)):
        _same(base, other)
        _flags_agree(base, other)


@SETTINGS
@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 1000))
def test_item_permutation_permutes_flags(seed, perm_seed):
    M, Sigma, w, r = _instance(seed)
    p = np.random.default_rng(perm_seed).permutation(M.shape[0])
    a = _quantities(M, Sigma, w, r)
    b = _quantities(M[np.ix_(p, p)], Sigma[np.ix_(p, p)], w[p], r)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b[1], a[1][p], rtol=1e-7, atol=1e-9)
    _flags_agree((a[0], a[1][p], a[2], a[3][p]), b)


@SETTINGS
@given(seed=st.integers(0, 10_000))
def test_loadings_are_cosines_and_terms_rebuild_v_star(seed):
    M, Sigma, w, r = _instance(seed)
    res = pj.agency.platinum_items(M, Sigma, w, r, 0.3, 0.4, 0.5, method="generalized")
    load = np.asarray(res.loadings)
    assert np.all(np.abs(load) <= 1 + 1e-12)
    np.testing.assert_allclose(np.linalg.norm(load, axis=0), 1.0, rtol=1e-12)
    # independent generalised eigenvectors (SciPy): loadings are their unit directions
    lam, Q = sla.eigh(M, Sigma)
    order = np.argsort(-lam)
    lam, Q = lam[order], Q[:, order]
    U = Q / np.linalg.norm(Q, axis=0)
    U = U * np.sign(np.sum(U * load, axis=0))
    np.testing.assert_allclose(load, U, atol=1e-8)
    np.testing.assert_allclose(np.asarray(res.ratio), lam / r, rtol=1e-8)
    # v*_i = ‖w‖ Σ_j cos θ_ij ω_j ρ_j / (1 + ρ_j)
    rho = lam / r
    v = np.linalg.norm(w) * (load * np.asarray(res.alignment) * rho / (1 + rho)).sum(axis=1)
    np.testing.assert_allclose(v, np.linalg.solve(M + r * Sigma, M @ w), atol=1e-9)


def test_generalised_basis_reduces_to_the_paper_when_m_and_sigma_commute():
    rng = np.random.default_rng(4)
    Q0, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    lam = np.array([3.0, 1.7, 0.9, 0.5, 0.2])
    sig = np.array([0.4, 1.1, 0.3, 2.0, 0.7])
    M, Sigma = (Q0 * lam) @ Q0.T, (Q0 * sig) @ Q0.T
    w = np.abs(rng.normal(size=5))
    w /= np.linalg.norm(w)
    r = 0.8
    gen = pj.agency.platinum_items(M, Sigma, w, r, 0.2, 0.3, 0.5, method="generalized")
    com = pj.agency.platinum_items(M, Sigma, w, r, 0.2, 0.3, 0.5, method="commuting")
    # the paper: cos φ_j = q_jᵀw, cos θ_ij = Q_ij, ratio λ_j/(rσ_j), ordered by λ/σ
    order = np.argsort(-lam / sig)
    Qp = Q0[:, order] * np.sign(w @ Q0[:, order])
    for res in (gen, com):
        np.testing.assert_allclose(np.asarray(res.alignment), w @ Qp, atol=1e-10)
        np.testing.assert_allclose(np.asarray(res.loadings), Qp, atol=1e-8)
        np.testing.assert_allclose(np.asarray(res.ratio), (lam / (r * sig))[order], rtol=1e-9)
    np.testing.assert_array_equal(np.asarray(gen.flags), np.asarray(com.flags))


def test_raw_generalised_entries_would_break_the_noise_symmetry():
    """Why the definition uses unit directions: the Σ-normalised q_j scale with Σ."""
    M, Sigma, w, r = _instance(12)
    b1 = pj.agency.concept_basis(M, Sigma, w, method="generalized")
    b2 = pj.agency.concept_basis(M, 100.0 * Sigma, w, method="generalized")
    np.testing.assert_allclose(np.asarray(b2.vectors), np.asarray(b1.vectors) / 10.0, atol=1e-10)
    np.testing.assert_allclose(pj.agency.item_loadings(b2), pj.agency.item_loadings(b1), atol=1e-10)


def test_comparative_statics_at_zero_risk_match_theory():
    M, Sigma, w, _ = _instance(3)
    df = pj.agency.comparative_statics(M, Sigma, w, 0.0)
    # eq. 2 at r = 0: v* = w, so only the welfare effect is non-zero
    np.testing.assert_allclose(df["d_weight_d_lambda"], 0.0, atol=1e-10)
    np.testing.assert_allclose(df["d_weight_d_sigma"], 0.0, atol=1e-10)
    assert df["matches_theory"].all()
    pos = pj.agency.comparative_statics(M, Sigma, w, 0.7)
    assert pos["matches_theory"].all()


def test_comparative_statics_still_catch_a_wrong_sign():
    M, Sigma, w, _ = _instance(5)
    df = pj.agency.comparative_statics(jnp.asarray(M), jnp.asarray(Sigma), jnp.asarray(w), 0.5)
    assert df["matches_theory"].all()
    assert (df.loc[df["w_hat"] > 0, "d_weight_d_sigma"] < 0).all()


@pytest.mark.parametrize("c", [1e-3, 1e3])
def test_platinum_flags_survive_extreme_noise_units(c):
    M, Sigma, w, r = _instance(21)
    a = pj.agency.platinum_items(M, Sigma, w, r, 0.3, 0.4, 0.5, method="generalized")
    b = pj.agency.platinum_items(M, c * Sigma, w, r / c, 0.3, 0.4, 0.5, method="generalized")
    np.testing.assert_array_equal(np.asarray(a.flags), np.asarray(b.flags))
