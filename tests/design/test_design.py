"""Optimal weights and platinum items from evaluation data (platinum_jax.design).

Every expected number comes from a dense NumPy/SciPy computation written here, a closed form, or
the synthetic truth the test generated.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from platinum_jax.agency import commutator_norm, platinum_items
from platinum_jax.design import (
    PrimitiveDraws,
    decisions_per_draw,
    noise_solve,
    posterior_decisions,
    primitives_from_fit,
    welfare_from_abilities,
    welfare_from_items,
    welfare_from_regression,
)
from platinum_jax.design._from_fit import _residual_factor
from platinum_jax.design._synthetic import weights_world
from platinum_jax.inference import read_fit

jax.config.update("jax_enable_x64", True)


def _random_problem(seed, D=3, m=12, K=3, k=2):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(D, m, K))
    L = rng.normal(size=(K, K))
    C = L @ L.T + K * np.eye(K)
    d = rng.uniform(0.2, 1.0, (D, m))
    F = 0.6 * rng.normal(size=(D, m, k))
    w = rng.normal(size=(D, m)) + 1.0
    return A, C, d, F, w


def test_woodbury_noise_solve_matches_dense():
    rng = np.random.default_rng(0)
    d = rng.uniform(0.1, 2.0, 30)
    F = rng.normal(size=(30, 4))
    X = rng.normal(size=(30, 3))
    dense = np.linalg.solve(np.diag(d) + F @ F.T, X)
    np.testing.assert_allclose(noise_solve(d, F, X), dense, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_decisions_match_dense_numpy_when_m_and_sigma_do_not_commute(seed):
    A, C, d, F, w = _random_problem(seed)
    rng = np.random.default_rng(seed + 10)
    current = rng.uniform(0.0, 1.0, A.shape[1])
    r_grid = np.array([0.3, 1.0, 3.0])
    tau = (0.2, 0.3, 0.5)
    out = decisions_per_draw(A, C, d, F, w, current, r_grid, *tau)
    m = A.shape[1]
    n_flags = 0
    for t in range(A.shape[0]):
        M = A[t] @ np.linalg.solve(C, A[t].T)
        S = np.diag(d[t]) + F[t] @ F[t].T
        assert float(commutator_norm(M, S)) > 0.05  # a genuinely non-commuting pair

        def W(v, r, M=M, S=S, t=t):
            return w[t] @ M @ v - 0.5 * v @ M @ v - 0.5 * r * v @ S @ v

        for j, r in enumerate(r_grid):
            v = np.linalg.solve(M + r * S, M @ w[t])
            np.testing.assert_allclose(out.weights[t, j], v, rtol=1e-9, atol=1e-11)
            np.testing.assert_allclose(out.welfare_optimal[t, j], W(v, r), rtol=1e-9)
            for u, got in ((np.full(m, 1.0 / m), out.welfare_uniform[t, j]),
                           (current, out.welfare_current[t, j])):
                best = minimize_scalar(lambda c, u=u, r=r: -W(c * u, r), bracket=(-10, 10),
                                       tol=1e-12)
                np.testing.assert_allclose(got, -best.fun, rtol=1e-7)
            dense = platinum_items(M, S, w[t], r, *tau, method="generalized")
            np.testing.assert_array_equal(np.asarray(out.platinum[t, j], bool),
                                          np.asarray(dense.flags))
            n_flags += int(np.sum(dense.flags))
    assert n_flags > 0  # the comparison covered platinum items, not only empty flag sets


def test_posterior_summaries_are_the_draws_summaries():
    A, C, d, F, w = _random_problem(5, D=40, m=9, K=2, k=1)
    prims = PrimitiveDraws(A, C, d, F, w, tuple(f"i{j}" for j in range(9)), ("a", "b"))
    post = posterior_decisions(prims, 2.0, r_factors=(0.5, 2.0), interval=0.8)
    v = np.stack([np.linalg.solve(A[t] @ np.linalg.solve(C, A[t].T) * 1 + 2.0 *
                                  (np.diag(d[t]) + F[t] @ F[t].T),
                                  A[t] @ np.linalg.solve(C, A[t].T) @ w[t]) for t in range(40)])
    np.testing.assert_allclose(post.items["mean"], v.mean(0), rtol=1e-9)
    np.testing.assert_allclose(post.items["lo"], np.quantile(v, 0.1, axis=0), rtol=1e-9)
    np.testing.assert_allclose(post.items["hi"], np.quantile(v, 0.9, axis=0), rtol=1e-9)
    assert list(post.sensitivity.index) == [1.0, 2.0, 4.0]
    assert post.p_platinum_by_r.shape == (9, 3)
    assert ((post.items["p_platinum"] >= 0) & (post.items["p_platinum"] <= 1)).all()
    json.dumps(post.summary)  # plain Python throughout


def test_bad_primitives_and_settings_are_refused_with_names():
    A, C, d, F, w = _random_problem(6, D=2, m=5, K=2, k=1)
    names, abilities = tuple("abcde"), ("x", "y")
    bad_d = d.copy()
    bad_d[0, 2] = 0.0
    with pytest.raises(ValueError, match=r"noise diagonal d.*\['c'\]"):
        PrimitiveDraws(A, C, bad_d, F, w, names, abilities)
    with pytest.raises(ValueError, match="C .*positive definite"):
        PrimitiveDraws(A, -np.eye(2), d, F, w, names, abilities)
    prims = PrimitiveDraws(A, C, d, F, w, names, abilities)
    with pytest.raises(ValueError, match="r .*> 0"):
        posterior_decisions(prims, 0.0)
    with pytest.raises(ValueError, match="tau_w"):
        posterior_decisions(prims, 1.0, tau_w=1.5)
    with pytest.raises(ValueError, match="missing"):
        posterior_decisions(prims, 1.0, current={"a": 1.0})


def test_welfare_directions():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 10, 2))
    beta = np.array([1.0, -0.5])
    w = welfare_from_abilities(A, beta)
    np.testing.assert_allclose(np.einsum("dmk,dm->dk", A, w), np.tile(beta, (4, 1)), atol=1e-12)
    # minimum norm: orthogonal to the null space of Aᵀ
    for t in range(4):
        null = np.linalg.svd(A[t].T)[2][2:]
        np.testing.assert_allclose(null @ w[t], 0.0, atol=1e-12)
    items = ["p", "q", "r"]
    np.testing.assert_allclose(welfare_from_items(items, ["q", "r"]), [0, 0.5, 0.5])
    np.testing.assert_allclose(welfare_from_items(items, {"p": 2.0}), [2, 0, 0])
    with pytest.raises(ValueError, match="did you mean"):
        welfare_from_items(items, ["pp"])


def test_residual_factor_finds_a_planted_factor_and_none_in_pure_noise():
    rng = np.random.default_rng(8)
    S, m = 300, 12
    f = rng.uniform(0.5, 0.9, m) * rng.choice([-1, 1], m)
    g = rng.normal(size=S)
    mask = rng.random((S, m)) < 0.6
    s_idx, i_idx = np.nonzero(mask)

    class Table:
        n_items, n_subjects = m, S
        subject_index, item_index = s_idx, i_idx

    planted = (np.outer(g, f) + rng.normal(size=(S, m)) * np.sqrt(1 - f**2))[s_idx, i_idx]
    F, unique, k = _residual_factor(planted, Table, "auto")
    assert k == 1
    corr = abs(np.corrcoef(F[:, 0], f)[0, 1])
    assert corr > 0.95
    np.testing.assert_allclose(unique, 1 - f**2, atol=0.12)
    noise = rng.normal(size=(S, m))[s_idx, i_idx]
    assert _residual_factor(noise, Table, "auto")[2] == 0


# ---------------------------------------------------------------------- from a fit


@pytest.fixture(scope="module")
def world_fit():
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit
    from platinum_jax.models import Gaussian, Rosetta
    from platinum_jax.models.rosetta import BenchmarkAnchor

    world = weights_world(60, 8, 0.6, shared=0.0, seed=3)
    table = ResponseTable.from_frame(world.scores)
    model = Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian())
    return world, fit(model, table, method="laplace", draws=300, seed=1)


def test_loadings_and_noise_from_a_rosetta_fit_match_numpy(world_fit):
    world, fit = world_fit
    prims = primitives_from_fit(fit, residual_rank=0, seed=2)
    subj, items = fit.subjects, fit.items
    # Point estimate: A_b = mean_s sigmoid'(alpha_b (C_s - D_b)) alpha_b.
    z = items["slope"].to_numpy() * (subj["capability"].to_numpy()[:, None]
                                     - items["difficulty"].to_numpy())
    p = 1 / (1 + np.exp(-z))
    A_point = (p * (1 - p) * items["slope"].to_numpy()).mean(axis=0)
    point = primitives_from_fit(type(fit)(fit.problem, "map", fit.theta), residual_rank=0)
    np.testing.assert_allclose(point.A[0, :, 0], A_point, rtol=1e-10)
    # Residual variance on the residual degrees of freedom, per item.
    t = fit.table
    pred = fit.predict()
    res2 = np.bincount(t.item_index, (t.response - pred) ** 2)
    n_s = np.bincount(t.subject_index)
    lev = np.bincount(t.item_index, 1.0 / n_s[t.subject_index])
    free_items = np.where(np.arange(t.n_items) == 0, 0, 2)  # the anchor's D and alpha are fixed
    dof = np.bincount(t.item_index) - free_items - lev
    np.testing.assert_allclose(point.d.shape, (1, 8))
    # Each draw scales it by dof / chi2(dof) (its posterior), drawn from the given seed.
    factor = dof / np.random.default_rng(2).chisquare(dof, size=prims.d.shape)
    np.testing.assert_allclose(prims.d / factor, np.tile(res2 / dof, (300, 1)), rtol=1e-10)
    assert prims.A.shape == (300, 8, 1) and prims.F.shape == (300, 8, 0)
    assert "diagonal because residual_rank=0" in prims.notes["noise"]


def test_small_world_recovers_the_true_optimal_weights(world_fit):
    from platinum_jax.agency import optimal_weights, welfare

    world, fit = world_fit
    w = welfare_from_items(world.items, world.items[:3])
    post = posterior_decisions(primitives_from_fit(fit, w), 1.0)
    M = world.A @ world.A.T
    v_true = np.asarray(optimal_weights(M, world.Sigma, w, 1.0))
    v_hat = post.items["mean"].to_numpy()
    W_true = float(welfare(v_true, M, world.Sigma, w, 1.0))
    loss = (W_true - float(welfare(v_hat, M, world.Sigma, w, 1.0))) / W_true
    assert 0 <= loss < 0.05
    assert np.corrcoef(v_true, v_hat)[0, 1] > 0.8


def test_draws_file_round_trip_and_weights_command(world_fit, tmp_path, capsys):
    from platinum_jax.cli import main

    world, fit = world_fit
    fit.write(tmp_path / "fit", draws=True)
    back = read_fit(tmp_path / "fit")
    np.testing.assert_array_equal(np.asarray(back.draws.items), np.asarray(fit.draws.items))
    a = primitives_from_fit(fit, residual_rank=0)
    b = primitives_from_fit(back, residual_rank=0)
    np.testing.assert_allclose(a.A, b.A, rtol=1e-12)
    np.testing.assert_allclose(a.d, b.d, rtol=1e-12)

    pd.DataFrame({"item": world.items, "weight": np.arange(8.0)}).to_csv(
        tmp_path / "current.csv", index=False)
    code = main(["weights", str(tmp_path / "fit"), "--target", "b001,b002", "--out",
                 str(tmp_path / "w"), "--current", str(tmp_path / "current.csv"),
                 "--residual-rank", "0"])
    assert code == 0
    table = pd.read_csv(tmp_path / "w" / "weights.csv", index_col="item")
    assert list(table.index) == world.items
    assert {"mean", "lo", "hi", "p_platinum", "p_platinum_r=4"} <= set(table.columns)
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["current_weights"] == "given"
    assert summary["primitives"]["welfare_weights"] == "target: b001,b002"
    assert (tmp_path / "w" / "weights.png").stat().st_size > 0

    assert main(["weights", str(tmp_path / "fit"), "--target", "b0001", "--out",
                 str(tmp_path / "x")]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main(["weights", str(tmp_path / "fit"), "--out", str(tmp_path / "x")]) == 2
    assert "exactly one of --target" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["weights", str(tmp_path / "empty"), "--target", "b001", "--out",
                 str(tmp_path / "x")]) == 2
    assert "--save-draws" in capsys.readouterr().err


def test_weights_refuses_a_graded_fit_by_name_and_its_remedy_works(tmp_path, capsys):
    """The graded model's mean is a vector of category log-probabilities, which has no
    derivative to be a loading: `weights` names the model and the likelihood, the ones it
    takes, and a refit that works (the categories as k-of-(K - 1) fractions, binomial)."""
    from platinum_jax.cli import main
    from platinum_jax.inference import Fit, Problem, simulate
    from platinum_jax.models import GradedResponse

    table, truth = simulate(GradedResponse(categories=3), 40, 6, seed=3)
    Fit(problem=Problem(GradedResponse(categories=3), table), method="map",
        theta=truth).write(tmp_path / "graded", draws=True)
    argv = ["--ability-weights", "1", "--residual-rank", "0"]
    assert main(["weights", str(tmp_path / "graded"), *argv, "--out", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "model 'graded' has likelihood 'categorical'" in err and "Traceback" not in err
    assert "bernoulli, beta, beta_binomial, binomial, gaussian" in err
    assert "k / (K - 1) with a trials column of K - 1" in err
    assert not (tmp_path / "w").exists()
    with pytest.raises(ValueError, match="likelihood 'categorical'"):
        primitives_from_fit(read_fit(tmp_path / "graded"))
    frame = table.to_frame()[["subject", "item", "response"]]
    frame.assign(response=frame["response"] / 2, trials=2).to_csv(tmp_path / "k_of_2.csv",
                                                                  index=False)
    assert main(["fit", str(tmp_path / "k_of_2.csv"), "--model", "2pl", "--save-draws",
                 "--out", str(tmp_path / "binomial")]) == 0
    assert main(["weights", str(tmp_path / "binomial"), *argv, "--out",
                 str(tmp_path / "w")]) == 0
    assert len(pd.read_csv(tmp_path / "w" / "weights.csv")) == 6

def test_runs_replace_the_residual_noise(world_fit):
    world, fit = world_fit
    rng = np.random.default_rng(12)
    subjects = list(fit.table.subjects[:20])
    sd = np.linspace(0.02, 0.09, 8)
    rows = [(s, item, run, rng.normal(0.5, sd[j]))
            for s in subjects for j, item in enumerate(world.items) for run in range(3)]
    runs = pd.DataFrame(rows, columns=["subject", "item", "run", "response"])
    prims = primitives_from_fit(fit, runs=runs, residual_rank=0, seed=4)
    assert prims.notes["noise"].startswith("run-to-run variance of repeated runs")
    dev = runs["response"] - runs.groupby(["subject", "item"])["response"].transform("mean")
    var = (dev**2).groupby(runs["item"]).sum().to_numpy() / (20 * 2)
    factor = 40 / np.random.default_rng(4).chisquare(np.full(8, 40.0), size=(300, 8))
    np.testing.assert_allclose(prims.d, var * factor, rtol=1e-10)


def test_regression_weights_recover_a_linear_target(world_fit):
    world, fit = world_fit
    t = fit.table
    # A target that is exactly linear in two items' scores, on the fully observed grid.
    si, ii = np.meshgrid(np.arange(t.n_subjects), np.arange(t.n_items), indexing="ij")
    X = np.array(fit.predict(si.ravel(), ii.ravel())).reshape(t.n_subjects, t.n_items)
    X[t.subject_index, t.item_index] = t.response
    y = 2.0 * X[:, 1] - X[:, 4]
    w = welfare_from_regression(fit, pd.Series(y, index=t.subjects), ridge=1e-8)
    np.testing.assert_allclose(w, np.eye(8)[1] * 2 - np.eye(8)[4], atol=1e-4)


def test_fit_command_saves_draws_that_read_back(tmp_path):
    from platinum_jax.cli import main

    rng = np.random.default_rng(9)
    ability = rng.normal(size=12)
    difficulty = rng.normal(size=5)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty)))
    frame = pd.DataFrame([(f"s{i:02d}", f"q{j}", float(rng.random() < p[i, j]))
                          for i in range(12) for j in range(5)],
                         columns=["subject", "item", "response"])
    frame.to_csv(tmp_path / "r.csv", index=False)
    assert main(["fit", str(tmp_path / "r.csv"), "--model", "1pl", "--method", "laplace",
                 "--save-draws", "--out", str(tmp_path / "fit")]) == 0
    back = read_fit(tmp_path / "fit")
    items = pd.read_csv(tmp_path / "fit" / "items.csv", index_col=0)
    np.testing.assert_allclose(back.items["difficulty"], items["difficulty"], rtol=1e-12)
    np.testing.assert_allclose(back.items["difficulty_lo"], items["difficulty_lo"], rtol=1e-12)
    assert back.method == "laplace" and back.table.n_responses == 60


def test_noise_from_runs_recovers_a_known_covariance():
    from platinum_jax.design import noise_from_runs

    rng = np.random.default_rng(11)
    m, S, R = 10, 120, 4
    sd = rng.uniform(0.05, 0.2, m)
    f = 0.08 * rng.choice([-1.0, 1.0], m) * rng.uniform(0.5, 1.0, m)
    Sigma = np.diag(sd**2) + np.outer(f, f)
    L = np.linalg.cholesky(Sigma)
    level = rng.normal(size=(S, 1, m))  # each subject's own expected scores
    y = level + np.einsum("ij,srj->sri", L, rng.normal(size=(S, R, m)))
    s, r, i = np.meshgrid(np.arange(S), np.arange(R), np.arange(m), indexing="ij")
    runs = pd.DataFrame({"subject": s.ravel(), "item": [f"q{j}" for j in i.ravel()],
                         "run": r.ravel(), "response": y.ravel()})
    items = [f"q{j}" for j in range(m)]
    d, F, dof, note = noise_from_runs(runs, items)
    assert F.shape == (m, 1) and "rank-1" in note
    np.testing.assert_array_equal(dof, np.full(m, S * (R - 1)))
    estimate = np.diag(d) + F @ F.T
    # Against the unstructured pooled sample covariance of the same deviations (NumPy).
    dev = y - y.mean(axis=1, keepdims=True)
    pooled = np.einsum("sri,srj->ij", dev, dev) / (S * (R - 1))
    np.testing.assert_allclose(np.diag(estimate), np.diag(pooled), rtol=1e-10)
    error = np.linalg.norm(estimate - Sigma) / np.linalg.norm(Sigma)
    assert error < 0.15
    assert error < 1.2 * np.linalg.norm(pooled - Sigma) / np.linalg.norm(Sigma)
    assert abs(np.corrcoef(F[:, 0], f)[0, 1]) > 0.95
    # Pure noise: no correlated part above the Marchenko-Pastur edge.
    white = runs.assign(response=rng.normal(size=len(runs)))
    assert noise_from_runs(white, items)[1].shape == (m, 0)
    with pytest.raises(ValueError, match="no subject with two or more runs"):
        noise_from_runs(runs[runs["item"] != "q3"], items)


# ---------------------------------------------------------------------- noise per item


def _assert_nominal_coverage(inside: np.ndarray, level: float = 0.9) -> None:
    """The share of intervals covering the truth is within 3 binomial SEs of ``level``."""
    se = np.sqrt(level * (1 - level) / inside.size)
    assert abs(inside.mean() - level) < 3 * se, (inside.mean(), se)


HETEROSCEDASTIC_SEEDS = (87, 91, 102)


def test_heteroscedastic_fit_recovers_item_noise_and_covers_the_true_weights():
    """Worlds whose benchmarks differ tenfold in noise sd: the per-item noise is recovered and
    the 90% intervals of v* cover the true weights at about the nominal rate."""
    from platinum_jax.agency import optimal_weights
    from platinum_jax.data import ResponseTable
    from platinum_jax.design import fit_heteroscedastic
    from platinum_jax.models import Gaussian, Rosetta
    from platinum_jax.models.rosetta import BenchmarkAnchor

    inside, log_ratio = [], []
    # Three worlds with the same number of scores (739; the scored share is random), so the
    # three fits are one compiled program.
    for seed in HETEROSCEDASTIC_SEEDS:
        world = weights_world(100, 24, 0.3, noise=(0.01, 0.1), shared=0.0, seed=seed)
        table = ResponseTable.from_frame(world.scores)
        model = Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian())
        res = fit_heteroscedastic(model, table, draws=400, seed=seed)
        assert res.diagnostics["noise_per_item_settled"]
        omega = np.asarray(res.table.weight)
        # The rows carry 1/Σ_ii of their item, normalised to mean 1 (settled: within tol = 1%).
        noise = np.asarray(res.diagnostics["noise_variance_per_item"])
        np.testing.assert_allclose(omega, (1 / noise[table.item_index])
                                   / np.mean(1 / noise[table.item_index]), rtol=0.011)
        log_ratio.append(np.log(noise / np.diag(world.Sigma)))
        w = welfare_from_items(world.items, world.items[:3])
        post = posterior_decisions(primitives_from_fit(res, w, residual_rank=0, seed=seed), 1.0)
        v_true = np.asarray(optimal_weights(world.A @ world.A.T, world.Sigma, w, 1.0))
        inside.append((v_true >= post.items["lo"]) & (v_true <= post.items["hi"]))
    log_ratio = np.concatenate(log_ratio)
    # About 28 scores per item: the log of a variance estimate has sd about sqrt(2/26) = 0.28.
    assert abs(log_ratio.mean()) < 0.15 and log_ratio.std() < 0.45
    _assert_nominal_coverage(np.concatenate(inside))


def test_heteroscedastic_fit_refuses_what_it_cannot_weigh():
    from platinum_jax.data import ResponseTable
    from platinum_jax.design import fit_heteroscedastic
    from platinum_jax.models import Gaussian, Rosetta

    world = weights_world(30, 5, 0.8, seed=1)
    table = ResponseTable.from_frame(world.scores)
    with pytest.raises(ValueError, match="free noise"):
        fit_heteroscedastic(Rosetta(likelihood=Gaussian(noise=1.0)), table)
    weighted = ResponseTable.from_frame(world.scores.assign(weight=1.0))
    with pytest.raises(ValueError, match="already has row weights"):
        fit_heteroscedastic(Rosetta(likelihood=Gaussian()), weighted)


def _stitching_posterior(rng, chains=2, draws=50, models=30, benchmarks=6):
    """Posterior draws with the names and dims of the Bayesian stitching model's sites."""
    import arviz as az

    shape = (chains, draws)
    post = {"capability": rng.normal(0, 1.5, shape + (models,)),
            "difficulty": rng.normal(0, 1, shape + (benchmarks,)),
            "slope": np.exp(rng.normal(0, 0.3, shape + (benchmarks,))),
            "noise_variance": rng.uniform(0.01, 0.06, shape + (benchmarks,)) ** 2}
    coords = {"model": [f"m{i:02d}" for i in range(models)],
              "benchmark": [f"b{j:03d}" for j in range(benchmarks)]}
    dims = {"capability": ["model"], "difficulty": ["benchmark"], "slope": ["benchmark"],
            "noise_variance": ["benchmark"]}
    return post, az.from_dict(posterior=post, coords=coords, dims=dims)


def test_weights_command_reads_a_stitch_bayes_directory(tmp_path):
    """Each posterior draw gives A and Σ; v* recomputed here in closed form."""
    from platinum_jax.cli import main

    post, idata = _stitching_posterior(np.random.default_rng(6))
    (tmp_path / "bayes").mkdir()
    idata.to_netcdf(str(tmp_path / "bayes" / "posterior.nc"))
    assert main(["weights", str(tmp_path / "bayes"), "--target", "b001,b002", "--out",
                 str(tmp_path / "w")]) == 0
    got = pd.read_csv(tmp_path / "w" / "weights.csv", index_col="item")
    C, D, alpha, noise = (post[k].reshape(-1, post[k].shape[-1]) for k in
                          ("capability", "difficulty", "slope", "noise_variance"))
    p = 1 / (1 + np.exp(-alpha[:, None, :] * (C[:, :, None] - D[:, None, :])))
    a = (p * (1 - p)).mean(axis=1) * alpha  # (draws, benchmarks)
    w = np.isin([f"b{j:03d}" for j in range(6)], ["b001", "b002"]) / 2.0
    # K = 1: v* = (aaᵀ + rΣ)⁻¹ a aᵀw = Σ⁻¹a (aᵀw) / (r + aᵀΣ⁻¹a), r = 1, Σ diagonal.
    v = (a / noise) * (a @ w)[:, None] / (1 + (a**2 / noise).sum(axis=1))[:, None]
    np.testing.assert_allclose(got["mean"], v.mean(axis=0), rtol=1e-8)
    np.testing.assert_allclose(got["hi"], np.quantile(v, 0.95, axis=0), rtol=1e-8)
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert "noise_variance per benchmark" in summary["primitives"]["noise"]
    assert main(["weights", str(tmp_path / "bayes"), "--target", "b001", "--residual-rank",
                 "1", "--out", str(tmp_path / "x")]) == 2
    assert main(["weights", str(tmp_path / "bayes"), "--regress", "y.csv", "--out",
                 str(tmp_path / "x")]) == 2


# The run shape of the low-rank SVI fits in tests/stitching/test_bayes.py (LOWRANK_CLI there): a
# full table of 60 models x 6 benchmarks, the third benchmark anchored at D = 0.5, alpha = 2,
# 800 steps and 200 draws. The same shapes and options trace the same programs, so the run's
# compilation cache hands this test the programs those fits compiled.
STITCH_BAYES_SHAPE = ["--anchor-benchmark", "b002", "--anchor-difficulty", "0.5",
                      "--anchor-slope", "2", "--method", "svi", "--svi-guide", "lowrank",
                      "--svi-steps", "800", "--samples", "200"]


@pytest.mark.slow
def test_stitch_bayes_output_feeds_the_weights_command(tmp_path):
    from platinum_jax.cli import main

    # Scores from sigmoid(alpha_b (C_m - D_b)) plus a little noise, every pair scored.
    rng = np.random.default_rng(4)
    C, D = rng.normal(0.5, 1.0, 60), rng.normal(0.5, 0.8, 6)
    alpha = np.exp(rng.normal(0.3, 0.3, 6))
    mu = 1 / (1 + np.exp(-alpha * (C[:, None] - D)))
    items = [f"b{b:03d}" for b in range(6)]
    scores = pd.DataFrame({"model": np.repeat([f"m{m:02d}" for m in range(60)], 6),
                           "benchmark": np.tile(items, 60),
                           "score": np.clip(mu + 0.01 * rng.normal(size=mu.shape), 0, 1).ravel()})
    scores.to_csv(tmp_path / "scores.csv", index=False)
    assert main(["stitch-bayes", str(tmp_path / "scores.csv"), *STITCH_BAYES_SHAPE,
                 "--out", str(tmp_path / "bayes")]) == 0
    assert main(["weights", str(tmp_path / "bayes"), "--target", "b001,b003", "--out",
                 str(tmp_path / "w")]) == 0
    got = pd.read_csv(tmp_path / "w" / "weights.csv", index_col="item")
    assert sorted(got.index) == items
    assert np.isfinite(got[["mean", "lo", "hi"]].to_numpy()).all()


def test_fit_command_noise_per_item_saves_weights_that_read_back(tmp_path, monkeypatch):
    from platinum_jax.cli import main
    from platinum_jax.cli import weights as weights_command

    world = weights_world(40, 6, 0.8, noise=(0.01, 0.06), shared=0.0, seed=5)
    world.scores.to_csv(tmp_path / "scores.csv", index=False)
    assert main(["fit", str(tmp_path / "scores.csv"), "--model", "rosetta", "--likelihood",
                 "gaussian", "--anchor-benchmark", "b000", "--noise-per-item", "--method", "map",
                 "--save-draws", "--out", str(tmp_path / "fit")]) == 0
    back = read_fit(tmp_path / "fit")
    noise = json.loads((tmp_path / "fit" / "fit.json").read_text())["diagnostics"][
        "noise_variance_per_item"]
    omega = 1 / np.asarray(noise)[back.table.item_index]
    settled = json.loads((tmp_path / "fit" / "fit.json").read_text())["diagnostics"][
        "noise_per_item_settled"]
    assert settled
    np.testing.assert_allclose(back.table.weight, omega / omega.mean(), rtol=0.011)
    assert main(["fit", str(tmp_path / "scores.csv"), "--model", "rosetta", "--noise-per-item",
                 "--method", "nuts", "--out", str(tmp_path / "x")]) == 2
    # The subject bootstrap from the same fit directory, with BCa intervals around the
    # full-data estimate when asked; BCa without bootstrap replicates is refused.
    assert main(["weights", str(tmp_path / "fit"), "--target", "b001,b002",
                 "--subject-bootstrap", "12", "--jackknife-groups", "4", "--interval-method",
                 "bca", "--residual-rank", "0", "--out", str(tmp_path / "wb")]) == 0
    summary = json.loads((tmp_path / "wb" / "summary.json").read_text())
    assert summary["interval_method"] == "bca"
    assert summary["primitives"]["fit_method"] == "bootstrap over subjects"
    got = pd.read_csv(tmp_path / "wb" / "weights.csv", index_col="item")
    assert (got["lo"] <= got["hi"]).all() and np.isfinite(got[["lo", "hi"]].to_numpy()).all()
    assert main(["weights", str(tmp_path / "fit"), "--target", "b001", "--interval-method",
                 "bca", "--subject-bootstrap", "0", "--out", str(tmp_path / "y")]) == 2
    # By default a fit with a noise level per benchmark gets the bootstrap (200 replicates);
    # --subject-bootstrap 0 keeps the fit's own draws. The test runs that default with 16
    # replicates: 16 + 1 full-data row, the batch shape of the 12 + 1 + 4 jackknife rows above,
    # so the solver compiled there serves it.
    assert weights_command.AUTO_REPLICATES == 200
    monkeypatch.setattr(weights_command, "AUTO_REPLICATES", 16)
    assert main(["weights", str(tmp_path / "fit"), "--target", "b001,b002", "--residual-rank",
                 "0", "--out", str(tmp_path / "auto")]) == 0
    auto = json.loads((tmp_path / "auto" / "summary.json").read_text())["primitives"]
    assert auto["fit_method"] == "bootstrap over subjects"
    assert auto["uncertainty"].startswith("bootstrap over subjects (16 replicates")
    assert main(["weights", str(tmp_path / "fit"), "--target", "b001,b002", "--residual-rank",
                 "0", "--subject-bootstrap", "0", "--out", str(tmp_path / "draws")]) == 0
    own = json.loads((tmp_path / "draws" / "summary.json").read_text())["primitives"]
    assert own["fit_method"] == "map"
    with pytest.raises(SystemExit):
        main(["weights", str(tmp_path / "fit"), "--target", "b001", "--subject-bootstrap", "1",
              "--out", str(tmp_path / "z")])
    # An item with fewer than 25 scores: auto keeps the fit's draws and says why.
    sparse = world.scores[(world.scores["item"] != "b005")
                          | (world.scores.groupby("item").cumcount() < 6)]
    sparse.to_csv(tmp_path / "sparse.csv", index=False)
    assert main(["fit", str(tmp_path / "sparse.csv"), "--model", "rosetta", "--likelihood",
                 "gaussian", "--anchor-benchmark", "b000", "--noise-per-item", "--method", "map",
                 "--save-draws", "--out", str(tmp_path / "fit_sparse")]) == 0
    assert main(["weights", str(tmp_path / "fit_sparse"), "--target", "b001,b002",
                 "--residual-rank", "0", "--out", str(tmp_path / "auto_sparse")]) == 0
    kept = json.loads((tmp_path / "auto_sparse" / "summary.json").read_text())["primitives"]
    assert kept["fit_method"] == "map"
    assert "fewer than 25 scores (fewest: 'b005' with 6)" in kept["interval_source"]


def test_subject_bootstrap_warns_when_many_replicates_fail():
    """Resampling the subjects of an item with 5 scores leaves it without residual dof in
    many replicates: the result says how many converged and that they are not a random
    sample, naming the sparse item."""
    from platinum_jax.data import ResponseTable
    from platinum_jax.design import bootstrap_subjects
    from platinum_jax.models import Gaussian, Rosetta
    from platinum_jax.models.rosetta import BenchmarkAnchor

    world = weights_world(40, 6, 0.8, noise=(0.01, 0.06), shared=0.0, seed=5)
    sc = world.scores
    table = ResponseTable.from_frame(sc[(sc["item"] != "b005")
                                        | (sc.groupby("item").cumcount() < 5)])
    with pytest.warns(RuntimeWarning, match=r"only \d+ of 20 bootstrap replicates converged.*"
                                            r"'b005' with 5"):
        out = bootstrap_subjects(Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian()),
                                 table, None, replicates=20, residual_rank=0)
    assert 2 <= out.notes["replicates_converged"] < 18


def test_subject_bootstrap_dof_counts_each_copy_as_a_subject():
    """The residual dof of a replicate with subject counts c_s equal those of a table in which
    each subject is written out c_s times as a subject of its own (the existing dof rule)."""
    from platinum_jax.data import ResponseTable
    from platinum_jax.design._cluster_bootstrap import _dof
    from platinum_jax.design._from_fit import _residual_dof
    from platinum_jax.inference._problem import Problem
    from platinum_jax.models import Gaussian, Rosetta
    from platinum_jax.models.rosetta import BenchmarkAnchor

    world = weights_world(40, 6, 0.6, seed=3)
    table = ResponseTable.from_frame(world.scores)
    model = Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian())
    problem = Problem(model, table)
    rng = np.random.default_rng(0)
    c = rng.multinomial(table.n_subjects, np.full(table.n_subjects, 1 / table.n_subjects))
    omega = rng.uniform(0.5, 2.0, table.n_items)[table.item_index]
    got = _dof(problem, c[table.subject_index][None].astype(float), omega[None])[0]
    frame = world.scores.assign(weight=omega)
    copies = [frame[frame.subject == s].assign(subject=f"{s}_{k}")
              for s, n in zip(table.subjects, c, strict=True) for k in range(n)]
    expanded = ResponseTable.from_frame(pd.concat(copies, ignore_index=True))
    assert list(expanded.items) == list(table.items)
    want = _residual_dof(Problem(model, expanded))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_subject_bootstrap_covers_the_true_weights_in_a_small_world():
    """Resampling subjects and refitting noise weights, noise and residual factor per replicate:
    the noise draws spread as a variance from ~30 scores does, and the 90% percentile
    intervals of v* cover the true weights within three binomial SEs of the nominal rate (in
    worlds this small they run somewhat short; the benchmark measures the Epoch-size ones)."""
    from platinum_jax.agency import optimal_weights
    from platinum_jax.data import ResponseTable
    from platinum_jax.design import bootstrap_subjects
    from platinum_jax.models import Gaussian, Rosetta
    from platinum_jax.models.rosetta import BenchmarkAnchor

    # a world of the heteroscedastic test above: the bootstrap's full-data fit with noise
    # weights is the program that test compiled
    world = weights_world(100, 24, 0.3, noise=(0.01, 0.1), shared=0.0,
                          seed=HETEROSCEDASTIC_SEEDS[0])
    table = ResponseTable.from_frame(world.scores)
    model = Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian())
    w = welfare_from_items(world.items, world.items[:3])
    prims = bootstrap_subjects(model, table, w, replicates=40, reweights=1, residual_rank=0,
                               seed=0)
    assert prims.notes["replicates_converged"] >= 36 and prims.n_draws >= 36
    # Each replicate re-estimates the noise: log d spreads by about the sd of the log of a
    # variance estimated from n_b scores, sqrt(2 / n_b), and centres near the truth.
    n_b = np.bincount(table.item_index, minlength=table.n_items)
    spread = np.log(prims.d).std(axis=0) / np.sqrt(2 / n_b)
    assert 0.5 < np.median(spread) < 2.0, spread
    log_ratio = np.log(np.median(prims.d, axis=0) / np.diag(world.Sigma))
    assert abs(log_ratio.mean()) < 3 * np.sqrt(np.mean(2 / n_b) / len(n_b)) + 0.1, log_ratio
    # Percentile intervals (what "auto" gives; the benchmark compares them with BCa).
    post = posterior_decisions(prims, 1.0)
    assert post.summary["interval_method"] == "percentile"
    v_true = np.asarray(optimal_weights(world.A @ world.A.T, world.Sigma, w, 1.0))
    _assert_nominal_coverage((v_true >= post.items["lo"]) & (v_true <= post.items["hi"]))
    # The BCa intervals are read from the same replicates around the full-data estimator.
    assert prims.estimate.n_draws == 1 and prims.jackknife.n_draws >= 2
    bca = posterior_decisions(prims, 1.0, interval_method="bca")
    assert bca.summary["interval_method"] == "bca"
    np.testing.assert_allclose(bca.draws, post.draws)


def test_subject_bootstrap_refuses_what_it_cannot_refit():
    from platinum_jax.data import ResponseTable
    from platinum_jax.design import bootstrap_subjects
    from platinum_jax.models import Bernoulli, Gaussian, Rosetta

    world = weights_world(30, 5, 0.8, seed=1)
    table = ResponseTable.from_frame(world.scores)
    with pytest.raises(ValueError, match="replicates"):
        bootstrap_subjects(Rosetta(likelihood=Gaussian()), table, replicates=1)
    with pytest.raises(ValueError, match="reweights"):
        bootstrap_subjects(Rosetta(likelihood=Gaussian()), table, reweights=-1)
    with pytest.raises(ValueError, match="Gaussian"):
        bootstrap_subjects(Rosetta(likelihood=Bernoulli()), table)
