"""The analyses on the shared Epoch data: headline figures land in stated ranges.

The ranges bracket the paper's figures (0.55 units/yr, 4.4 by Oct 2028, k = 0.168,
R^2 = 0.85) widely enough for our subset of the compute table and our optimiser, and tightly
enough that a wrong frontier, sign or unit would fail.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from platinum_jax import analysis as an
from platinum_jax.cli import main
from platinum_jax.data import ScoreTable
from platinum_jax.importers import (
    read_distilled_models,
    read_metr_horizons,
    read_model_compute,
)
from platinum_jax.stitching import fit_stitching


@pytest.fixture(scope="module")
def table(scores_long_csv):
    return ScoreTable.from_csv(scores_long_csv)


@pytest.fixture(scope="module")
def fit(table):
    return fit_stitching(table)


def test_trend_and_forecast_on_scores_long(fit):
    trend = an.fit_frontier_trend(fit)
    assert 0.4 <= trend.slope <= 0.7
    assert trend.r2 >= 0.7
    assert 8 <= trend.n_frontier <= 25
    assert "gpt-5-2025-08-07_high" in trend.frontier.index
    fc = an.forecast_capability(trend, until="2028-10-01")
    last = fc.iloc[-1]
    assert fc.index[-1] == pd.Timestamp("2028-10-01")
    assert 3.6 <= last["capability"] <= 5.2
    assert last["pi_low"] < last["ci_low"] < last["capability"] < last["ci_high"] < last["pi_high"]


def test_forecast_propagates_stitching_bootstrap(fit):
    from platinum_jax.stitching import BootstrapResult

    # replicate parameter vectors around the MAP (a real bootstrap's refits are slow to run here)
    rng = np.random.default_rng(0)
    thetas = fit.theta[None, :] + rng.normal(0, 0.05, (6, fit.theta.size))
    boot = BootstrapResult(fit, thetas, np.zeros(6), np.ones(6, bool), 0.95)
    draws = an.bootstrap_capabilities(boot)
    assert draws.shape == (6, fit.table.n_models)
    free_c = fit.layout.free_positions()[0]
    np.testing.assert_allclose(draws.to_numpy()[:, free_c], thetas[:, : free_c.size])
    trend = an.fit_frontier_trend(fit)
    fc = an.forecast_capability(trend, until="2028-10-01", capability_draws=boot)
    last = fc.iloc[-1]
    assert "capability draws (6 replicates)" in last["uncertainty_source"]
    assert last["draw_low"] <= last["draw_median"] <= last["draw_high"]
    assert abs(last["draw_median"] - last["capability"]) < 0.5


def test_algorithmic_progress_on_compute_table(fit, epoch_dir):
    compute = read_model_compute(epoch_dir / "model_compute.csv")
    distilled = read_distilled_models(epoch_dir / "raw")
    res = an.fit_algorithmic_progress(fit, compute, distilled=distilled, n_boot=300)
    assert not set(res.models.index) & set(distilled)
    assert 0.1 <= res.k <= 0.3
    assert 0.0 < res.delta_b_per_year < 0.6
    s = res.summary()
    assert s.loc["compute_reduction_per_year", "low"] < res.reduction_per_year
    assert res.reduction_per_year < s.loc["compute_reduction_per_year", "high"]
    # every model of the compute table is either used or listed as excluded with a reason
    assert len(res.models) + len(res.excluded) == len(compute)


def test_time_horizons_on_metr(fit, epoch_dir):
    hz = an.fit_time_horizons(fit, read_metr_horizons(epoch_dir / "raw"))
    assert hz.r2 >= 0.7
    assert hz.slope > 0
    # the paper's split holds out the ten models Epoch's notebook printed as its test set, and
    # its R^2 on the training part is the paper's 0.85
    held = set(hz.data.index[hz.data["paper_split"] == "test"])
    assert held == {
        "claude-opus-4-20250514_16K", "claude-3-7-sonnet-20250219_16K", "gpt-5-2025-08-07_medium",
        "claude-3-5-sonnet-20241022", "o1-2024-12-17_medium", "DeepSeek-R1-0528",
        "claude-3-5-sonnet-20240620", "DeepSeek-V3", "gpt-4-0314", "gpt-4-turbo-2024-04-09",
    }
    assert hz.split_r2_train == pytest.approx(0.85, abs=0.01)
    assert len(hz.data) + len(hz.unmatched) == 30
    pred = hz.predict([fit.capability_of("gpt-5-2025-08-07_high")])
    assert 30 < pred["horizon_minutes"].iloc[0] < 600  # METR measured ~137 min for GPT-5 medium


def test_acceleration_on_scores_long(fit):
    bp = an.detect_acceleration(fit)
    assert pd.Timestamp("2023-06-01") < bp.breakpoint < pd.Timestamp("2025-06-01")
    assert bp.slope_before > 0 and bp.slope_after > 0
    assert np.isfinite(bp.grid["sse"]).sum() > 10


def test_robustness_anchor_and_leave_out(table, fit):
    rob = an.anchor_robustness(table, ["MMLU"], baseline=fit)
    row = rob.summary.loc["MMLU"]
    assert row["spearman"] > 0.98 and row["kendall"] > 0.9
    assert row["mean_abs_shift"] > 0.05  # the anchor moves absolute values...
    loo = an.leave_benchmarks_out(table, ["GPQA diamond", "FrontierMath-2025-02-28-Private"],
                                  baseline=fit)
    assert (loo.summary["spearman"] > 0.98).all()
    assert loo.summary["converged"].all()
    with pytest.raises(KeyError, match="closest names"):
        an.anchor_robustness(table, ["Hellaswag "], baseline=fit)
    with pytest.raises(ValueError, match="anchor"):
        an.leave_benchmarks_out(table, ["Winogrande"], baseline=fit)


def test_cli_trends_and_missing_side_file(fit, scores_long_csv, tmp_path, capsys):
    caps = tmp_path / "capabilities.csv"
    fit.capabilities.to_csv(caps)
    out = tmp_path / "trends"
    argv = ["analyze", "trends", str(scores_long_csv), "--out", str(out), "--capabilities", str(caps)]
    assert main(argv) == 0
    for name in ("trend_summary.csv", "forecast.csv", "frontier.csv", "trend.png"):
        assert (out / name).is_file()
    summary = pd.read_csv(out / "trend_summary.csv", index_col=0)
    assert summary.loc["slope_per_year", "paper_reference"] == 0.55
    assert summary.loc["slope_per_year", "value"] == pytest.approx(an.fit_frontier_trend(fit).slope)
    rc = main(["analyze", "progress", str(scores_long_csv), "--out", str(tmp_path / "p"),
               "--compute", str(tmp_path / "nope.csv")])
    assert rc == 2
    assert "--compute" in capsys.readouterr().err


def test_cli_progress_acceleration_horizons_robustness(fit, scores_long_csv, tmp_path):
    """Each remaining analysis runs from the command line and writes its tables and figure."""
    caps = tmp_path / "capabilities.csv"
    fit.capabilities.to_csv(caps)
    data = str(scores_long_csv)
    expected = {
        "progress": ("progress_summary.csv", "progress_models.csv", "progress.png"),
        "acceleration": ("breakpoint.csv", "breakpoint_grid.csv", "breakpoint.png"),
        "horizons": ("horizon_summary.csv", "horizon_mapping.csv", "horizons.png"),
    }
    for command, files in expected.items():
        out = tmp_path / command
        argv = ["analyze", command, data, "--out", str(out), "--capabilities", str(caps)]
        if command == "progress":
            argv += ["--n-boot", "50"]
        assert main(argv) == 0, command
        for name in files:
            assert (out / name).is_file(), (command, name)
    horizons = pd.read_csv(tmp_path / "horizons" / "horizon_summary.csv", index_col=0)
    assert 0.7 <= horizons.loc["r2", "value"] <= 0.95
    progress = pd.read_csv(tmp_path / "progress" / "progress_summary.csv", index_col=0)
    assert 0.1 <= progress.loc["k", "value"] <= 0.35

    out = tmp_path / "robustness"
    argv = ["analyze", "robustness", data, "--out", str(out), "--anchors", "MMLU",
            "--leave-out", "GeoBench", "SWE-Bench verified"]
    assert main(argv) == 0
    anchors = pd.read_csv(out / "anchor_robustness.csv", index_col=0)
    assert anchors.loc["MMLU", "spearman"] >= 0.99
    loo = pd.read_csv(out / "leave_out_robustness.csv", index_col=0)
    assert len(loo) == 2 and (loo["spearman"] >= 0.98).all()
    assert (out / "robustness.png").is_file()
