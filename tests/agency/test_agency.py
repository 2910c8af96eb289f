"""The principal-agent model against NumPy re-derivations on random instances."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import platinum_jax as pj

REPO = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def random_instance(seed: int, m: int, n: int, commuting: bool = False):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n))
    G = rng.normal(size=(n, n))
    C = G @ G.T + 0.5 * n * np.eye(n)
    if commuting:
        Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
        Sigma = (Q * rng.uniform(0.2, 2.0, m)) @ Q.T
        M = (Q * rng.uniform(0.0, 3.0, m)) @ Q.T
    else:
        S = rng.normal(size=(m, m))
        Sigma = S @ S.T + 0.3 * np.eye(m)
        M = A @ np.linalg.solve(C, A.T)
    w = rng.normal(size=m)
    r = float(rng.uniform(0.1, 3.0))
    return A, C, Sigma, M, w, r


# Few sizes, random values: every distinct (m, n) compiles each function afresh, so the
# examples draw from the smallest case, a larger one, square and wide.
SIZES = st.sampled_from((2, 5))
instances = st.builds(
    lambda seed, m, extra: random_instance(seed, m, m + extra),
    st.integers(0, 2**31 - 1), SIZES, st.sampled_from((0, 2)),
)


def np_v_star(M, Sigma, w, r):
    return np.linalg.solve(M + r * Sigma, M @ w)


def np_welfare(v, M, Sigma, w, r):
    return w @ M @ v - 0.5 * v @ M @ v - 0.5 * r * v @ Sigma @ v


@SETTINGS
@given(instances)
def test_core_quantities_match_numpy(inst):
    A, C, Sigma, _, w, r = inst
    M_np = A @ np.linalg.solve(C, A.T)
    M = pj.agency.output_cost(A, C)
    np.testing.assert_allclose(M, M_np, atol=1e-10, rtol=1e-10)
    v_np = np_v_star(M_np, Sigma, w, r)
    v = pj.agency.optimal_weights(M, Sigma, w, r)
    np.testing.assert_allclose(v, v_np, atol=1e-10, rtol=1e-9)
    np.testing.assert_allclose(pj.agency.welfare(v, M, Sigma, w, r), np_welfare(v_np, M_np, Sigma, w, r),
                               atol=1e-10)
    np.testing.assert_allclose(pj.agency.optimal_welfare(M, Sigma, w, r),
                               np_welfare(v_np, M_np, Sigma, w, r), atol=1e-10)
    a = pj.agency.lab_best_response(v, A, C)
    np.testing.assert_allclose(a, np.linalg.solve(C, A.T @ v_np), atol=1e-10)
    # The induced expected performance is M v and the effort cost ½ vᵀMv.
    np.testing.assert_allclose(A @ np.asarray(a), M_np @ v_np, atol=1e-10)
    np.testing.assert_allclose(pj.agency.effort_cost(v, M), 0.5 * v_np @ M_np @ v_np, atol=1e-10)
    ce = pj.agency.certainty_equivalent(a, v, A, C, Sigma, r)
    a_np = np.linalg.solve(C, A.T @ v_np)
    np.testing.assert_allclose(
        ce, v_np @ A @ a_np - 0.5 * a_np @ C @ a_np - 0.5 * r * v_np @ Sigma @ v_np, atol=1e-10)


@SETTINGS
@given(instances)
def test_best_response_maximises_certainty_equivalent(inst):
    A, C, Sigma, _, w, r = inst
    v = np.random.default_rng(1).normal(size=w.shape)
    a = np.asarray(pj.agency.lab_best_response(v, A, C))
    grad = jax.grad(lambda a_: pj.agency.certainty_equivalent(a_, v, A, C, Sigma, r))(jnp.asarray(a))
    np.testing.assert_allclose(grad, 0.0, atol=1e-9)


@SETTINGS
@given(instances)
def test_kappa_identity(inst):
    _, _, Sigma, M, w, r = inst
    for kappa in (0.3, 2.5):
        lhs = pj.agency.optimal_weights(pj.agency.uniform_cost_change(M, kappa), Sigma, w, r)
        np.testing.assert_allclose(lhs, np_v_star(M, Sigma, w, kappa * r), atol=1e-10, rtol=1e-9)


@SETTINGS
@given(instances)
def test_generalized_basis_reproduces_direct_solve(inst):
    _, _, Sigma, M, w, r = inst
    basis = pj.agency.concept_basis(M, Sigma, w, method="generalized")
    Q = np.asarray(basis.vectors)
    np.testing.assert_allclose(Q.T @ Sigma @ Q, np.eye(len(w)), atol=1e-9)
    np.testing.assert_allclose(M @ Q, Sigma @ Q * np.asarray(basis.eigenvalues), atol=1e-9)
    lam = np.asarray(basis.eigenvalues)
    v_basis = Q @ (lam / (lam + r) * (Q.T @ Sigma @ w))
    v_np = np_v_star(M, Sigma, w, r)
    np.testing.assert_allclose(v_basis, v_np, atol=1e-10, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(pj.agency.weight_decomposition(basis, w, r)).sum(axis=1), v_np,
                               atol=1e-10, rtol=1e-9)


@SETTINGS
@given(st.integers(0, 2**31 - 1), SIZES)
def test_commuting_basis_eq2_and_decomposition(seed, m):
    _, _, Sigma, M, w, r = random_instance(seed, m, m, commuting=True)
    basis = pj.agency.concept_basis(M, Sigma, w, method="commuting")
    assert basis.kind == "commuting"
    Q = np.asarray(basis.vectors)
    lam, sig = np.asarray(basis.eigenvalues), np.asarray(basis.noise)
    np.testing.assert_allclose(Q.T @ Q, np.eye(m), atol=1e-10)
    np.testing.assert_allclose(Q @ np.diag(lam) @ Q.T, M, atol=1e-10)
    np.testing.assert_allclose(Q @ np.diag(sig) @ Q.T, Sigma, atol=1e-10)
    w_hat = Q.T @ w
    assert np.all(w_hat >= -1e-12)  # oriented towards w
    v_hat = lam / (lam + r * sig) * w_hat  # eq. 2
    v_np = np_v_star(M, Sigma, w, r)
    np.testing.assert_allclose(Q @ v_hat, v_np, atol=1e-10, rtol=1e-9)
    # v_i = ‖w‖ Σ_j cos θ_ij cos φ_j / (1 + rσ_j/λ_j)
    cos_phi = np.asarray(pj.agency.welfare_alignment(basis, w))
    np.testing.assert_allclose(cos_phi, w_hat / np.linalg.norm(w), atol=1e-12)
    terms = np.linalg.norm(w) * Q * cos_phi / (1 + r * sig / lam)
    np.testing.assert_allclose(terms.sum(axis=1), v_np, atol=1e-10, rtol=1e-9)
    np.testing.assert_allclose(pj.agency.weight_decomposition(basis, w, r), terms, atol=1e-10)


def test_commuting_and_generalized_agree_on_weights():
    _, _, Sigma, M, w, r = random_instance(7, 5, 5, commuting=True)
    v = {}
    for method in ("commuting", "generalized"):
        basis = pj.agency.concept_basis(M, Sigma, w, method=method)
        v[method] = np.asarray(pj.agency.weight_decomposition(basis, w, r)).sum(axis=1)
    np.testing.assert_allclose(v["commuting"], v["generalized"], atol=1e-10)
    assert pj.agency.concept_basis(M, Sigma, w).kind == "commuting"


def test_commuting_basis_rejects_non_commuting():
    _, _, Sigma, M, w, _ = random_instance(3, 4, 4)
    assert pj.agency.concept_basis(M, Sigma).kind == "generalized"
    with pytest.raises(ValueError, match="do not commute"):
        pj.agency.concept_basis(M, Sigma, method="commuting")


def _tied_commuting_pair(mixes):
    """Commuting ``M = Q diag(λ) Qᵀ``, ``Σ = Q diag(σ) Qᵀ`` (m = 4) in which, for each weight
    ``g`` of ``mixes``, the pair of concepts assigned to it ties in ``M + tΣ`` with
    ``t = g ‖M‖_F/‖Σ‖_F``: ``λ_i + tσ_i = λ_k + tσ_k`` although ``(λ_i, σ_i) ≠ (λ_k, σ_k)``.

    Pair (0, 1) ties at ``mixes[0]``, pair (2, 3) at ``mixes[1]`` (if given).  ``λ_0`` and ``λ_2``
    solve ``λ_i = λ_k + t (σ_k − σ_i)``; ``t`` depends on ``‖λ‖`` only weakly, so a fixed-point
    iteration converges to rounding precision.
    """
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))  # generic rotation: no axis-aligned luck
    sig = np.array([1.0, 2.0, 1.5, 3.0])
    lam = np.array([1.0, 1.0, 2.0, 0.5])
    for _ in range(200):
        ratio = np.linalg.norm(lam) / np.linalg.norm(sig)
        lam[0] = lam[1] + mixes[0] * ratio * (sig[1] - sig[0])
        if len(mixes) > 1:
            lam[2] = lam[3] + mixes[1] * ratio * (sig[3] - sig[2])
    ratio = np.linalg.norm(lam) / np.linalg.norm(sig)
    for (i, k), g in zip([(0, 1), (2, 3)][: len(mixes)], mixes, strict=True):
        t = g * ratio
        assert abs((lam[i] + t * sig[i]) - (lam[k] + t * sig[k])) < 1e-14  # a genuine tie
    return (Q * lam) @ Q.T, (Q * sig) @ Q.T, Q, lam, sig


def test_commuting_basis_survives_a_tie_in_the_mixed_matrix():
    from platinum_jax.agency._concepts import _MIXING

    M, Sigma, Q0, lam0, sig0 = _tied_commuting_pair(_MIXING[:1])
    w = np.array([0.4, 0.3, 0.2, 0.1])
    basis = pj.agency.concept_basis(M, Sigma, w, method="commuting")
    Q = np.asarray(basis.vectors)
    # The returned Q really diagonalises both (an unchecked eigh(M + tΣ) mixes concepts 0, 1).
    for X, d in ((M, basis.eigenvalues), (Sigma, basis.noise)):
        np.testing.assert_allclose(Q.T @ X @ Q, np.diag(np.asarray(d)), atol=1e-10)
    np.testing.assert_allclose(np.sort(np.asarray(basis.eigenvalues)), np.sort(lam0), atol=1e-10)
    # Each returned direction is ± a constructed concept.
    np.testing.assert_allclose(np.sort(np.abs(Q0.T @ Q).max(axis=0)), np.ones(4), atol=1e-10)
    assert pj.agency.concept_basis(M, Sigma).kind == "commuting"


def test_unseparable_tie_falls_back_or_raises():
    from platinum_jax.agency._concepts import _MIXING

    M, Sigma, *_ = _tied_commuting_pair(_MIXING[:2])  # a tie at every weight tried
    assert np.linalg.norm(M @ Sigma - Sigma @ M) < 1e-12  # they do commute
    w, r = np.array([0.4, 0.3, 0.2, 0.1]), 0.7
    with pytest.raises(ValueError, match="no shared eigenbasis could be separated"):
        pj.agency.concept_basis(M, Sigma, w, method="commuting")
    basis = pj.agency.concept_basis(M, Sigma, w)
    assert basis.kind == "generalized"
    v = np.asarray(pj.agency.weight_decomposition(basis, w, r)).sum(axis=1)
    np.testing.assert_allclose(v, np_v_star(M, Sigma, w, r), atol=1e-10)
    res = pj.agency.platinum_items(M, Sigma, w, r, 0.3, 0.4, 0.5)
    assert res.basis.kind == "generalized"


_FLOAT32_SCRIPT = """
import json, jax, numpy as np
assert not jax.config.jax_enable_x64  # JAX's default: float32
from platinum_jax.agency import concept_basis, platinum_items
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import sweep, RiskAversion, CostScale, ConceptShift, Weights, Welfare
world = demo_world(seed=0)
p = world.primitives
out = {k: np.asarray(getattr(p, k), np.float64).tolist() for k in ("A", "C", "Sigma", "w")}
out["dtype"] = str(p.M.dtype)
auto = concept_basis(p.M, p.Sigma, p.w)
com = concept_basis(p.M, p.Sigma, p.w, method="commuting")
out["kinds"] = [auto.kind, com.kind]
out["Q"], out["lam"], out["sig"] = (np.asarray(x, np.float64).tolist()
                                    for x in (com.vectors, com.eigenvalues, com.noise))
res = platinum_items(p.M, p.Sigma, p.w, p.r, world.tau_w, world.tau_m, world.tau_e)
out["platinum"], out["platinum_kind"] = np.asarray(res.flags).tolist(), res.basis.kind
out["truth"] = world.items["platinum"].to_numpy().tolist()
axes = [RiskAversion([0.5, 2.0]), CostScale([0.7, 1.5]), ConceptShift(0, [0.0, 1.2])]
ds = sweep(p, axes, [Weights(), Welfare()], progress=False)
out["path"], out["reason"], out["basis_kind"] = (ds.attrs["path"], ds.attrs["path_reason"],
                                                 ds.attrs["basis_kind"])
out["v"], out["welfare"] = ds["v"].values.tolist(), ds["welfare"].values.tolist()
out["v_dtype"] = str(ds["v"].dtype)
print(json.dumps(out))
"""


def test_float32_keeps_the_commuting_basis_and_the_fast_path():
    """With x64 off (JAX's default) the demo world's commuting pair is recognised as such.

    Runs in a subprocess because conftest turns x64 on here.  The reference is NumPy float64 on
    the very float32 primitives the subprocess used; the tolerances are float32-sized.
    """
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="0")
    proc = subprocess.run([sys.executable, "-c", _FLOAT32_SCRIPT], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["dtype"] == "float32" and out["v_dtype"] == "float32"
    A, C, Sigma, w = (np.asarray(out[k]) for k in ("A", "C", "Sigma", "w"))
    M = A @ np.linalg.solve(C, A.T)
    assert out["kinds"] == ["commuting", "commuting"]
    Q, lam, sig = (np.asarray(out[k]) for k in ("Q", "lam", "sig"))
    tol = 1e-4 * np.abs(M).max()
    np.testing.assert_allclose(Q.T @ Q, np.eye(len(w)), atol=1e-5)
    np.testing.assert_allclose((Q * lam) @ Q.T, M, atol=tol)
    np.testing.assert_allclose((Q * sig) @ Q.T, Sigma, atol=1e-4 * np.abs(Sigma).max())
    assert out["platinum_kind"] == "commuting" and out["platinum"] == out["truth"]
    assert out["path"] == "fast" and out["basis_kind"] == "commuting", out["reason"]
    # Grid truth in float64: M/κ + δ q qᵀ with q the concept of largest λ/σ (Haupt et al., eq. 3),
    # found independently from eigh of a generic combination of the commuting pair.
    _, V = np.linalg.eigh(M + 0.37 * Sigma)
    ratio = np.einsum("ij,ik,kj->j", V, M, V) / np.einsum("ij,ik,kj->j", V, Sigma, V)
    q = V[:, np.argmax(ratio)]
    v_out, W_out = np.asarray(out["v"]), np.asarray(out["welfare"])
    for (i, r), (j, k), (h, d) in itertools.product(enumerate([0.5, 2.0]), enumerate([0.7, 1.5]),
                                                    enumerate([0.0, 1.2])):
        Mk = M / k + d * np.outer(q, q)
        v = np.linalg.solve(Mk + r * Sigma, Mk @ w)
        W = w @ Mk @ v - 0.5 * v @ Mk @ v - 0.5 * r * v @ Sigma @ v
        np.testing.assert_allclose(v_out[i, j, h], v, atol=2e-4 * np.abs(v).max())
        np.testing.assert_allclose(W_out[i, j, h], W, rtol=2e-4)


@SETTINGS
@given(st.integers(0, 2**31 - 1), SIZES,
       st.floats(0.05, 0.95), st.floats(0.05, 0.95), st.floats(0.1, 10.0))
def test_platinum_definition_and_bound(seed, m, tau_w, tau_m, tau_e):
    _, _, Sigma, M, w, r = random_instance(seed, m, m, commuting=True)
    w = w / np.linalg.norm(w)
    res = pj.agency.platinum_items(M, Sigma, w, r, tau_w, tau_m, tau_e, method="commuting")
    Q = np.asarray(res.basis.vectors)
    lam, sig = np.asarray(res.basis.eigenvalues), np.asarray(res.basis.noise)
    cos_phi = Q.T @ w
    ratio = lam / (r * sig)
    good = (cos_phi >= tau_w) & (ratio >= tau_e)
    expected = ((Q >= tau_m) & good[None, :]).any(axis=1)
    np.testing.assert_array_equal(res.flags, expected)
    v = np_v_star(M, Sigma, w, r)
    bound = pj.agency.platinum_lower_bound(tau_w, tau_m, tau_e)
    terms = Q * cos_phi / (1 + r * sig / lam)
    for i in np.flatnonzero(expected):
        j = int(res.witness[i])
        assert good[j] and Q[i, j] >= tau_m
        assert terms[i, j] >= bound - 1e-12  # the witness term clears τ_wτ_m/(1 + 1/τ_e)
        if np.all(terms[i] >= 0):  # the paper's bound on v_i needs no negative terms
            assert v[i] >= bound - 1e-12
    assert np.all(np.asarray(res.witness)[~expected] == -1)


def test_demo_world_truth_is_recovered():
    from platinum_jax.datasets import demo_world

    world = demo_world(0)
    p = world.primitives
    res = pj.agency.platinum_items(p.M, p.Sigma, p.w, p.r, world.tau_w, world.tau_m, world.tau_e)
    np.testing.assert_array_equal(res.flags, world.items["platinum"].to_numpy())
    assert res.basis.kind == "commuting"


def test_ascent_matches_closed_form():
    _, _, Sigma, M, w, r = random_instance(11, 6, 8)
    np.testing.assert_allclose(pj.agency.optimal_weights_by_ascent(M, Sigma, w, r),
                               np_v_star(M, Sigma, w, r), atol=1e-6)


def test_rank_one_concept_change_moves_only_its_eigenvalue():
    _, _, Sigma, M, w, r = random_instance(5, 5, 5)
    basis = pj.agency.concept_basis(M, Sigma, w, method="generalized")
    j, delta = 2, 0.8
    M_new = np.asarray(pj.agency.concept_shift(M, basis, j, delta))
    lam_new = np.sort(np.real(np.linalg.eigvals(np.linalg.solve(Sigma, M_new))))
    lam_expected = np.asarray(basis.eigenvalues).copy()
    lam_expected[j] += delta
    np.testing.assert_allclose(lam_new, np.sort(lam_expected), atol=1e-9)
    # The optimal weight moves only along q_j, by δ r ŵ_j / ((λ_j + r)(λ_j + δ + r)).
    Q = np.asarray(basis.vectors)
    lam_j = float(basis.eigenvalues[j])
    w_hat = Q.T @ Sigma @ w
    dv = np_v_star(M_new, Sigma, w, r) - np_v_star(M, Sigma, w, r)
    expected = Q[:, j] * ((lam_j + delta) / (lam_j + delta + r) - lam_j / (lam_j + r)) * w_hat[j]
    np.testing.assert_allclose(dv, expected, atol=1e-10)


def test_new_activity_and_cost_decrease_give_rank_one_changes():
    A, C, Sigma, _, w, r = random_instance(9, 4, 4)
    M = A @ np.linalg.solve(C, A.T)
    q = np.linalg.eigh(M)[1][:, -1]
    A2, C2 = pj.agency.add_activity(A, C, q, cost=0.5)
    np.testing.assert_allclose(pj.agency.output_cost(A2, C2), M + np.outer(q, q) / 0.5, atol=1e-10)
    d = np.linalg.solve(A @ np.linalg.inv(C), q)  # independent route: explicit inverse in NumPy
    t = 0.5 / float(d @ np.linalg.solve(C, d))  # halfway to the positive-definiteness limit
    res = pj.agency.cost_decrease(A, C, q, t=t)
    np.testing.assert_allclose(res.direction, d, atol=1e-9)
    np.testing.assert_allclose(pj.agency.output_cost(A, res.C), M + float(res.delta) * np.outer(q, q),
                               atol=1e-9)
    assert float(res.delta) > 0


def test_cost_decrease_conditions():
    A, C, *_ = random_instance(2, 3, 5)
    with pytest.raises(ValueError, match="as many activities as tasks"):
        pj.agency.cost_decrease(A, C, np.ones(3))
    A_sq = np.ones((3, 3))
    with pytest.raises(ValueError, match="singular"):
        pj.agency.cost_decrease(A_sq, np.eye(3), np.ones(3))
    A, C, *_ = random_instance(2, 3, 3)
    with pytest.raises(ValueError, match="not positive definite"):
        pj.agency.cost_decrease(A, C, np.ones(3), t=1e6)


def _fd(f, x, eps=1e-6):
    x = np.asarray(x, float)
    g = np.zeros(x.shape + np.shape(f(x)))
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)
    return g


def test_autodiff_sensitivities_match_finite_differences():
    A, C, Sigma, _, w, r = random_instance(4, 3, 4)
    prims = pj.agency.Primitives(A, C, Sigma, w, r)
    jac = pj.agency.weight_jacobians(prims)
    grad = pj.agency.welfare_gradient(prims)

    def v_of(A_=A, C_=C, S_=Sigma, w_=w, r_=r):
        M_ = A_ @ np.linalg.solve(C_, A_.T)
        return np_v_star(M_, S_, w_, r_)

    def W_of(**kw):
        args = dict(A_=A, C_=C, S_=Sigma, w_=w, r_=r) | kw
        M_ = args["A_"] @ np.linalg.solve(args["C_"], args["A_"].T)
        v_ = np_v_star(M_, args["S_"], args["w_"], args["r_"])
        return np_welfare(v_, M_, args["S_"], args["w_"], args["r_"])

    for field, key, x in (("A", "A_", A), ("w", "w_", w)):
        fd_v = _fd(lambda x_, k=key: v_of(**{k: x_}), x)  # shape x.shape + (m,)
        np.testing.assert_allclose(np.moveaxis(fd_v, -1, 0), getattr(jac, field), atol=1e-6)
        fd_W = _fd(lambda x_, k=key: W_of(**{k: x_}), x)
        np.testing.assert_allclose(fd_W, getattr(grad, field), atol=1e-6)
    # C and Σ are symmetric: compare derivatives along random symmetric directions E.
    rng = np.random.default_rng(0)
    for field, key, x in (("C", "C_", C), ("Sigma", "S_", Sigma)):
        E = rng.normal(size=x.shape)
        E = E + E.T
        eps = 1e-6
        fd_v = (v_of(**{key: x + eps * E}) - v_of(**{key: x - eps * E})) / (2 * eps)
        np.testing.assert_allclose(np.tensordot(getattr(jac, field), E, axes=2), fd_v, atol=1e-6)
        fd_W = (W_of(**{key: x + eps * E}) - W_of(**{key: x - eps * E})) / (2 * eps)
        np.testing.assert_allclose(np.sum(getattr(grad, field) * E), fd_W, atol=1e-6)
    fd_r = (v_of(r_=r + 1e-6) - v_of(r_=r - 1e-6)) / 2e-6
    np.testing.assert_allclose(jac.r, fd_r, atol=1e-6)
    fd_W_r = (W_of(r_=r + 1e-6) - W_of(r_=r - 1e-6)) / 2e-6
    np.testing.assert_allclose(grad.r, fd_W_r, atol=1e-6)
    # Envelope theorem: at the optimum dW/dr = ∂W/∂r = −½ v*ᵀΣv* (closed form, same sign).
    v = v_of()
    np.testing.assert_allclose(fd_W_r, -0.5 * v @ Sigma @ v, atol=1e-6)


def test_comparative_statics_match_eq2_closed_form():
    _, _, Sigma, M, w, r = random_instance(21, 5, 5, commuting=True)
    basis = pj.agency.concept_basis(M, Sigma, w, method="commuting")
    df = pj.agency.comparative_statics(M, Sigma, w, r, basis=basis)
    lam, sig = np.asarray(basis.eigenvalues), np.asarray(basis.noise)
    w_hat = np.asarray(basis.vectors).T @ w
    np.testing.assert_allclose(df["d_weight_d_welfare"], lam / (lam + r * sig), atol=1e-10)
    np.testing.assert_allclose(df["d_weight_d_lambda"], r * sig * w_hat / (lam + r * sig) ** 2,
                               atol=1e-10)
    np.testing.assert_allclose(df["d_weight_d_sigma"], -r * lam * w_hat / (lam + r * sig) ** 2,
                               atol=1e-10)
    assert df["matches_theory"].all()


def test_primitives_is_a_vmappable_pytree():
    insts = [random_instance(s, 4, 5) for s in range(3)]
    prims = [pj.agency.Primitives(A, C, S, w, r) for A, C, S, _, w, r in insts]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *prims)
    v = jax.vmap(lambda p: p.optimal_weights())(stacked)
    for k, (_, _, S, M, w, r) in enumerate(insts):
        np.testing.assert_allclose(v[k], np_v_star(M, S, w, r), atol=1e-10)
    p = pj.agency.Primitives.from_output_cost(insts[0][3], insts[0][2], insts[0][4], insts[0][5])
    np.testing.assert_allclose(p.M, insts[0][3], atol=1e-10)


def test_float32_inputs_stay_float32_and_agree():
    _, _, Sigma, M, w, r = random_instance(8, 5, 5)
    v32 = pj.agency.optimal_weights(M.astype(np.float32), Sigma.astype(np.float32),
                             w.astype(np.float32), np.float32(r))
    assert v32.dtype == jnp.float32
    np.testing.assert_allclose(v32, np_v_star(M, Sigma, w, r), rtol=2e-3, atol=2e-4)


def test_jit_and_runtime_checks():
    _, _, Sigma, M, w, r = random_instance(8, 4, 4)
    f = jax.jit(lambda M_, S_, w_, r_: pj.agency.optimal_weights(M_, S_, w_, r_, check="runtime"))
    np.testing.assert_allclose(f(M, Sigma, w, r), np_v_star(M, Sigma, w, r), atol=1e-10)
    with pytest.raises(Exception, match="Sigma is not positive definite"):
        jax.block_until_ready(f(M, -Sigma, w, r))
    with pytest.raises(Exception, match="r \\(risk aversion\\) must be >= 0"):
        jax.block_until_ready(f(M, Sigma, w, -1.0))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(Sigma=-np.eye(3)), "Sigma is not positive definite: smallest eigenvalue -1"),
        (dict(C=np.diag([1.0, 0.0, 1.0])), "C is not positive definite"),
        (dict(M=-np.eye(3)), "M is not positive semi-definite"),
        (dict(Sigma=np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]])), "Sigma is not symmetric"),
        (dict(w=np.array([1.0, np.nan, 0.0])), "w contains 1 non-finite value"),
        (dict(A=np.array([[np.inf, 0, 0], [0, 1, 0], [0, 0, 1]])), "A contains 1 non-finite"),
        (dict(r=-0.5), "r \\(risk aversion\\) must be >= 0"),
        (dict(w=np.ones(4)), "w has length 4 but A has 3 rows"),
        (dict(Sigma=np.eye(4)), "Sigma has shape \\(4, 4\\) but A has 3 rows"),
        (dict(C=np.eye(2)), "C has shape \\(2, 2\\) but A has 3 columns"),
    ],
)
def test_validate_primitives_names_the_problem(kwargs, message):
    base = dict(A=np.eye(3), C=np.eye(3), Sigma=np.eye(3), w=np.ones(3), r=1.0)
    with pytest.raises(ValueError, match=message):
        pj.agency.validate_primitives(**(base | kwargs))


def test_certainty_equivalent_checks_the_effort_shape():
    A, C, Sigma, _, w, r = random_instance(6, 3, 5)  # m = 3 tasks, n = 5 activities
    v = np.ones(3)
    for bad in (np.ones(3), np.ones((5, 1)), np.float64(1.0)):
        with pytest.raises(ValueError, match=r"a \(the lab's effort\) must have shape \(5,\)"):
            pj.agency.certainty_equivalent(bad, v, A, C, Sigma, r)
    with pytest.raises(ValueError, match=r"must have shape \(5,\)"):  # also under jit
        jax.jit(lambda a_: pj.agency.certainty_equivalent(a_, v, A, C, Sigma, r))(jnp.ones(4))
    a = np.linspace(0.1, 0.5, 5)
    expected = v @ A @ a - 0.5 * a @ C @ a - 0.5 * r * v @ Sigma @ v
    np.testing.assert_allclose(pj.agency.certainty_equivalent(a, v, A, C, Sigma, r), expected, atol=1e-12)


def test_float32_low_rank_output_cost_passes_validation():
    # M = AAᵀ of rank 3 < m = 12: its zero eigenvalues come out near −eps(float32)‖M‖ in float32,
    # which a float64-sized tolerance (1e-8) would reject.
    rng = np.random.default_rng(4)
    A = rng.normal(size=(12, 3)).astype(np.float32)
    M = np.asarray(A, np.float64) @ np.asarray(A, np.float64).T
    lam, V = np.linalg.eigh(M)
    M32 = ((V * np.where(lam > 1e-9, lam, -1e-6 * lam.max())) @ V.T).astype(np.float32)
    M32 = np.triu(M32) + np.triu(M32, 1).T  # exactly symmetric after rounding
    pj.agency.validate_primitives(M=M32)  # rounding-sized negative eigenvalues are accepted ...
    with pytest.raises(ValueError, match="M is not positive semi-definite"):
        pj.agency.validate_primitives(M=M32.astype(np.float64))  # ... but not in float64
    with pytest.raises(ValueError, match="M is not positive semi-definite"):
        pj.agency.validate_primitives(M=(M32 - 0.01 * lam.max() * np.eye(12)).astype(np.float32))


def test_public_functions_validate_and_singular_system():
    with pytest.raises(ValueError, match="Sigma is not positive definite"):
        pj.agency.optimal_weights(np.eye(2), np.diag([1.0, -1.0]), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="not unique"):
        pj.agency.optimal_weights(np.diag([1.0, 0.0]), np.eye(2), np.ones(2), 0.0)
    with pytest.raises(ValueError, match="tau_w must lie in"):
        pj.agency.platinum_items(np.eye(2), np.eye(2), np.ones(2), 1.0, 1.5, 0.5, 1.0)
    with pytest.raises(ValueError, match="kappa"):
        pj.agency.uniform_cost_change(np.eye(2), 0.0)
