"""Stitching uncertainty (sensitivity, Laplace, bootstrap), cross-validation and the CLI, checked
against NumPy/SciPy re-derivations on small synthetic tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares

from platinum_jax.cli import main
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.inference import kfold_assignments, resample_counts
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import (
    bootstrap,
    by_kind,
    cross_validate,
    fit_stitching,
    laplace,
    sensitivity,
)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_cost(theta, table, l2, weights=None):
    """The objective for the anchor bench_00 (D = 0, alpha = 1), written from the definition."""
    m, b = table.n_models, table.n_benchmarks
    c = theta[:m]
    d = np.insert(theta[m : m + b - 1], 0, 0.0)
    a = np.insert(theta[m + b - 1 :], 0, 1.0)
    mi, bi = table.model_index, table.benchmark_index
    r = _sigmoid(a[bi] * (c[mi] - d[bi])) - table.scores
    if weights is not None:
        r = np.sqrt(weights) * r
    cd = np.concatenate([c, d])
    cd = cd - cd.mean()  # the common shift is chosen by the L2 term (fit-then-shift anchoring)
    pen = np.sum(cd**2) + np.sum(a[1:] ** 2)
    return 0.5 * (np.sum(r**2) + l2 * pen / (m + 2 * b - 1))


def numpy_residuals(theta, table, l2, weights):
    m, b = table.n_models, table.n_benchmarks
    c = theta[:m]
    d = np.insert(theta[m : m + b - 1], 0, 0.0)
    a = np.insert(theta[m + b - 1 :], 0, 1.0)
    mi, bi = table.model_index, table.benchmark_index
    r = np.sqrt(weights) * (_sigmoid(a[bi] * (c[mi] - d[bi])) - table.scores)
    cd = np.concatenate([c, d])
    scale = l2 / (m + 2 * b - 1)
    return np.concatenate([r, np.sqrt(scale) * (cd - cd.mean()), np.sqrt(scale) * a[1:]])


@pytest.fixture(scope="module")
def small():
    table, truth = synthetic_score_table(seed=11, n_models=12, n_benchmarks=4, density=1.0, noise=0.03)
    fit = fit_stitching(table, BenchmarkAnchor("bench_00"), l2=0.1)
    return table, truth, fit


def test_numpy_cost_matches_fit(small):
    table, _, fit = small
    assert fit.cost == pytest.approx(numpy_cost(fit.theta, table, 0.1), rel=1e-10)


def test_laplace_matches_finite_difference_hessian(small):
    table, _, fit = small
    lap = laplace(fit)
    theta = fit.theta
    p = theta.size
    h = 1e-4
    hess = np.zeros((p, p))
    for i in range(p):  # central differences of the NumPy objective
        for j in range(i, p):
            ei, ej = np.eye(p)[i] * h, np.eye(p)[j] * h
            f = lambda t: numpy_cost(t, table, 0.1)
            hess[i, j] = hess[j, i] = (
                f(theta + ei + ej) - f(theta + ei - ej) - f(theta - ei + ej) + f(theta - ei - ej)
            ) / (4 * h * h)
    resid = fit.residuals["residual"].to_numpy()
    s2 = np.sum(resid**2) / (table.n_scores - p)
    sd = np.sqrt(s2 * np.diag(np.linalg.solve(hess, np.eye(p))))
    np.testing.assert_allclose(lap["sd"].to_numpy(), sd, rtol=1e-4)
    assert lap.attrs["noise_variance"] == pytest.approx(s2)
    np.testing.assert_allclose(lap["upper"] - lap["value"], 1.959964 * lap["sd"], rtol=1e-5)


def test_sensitivity_hits_five_percent(small):
    # the global-loss variant: the whole regularised objective rises 5% (not the paper's rule,
    # which tests/agency/test_sensitivity_paper.py checks against SciPy)
    table, _, fit = small
    sens = sensitivity(fit, method="global_loss")
    target = 1.05 * numpy_cost(fit.theta, table, 0.1)
    for j in [0, 5, table.n_models + 1, fit.theta.size - 1]:
        for sign, col in [(1, "delta_plus"), (-1, "delta_minus")]:
            t = fit.theta.copy()
            t[j] += sign * sens[col].iloc[j]
            assert numpy_cost(t, table, 0.1) == pytest.approx(target, rel=1e-9)
    # a half-width of the 5%-loss interval, named so: it is not a standard deviation
    assert "sd" not in sens.columns
    np.testing.assert_allclose(sens["halfwidth"], (sens["upper"] - sens["lower"]) / 2, rtol=1e-12)
    # the quadratic approximation sqrt(2 * 0.05 F / H_jj) is close for a small rise
    ratio = sens["quadratic"] / sens["halfwidth"]
    assert ratio.between(0.7, 1.3).all()


def test_bootstrap_matches_scipy_refits(small):
    table, _, fit = small
    boot = bootstrap(fit, replicates=8, seed=5, chunk=4, block=8)
    assert boot.thetas.shape == (8, fit.theta.size)
    assert boot.converged.all()
    weights = resample_counts(5, 8, table.n_scores)
    assert np.all(weights.sum(axis=1) == table.n_scores)
    for k in [0, 3]:  # a Python-loop SciPy refit of two replicates, from the same start
        res = least_squares(
            numpy_residuals, fit.theta, args=(table, 0.1, weights[k]), xtol=1e-12, ftol=1e-12, gtol=1e-12
        )
        np.testing.assert_allclose(boot.thetas[k], res.x, atol=1e-5)
    summ = boot.summary
    np.testing.assert_allclose(summ["sd"], boot.thetas.std(axis=0, ddof=1))
    assert (summ["lower"] <= summ["upper"]).all()
    assert by_kind(summ, "capability").index.name == "model"


def test_bootstrap_leaves_out_unconverged_replicates(small):
    table, _, fit = small
    # Four exact-Hessian LM steps are too few for some of these replicates (and enough for
    # others; with five, every replicate converges).
    with pytest.warns(RuntimeWarning, match=r"of 8 bootstrap replicates did not converge.*max_steps") as rec:
        boot = bootstrap(fit, replicates=8, seed=5, chunk=4, block=8, max_steps=4)
    ok = boot.converged
    n_failed = int((~ok).sum())
    assert 0 < n_failed < 7
    assert f"{n_failed} of 8" in str(rec[0].message)
    assert boot.thetas.shape == (8, fit.theta.size)  # failed replicates stay visible
    assert len(boot.replicates) == 8
    summ = boot.summary
    np.testing.assert_allclose(summ["sd"], boot.thetas[ok].std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(summ["mean"], boot.thetas[ok].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(summ["lower"], np.percentile(boot.thetas[ok], 2.5, axis=0), rtol=1e-12)
    np.testing.assert_allclose(summ["upper"], np.percentile(boot.thetas[ok], 97.5, axis=0), rtol=1e-12)
    assert summ.attrs["n_failed"] == n_failed and summ.attrs["n_converged"] == 8 - n_failed
    # the replicates that did converge agree with SciPy refits of the same resamples
    weights = resample_counts(5, 8, table.n_scores)
    k = int(np.flatnonzero(ok)[0])
    res = least_squares(
        numpy_residuals, fit.theta, args=(table, 0.1, weights[k]), xtol=1e-12, ftol=1e-12, gtol=1e-12
    )
    np.testing.assert_allclose(boot.thetas[k], res.x, atol=1e-5)
    # none converged: no summary at all rather than one built from unfinished refits
    with pytest.warns(RuntimeWarning, match="8 of 8"):
        none = bootstrap(fit, replicates=8, seed=5, chunk=4, block=8, max_steps=1)
    assert none.summary[["sd", "lower", "upper", "mean"]].isna().all().all()


def test_cross_validation_prefers_true_link():
    table, _ = synthetic_score_table(seed=2, n_models=24, n_benchmarks=5, density=1.0, noise=0.02)
    cv = cross_validate(table, BenchmarkAnchor("bench_00"), l2=0.01, k=4, seed=0)
    folds = kfold_assignments(table.n_scores, 4, seed=0)
    assert np.bincount(folds).tolist() == [30, 30, 30, 30]
    mean = cv[cv["fold"] == "mean"].set_index("link")["mse"]
    per_fold = cv[cv["fold"] != "mean"]
    for link in ("sigmoid", "clipped_linear"):
        rows = per_fold[per_fold["link"] == link]
        assert mean[link] == pytest.approx(np.average(rows["mse"], weights=rows["n_test"]))
    # the data were drawn from a sigmoid, so it predicts held-out scores better
    assert mean["sigmoid"] < mean["clipped_linear"]
    # fold 0 by an independent route: an ordinary fit on the table without fold 0's scores
    sub = table.data.loc[folds != 0]
    from platinum_jax.data import ScoreTable

    sub_fit = fit_stitching(ScoreTable.from_frame(sub), BenchmarkAnchor("bench_00"), l2=0.01)
    held = table.data.loc[folds == 0]
    caps = sub_fit.capabilities["capability"]
    bench = sub_fit.benchmarks
    pred = _sigmoid(
        bench.loc[held["benchmark"], "slope"].to_numpy()
        * (caps.loc[held["model"]].to_numpy() - bench.loc[held["benchmark"], "difficulty"].to_numpy())
    )
    fold0 = per_fold[(per_fold["link"] == "sigmoid") & (per_fold["fold"] == "0")]["mse"].item()
    assert fold0 == pytest.approx(np.mean((pred - held["score"].to_numpy()) ** 2), rel=1e-5)


def _stitch_cli(tmp_path, frame, *options):
    """Write ``frame`` as a CSV and run ``platinum-jax stitch`` on it; returns (rc, out dir)."""
    csv = tmp_path / "scores.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "out"
    return main(["stitch", str(csv), *options, "--out", str(out)]), out


def test_cli_writes_outputs(tmp_path, small, capsys):
    table, _, fit = small
    rc, out = _stitch_cli(
        tmp_path, table.data, "--anchor-benchmark", "bench_00", "--uncertainty", "laplace",
        "--rescale", "model_000", "100", "model_001", "120", "--plots",
    )
    csv = tmp_path / "scores.csv"
    assert rc == 0
    caps = pd.read_csv(out / "capabilities.csv", index_col="model")
    assert {"capability", "sd", "lower", "upper"} <= set(caps.columns)
    assert caps.loc["model_000", "capability_rescaled"] == pytest.approx(100.0)
    assert caps.loc["model_001", "capability_rescaled"] == pytest.approx(120.0)
    np.testing.assert_allclose(caps["capability"], fit.capabilities["capability"], atol=1e-8)
    bench = pd.read_csv(out / "benchmarks.csv")
    assert {"benchmark", "difficulty", "slope"} <= set(bench.columns)
    info = json.loads((out / "fit.json").read_text())
    assert info["cost"] == pytest.approx(fit.cost) and info["anchor"]["benchmark"] == "bench_00"
    assert info["l2"] == 0.1 and info["converged"] is True
    assert (out / "capabilities.png").stat().st_size > 0 and (out / "residuals.png").exists()
    # an unknown anchor is a user error: message with close names, exit code 2
    rc = main(["stitch", str(csv), "--anchor-benchmark", "bench_0", "--out", str(out)])
    assert rc == 2
    assert "closest names" in capsys.readouterr().err


def test_cli_bootstrap_intervals(tmp_path, small):
    table, _, fit = small
    rc, out = _stitch_cli(
        tmp_path, table.data, "--anchor-benchmark", "bench_00", "--uncertainty", "bootstrap",
        "--replicates", "4", "--seed", "3",
    )
    assert rc == 0
    info = json.loads((out / "fit.json").read_text())
    assert info["uncertainty"] == "bootstrap" and info["replicates"] == 4
    assert info["replicates_converged"] == 4 and info["replicates_failed"] == 0
    # SciPy refits of the same four resamples, from the MAP estimate, give the columns
    weights = resample_counts(3, 4, table.n_scores)
    refits = np.array([
        least_squares(
            numpy_residuals, fit.theta, args=(table, 0.1, w), xtol=1e-12, ftol=1e-12, gtol=1e-12
        ).x
        for w in weights
    ])
    m = table.n_models
    caps = pd.read_csv(out / "capabilities.csv", index_col="model")
    np.testing.assert_allclose(caps["sd"], refits[:, :m].std(axis=0, ddof=1), atol=1e-5)
    np.testing.assert_allclose(caps["lower"], np.percentile(refits[:, :m], 2.5, axis=0), atol=1e-5)
    np.testing.assert_allclose(caps["upper"], np.percentile(refits[:, :m], 97.5, axis=0), atol=1e-5)
    bench = pd.read_csv(out / "benchmarks.csv", index_col="benchmark")
    free = bench.index != "bench_00"
    b = table.n_benchmarks
    np.testing.assert_allclose(
        bench.loc[free, "slope_sd"], refits[:, m + b - 1 :].std(axis=0, ddof=1), atol=1e-5
    )
    assert bench.loc["bench_00", ["difficulty_sd", "slope_sd"]].isna().all()  # the anchor is fixed


def test_cli_sensitivity_halfwidths(tmp_path, small):
    table, _, fit = small
    rc, out = _stitch_cli(
        tmp_path, table.data, "--anchor-benchmark", "bench_00", "--uncertainty", "sensitivity"
    )
    assert rc == 0
    caps = pd.read_csv(out / "capabilities.csv", index_col="model")
    bench = pd.read_csv(out / "benchmarks.csv", index_col="benchmark")
    assert {"halfwidth", "lower", "upper"} <= set(caps.columns) and "sd" not in caps.columns
    assert {"difficulty_halfwidth", "slope_halfwidth"} <= set(bench.columns)
    assert not any(col.endswith("sd") for col in bench.columns)
    np.testing.assert_allclose(caps["halfwidth"], (caps["upper"] - caps["lower"]) / 2, rtol=1e-10)
    # the paper's rule: moving one capability to either end of its interval raises the
    # unregularised squared error of that model's own scores by 5%
    m, b = table.n_models, table.n_benchmarks
    c = fit.theta[:m]
    d = np.insert(fit.theta[m : m + b - 1], 0, 0.0)
    a = np.insert(fit.theta[m + b - 1 :], 0, 1.0)
    for j in [0, 7]:
        rows = table.model_index == j
        bj, yj = table.benchmark_index[rows], table.scores[rows]

        def own(cj, bj=bj, yj=yj):
            return np.sum((1.0 / (1.0 + np.exp(-a[bj] * (cj - d[bj]))) - yj) ** 2)

        for end in ("lower", "upper"):
            assert own(caps[end].iloc[j]) == pytest.approx(1.05 * own(c[j]), rel=1e-8)


def test_cli_separate_components(tmp_path, small):
    table, _, _ = small
    island = pd.DataFrame(
        {"model": ["zz_a", "zz_a", "zz_b", "zz_b"], "benchmark": ["zz_x", "zz_y", "zz_x", "zz_y"],
         "score": [0.2, 0.6, 0.4, 0.8]}
    )
    both = pd.concat([table.data, island])
    rc, out = _stitch_cli(tmp_path, both, "--anchor-benchmark", "bench_00")
    assert rc == 2  # disconnected: refused unless asked to fit the parts
    rc, out = _stitch_cli(
        tmp_path, both, "--anchor-benchmark", "bench_00", "--components", "separate",
        "--restarts", "2", "--plots",
    )
    assert rc == 0
    for k in (1, 2):
        for name in ("capabilities", "benchmarks", "residuals"):
            assert (out / f"{name}_component{k}.csv").exists()
        assert (out / f"capabilities_component{k}.png").stat().st_size > 0
    assert not (out / "capabilities.csv").exists()
    caps1 = pd.read_csv(out / "capabilities_component1.csv", index_col="model")
    assert len(caps1) == 12
    # component 1 is the synthetic table alone: compare with a SciPy fit of the NumPy objective
    m, b = table.n_models, table.n_benchmarks
    x0 = np.concatenate([np.zeros(m + b - 1), np.ones(b - 1)])
    ref = least_squares(
        numpy_residuals, x0, args=(table, 0.1, np.ones(table.n_scores)), xtol=1e-12, ftol=1e-12,
        gtol=1e-12,
    )
    np.testing.assert_allclose(caps1["capability"], ref.x[:m], atol=1e-6)
    # the island has no bench_00: it is anchored on its most-scored benchmark (a tie: the first
    # name) with the anchor's D = 0 and alpha = 1
    bench2 = pd.read_csv(out / "benchmarks_component2.csv", index_col="benchmark")
    assert bench2.loc["zz_x", "difficulty"] == 0.0 and bench2.loc["zz_x", "slope"] == 1.0
    info2 = json.loads((out / "fit_component2.json").read_text())
    assert info2["anchor"]["benchmark"] == "zz_x" and info2["n_models"] == 2
