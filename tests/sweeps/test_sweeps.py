"""Sensitivity sweeps: every grid point checked against an independent NumPy/SciPy solve."""

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
import scipy.linalg as sla

from platinum_jax.agency import Primitives, concept_basis, platinum_items
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import (
    ConceptShift,
    CostScale,
    NoiseScale,
    Platinum,
    RandomPrimitives,
    RiskAversion,
    UserOutput,
    Weights,
    WeightSummary,
    WelfareShift,
    sweep,
)

REPO = Path(__file__).resolve().parents[2]


def _random_problem(m: int, n: int, seed: int) -> Primitives:
    """A non-commuting instance: random A, C ≻ 0, Σ ≻ 0, w > 0."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n))
    G = rng.normal(size=(n, n))
    C = G @ G.T / n + np.eye(n)
    X = rng.normal(size=(m, m))
    Sigma = X @ X.T / m + 0.5 * np.eye(m)
    w = rng.uniform(0.2, 1.0, size=m)
    return Primitives(A, C, Sigma, w / np.linalg.norm(w), 1.0)


def _np_basis(M, Sigma):
    """Independent generalized basis: scipy's M q = λ Σ q, QᵀΣQ = I, ordered by decreasing λ."""
    lam, Q = sla.eigh(M, Sigma)
    order = np.argsort(-lam)
    return lam[order], Q[:, order]


def _np_solve(M, Sigma, w, r):
    v = np.linalg.solve(M + r * Sigma, M @ w)
    W = w @ M @ v - 0.5 * v @ M @ v - 0.5 * r * v @ Sigma @ v
    return v, W, 0.5 * v @ M @ v


@pytest.fixture(scope="module")
def problem():
    return _random_problem(7, 9, seed=3)


R_VALUES = [0.3, 2.0]
K_VALUES = [0.5, 1.5]
D_VALUES = [0.0, 0.8]
S_VALUES = [0.4, 3.0]
T_VALUES = [-0.2, 0.5]


def _mixed_axes():
    return [
        RiskAversion(R_VALUES),
        CostScale(K_VALUES),
        ConceptShift(1, D_VALUES),
        NoiseScale(S_VALUES, concept=2),
        WelfareShift(T_VALUES, item=4),
    ]


def _np_mixed_truth(base: Primitives):
    """v*, W, effort at every point of the mixed grid, from the axis definitions in NumPy."""
    M0 = np.asarray(base.A) @ np.linalg.solve(np.asarray(base.C), np.asarray(base.A).T)
    S0, w0 = np.asarray(base.Sigma), np.asarray(base.w)
    _, Q = _np_basis(M0, S0)
    p1, p2 = S0 @ Q[:, 1], S0 @ Q[:, 2]  # P = ΣQ in the generalized basis (σ = 1)
    e4 = np.eye(M0.shape[0])[4]
    shape = (2, 2, 2, 2, 2)
    v = np.empty(shape + (M0.shape[0],))
    W, E = np.empty(shape), np.empty(shape)
    for idx in itertools.product(*(range(s) for s in shape)):
        r, k, d, s, t = (R_VALUES[idx[0]], K_VALUES[idx[1]], D_VALUES[idx[2]],
                         S_VALUES[idx[3]], T_VALUES[idx[4]])
        M = M0 / k + d * np.outer(p1, p1)  # axes act in list order: κ, then δ
        Sigma = S0 + (s - 1.0) * np.outer(p2, p2)
        v[idx], W[idx], E[idx] = _np_solve(M, Sigma, w0 + t * e4, r)
    return v, W, E


@pytest.fixture(scope="module")
def mixed(problem):
    fast = sweep(problem, _mixed_axes(), chunk_size=9, progress=False)
    general = sweep(problem, _mixed_axes(), chunk_size=9, method="general", progress=False)
    return fast, general, _np_mixed_truth(problem)


def test_fast_and_general_paths_match_direct_solve(mixed):
    fast, general, (v, W, E) = mixed
    assert fast.attrs["path"] == "fast" and fast.attrs["basis_kind"] == "generalized"
    assert general.attrs["path"] == "general"
    for ds in (fast, general):
        assert ds["v"].dims == ("r", "kappa", "delta", "noise_scale", "welfare_shift", "item")
        np.testing.assert_allclose(ds["v"].values, v, rtol=0, atol=1e-10)
        np.testing.assert_allclose(ds["welfare"].values, W, rtol=0, atol=1e-10)
        np.testing.assert_allclose(ds["effort_cost"].values, E, rtol=0, atol=1e-10)


def test_single_axes_match_numpy(problem):
    M0 = np.asarray(problem.M)
    S0, w0 = np.asarray(problem.Sigma), np.asarray(problem.w)
    lam, Q = _np_basis(M0, S0)
    cases = [
        (RiskAversion([0.0, 0.7, 5.0]), lambda x: (M0, S0, w0, x)),
        (CostScale([0.25, 4.0]), lambda x: (M0 / x, S0, w0, 1.0)),
        # Shifting λ_0 by δ is the same as M + δ (ΣQ_0)(ΣQ_0)ᵀ; the lowest allowed δ is −λ_0.
        (ConceptShift(0, [-lam[0], 1.3]),
         lambda x: (M0 + x * np.outer(S0 @ Q[:, 0], S0 @ Q[:, 0]), S0, w0, 1.0)),
        (NoiseScale([0.5, 2.0]), lambda x: (M0, x * S0, w0, 1.0)),
        (WelfareShift([0.7], direction=np.arange(7.0)), lambda x: (M0, S0, w0 + x * np.arange(7.0), 1.0)),
    ]
    for axis, prims in cases:  # the general path is checked axis by axis in the mixed grid
        ds = sweep(problem, [axis], progress=False)
        assert ds.attrs["path"] == "fast"
        for k, x in enumerate(axis.values):
            v, W, _ = _np_solve(*prims(float(x)))
            np.testing.assert_allclose(ds["v"].values[k], v, atol=1e-10, err_msg=axis.name)
            np.testing.assert_allclose(ds["welfare"].values[k], W, atol=1e-10)


def test_commuting_concept_shift_is_the_papers_rank_one_change():
    world = demo_world(seed=0)
    base = world.primitives
    M0, S0, w0 = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    # Independent concept 0: the shared eigenvector with the largest λ/σ (Haupt et al., eq. 3).
    _, V = np.linalg.eigh(M0 + 0.37 * S0)
    lam = np.einsum("ij,ik,kj->j", V, M0, V)
    sig = np.einsum("ij,ik,kj->j", V, S0, V)
    q = V[:, np.argmax(lam / sig)]
    ds = sweep(base, [CostScale([0.7, 2.0]), ConceptShift(0, [0.5, 3.0])], progress=False)
    assert ds.attrs["basis_kind"] == "commuting" and ds.attrs["path"] == "fast"
    for (i, k), (j, d) in itertools.product(enumerate([0.7, 2.0]), enumerate([0.5, 3.0])):
        v, _, _ = _np_solve(M0 / k + d * np.outer(q, q), S0, w0, 1.0)
        np.testing.assert_allclose(ds["v"].values[i, j], v, atol=1e-10)
    # Haupt et al. §3: higher κ acts like more risk and lowers welfare; δ > 0 raises concept 0 items.
    assert (ds["welfare"].values[1] < ds["welfare"].values[0]).all()
    items0 = np.abs(q) > 1e-8
    assert (ds["v"].values[:, 1, items0] > ds["v"].values[:, 0, items0]).all()


@pytest.mark.parametrize("chunk_size", [1, 5, 13])
def test_chunking_and_padding_do_not_change_results(problem, mixed, chunk_size):
    fast, _, _ = mixed
    ds = sweep(problem, _mixed_axes(), chunk_size=chunk_size, progress=False)
    assert ds.attrs["n_chunks"] == -(-32 // chunk_size)
    for name in ("v", "welfare", "effort_cost"):
        np.testing.assert_allclose(ds[name].values, fast[name].values, rtol=1e-13, atol=1e-14)


def test_result_is_labelled_and_converts_to_pandas(mixed):
    fast, _, _ = mixed
    assert list(fast["item"].values) == [f"item_{i}" for i in range(7)]
    np.testing.assert_array_equal(fast["kappa"].values, K_VALUES)
    df = fast["v"].to_dataframe()
    assert df.index.names == ["r", "kappa", "delta", "noise_scale", "welfare_shift", "item"]
    assert len(df) == 32 * 7
    one = fast["v"].sel(r=2.0, kappa=0.5, delta=0.8, noise_scale=0.4, welfare_shift=0.5)
    assert float(df.loc[(2.0, 0.5, 0.8, 0.4, 0.5, "item_3"), "v"]) == float(one.sel(item="item_3"))


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_interrupted_sweep_resumes_without_recomputing(problem, mixed, tmp_path, fmt):
    fast, _, _ = mixed
    store = tmp_path / ("run.zarr" if fmt == "zarr" else "run")
    seen: list[int] = []

    class Stop(Exception):
        pass

    def interrupt_after_3(k, n):
        seen.append(k)
        if len(seen) == 3:
            raise Stop

    with pytest.raises(Stop):
        sweep(problem, _mixed_axes(), chunk_size=5, store=store, on_chunk=interrupt_after_3,
              progress=False)
    with pytest.raises(ValueError, match="resume=True"):
        sweep(problem, _mixed_axes(), chunk_size=5, store=store, progress=False)
    recomputed: list[int] = []
    ds = sweep(problem, _mixed_axes(), chunk_size=5, store=store, resume=True,
               on_chunk=lambda k, n: recomputed.append(k), progress=False)
    assert sorted(recomputed) == [3, 4, 5, 6]
    assert ds.attrs["chunks_computed"] == 4 and ds.attrs["chunks_reused"] == 3
    for name in ("v", "welfare", "effort_cost"):
        np.testing.assert_allclose(ds[name].values, fast[name].values, rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="different sweep"):
        sweep(problem, [RiskAversion([1.0])], chunk_size=5, store=store, resume=True,
              progress=False)


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_out_of_core_sweep_reads_back_lazily(problem, mixed, tmp_path, fmt):
    # The in-memory run with the same chunks is the reference, bit for bit; the NumPy truth of
    # the mixed grid checks both to rounding.
    fast = sweep(problem, _mixed_axes(), chunk_size=5, progress=False)
    v_np, _, _ = mixed[2]
    np.testing.assert_allclose(fast["v"].values, v_np, atol=1e-10)
    store = tmp_path / ("lazy.zarr" if fmt == "zarr" else "lazy")
    ds = sweep(problem, _mixed_axes(), chunk_size=5, store=store, keep_in_memory=False,
               progress=False)
    assert ds.attrs["chunks_computed"] == 7
    # Nothing is loaded until asked for: the variables are backed by the store.
    assert not ds["v"].variable._in_memory
    for name in ("v", "welfare", "effort_cost"):
        assert ds[name].dims == fast[name].dims
        np.testing.assert_array_equal(ds[name].values, fast[name].values)
    # Label- and position-based selections read only what they need and agree too.
    sel = dict(kappa=1.5, item=["item_4", "item_0"])
    np.testing.assert_array_equal(ds["v"].sel(**sel).isel(delta=[1, 0], r=1).values,
                                  fast["v"].sel(**sel).isel(delta=[1, 0], r=1).values)
    np.testing.assert_array_equal(ds.to_dataframe().values, fast.to_dataframe().values)
    # A resumed out-of-core sweep neither recomputes nor reads its finished chunks.
    again = sweep(problem, _mixed_axes(), chunk_size=5, store=store, resume=True,
                  keep_in_memory=False, progress=False)
    assert again.attrs["chunks_computed"] == 0 and again.attrs["chunks_reused"] == 7
    np.testing.assert_array_equal(again["welfare"].values, fast["welfare"].values)
    with pytest.raises(ValueError, match="keep_in_memory=False needs store="):
        sweep(problem, _mixed_axes(), keep_in_memory=False, progress=False)


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_store_without_finished_chunks_reruns_without_resume(problem, mixed, tmp_path, fmt,
                                                             monkeypatch):
    """A run killed before its first chunk finished leaves a store with no data to protect."""
    import platinum_jax.sweeps._grid as grid

    fast, _, _ = mixed
    store = tmp_path / ("early.zarr" if fmt == "zarr" else "early")

    class Killed(Exception):
        pass

    def killed(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as mp:
        mp.setattr(grid, "_run_chunk", killed)
        with pytest.raises(Killed):
            sweep(problem, _mixed_axes(), chunk_size=5, store=store, progress=False)
    assert store.is_dir()  # the store was created ...
    ds = sweep(problem, _mixed_axes(), chunk_size=5, store=store, progress=False)  # ... no resume
    assert ds.attrs["chunks_computed"] == 7
    np.testing.assert_allclose(ds["v"].values, fast["v"].values, rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="resume=True"):  # now it does hold chunks
        sweep(problem, _mixed_axes(), chunk_size=5, store=store, progress=False)


def test_resume_refuses_chunks_of_an_edited_function(problem, tmp_path):
    """Stored chunks record what user functions compute, not only their names."""
    axes = [RiskAversion([0.5, 1.0, 2.0, 3.0])]

    def make_output(scale):
        return UserOutput("scaled", lambda p: scale * jnp.trace(p.M))

    def make_draws(spread):
        def jitter(key, base):
            return {"Sigma": base.Sigma + spread * jnp.eye(base.Sigma.shape[0])
                    * jax.random.uniform(key)}
        return RandomPrimitives(2, jax.random.key(0), jitter)

    def run(store, output, extra=(), **kw):
        return sweep(problem, [*extra, *axes], outputs=[output], chunk_size=2, store=store,
                     progress=False, **kw)

    class Stop(Exception):
        pass

    def stop(k, n):
        raise Stop

    for name, first, same, edited, extra in (
        ("closure", make_output(2.0), make_output(2.0), make_output(3.0), ()),
        ("code", UserOutput("scaled", lambda p: jnp.trace(p.M)), None,
         UserOutput("scaled", lambda p: jnp.trace(p.Sigma)), ()),
    ):
        store = tmp_path / name
        with pytest.raises(Stop):
            run(store, first, extra, on_chunk=stop)
        if same is not None:  # the same code with the same captured value resumes
            ds = run(store, same, extra, resume=True)
            assert ds.attrs["chunks_reused"] == 1
            np.testing.assert_allclose(ds["scaled"].values, 2.0 * np.trace(np.asarray(problem.M)))
        with pytest.raises(ValueError, match="different sweep"):
            run(store, edited, extra, resume=True)
    # A sampler of RandomPrimitives whose closure constant changed is a different sweep too.
    store = tmp_path / "sampler"
    out = UserOutput("trace_S", lambda p: jnp.trace(p.Sigma))
    with pytest.raises(Stop):
        run(store, out, [make_draws(0.5)], on_chunk=stop)
    assert run(store, out, [make_draws(0.5)], resume=True).attrs["chunks_reused"] == 1
    with pytest.raises(ValueError, match="different sweep"):
        run(store, out, [make_draws(0.9)], resume=True)


def test_progress_bar_counts_chunks(problem, capsys):
    sweep(problem, _mixed_axes(), chunk_size=5, progress=True)  # 32 points: 7 chunks
    err = capsys.readouterr().err
    assert "sweep [fast path]" in err
    assert "7/7" in err and "chunk" in err


def test_platinum_flags_match_platinum_items_pointwise():
    world = demo_world(seed=0)
    base = world.primitives
    taus = (world.tau_w, world.tau_m, world.tau_e)
    r_vals, k_vals, d_vals = [0.2, 1.0, 4.0], [0.5, 3.0], [-0.2, 2.0]
    axes = [RiskAversion(r_vals), CostScale(k_vals), ConceptShift(2, d_vals)]
    ds = sweep(base, axes, outputs=[Platinum(*taus)], progress=False)
    M0, S0, w0 = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    g = np.asarray(concept_basis(M0, S0, w0).vectors)[:, 2]
    flips = 0
    for (i, r), (j, k), (h, d) in itertools.product(*(enumerate(v) for v in (r_vals, k_vals, d_vals))):
        ref = platinum_items(M0 / k + d * np.outer(g, g), S0, w0, r, *taus).flags
        np.testing.assert_array_equal(ds["platinum"].values[i, j, h], np.asarray(ref))
        flips += int(np.asarray(ref).sum())
    assert 0 < flips < ds["platinum"].size  # the grid crosses the platinum boundary
    # The unperturbed point reproduces the world's ground truth.
    truth = world.items["platinum"].to_numpy()
    point = sweep(base, [RiskAversion([1.0])], outputs=[Platinum(*taus)], progress=False)
    np.testing.assert_array_equal(point["platinum"].values[0], truth)


def test_platinum_flags_non_commuting_both_paths(problem):
    taus = (0.35, 0.5, 3.0)
    axes = [RiskAversion([0.1, 1.0]), NoiseScale([0.3, 2.5], concept=0), WelfareShift([0.0, -0.6], item=1)]
    fast = sweep(problem, axes, outputs=[Platinum(*taus)], progress=False)
    general = sweep(problem, axes, outputs=[Platinum(*taus)], method="general", progress=False)
    M0, S0, w0 = (np.asarray(x) for x in (problem.M, problem.Sigma, problem.w))
    _, Q = _np_basis(M0, S0)
    p0 = S0 @ Q[:, 0]
    count = 0
    for (i, r), (j, s), (k, t) in itertools.product(enumerate([0.1, 1.0]), enumerate([0.3, 2.5]),
                                                    enumerate([0.0, -0.6])):
        Sigma = S0 + (s - 1.0) * np.outer(p0, p0)
        w = w0 + t * np.eye(7)[1]
        ref = np.asarray(platinum_items(M0, Sigma, w, r, *taus).flags)
        np.testing.assert_array_equal(fast["platinum"].values[i, j, k], ref)
        np.testing.assert_array_equal(general["platinum"].values[i, j, k], ref)
        count += int(ref.sum())
    assert 0 < count < fast["platinum"].size


def test_user_outputs_and_summaries(problem):
    def residual(p):  # ‖(M + rΣ)v − Mw‖, zero at the optimum
        return jnp.linalg.norm((p.M + p.r * p.Sigma) @ p.v - p.M @ p.w)

    outputs = [Weights(), WeightSummary(), UserOutput("trace_M", lambda p: jnp.trace(p.M)),
               UserOutput("Mv", lambda p: p.M @ p.v, dims=("item",)),
               UserOutput("residual", residual)]
    axes = [RiskAversion([0.5, 3.0]), CostScale([1.0, 2.0])]
    for method in ("fast", "general"):
        ds = sweep(problem, axes, outputs=outputs, method=method, progress=False)
        M0 = np.asarray(problem.M)
        for j, k in enumerate([1.0, 2.0]):
            np.testing.assert_allclose(ds["trace_M"].values[:, j], np.trace(M0) / k, rtol=1e-12)
            for i in range(2):
                v = ds["v"].values[i, j]
                np.testing.assert_allclose(ds["Mv"].values[i, j], M0 @ v / k, atol=1e-10)
                assert ds["v_max"].values[i, j] == v.max()
                assert ds["v_argmax"].values[i, j] == int(np.argmax(v))
                np.testing.assert_allclose(ds["v_l2"].values[i, j], np.linalg.norm(v), rtol=1e-12)
        assert ds["Mv"].dims == ("r", "kappa", "item")
        assert float(ds["residual"].max()) < 1e-10
    with pytest.raises(ValueError, match="dims"):
        sweep(problem, axes, outputs=[UserOutput("Mv", lambda p: p.M @ p.v)], progress=False)


def test_random_draws_are_reproducible_and_solved_exactly(problem):
    key = jax.random.key(7)
    base_C = np.asarray(problem.C)

    def jitter_A(k, base):  # a user distribution over the effectiveness matrix A
        return {"A": problem.A + 0.1 * jax.random.normal(k, problem.A.shape, problem.A.dtype)}

    axes = [RandomPrimitives(4, key, jitter_A), RiskAversion([0.5, 2.0])]
    # 8 points in padded chunks of 3: matching fold_in(key, i) below shows the draws do not
    # depend on the chunking.
    a = sweep(problem, axes, chunk_size=3, progress=False)
    assert a.attrs["path"] == "general"
    S0, w0 = np.asarray(problem.Sigma), np.asarray(problem.w)
    for i in range(4):
        A = np.asarray(jitter_A(jax.random.fold_in(key, i), None)["A"])
        M = A @ np.linalg.solve(base_C, A.T)
        for j, r in enumerate([0.5, 2.0]):
            np.testing.assert_allclose(a["v"].values[i, j], _np_solve(M, S0, w0, r)[0], atol=1e-10)
    with pytest.raises(ValueError, match="impossible"):
        sweep(problem, axes, method="fast", progress=False)


def test_bad_axes_raise_clear_errors(problem):
    with pytest.raises(ValueError, match="r must be >= 0"):
        RiskAversion([1.0, -0.5])
    with pytest.raises(ValueError, match="kappa must be > 0"):
        CostScale([0.0, 1.0])
    with pytest.raises(ValueError, match="empty"):
        RiskAversion([])
    with pytest.raises(ValueError, match="NaN or inf"):
        CostScale([1.0, np.nan])
    with pytest.raises(ValueError, match="noise scale s must be > 0"):
        NoiseScale([-1.0])
    with pytest.raises(ValueError, match="unknown concept index 9.*0..6"):
        sweep(problem, [ConceptShift(9, [0.1])], progress=False)
    with pytest.raises(ValueError, match="indefinite"):
        sweep(problem, [ConceptShift(0, [-1e6])], progress=False)
    with pytest.raises(ValueError, match="distinct"):
        sweep(problem, [RiskAversion([1.0]), RiskAversion([2.0])], progress=False)
    with pytest.raises(KeyError, match="did you mean 'item_1'"):
        sweep(problem, [WelfareShift([0.1], item="itme_1")], progress=False)
    with pytest.raises(ValueError, match="chunk_size"):
        sweep(problem, [RiskAversion([1.0])], chunk_size=0, progress=False)
    with pytest.raises(ValueError, match="axes is empty"):
        sweep(problem, [], progress=False)
    with pytest.raises(ValueError, match="produced twice"):
        sweep(problem, [RiskAversion([1.0])], outputs=[Weights(), Weights()], progress=False)
    # r = 0 with a rank-2 M: v* is not unique, on either path.
    rng = np.random.default_rng(0)
    singular = Primitives(rng.normal(size=(4, 2)), np.eye(2), np.eye(4), np.ones(4), 1.0)
    for method in ("auto", "general"):
        with pytest.raises(ValueError, match="r = 0 needs a non-singular M"):
            sweep(singular, [RiskAversion([0.0, 1.0])], method=method, progress=False)
    # Shifting concept 0 down to zero cost with r = 0 makes M + rΣ singular at one grid point:
    # the sweep names that point instead of returning NaN.
    lam0 = float(np.asarray(concept_basis(problem.M, problem.Sigma, problem.w).eigenvalues)[0])
    with pytest.raises(ValueError, match=r"not finite at grid point \(r=0, delta=-"):
        sweep(problem, [RiskAversion([0.0]), ConceptShift(0, [-lam0, 0.0])], progress=False)


_SHARD_SCRIPT = """
import json, jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from platinum_jax.agency import Primitives
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import (sweep, RiskAversion, RandomPrimitives, wishart_noise, CostScale,
                                 ConceptShift, Platinum, Weights, Welfare)
rng = np.random.default_rng(1)
A = rng.normal(size=(5, 6)); X = rng.normal(size=(5, 5))
base = Primitives(A, np.eye(6), X @ X.T / 5 + np.eye(5), rng.uniform(size=5), 1.0)
out = {"n_devices": len(jax.devices())}
# Wishart draws of Σ (general path, keys inside shard_map) crossed with the fast-path r axis.
axes = [RandomPrimitives(6, jax.random.key(0), wishart_noise(12)), RiskAversion([0.5, 2.0])]
many = sweep(base, axes, chunk_size=6, progress=False)
one = sweep(base, axes, chunk_size=6, devices=jax.devices()[:1], progress=False)
v = many["v"].values
out["general"] = {"devices_used": many.attrs["n_devices"], "path": many.attrs["path"],
                  "max_diff": float(abs(many["v"] - one["v"]).max()),
                  "draws_differ": bool(np.abs(v[0] - v[1]).max() > 1e-6)}
# The spectral fast path over r x kappa x delta on the demo world, with platinum flags; 27
# points in chunks of 8 per device leave a padded last chunk.
world = demo_world(seed=0)
axes = [RiskAversion([0.2, 1.0, 4.0]), CostScale([0.5, 1.0, 3.0]), ConceptShift(2, [-0.2, 0.5, 2.0])]
outputs = [Weights(), Welfare(), Platinum(world.tau_w, world.tau_m, world.tau_e)]
many = sweep(world.primitives, axes, outputs, chunk_size=8, progress=False)
one = sweep(world.primitives, axes, outputs, chunk_size=8, devices=jax.devices()[:1],
            progress=False)
flags = many["platinum"].values
out["fast"] = {"devices_used": many.attrs["n_devices"], "path": many.attrs["path"],
               "max_diff": max(float(abs(many[k] - one[k]).max()) for k in ("v", "welfare")),
               "flags_equal": bool((flags == one["platinum"].values).all()),
               "flags_mixed": bool(0 < flags.sum() < flags.size)}
print(json.dumps(out))
"""


def test_sharded_sweep_equals_single_device():
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _SHARD_SCRIPT], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["n_devices"] == 4
    assert out["general"]["devices_used"] == 4 and out["general"]["path"] == "general"
    assert out["general"]["max_diff"] <= 1e-13
    assert out["general"]["draws_differ"]  # Σ really is redrawn per draw index
    fast = out["fast"]
    assert fast["devices_used"] == 4 and fast["path"] == "fast"
    assert fast["max_diff"] <= 1e-13
    assert fast["flags_equal"] and fast["flags_mixed"]  # the grid crosses the platinum boundary


_HANG_SCRIPT = """
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import CostScale, RiskAversion, Welfare, sweep
base = demo_world(seed=0).primitives
axes = [RiskAversion(np.geomspace(0.1, 10, 50)), CostScale(np.linspace(0.5, 4, 40))]
one = sweep(base, axes, [Welfare()], method="general", devices=jax.devices()[:1])
for _ in range(8):
    ds = sweep(base, axes, [Welfare()], method="general")
    assert ds.attrs["n_devices"] == 2
    assert float(abs(ds["welfare"] - one["welfare"]).max()) <= 1e-13
print("ok")
"""


def test_general_path_on_two_host_devices_does_not_hang():
    # Batched Cholesky factors on two host devices at once deadlocked on the host's thread pool
    # (jaxlib 0.10.2, XLA's default CPU code generation): this script hung in about one run of
    # four. Each device now factors one point at a time; a hang fails at the timeout.
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _HANG_SCRIPT], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=90)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
