"""Array-level refits on the measurement engine: the penalty scale (a traced L2 strength),
masks and starts vmapped in one compiled solve, and the deprecated stitching wrappers, each
against an independent SciPy fit of the paper's objective."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import least_squares

from platinum_jax.datasets import synthetic_score_table
from platinum_jax.inference import Data, Problem, solve_map
from platinum_jax.models import Rosetta
from platinum_jax.models.rosetta import BenchmarkAnchor, ParameterLayout
from platinum_jax.stitching import to_engine_theta


@pytest.fixture(scope="module")
def small():
    table, truth = synthetic_score_table(seed=3, n_models=12, n_benchmarks=5, density=0.8)
    return table, truth.anchor_benchmark


def scipy_fit(table, anchor, l2, weights):
    """The paper's route: every C and D free, the anchor's slope at 1, plain L2 over the free
    entries divided by M + 2B - 1; then C and D shifted so that the anchor's D is 0."""
    m, b = table.n_models, table.n_benchmarks
    k = table.benchmarks.index(anchor)
    mi, bi, y = table.model_index, table.benchmark_index, np.asarray(table.scores)
    sw = np.sqrt(weights)

    def residuals(x):
        c, d = x[:m], x[m:m + b]
        alpha = np.insert(x[m + b:], k, 1.0)
        r = sw * (1.0 / (1.0 + np.exp(-alpha[bi] * (c[mi] - d[bi]))) - y)
        return np.concatenate([r, np.sqrt(l2 / (m + 2 * b - 1)) * x])

    x0 = np.concatenate([np.zeros(m + b), np.ones(b - 1)])
    res = least_squares(residuals, x0, xtol=1e-15, ftol=1e-15, gtol=1e-15)
    c, d = res.x[:m], res.x[m:m + b]
    return res.cost, c - d[k]


def test_penalty_scale_weights_and_starts_vmap_in_one_program(small):
    table, anchor = small
    problem = Problem(Rosetta(anchor=BenchmarkAnchor(anchor), l2=0.1),
                      table.responses)
    data = problem.data()
    rng = np.random.default_rng(0)
    weights = np.stack([np.ones(table.n_scores),
                        rng.integers(0, 3, table.n_scores).astype(float)])
    start = problem.start()
    starts = jax.tree_util.tree_map(lambda a: jnp.stack([a, a]), start)
    # the second start is jittered (a warm start elsewhere): the minimum must not depend on it
    starts = starts._replace(subjects=starts.subjects.at[1].add(
        0.3 * rng.normal(size=starts.subjects.shape[1:])))

    @jax.jit
    def refits(scale, w, theta0):
        return jax.vmap(lambda s, ww, th: solve_map(
            problem, th, Data(data.subject_index, data.item_index, data.response, data.trials,
                              ww), penalty_scale=s))(scale, w, theta0)

    for scales in ([0.5, 3.0], [2.0, 0.25]):
        res = refits(jnp.asarray(scales), jnp.asarray(weights), starts)
        for j, s in enumerate(scales):
            cost, caps = scipy_fit(table, anchor, 0.1 * s, weights[j])
            assert bool(res.converged[j])
            assert float(res.objective[j]) == pytest.approx(cost, rel=1e-9)
            np.testing.assert_allclose(np.asarray(res.theta.subjects[j, :, 0]), caps, atol=1e-6)
    assert refits._cache_size() == 1  # new strengths, same program


def test_layout_solver_matches_scipy_and_maps_to_the_engine(small):
    from platinum_jax.stitching import layout_system, solve_layout

    table, anchor = small
    layout = ParameterLayout.from_table(table, BenchmarkAnchor(anchor))
    args = (layout, table.model_index, table.benchmark_index, table.scores)
    res = solve_layout(layout.initial(), *args, None, 0.3)
    ref_cost, ref_caps = scipy_fit(table, anchor, 0.3, np.ones(table.n_scores))
    assert bool(res.converged) and float(res.objective) == pytest.approx(ref_cost, rel=1e-9)
    np.testing.assert_allclose(np.asarray(layout.unpack(res.theta).capability), ref_caps,
                               atol=1e-6)
    # at the minimum the profiled gradient vanishes and the Gauss-Newton matrix is positive
    c, g, h = layout_system(res.theta, *args, np.ones(table.n_scores), 0.3)
    assert float(c) == pytest.approx(ref_cost, rel=1e-9)
    assert float(jnp.max(jnp.abs(g))) < 1e-8
    assert np.all(np.linalg.eigvalsh(np.asarray(h)) > 0)
    back = to_engine_theta(layout, res.theta)
    np.testing.assert_allclose(back.subjects[:, 0], ref_caps, atol=1e-6)


def test_solve_layout_vmaps_strengths_and_weights_against_scipy(small):
    from platinum_jax.inference import MAPResult
    from platinum_jax.stitching import layout_system, solve_layout

    table, anchor = small
    layout = ParameterLayout.from_table(table, BenchmarkAnchor(anchor))
    rng = np.random.default_rng(4)
    weights = np.stack([np.ones(table.n_scores), rng.integers(0, 3, table.n_scores)])
    strengths = jnp.asarray([0.05, 0.4])
    res = jax.vmap(lambda w, s: solve_layout(layout.initial(), layout, table.model_index,
                                             table.benchmark_index, table.scores, w, s))(
        jnp.asarray(weights, jnp.float64), strengths)
    assert isinstance(res, MAPResult) and res.theta.shape == (2, layout.n_free)
    for j in range(2):
        cost, caps = scipy_fit(table, anchor, float(strengths[j]), weights[j])
        assert bool(res.converged[j])
        assert float(res.objective[j]) == pytest.approx(cost, rel=1e-9)
        np.testing.assert_allclose(np.asarray(layout.unpack(res.theta[j]).capability), caps,
                                   atol=1e-6)
        # the profiled gradient of the paper's objective vanishes at the solution
        _, grad, _ = layout_system(res.theta[j], layout, table.model_index,
                                   table.benchmark_index, table.scores,
                                   jnp.asarray(weights[j], jnp.float64), strengths[j])
        assert float(jnp.max(jnp.abs(grad))) < 1e-7


def test_old_stitching_solver_names_are_gone():
    """Nothing is released: renamed things are renamed, not shimmed."""
    import platinum_jax.inference as inference
    import platinum_jax.stitching as st

    for old in ("LMResult", "bootstrap_weights", "fit_theta", "solve_stitching",
                "gauss_newton_system"):
        assert not hasattr(st, old)
    # the layout's solvers live with the paper's presets, not in the engine
    for name in ("layout_problem", "to_engine_theta", "solve_layout", "layout_system"):
        assert hasattr(st, name) and not hasattr(inference, name)
