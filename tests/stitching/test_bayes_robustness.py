"""Bayesian stitching at its edges: one chain, a weights config checked before sampling, and
NUTS settings out of range."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from platinum_jax.data import ScoreTable
from platinum_jax.design import load_weights_config
from platinum_jax.importers import read_epoch_scores
from platinum_jax.inference import SamplingWarning, check_diagnostics
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import fit_stitching_bayes


def _small_csv(tmp_path, seed=3, n_models=24, n_bench=4):
    """Scores drawn from sigmoid(alpha_b (C_m - D_b)) plus noise; b0 is the anchor."""
    rng = np.random.default_rng(seed)
    C = rng.normal(0.5, 1.0, n_models)
    D = np.r_[0.0, rng.normal(0.5, 0.8, n_bench - 1)]
    a = np.r_[1.0, np.exp(rng.normal(0.2, 0.2, n_bench - 1))]
    mu = 1.0 / (1.0 + np.exp(-a[None] * (C[:, None] - D[None])))
    y = np.clip(mu + 0.03 * rng.normal(size=mu.shape), 0.0, 1.0)
    frame = pd.DataFrame(
        {
            "model": np.repeat([f"m{m:02d}" for m in range(n_models)], n_bench),
            "benchmark": np.tile([f"b{b}" for b in range(n_bench)], n_models),
            "score": y.reshape(-1),
        }
    )
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- one chain
def _one_chain_idata(n_draws=300, seed=0):
    import arviz as az

    rng = np.random.default_rng(seed)
    return az.from_dict(
        posterior={
            "capability": rng.normal(size=(1, n_draws, 3)),
            "capability_tau": np.abs(rng.normal(size=(1, n_draws))),
        },
        sample_stats={"diverging": np.zeros((1, n_draws), dtype=bool)},
        coords={"model": ["a", "b", "c"]},
        dims={"capability": ["model"]},
    )


def test_check_diagnostics_on_one_chain_says_r_hat_needs_chains():
    idata = _one_chain_idata()
    with pytest.warns(SamplingWarning, match="one chain: R-hat compares chains") as record:
        diag = check_diagnostics(idata, ess_min=100)
    assert diag["rhat_max"] == "unavailable with one chain" and diag["chains"] == 1
    # independent draws: the ESS of one chain is still computed (about the number of draws)
    assert 150 < diag["ess_bulk_min"] < 600
    assert not any("min bulk ESS" in str(w.message) for w in record)


def test_hyper_parameters_are_in_the_diagnostics():
    # A hyper-parameter stuck at one value per half-chain is the worst R-hat, and is named.
    idata = _one_chain_idata()
    import arviz as az

    rng = np.random.default_rng(1)
    tau = np.abs(rng.normal(size=(2, 300))) + np.array([[0.0], [3.0]])
    two = az.from_dict(
        posterior={"capability": rng.normal(size=(2, 300, 3)), "capability_tau": tau},
        sample_stats={"diverging": np.zeros((2, 300), dtype=bool)},
        coords={"model": ["a", "b", "c"]},
        dims={"capability": ["model"]},
    )
    with pytest.warns(SamplingWarning, match=r"worst: capability_tau"):
        diag = check_diagnostics(two)
    assert diag["worst_rhat_parameter"] == "capability_tau" and diag["rhat_max"] > 1.5
    assert idata.posterior.sizes["chain"] == 1


def test_sampled_coordinates_the_summary_hides_are_checked():
    # slope_z, a sampling coordinate (its role), is left out of the displayed summary (its
    # named twin is slope), yet a sampled
    # coordinate whose chains disagree must fail the check: here the second chain of one entry
    # sits 2 sd away, so its R-hat is far above 1.01 while every shown quantity mixes.
    import arviz as az

    from platinum_jax.inference import posterior_summary

    rng = np.random.default_rng(2)
    slope_z = rng.normal(size=(2, 400, 2))
    slope_z[1, :, 1] += 2.0
    idata = az.from_dict(
        posterior={"capability": rng.normal(size=(2, 400, 3)), "slope_z": slope_z},
        sample_stats={"diverging": np.zeros((2, 400), dtype=bool)},
        coords={"model": ["a", "b", "c"], "free_slope": ["x", "y"]},
        dims={"capability": ["model"], "slope_z": ["free_slope"]})
    idata.posterior["slope_z"].attrs["role"] = "coordinate"
    assert "slope_z" not in set(posterior_summary(idata)["variable"])
    expected = az.rhat(idata.posterior)["slope_z"].values[1]
    with pytest.warns(SamplingWarning, match=r"worst: slope_z\[y\]"):
        diag = check_diagnostics(idata)
    assert diag["worst_rhat_parameter"] == "slope_z[y]"
    assert diag["rhat_max"] == pytest.approx(expected) and expected > 1.5


def test_cli_runs_one_chain(tmp_path, capsys, sparse_scores):
    from platinum_jax.cli import main

    # the world and settings of the two commands' posterior test (tests/inference/
    # test_bayes_one_model.py): its NUTS programs come from the run's compilation cache
    csv = tmp_path / "sparse.csv"
    sparse_scores(seed=1, n_models=8, n_bench=3).drop(columns="n_items").to_csv(csv, index=False)
    out = tmp_path / "one"
    argv = ["stitch-bayes", str(csv), "--anchor-benchmark", "b0", "--chains", "1"]
    argv += ["--samples", "400", "--warmup", "200", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "one chain: R-hat compares chains" in printed
    assert "R-hat n/a (1 chain)" in printed
    summary = pd.read_csv(out / "summary.csv")
    assert summary["r_hat"].isna().all() and (summary["ess_bulk"].dropna() > 0).all()


def test_cli_warm_start_reads_an_earlier_runs_adaptation(tmp_path, capsys, sparse_scores):
    import json

    from platinum_jax.cli import main

    csv = tmp_path / "sparse.csv"
    sparse_scores(seed=1, n_models=8, n_bench=3).drop(columns="n_items").to_csv(csv, index=False)
    argv = ["stitch-bayes", str(csv), "--anchor-benchmark", "b0", "--chains", "2",
            "--samples", "200", "--warmup", "200"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--out", str(tmp_path / "cold")]) in (0, 1)
        assert (tmp_path / "cold" / "adaptation.npz").exists()
        assert main(["stitch-bayes", str(csv), "--anchor-benchmark", "b0", "--chains", "2",
                     "--samples", "200", "--warm-start", str(tmp_path / "cold"),
                     "--out", str(tmp_path / "warm")]) in (0, 1)
    d = json.loads((tmp_path / "warm" / "fit.json").read_text())["diagnostics"]
    assert d["init"] == "warm_start" and d["warmup"] == 200 // 5 and d["compiles"] == 0
    capsys.readouterr()
    # a directory without an adaptation, and a method without a sampler, are refused up front
    assert main([*argv, "--warm-start", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "adaptation.npz is missing" in capsys.readouterr().err
    assert main(["fit", str(csv), "--method", "map", "--warm-start", str(tmp_path / "cold"),
                 "--out", str(tmp_path / "y")]) == 2
    assert "--warm-start starts NUTS" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


# --------------------------------------------------------------------------- weights config
@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("r: 1\nw: {b1: 1}\nM: identity\ntreshold: 0.5\n", "'treshold' (did you mean 'threshold'?)"),
        ("r: 1\nw: {b1: null}\nM: identity\n", "w['b1'] must be a finite number"),
        ("r: 1\nw: {b1: [1, 2]}\nM: identity\n", "w['b1'] must be a finite number"),
        ("r: 1\nw: {b1: 1, b2: 2}\nM: {a: 1}\n", "M must be 'identity', a list"),
        ("r: 1\nw: {b1: 1}\nM: identity\nthreshold: [1]\n", "threshold must be a finite number"),
        ("r: [1]\nw: {b1: 1}\nM: identity\n", "r must be a finite number"),
        ("r: -1\nw: {b1: 1}\nM: identity\n", "r must be >= 0"),
        ("r: 1\nw: {b1: true}\nM: identity\n", "w['b1'] must be a finite number"),
        ("r: 1\nw: {b1: 1, b2: 1}\nM: [1, 2, 3]\n", "needs 2 entries"),
        ("r: 1\nw: {b1: 1, b2: 1}\nM: [[1, 0], [0]]\n", "must be 2 x 2"),
        ("r: 1\nw: {b1: 1, b2: 1}\nM: [[1, 2], [0, 1]]\n", "M must be symmetric"),
        ("r: 1\nw: {b1: 1, b2: 1}\nM: [[1, 2], [2, 1]]\n", "positive semi-definite"),
        ("r: 1\nw: 2\nM: identity\n", "'w' must be a mapping"),
        ("r: 1\nw: {b9: 1}\nM: identity\n", "unknown benchmark 'b9'"),
        ("r: 1\nw: [1, 2]\nM: identity\n", "'w' has 2 entries but the table has 4"),
    ],
)
def test_weights_config_is_checked_before_sampling(tmp_path, capsys, monkeypatch, text, named):
    import platinum_jax.stitching as bayes
    from platinum_jax.cli import main

    def must_not_sample(*args, **kwargs):
        raise AssertionError("the weights config must be rejected before the fit")

    monkeypatch.setattr(bayes, "fit_stitching_bayes", must_not_sample)
    csv = _small_csv(tmp_path)
    cfg = tmp_path / "weights.yaml"
    cfg.write_text(text)
    argv = ["stitch-bayes", str(csv), "--anchor-benchmark", "b0", "--weights-config", str(cfg)]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert named in err and "weights config" in err


def test_weights_config_reads_the_documented_forms(tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text("r: 2\nw: {b1: 1, b2: 0.5}\nM: [[2, 1], [1, 2]]\nthreshold: 0.25\n")
    got = load_weights_config(cfg, known_benchmarks=["b0", "b1", "b2"])
    np.testing.assert_array_equal(got["M"], [[2.0, 1.0], [1.0, 2.0]])
    np.testing.assert_array_equal(got["w"], [1.0, 0.5])
    assert got["benchmarks"] == ["b1", "b2"] and got["r"] == 2.0 and got["threshold"] == 0.25
    cfg.write_text("r: 0\nw: [1, 2, 3]\nM: [1, 2, 3]\n")
    got = load_weights_config(cfg, known_benchmarks=["b0", "b1", "b2"])
    np.testing.assert_array_equal(got["M"], np.diag([1.0, 2.0, 3.0]))
    assert got["benchmarks"] is None and got["threshold"] is None


# --------------------------------------------------------------------------- NUTS settings
@pytest.mark.parametrize("value", ["1.5", "1", "0", "-0.2", "nan", "high"])
def test_cli_rejects_target_accept_out_of_range(tmp_path, capsys, value):
    from platinum_jax.cli import main

    csv = _small_csv(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["stitch-bayes", str(csv), "--target-accept", value, "--out", str(tmp_path / "o")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--target-accept" in err and "(0, 1)" in err or "between 0 and 1" in err


@pytest.mark.parametrize("option", ["--chains", "--samples"])
def test_cli_rejects_non_positive_counts(tmp_path, capsys, option):
    from platinum_jax.cli import main

    csv = _small_csv(tmp_path)
    with pytest.raises(SystemExit):
        main(["stitch-bayes", str(csv), option, "0", "--out", str(tmp_path / "o")])
    assert f"{option}: must be >= 1" in capsys.readouterr().err


@pytest.mark.parametrize(("options", "expected"), [
    ([], {"mass": None}),  # the defaults: the model's mass matrix and pooling (30)
    (["--mass-matrix", "lowrank", "--pooled-below", "0"], {"mass": "lowrank", "pooled_below": 0}),
    (["--mass-matrix", "diagonal", "--pooled-below", "5"], {"mass": "diagonal", "pooled_below": 5}),
])
def test_cli_mass_matrix_and_pooling_reach_the_fit(tmp_path, monkeypatch, options, expected):
    import platinum_jax.stitching as bayes
    from platinum_jax.cli import main

    seen = {}

    def record(table, anchor, **kwargs):
        seen.update(kwargs)
        raise KeyboardInterrupt  # stop before sampling: the CLI's interrupted path

    monkeypatch.setattr(bayes, "fit_stitching_bayes", record)
    argv = ["stitch-bayes", str(_small_csv(tmp_path)), "--anchor-benchmark", "b0", *options]
    assert main([*argv, "--out", str(tmp_path / "o")]) != 0
    assert {k: seen[k] for k in ("mass", "pooled_below") if k in seen} == expected


def test_cli_refuses_pooled_below_for_likelihoods_without_a_noise_scale(tmp_path, capsys):
    from platinum_jax.cli import main

    argv = ["stitch-bayes", str(_small_csv(tmp_path)), "--anchor-benchmark", "b0",
            "--likelihood", "beta", "--pooled-below", "4", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "--pooled-below" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_fit_rejects_target_accept_out_of_range(tmp_path):
    table = ScoreTable.from_csv(_small_csv(tmp_path))
    for bad in (1.5, 1.0, 0.0, float("nan")):
        with pytest.raises(ValueError, match="target_accept is a probability"):
            fit_stitching_bayes(table, BenchmarkAnchor("b0"), target_accept=bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing else goes wrong on the way to the check
        with pytest.raises(ValueError, match="max_tree_depth"):
            fit_stitching_bayes(table, BenchmarkAnchor("b0"), max_tree_depth=0)


# --------------------------------------------------------------------------- real data
REAL_SUBSET = (
    "Winogrande",
    "MMLU",
    "GPQA diamond",
    "MATH level 5",
    "FrontierMath-2025-02-28-Private",
    "OTIS Mock AIME 2024-2025",
)

# The defaults (4 chains x 2,000 draws after 600 warm-up iterations) promise R-hat <= 1.01 and
# ESS >= 400 on this subset; benchmarks/bench_bayes_defaults.py runs them and asserts that. Here
# the same four chains draw half as many. ESS grows in proportion to the number of draws at a
# given mixing, so the ESS bar is half of 400. The slowest coordinate, MATH level 5's log noise
# scale, gives a split R-hat of 1.012-1.020 over seeds 3-5 at this length (1.05-1.06 with 400
# draws), so its bar is 1.03: chains that disagree give well above it (1.5 in test_bayes.py).
SHORT_CHAINS, SHORT_WARMUP, SHORT_SAMPLES = 4, 600, 1000
SHORT_SHARE = SHORT_CHAINS * SHORT_SAMPLES / (4 * 2000)
SHORT_MIN_ESS = 400 * SHORT_SHARE
SHORT_MAX_R_HAT = 1.03


@pytest.mark.slow
def test_short_chains_sample_a_real_subset_cleanly(epoch_dir):
    # Epoch's raw data on six benchmarks, four of them with standard errors and among them
    # scores of 0.000 with a reported standard error of 0.00 (the case that made NUTS diverge).
    from platinum_jax.importers import EpochDataWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpochDataWarning)
        full = read_epoch_scores(epoch_dir / "raw")
    part = full.select_benchmarks(REAL_SUBSET)
    counts = part.data.groupby("model")["benchmark"].nunique()
    table = part.select_models(counts.index[counts >= 4])
    assert (table.data["stderr"] == 0).sum() >= 3
    with pytest.warns(UserWarning, match="standard error\\(s\\) below stderr_floor") as record:
        fit = fit_stitching_bayes(
            table, seed=3, chains=SHORT_CHAINS, warmup=SHORT_WARMUP, samples=SHORT_SAMPLES,
            ess_min=SHORT_MIN_ESS, rhat_max=SHORT_MAX_R_HAT)
    assert not [w for w in record if issubclass(w.category, SamplingWarning)]
    d = fit.diagnostics
    assert d["divergences"] == 0 and d["rhat_max"] <= SHORT_MAX_R_HAT
    assert d["ess_bulk_min"] >= SHORT_MIN_ESS and d["ess_tail_min"] >= SHORT_MIN_ESS
    # Winogrande (9 scores here, no standard errors) shares the common noise level, and the
    # pooled check reports on it alone
    b = fit.benchmarks
    assert b.index[b["noise_pooled"]].tolist() == ["Winogrande"]
    assert np.isfinite(b.loc["Winogrande", ["noise_scatter", "noise_ppp"]].astype(float)).all()
    assert b.loc[~b["noise_pooled"], "noise_ppp"].isna().all()
    # every hyper-parameter is among the checked quantities
    checked = set(fit.summary.loc[fit.summary["sd"] > 0, "variable"])
    assert {"capability_mu", "capability_tau", "noise_log_mu", "noise_log_tau", "sigma"} <= checked


def test_polar_capabilities_have_the_zero_sum_normal_prior(tmp_path):
    # z = sqrt(r2) u / |u| with u uniform in direction on the zero-sum subspace (whatever its
    # length) and r2 ~ chi^2(n - 1) is the zero-sum normal again: mean 0, covariance
    # I - 1 1^T / n, |z|^2 with mean n - 1 and variance 2 (n - 1).
    import dataclasses

    import jax
    from numpyro.infer import Predictive

    from platinum_jax.inference import Problem, numpyro_model
    from platinum_jax.stitching import stitching_problem

    table = ScoreTable.from_csv(_small_csv(tmp_path, n_models=6, n_bench=3))
    problem, _ = stitching_problem(table, BenchmarkAnchor("b0"))
    polar = Problem(dataclasses.replace(problem.model, polar_scale=True), problem.table)
    draws = Predictive(numpyro_model(polar), num_samples=20000)(
        jax.random.PRNGKey(0), polar.data(), observed=False)
    assert {"capability_u", "capability_r2"} <= set(draws)
    u, r2 = np.asarray(draws["capability_u"]), np.asarray(draws["capability_r2"])
    z = np.sqrt(r2)[:, None] * u / np.linalg.norm(u, axis=1, keepdims=True)
    n = table.n_models
    np.testing.assert_allclose(z.sum(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(np.cov(z.T), np.eye(n) - 1.0 / n, atol=0.04)
    sq = np.sum(z**2, axis=1)
    assert abs(sq.mean() - (n - 1)) < 4 * np.sqrt(2 * (n - 1) / len(sq))
    assert sq.var() == pytest.approx(2 * (n - 1), rel=0.08)
