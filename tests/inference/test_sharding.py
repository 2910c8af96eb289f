"""Sharded responses give the one-device answer: the first-order MAP path, SVI and the streamed
2PL EM (fit and scoring) on two CPU devices, in one subprocess for all of them (the device
count must be set before JAX starts, and this test process has started it already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent("""
    import json
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from platinum_jax.inference import Problem, Theta, fit_map, simulate, svi
    from platinum_jax.inference._first_order import replicate, row_mesh, shard_rows
    from platinum_jax.models import TwoPL

    assert jax.device_count() == 2, jax.devices()
    table, truth = simulate(TwoPL(), 41, 9, seed=4, density=0.8)
    problem = Problem(TwoPL(), table)
    mesh = row_mesh()
    data = problem.data()
    sharded = shard_rows(data, mesh)
    theta = Theta(*(jax.numpy.asarray(t) for t in truth))
    f = jax.jit(jax.value_and_grad(problem.objective))
    v1, g1 = f(theta, data)
    v2, g2 = f(replicate(theta, mesh), sharded)
    out = {"n_responses": table.n_responses,
           "shards": [int(s.data.shape[0]) for s in sharded.response.addressable_shards],
           "padded_weight": float(np.asarray(sharded.weight)[table.n_responses:].sum()),
           "value": [float(v1), float(v2)],
           "grad_diff": max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)), initial=0.0))
                            for a, b in zip(g1, g2))}
    # A fixed number of L-BFGS iterations on each: the same iterates up to rounding.
    opts = dict(solver="first_order", max_steps=40, gtol=0.0, ftol=0.0)
    for name, mesh_opt in (("map_one", None), ("map_two", True)):
        fit = fit_map(TwoPL(), table, mesh=mesh_opt, **opts)
        out[name] = {"ability": fit.subjects["ability"].tolist(),
                     "items": fit.items[["difficulty", "discrimination"]].to_numpy().tolist(),
                     "devices": fit.diagnostics.get("devices", 1)}
    for name, mesh_opt in (("svi_one", None), ("svi_two", True)):
        fit = svi(TwoPL(), table, steps=100, draws=20, mesh=mesh_opt)
        out[name] = {"ability": fit.subjects["ability"].tolist()}

    # The streamed 2PL: the blocked EM and the scoring against frozen items.
    from platinum_jax.data import CodedResponses
    from platinum_jax.inference import fit_streamed_2pl, score_streamed_2pl

    rng = np.random.default_rng(6)
    n_s, n_i = 700, 10
    theta, b, a = rng.normal(size=n_s), rng.normal(size=n_i), np.exp(rng.normal(0, 0.3, n_i))
    s, i = np.divmod(np.arange(n_s * n_i), n_i)
    keep = rng.random(s.size) > 0.4
    s, i = s[keep], i[keep]
    y = (rng.random(s.size) < 1 / (1 + np.exp(-a[i] * (theta[s] - b[i])))).astype(np.int8)
    codes = CodedResponses.from_arrays(s, i, y)
    for name, mesh_opt in (("stream_one", None), ("stream_two", True)):
        res = fit_streamed_2pl(codes, tol=1e-8, block_cells=256 * n_i, mesh=mesh_opt)
        sc = score_streamed_2pl(codes, res.items, mesh=mesh_opt)
        out[name] = {"items": res.items.to_numpy().tolist(),
                     "ability": res.subjects["ability"].tolist(),
                     "score": sc.to_numpy().tolist(), "devices": res.diagnostics["devices"]}
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def two_devices():
    """What :data:`SCRIPT` printed, run once on two CPU devices."""
    env = {**os.environ, "XLA_FLAGS": os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
def test_two_devices_match_one(two_devices):
    out = two_devices
    n = out["n_responses"]
    # padded to a multiple of two devices, the padding weighted zero
    assert out["shards"] == [(n + 1) // 2] * 2
    assert out["padded_weight"] == 0.0
    v1, v2 = out["value"]
    assert abs(v1 - v2) <= 1e-12 * abs(v1)
    assert out["grad_diff"] <= 1e-10
    one, two = out["map_one"], out["map_two"]
    assert two["devices"] == 2
    np.testing.assert_allclose(two["ability"], one["ability"], atol=1e-8)
    np.testing.assert_allclose(two["items"], one["items"], atol=1e-8)
    np.testing.assert_allclose(out["svi_two"]["ability"], out["svi_one"]["ability"],
                               atol=1e-8)


@pytest.mark.slow
def test_streamed_em_on_two_devices_matches_one(two_devices):
    one, two = two_devices["stream_one"], two_devices["stream_two"]
    assert one["devices"] == 1 and two["devices"] == 2
    for key in ("items", "ability", "score"):
        np.testing.assert_allclose(two[key], one[key], atol=1e-8)
