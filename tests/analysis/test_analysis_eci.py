"""The ECI views against independent computations: NumPy/SciPy re-derivations and synthetic worlds
whose answer is known (anchors, affine map, bootstrap percentiles, frontier lag, slope ratios, the
penalty sweep's fits, the basket projection)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares, minimize_scalar

from platinum_jax import analysis as an
from platinum_jax.data import UnknownNameError
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import BootstrapResult, fit_stitching

ANCHOR = BenchmarkAnchor("bench_00")


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@pytest.fixture(scope="module")
def world():
    table, truth = synthetic_score_table(seed=3, n_models=14, n_benchmarks=5, density=0.8, noise=0.03)
    fit = fit_stitching(table, ANCHOR)
    # replicate vectors scattered around the fit stand in for refits (the bootstrap's own refits
    # are tested with the stitching code): what is checked here is what the views do with them
    rng = np.random.default_rng(1)
    thetas = fit.theta + 0.05 * rng.standard_normal((12, fit.theta.size))
    boot = BootstrapResult(fit, thetas, np.zeros(12), np.ones(12, bool), 0.9)
    caps = fit.capabilities["capability"]
    low, high = caps.idxmin(), caps.idxmax()  # two anchors far apart
    return table, fit, boot, ((low, 130.0), (high, 150.0))


# ---------------------------------------------------------------------- the ECI scale
def test_eci_anchors_map_and_intervals(world):
    table, fit, boot, anchors = world
    (m_lo, v_lo), (m_hi, v_hi) = anchors
    res = an.eci_scale(fit, anchors=anchors, bootstrap=boot, level=0.9, min_benchmarks=4)
    eci = res.models["eci"]
    assert eci[m_lo] == pytest.approx(130.0, abs=1e-12)
    assert eci[m_hi] == pytest.approx(150.0, abs=1e-12)
    # the affine map recomputed by a 2x2 solve in NumPy
    caps = fit.capabilities["capability"]
    a, b = np.linalg.solve(np.array([[1.0, caps[m_lo]], [1.0, caps[m_hi]]]), [v_lo, v_hi])
    np.testing.assert_allclose(eci.to_numpy(), a + b * caps.to_numpy(), atol=1e-10)
    # predictions are unchanged on the new scale
    bench = res.benchmarks
    z = bench["slope_eci"].to_numpy()[table.benchmark_index] * (
        eci.to_numpy()[table.model_index] - bench["edi"].to_numpy()[table.benchmark_index])
    np.testing.assert_allclose(_sigmoid(z), fit.predicted, atol=1e-10)
    # intervals: each replicate's own map, then percentiles (from the bootstrap's raw replicates)
    reps = boot.replicates.loc[boot.converged, "capability"]
    lo_r, hi_r = reps[m_lo].to_numpy(), reps[m_hi].to_numpy()
    bb = (v_hi - v_lo) / (hi_r - lo_r)
    draws = v_lo + bb[:, None] * (reps.to_numpy() - lo_r[:, None])
    want = np.quantile(draws, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(res.models.loc[reps.columns, "lower"], want[0], atol=1e-9)
    np.testing.assert_allclose(res.models.loc[reps.columns, "upper"], want[1], atol=1e-9)
    assert res.models.loc[m_lo, ["lower", "upper"]].tolist() == pytest.approx([130.0, 130.0])
    assert res.models[["lower", "upper"]].notna().all().all()
    # the minimum-benchmarks rule, counted with pandas
    n = table.data.groupby("model", observed=True)["benchmark"].nunique()
    assert set(res.shown.index) == set(n.index[n >= 4])


def test_eci_bad_input(world):
    _, fit, _, anchors = world
    with pytest.raises(UnknownNameError, match="closest names"):
        an.eci_scale(fit, anchors=(("model_0xx", 130), anchors[1]), replicates=0)
    with pytest.raises(ValueError, match="same"):
        an.eci_scale(fit, anchors=(anchors[0], anchors[0]), replicates=0)
    with pytest.raises(ValueError, match="level"):
        an.eci_scale(fit, anchors=anchors, replicates=0, level=90)
    # the higher value given to the weaker model would turn the scale upside down
    (m_lo, v_lo), (m_hi, v_hi) = anchors
    with pytest.raises(ValueError, match="opposite order"):
        an.eci_scale(fit, anchors=((m_lo, v_hi), (m_hi, v_lo)), replicates=0)
    flipped = an.eci_scale(fit, anchors=((m_hi, v_hi), (m_lo, v_lo)), replicates=0)
    assert flipped.models["eci"][m_lo] == pytest.approx(v_lo)  # the order of the pairs is free


def test_an_interval_that_misses_its_estimate_is_counted_and_drawn(world):
    import matplotlib

    matplotlib.use("Agg")
    _, fit, _, anchors = world
    # refits shifted away from the fit: every interval misses its estimate on one side
    rng = np.random.default_rng(2)
    shift = 0.3 * rng.standard_normal(fit.theta.size)  # the same bias in every refit
    thetas = fit.theta + shift + 0.01 * rng.standard_normal((8, fit.theta.size))
    boot = BootstrapResult(fit, thetas, np.zeros(8), np.ones(8, bool), 0.9)
    res = an.eci_scale(fit, anchors=anchors, bootstrap=boot, level=0.9)
    m = res.models
    outside = int(((m["eci"] < m["lower"]) | (m["eci"] > m["upper"])).sum())
    assert outside > 0
    assert res.summary().loc["outside_interval", "value"] == outside
    an.plot_eci(res)  # drawn as it is, no negative error bar


def test_elo_points_are_odds_ratios(world):
    _, fit, boot, anchors = world
    ref = anchors[0][0]
    elo = an.elo_scale(fit, reference=(ref, 1000.0), bootstrap=boot)
    alpha_bar = fit.benchmarks["slope"].mean()
    caps = fit.capabilities["capability"]
    assert elo.loc[ref, "elo"] == pytest.approx(1000.0)
    # a gap of Delta Elo points multiplies the odds on an average-slope benchmark by 3^(Delta/200)
    m = caps.idxmax()
    odds_ratio = np.exp(alpha_bar * (caps[m] - caps[ref]))
    assert odds_ratio == pytest.approx(3.0 ** ((elo.loc[m, "elo"] - 1000.0) / 200.0), rel=1e-10)
    assert (elo["lower"] <= elo["elo"] + 1e-9).mean() > 0.8


# ---------------------------------------------------------------------- months behind the frontier
def _lag_world():
    months = np.arange(0, 36)
    dates = pd.Timestamp("2023-01-01") + pd.to_timedelta(months * 30.4375, unit="D")
    caps = pd.DataFrame({"capability": 0.1 * months, "release_date": dates},
                        index=[f"f{k:02d}" for k in months])
    caps.loc["laggard"] = [1.2, dates[24]]  # as capable as the frontier model of month 12
    return caps


def test_frontier_lag_known_answer():
    caps = _lag_world()
    lag = an.frontier_lag(caps, models=["laggard", "f20"])
    # the first release at least as capable as 1.2 is f12, twelve months earlier (day counts)
    gap = caps.loc["laggard", "release_date"] - caps.loc["f12", "release_date"]
    want = gap.total_seconds() / 86400 / 365.25 * 12
    assert lag.loc["laggard", "lag_months"] == pytest.approx(want, abs=1e-9)
    assert lag.loc["laggard", "frontier_reached"] == caps.loc["f12", "release_date"]
    assert lag.loc["f20", "lag_months"] == 0.0
    # the trend method on an exactly linear frontier: (line - C) / slope
    trend = an.frontier_lag(caps, models=["laggard"], method="trend")
    year = an.decimal_year(caps["release_date"])
    slope, icpt = np.polyfit(year[:-1], caps["capability"].to_numpy()[:-1], 1)
    want = 12 * ((icpt + slope * year[-1]) - 1.2) / slope
    assert trend.loc["laggard", "lag_months"] == pytest.approx(want, abs=1e-8)


def test_frontier_lag_draws_interval():
    caps = _lag_world()
    rng = np.random.default_rng(0)
    draws = pd.DataFrame(np.repeat(caps["capability"].to_numpy()[None], 40, axis=0), columns=caps.index)
    draws["laggard"] = rng.uniform(0.55, 2.05, 40)
    lag = an.frontier_lag(caps, draws=draws, level=0.8)
    year = an.decimal_year(caps["release_date"])
    front = caps["capability"].to_numpy()[:-1]
    per_draw = [12 * (year[-1] - year[:-1][front >= c].min()) for c in draws["laggard"]]
    want = np.quantile(per_draw, [0.1, 0.9])
    assert lag.loc["laggard", ["lower", "upper"]].to_numpy() == pytest.approx(want)


def test_organization_lag_by_brute_force():
    caps = _lag_world()
    rng = np.random.default_rng(2)
    orgs = pd.Series(rng.choice(["A", "B", "C"], len(caps)), index=caps.index)
    orgs = orgs.drop(["f05", "f06"])  # unassigned models still make the frontier
    draws = pd.DataFrame(caps["capability"].to_numpy() + 0.05 * rng.standard_normal((20, len(caps))),
                         columns=caps.index)
    got = an.organization_lag(caps, orgs, draws=draws, level=0.8)
    assert got.attrs["unassigned"] == 2 and len(got) == len(caps) - 2
    year = an.decimal_year(caps["release_date"])

    def lags(c):  # plain loops over models, per organisation
        out = {}
        for i, m in enumerate(caps.index):
            if m not in orgs:
                continue
            mine = [j for j, n in enumerate(caps.index) if orgs.get(n) == orgs[m] and year[j] <= year[i]]
            best = max(c[j] for j in mine)
            out[m] = 12 * (year[i] - min(year[j] for j in range(len(c)) if c[j] >= best))
        return pd.Series(out)

    want = lags(caps["capability"].to_numpy())
    flat = got.droplevel(0)
    np.testing.assert_allclose(flat["lag_months"], want[flat.index], atol=1e-9)
    per_draw = pd.DataFrame([lags(row) for row in draws.to_numpy()])
    np.testing.assert_allclose(flat["lower"], per_draw[flat.index].quantile(0.1), atol=1e-9)
    assert (got.index.get_level_values(0) == orgs[flat.index].to_numpy()).all()


# ---------------------------------------------------------------------- slope ratio against the breakpoint
def test_slope_ratio_sweep_matches_lstsq():
    t = np.linspace(2022.0, 2026.0, 30)
    tau0, s1, s2 = 2024.5, 0.4, 1.2
    c = s1 * (t - tau0) + (s2 - s1) * np.maximum(t - tau0, 0.0)
    dates = an.year_to_timestamp(t)
    caps = pd.DataFrame({"capability": c, "release_date": dates}, index=[f"m{k}" for k in range(30)])
    year = an.decimal_year(caps["release_date"])
    grid = pd.DatetimeIndex(an.year_to_timestamp([2023.5, tau0, 2025.2]))
    sweep = an.slope_ratio_sweep(caps, breakpoints=grid)
    assert sweep["ratio"].iloc[1] == pytest.approx(s2 / s1, rel=1e-6)
    for k, tau in enumerate(an.decimal_year(grid)):
        X = np.column_stack([np.ones_like(year), year, np.maximum(year - tau, 0)])
        beta = np.linalg.lstsq(X, c, rcond=None)[0]
        assert sweep["slope_before"].iloc[k] == pytest.approx(beta[1], rel=1e-6)
        assert sweep["ratio"].iloc[k] == pytest.approx((beta[1] + beta[2]) / beta[1], rel=1e-6)
    same = pd.DataFrame(np.repeat(c[None], 5, axis=0), columns=caps.index)
    with_draws = an.slope_ratio_sweep(caps, breakpoints=grid, draws=same)
    np.testing.assert_allclose(with_draws["lower"], with_draws["ratio"], rtol=1e-9)


# ---------------------------------------------------------------------- penalty sweep
def _scipy_fit(table, l2, log_slope=False):
    """The paper's objective written out (README of the Epoch data) and solved by SciPy."""
    mi, bi, y = table.model_index, table.benchmark_index, table.scores
    nm, nb = table.n_models, table.n_benchmarks
    k = table.benchmark_position("bench_00")
    n = nm + 2 * nb - 1

    def unpack(x):
        c = x[:nm]
        d = np.insert(x[nm:nm + nb - 1], k, 0.0)
        a = np.insert(x[nm + nb - 1:], k, 1.0)
        return c, d, a

    def resid(x):
        c, d, a = unpack(x)
        free_a = np.delete(a, k)
        slope_term = np.log(np.abs(free_a)) ** 2 if log_slope else free_a**2
        # the paper's penalty on free parameters, centred as the package does (mean of C and D)
        centre = np.mean(np.concatenate([c, d]))
        pen = np.sum((c - centre) ** 2) + np.sum((d - centre) ** 2) + np.sum(slope_term)
        return np.append(_sigmoid(a[bi] * (c[mi] - d[bi])) - y, np.sqrt(l2 * pen / n))

    x0 = np.concatenate([np.zeros(nm), np.zeros(nb - 1), np.ones(nb - 1)])
    sol = least_squares(resid, x0, xtol=1e-14, ftol=1e-14, gtol=1e-14)
    return unpack(sol.x)[0]


def test_penalty_sweep_against_scipy(world):
    # the module's world at its own strength: the baseline is the world's fit (compiled once), and
    # the log-slope penalty is the one new fit
    table, fit, _, anchors = world
    l2 = fit.l2
    sweep = an.penalty_sweep(table, [l2], anchor=ANCHOR, penalties=["l2", "log_slope"],
                             baseline_l2=l2, eci_anchors=anchors)
    assert sweep.summary["converged"].all()
    i_lo, i_hi = (table.model_position(m) for m, _ in anchors)
    for penalty in ("l2", "log_slope"):
        c = _scipy_fit(table, l2, log_slope=penalty == "log_slope")
        eci = 130.0 + 20.0 * (c - c[i_lo]) / (c[i_hi] - c[i_lo])
        got = sweep.capabilities[(penalty, l2)].to_numpy()
        np.testing.assert_allclose(got, eci, atol=2e-4)
    base = sweep.summary.query("penalty == 'l2'").iloc[0]
    assert base["trend_change_pct"] == pytest.approx(0.0, abs=1e-3)
    assert base["max_abs_shift"] == pytest.approx(0.0, abs=1e-3)
    # the log-slope fit differs from the paper's (else the comparison above would be vacuous)
    assert sweep.summary.query("penalty == 'log_slope'").iloc[0]["max_abs_shift"] > 1e-2
    with pytest.raises(ValueError, match="penalties"):
        an.penalty_sweep(table, [0.1], anchor=ANCHOR, penalties=["l1"])
    # a model built for another strength is refused by fit_stitching (before any fit)
    from platinum_jax.models import Rosetta

    with pytest.raises(ValueError, match="same l2"):
        fit_stitching(table, ANCHOR, 0.3, model=Rosetta(link="sigmoid", l2=0.1, anchor=ANCHOR))


# ---------------------------------------------------------------------- domain baskets
def test_projection_matches_scalar_minimiser(world):
    table, fit, boot, anchors = world
    basket = ["bench_01", "bench_03"]
    proj = an.project_capabilities(fit, basket)
    bench = fit.benchmarks
    n = table.n_models + 2 * table.n_benchmarks - 1
    rho = fit.l2 / n
    centre = np.mean(np.concatenate([fit.params.capability, fit.params.difficulty]))
    rows = table.data[table.data["benchmark"].isin(basket)]
    for model, part in rows.groupby("model", observed=True):
        d = bench.loc[part["benchmark"], "difficulty"].to_numpy()
        a = bench.loc[part["benchmark"], "slope"].to_numpy()
        y = part["score"].to_numpy()
        def f(c, a=a, d=d, y=y):
            return 0.5 * np.sum((_sigmoid(a * (c - d)) - y) ** 2) + 0.5 * rho * (c - centre) ** 2

        best = minimize_scalar(f, bracket=(-5, 5), tol=1e-12).x
        assert proj.loc[model, "capability"] == pytest.approx(best, abs=1e-6)
    assert set(proj.index) == set(rows["model"])
    # on the full fit's ECI scale, with per-replicate intervals
    # (its intervals, from a real bootstrap's paired resamples: tests/analysis/test_subset_difference.py)
    res = an.domain_index(fit, basket, eci_anchors=anchors)
    full = an.eci_scale(fit, anchors=anchors, replicates=0)
    np.testing.assert_allclose(res.models["basket"], full.to_eci(proj["capability"]), atol=1e-10)
    assert res.models[["lower", "upper", "difference_lower", "p_value"]].isna().all().all()
    with pytest.raises(UnknownNameError):
        an.domain_index(fit, ["bench_99"], eci_anchors=anchors)


def test_basket_tags_from_the_benchmark_flags(epoch_dir):
    from platinum_jax.importers import read_benchmark_info

    info = read_benchmark_info(epoch_dir / "raw")
    flags = pd.read_csv(epoch_dir / "raw" / "benchmark_optim.csv")
    want = set(flags.loc[flags["is_math"].astype(str).str.upper() == "TRUE", "benchmark"].str.strip())
    assert set(an.basket_benchmarks(info, "math")) == want
    assert an.basket_benchmarks(info, "coding", available=["Aider polyglot", "GSM8K"]) == ["Aider polyglot"]
    with pytest.raises(ValueError, match="tag"):
        an.basket_benchmarks(info, "knowledge")


def test_refit_mode_equals_subset_fit(world):
    table, fit, _, _ = world
    basket = ["bench_00", "bench_01", "bench_02"]
    res = an.domain_index(fit, basket, mode="refit", eci_anchors=None)
    sub = fit_stitching(table.select_benchmarks(basket), ANCHOR)
    np.testing.assert_allclose(res.models["basket"], sub.capabilities["capability"].reindex(res.models.index))


# ---------------------------------------------------------------------- command line
def test_cli_views(world, tmp_path, capsys):
    from platinum_jax.cli import main

    table, fit, _, anchors = world
    data = tmp_path / "scores.csv"
    table.data.to_csv(data, index=False)
    (m_lo, _), (m_hi, _) = anchors
    common = ["--anchor", "bench_00", "--eci-replicates", "0", "--eci-anchors", m_lo, "130", m_hi, "150"]
    expected = {"eci": ("eci.csv", "edi.csv", "elo.csv", "eci.png"),
                "lag": ("frontier_lag.csv", "frontier_lag.png"),
                "breakpoints": ("slope_ratio_sweep.csv", "slope_ratio_sweep.png")}
    for view, files in expected.items():
        out = tmp_path / view
        assert main(["analyze", view, str(data), "--out", str(out), *common]) == 0, view
        for name in files:
            assert (out / name).is_file(), (view, name)
    eci = pd.read_csv(tmp_path / "eci" / "eci.csv", index_col=0)
    assert eci.loc[[m_lo, m_hi], "eci"].tolist() == pytest.approx([130.0, 150.0])
    # a directory where the scores CSV belongs is named as one (it exists)
    (tmp_path / "raw").mkdir()
    assert main(["analyze", "eci", str(tmp_path / "raw"), "--out", str(tmp_path / "x")]) != 0
    assert "is a directory" in capsys.readouterr().err
    # a basket view without a basket fails with a non-zero status and leaves no outputs behind
    out = tmp_path / "baskets"
    assert main(["analyze", "baskets", str(data), "--out", str(out), *common]) != 0
    assert not (out / "domain_index.csv").exists()


def test_cli_stitch_scale_eci(world, tmp_path):
    import json

    from platinum_jax.cli import main

    table, _, _, anchors = world
    data = tmp_path / "scores.csv"
    table.data.to_csv(data, index=False)
    (m_lo, _), (m_hi, _) = anchors
    out = tmp_path / "fit"
    args = ["stitch", str(data), "--anchor-benchmark", "bench_00", "--scale", "eci",
            "--eci-anchors", m_lo, "130", m_hi, "150", "--out", str(out)]
    assert main([*args, "--uncertainty", "bootstrap", "--replicates", "6"]) == 0
    caps = pd.read_csv(out / "capabilities.csv", index_col=0)
    c = caps["capability"]
    # the map through the two anchors, by hand, beside the raw capabilities
    want = 130.0 + 20.0 * (c - c[m_lo]) / (c[m_hi] - c[m_lo])
    np.testing.assert_allclose(caps["eci"], want, atol=1e-9)
    np.testing.assert_allclose(caps.loc[[m_lo, m_hi], ["eci_lower", "eci_upper"]],
                               [[130.0, 130.0], [150.0, 150.0]], atol=1e-9)
    assert caps[["eci_lower", "eci_upper"]].notna().all().all()
    bench = pd.read_csv(out / "benchmarks.csv", index_col=0)
    b = 20.0 / (c[m_hi] - c[m_lo])
    np.testing.assert_allclose(bench["slope_eci"], bench["slope"] / b, rtol=1e-9)
    info = json.loads((out / "fit.json").read_text())
    assert info["eci_replicates"] == info["replicates_converged"]  # the bootstrap's refits reused
    # an unknown anchor model fails before anything is written
    bad = tmp_path / "bad"
    assert main(["stitch", str(data), "--anchor-benchmark", "bench_00", "--scale", "eci",
                 "--eci-anchors", "no-such-model", "130", m_hi, "150", "--out", str(bad)]) != 0
    assert not (bad / "capabilities.csv").exists()
