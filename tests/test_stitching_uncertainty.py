"""Stitching uncertainty (sensitivity, Laplace, bootstrap), cross-validation and the CLI, checked
against NumPy/SciPy re-derivations on small synthetic tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares

from platinum_jax.cli import main
from platinum_jax.stitching import (
    BenchmarkAnchor,
    bootstrap,
    bootstrap_weights,
    by_kind,
    cross_validate,
    fit_stitching,
    kfold_assignments,
    laplace,
    sensitivity,
    synthetic_score_table,
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
    table, _, fit = small
    sens = sensitivity(fit)
    target = 1.05 * numpy_cost(fit.theta, table, 0.1)
    for j in [0, 5, table.n_models + 1, fit.theta.size - 1]:
        for sign, col in [(1, "delta_plus"), (-1, "delta_minus")]:
            t = fit.theta.copy()
            t[j] += sign * sens[col].iloc[j]
            assert numpy_cost(t, table, 0.1) == pytest.approx(target, rel=1e-9)
    # the quadratic approximation sqrt(2 * 0.05 F / H_jj) is close for a small rise
    ratio = sens["quadratic"] / sens["sd"]
    assert ratio.between(0.7, 1.3).all()


def test_bootstrap_matches_scipy_refits(small):
    table, _, fit = small
    boot = bootstrap(fit, replicates=8, seed=5, chunk=4, block=8)
    assert boot.thetas.shape == (8, fit.theta.size)
    assert boot.converged.all()
    weights = bootstrap_weights(5, 8, table.n_scores)
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
    from platinum_jax.stitching import ScoreTable

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


def test_cli_writes_outputs(tmp_path, small, capsys):
    table, _, fit = small
    csv = tmp_path / "scores.csv"
    table.data.to_csv(csv, index=False)
    out = tmp_path / "out"
    rc = main([
        "stitch", str(csv), "--anchor-benchmark", "bench_00", "--uncertainty", "laplace",
        "--rescale", "model_000", "100", "model_001", "120", "--out", str(out),
    ])
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
