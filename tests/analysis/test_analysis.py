"""Analyses on synthetic worlds with known truths; expected values come from NumPy/SciPy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from platinum_jax import analysis as an
from platinum_jax.analysis._hinge import _summarise


def _caps(year, cap, prefix="m"):
    dates = pd.to_datetime("1970-01-01") + pd.to_timedelta((np.asarray(year) - 1970) * 365.25, unit="D")
    return pd.DataFrame(
        {"capability": cap, "release_date": dates},
        index=pd.Index([f"{prefix}{i:03d}" for i in range(len(cap))], name="model"),
    )


def _brute_frontier(cap, year, top_n):
    out = np.zeros(len(cap), bool)
    for m in range(len(cap)):
        better = sum(1 for j in range(len(cap)) if year[j] <= year[m] and cap[j] > cap[m])
        out[m] = better < top_n
    return out


@pytest.mark.parametrize("top_n", [1, 3])
def test_frontier_mask_matches_brute_force(top_n):
    rng = np.random.default_rng(1)
    year = np.round(rng.uniform(2023, 2026, 40), 1)  # rounding creates ties in release date
    cap = rng.normal(size=40)
    got = np.asarray(an.frontier_mask(jnp.asarray(cap), jnp.asarray(year), jnp.ones(40, bool), top_n))
    np.testing.assert_array_equal(got, _brute_frontier(cap, year, top_n))


def test_trend_matches_polyfit_and_t_intervals():
    rng = np.random.default_rng(2)
    year = np.sort(rng.uniform(2023, 2026, 80))
    true_slope = 0.55
    cap = 1.0 + true_slope * (year - 2023) - np.abs(rng.normal(0, 0.4, 80))
    trend = an.fit_frontier_trend(_caps(year, cap))
    front = trend.frontier
    assert front.index.tolist() == trend.models.index[_brute_frontier(
        trend.models["capability"].to_numpy(), trend.models["year"].to_numpy(), 1)].tolist()
    x, y = front["year"].to_numpy(), front["capability"].to_numpy()
    slope, intercept = np.polyfit(x, y, 1)
    assert trend.slope == pytest.approx(slope, rel=1e-9)
    assert abs(trend.slope - true_slope) < 0.1
    # intervals: independent OLS algebra in NumPy
    X = np.stack([np.ones_like(x), x], 1)
    resid = y - X @ np.array([intercept, slope])
    s2 = resid @ resid / (len(x) - 2)
    x0 = np.array([[1.0, 2028.75]])
    lev = (x0 @ np.linalg.solve(X.T @ X, x0.T)).item()
    q = stats.t.ppf(0.975, len(x) - 2)
    pred = trend.predict(an._trends.year_to_timestamp(2028.75))
    mean = intercept + slope * 2028.75
    assert pred["capability"].iloc[0] == pytest.approx(mean, rel=1e-8)
    assert pred["ci_high"].iloc[0] - mean == pytest.approx(q * np.sqrt(s2 * lev), rel=1e-6)
    assert pred["pi_high"].iloc[0] - mean == pytest.approx(q * np.sqrt(s2 * (1 + lev)), rel=1e-6)
    lo, hi = trend.slope_interval()
    se = np.sqrt(s2 * np.linalg.solve(X.T @ X, np.eye(2))[1, 1])
    assert hi - trend.slope == pytest.approx(q * se, rel=1e-6)
    assert trend.summary().loc["slope_per_year", "paper_reference"] == 0.55


def test_forecast_with_capability_draws_refits_per_draw():
    rng = np.random.default_rng(3)
    year = np.sort(rng.uniform(2023, 2026, 30))
    cap = 0.5 * (year - 2023) + rng.normal(0, 0.2, 30)
    caps = _caps(year, cap)
    trend = an.fit_frontier_trend(caps)
    draws = pd.DataFrame(cap[None, :] + rng.normal(0, 0.1, (50, 30)), columns=caps.index)
    fc = an.forecast_capability(trend, until="2028-01-01", capability_draws=draws)
    assert "capability draws (50 replicates)" in fc["uncertainty_source"].iloc[0]
    # independent: refit each draw with the brute-force frontier and np.polyfit
    target = fc["year"].iloc[-1]
    preds = []
    for r in range(50):
        c = draws.iloc[r].to_numpy()
        on = _brute_frontier(c, year, 1)
        s, i = np.polyfit(year[on], c[on], 1)
        preds.append(i + s * target)
    assert fc["draw_median"].iloc[-1] == pytest.approx(np.quantile(preds, 0.5), rel=1e-8)
    assert fc["draw_high"].iloc[-1] == pytest.approx(np.quantile(preds, 0.975), rel=1e-8)
    with pytest.raises(ValueError, match="lacks"):
        an.forecast_capability(trend, capability_draws=draws.iloc[:, :5])


def test_bad_capabilities_are_rejected():
    caps = _caps([2023.1, 2023.5, 2024.0, 2024.5], [0.1, 0.5, np.nan, 0.9])
    with pytest.raises(ValueError, match="non-finite"):
        an.fit_frontier_trend(caps)
    caps = _caps([2023.1, 2023.5, 2024.0, 2024.5], [0.1, 0.5, 0.7, 0.9])
    caps.loc["m002", "release_date"] = pd.NaT
    with pytest.raises(ValueError, match="release date"):
        an.fit_frontier_trend(caps)
    with pytest.raises(ValueError, match="lacks column"):
        an.fit_frontier_trend(caps.rename(columns={"capability": "C"}))


def _numpy_piecewise(taus, x, y, min_side):
    sse = np.full(len(taus), np.inf)
    coef = np.zeros((len(taus), 3))
    xr = x.mean()
    for i, t in enumerate(taus):
        if (x <= t).sum() < min_side or (x > t).sum() < min_side:
            continue
        X = np.stack([np.ones_like(x), x - xr, np.maximum(x - t, 0)], 1)
        b, *_ = np.linalg.lstsq(X, y, rcond=None)
        sse[i] = np.sum((y - X @ b) ** 2)
        coef[i] = b
    return sse, coef


def test_piecewise_grid_matches_numpy_loop():
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(2023, 2026, 25))
    y = 0.3 * (x - 2023) + 0.6 * np.maximum(x - 2024.8, 0) + rng.normal(0, 0.03, 25)
    taus = an.breakpoint_grid(x, n_grid=60, min_side=3)
    sse, beta = an.piecewise_sse(jnp.asarray(taus), jnp.asarray(x), jnp.asarray(y), jnp.ones(25), 3)
    ref_sse, ref_beta = _numpy_piecewise(taus, x, y, 3)
    finite = np.isfinite(ref_sse)
    np.testing.assert_array_equal(np.isfinite(np.asarray(sse)), finite)
    np.testing.assert_allclose(np.asarray(sse)[finite], ref_sse[finite], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(np.asarray(beta)[finite], ref_beta[finite], rtol=1e-6, atol=1e-9)


def test_detect_acceleration_recovers_known_breakpoint():
    rng = np.random.default_rng(5)
    year = np.sort(rng.uniform(2023, 2026, 30))
    true_break = 2024.6
    cap = 0.3 * (year - 2023) + 0.6 * np.maximum(year - true_break, 0) + rng.normal(0, 0.01, 30)
    # every model is on the frontier here (monotone up to tiny noise), so fit all points
    fit = an.detect_acceleration(_caps(year, cap), frontier_only=False, n_grid=400)
    assert abs(fit.breakpoint_year - true_break) < 0.1
    assert fit.slope_before == pytest.approx(0.3, abs=0.05)
    assert fit.slope_after == pytest.approx(0.9, abs=0.08)
    assert fit.accelerated and fit.ratio > 2.0
    # a straight line is not flagged
    straight = 0.5 * (year - 2023) + rng.normal(0, 0.01, 30)
    flat = an.detect_acceleration(_caps(year, straight), frontier_only=False)
    assert not flat.accelerated
    assert flat.ratio == pytest.approx(1.0, abs=0.3)
    with pytest.raises(ValueError, match="threshold"):
        an.detect_acceleration(_caps(year, straight), threshold=-1)


def _progress_world(seed=6, n_fam=8, per_fam=5, k=0.2, g=0.3, noise=0.02):
    rng = np.random.default_rng(seed)
    rows = []
    for f in range(n_fam):
        t_f = 2023 + 2.5 * f / (n_fam - 1)
        b_f = -10 + g * (t_f - 2023) + rng.normal(0, 0.01)
        for j in range(per_fam):
            logf = np.log(10.0) * rng.uniform(21, 26)
            rows.append((f"fam{f}-m{j}", f"Org{f}", np.exp(logf), t_f + 0.01 * j,
                         k * logf + b_f + rng.normal(0, noise)))
    df = pd.DataFrame(rows, columns=["model", "organization", "training_compute_flop", "year", "capability"])
    caps = _caps(df["year"].to_numpy(), df["capability"].to_numpy())
    caps.index = pd.Index(df["model"], name="model")
    compute = df.set_index("model")[["organization", "training_compute_flop"]]
    return caps, compute, df


def test_progress_recovers_compute_law_and_matches_dummy_regression():
    caps, compute, df = _progress_world()
    res = an.fit_algorithmic_progress(caps, compute, method="organization", n_boot=200, seed=1)
    # LSDV: capability ~ log F + one dummy per organisation, solved by NumPy least squares
    fam = pd.get_dummies(df["organization"]).to_numpy(float)
    X = np.column_stack([np.log(df["training_compute_flop"]), fam])
    beta, *_ = np.linalg.lstsq(X, df["capability"].to_numpy(), rcond=None)
    assert res.k == pytest.approx(beta[0], rel=1e-9)
    assert res.k == pytest.approx(0.2, abs=0.01)
    # Delta b from NumPy on the (brute-force) frontier
    m = res.models
    on = _brute_frontier(m["capability"].to_numpy(), m["year"].to_numpy(), 1)
    np.testing.assert_array_equal(m["frontier"].to_numpy(), on)
    slope = np.polyfit(m["year"].to_numpy()[on], (m["capability"] - res.k * m["log_compute"]).to_numpy()[on], 1)[0]
    assert res.delta_b_per_year == pytest.approx(slope, rel=1e-8)
    assert res.delta_b_per_year == pytest.approx(0.3, abs=0.05)
    assert res.reduction_per_year == pytest.approx(np.exp(res.delta_b_per_year / res.k), rel=1e-12)
    s = res.summary()
    assert s.loc["k", "low"] <= 0.2 <= s.loc["k", "high"]
    assert s.loc["compute_reduction_per_year", "paper_reference"] == 6.0


def test_progress_excludes_distilled_and_validates():
    caps, compute, _ = _progress_world()
    res = an.fit_algorithmic_progress(caps, compute, distilled={"fam0-m0", "fam3-m1"},
                                      method="organization", n_boot=10)
    assert "fam0-m0" not in res.models.index
    assert set(res.excluded.loc[res.excluded["reason"] == "distilled", "model"]) == {"fam0-m0", "fam3-m1"}
    bad = compute.assign(training_compute_flop=np.log10(compute["training_compute_flop"]))
    with pytest.raises(ValueError, match="log10"):
        an.fit_algorithmic_progress(caps, bad, method="organization")
    single = compute.assign(organization=[f"o{i}" for i in range(len(compute))])
    with pytest.raises(ValueError, match="not identified"):
        an.fit_algorithmic_progress(caps, single, method="organization")


def test_time_horizons_match_linregress_and_intervals():
    rng = np.random.default_rng(7)
    c = rng.uniform(0.5, 3.0, 25)
    logh = -2.0 + 2.5 * c + rng.normal(0, 0.4, 25)
    caps = _caps(np.linspace(2023, 2025, 25), c)
    hz = pd.DataFrame({"model": caps.index, "horizon_minutes": np.exp(logh)})
    fit = an.fit_time_horizons(caps, hz)
    ref = stats.linregress(c, logh)
    assert fit.slope == pytest.approx(ref.slope, rel=1e-9)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-9)
    assert fit.r2 == pytest.approx(ref.rvalue**2, rel=1e-9)
    p = fit.predict([2.0])
    resid = logh - (ref.intercept + ref.slope * c)
    s2 = resid @ resid / 23
    lev = 1 / 25 + (2.0 - c.mean()) ** 2 / np.sum((c - c.mean()) ** 2)
    q = stats.t.ppf(0.975, 23)
    mean = ref.intercept + ref.slope * 2.0
    assert np.log(p["ci_high"].iloc[0]) - mean == pytest.approx(q * np.sqrt(s2 * lev), rel=1e-6)
    assert np.log(p["pi_low"].iloc[0]) - mean == pytest.approx(-q * np.sqrt(s2 * (1 + lev)), rel=1e-6)
    assert fit.capability_for(p["horizon_minutes"]).iloc[0] == pytest.approx(2.0, rel=1e-9)
    with pytest.raises(ValueError, match="non-positive"):
        an.fit_time_horizons(caps, hz.assign(horizon_minutes=-1.0))


def test_paper_split_is_scikit_learns_shuffle_and_its_r2_matches_numpy():
    # Epoch's notebook held out these 10 of its 23 matched METR rows with
    # train_test_split(test_size=0.4, random_state=42) (its printed test set)
    train, test = an.paper_split(23)
    assert sorted(test.tolist()) == [0, 1, 2, 5, 8, 9, 12, 13, 15, 17]
    assert len(train) == 13 and set(train) | set(test) == set(range(23))
    # ShuffleSplit's rule for other sizes: ceil(0.4 n) held out, disjoint and exhaustive
    for n in (5, 10, 31):
        tr, te = an.paper_split(n)
        assert len(te) == int(np.ceil(0.4 * n)) and len(set(tr) | set(te)) == n
    with pytest.raises(ValueError, match="n >= 2"):
        an.paper_split(1)
    with pytest.raises(ValueError, match="test_size"):
        an.paper_split(10, test_size=1.5)

    rng = np.random.default_rng(11)
    c = rng.uniform(0.5, 3.0, 23)
    logh = -2.0 + 2.5 * c + rng.normal(0, 0.5, 23)
    caps = _caps(np.linspace(2023, 2025, 23), c)
    # the split follows the row order of the horizon table, not of the capabilities
    order = rng.permutation(23)
    hz = pd.DataFrame({"model": caps.index[order], "horizon_minutes": np.exp(logh[order])})
    fit = an.fit_time_horizons(caps, hz)
    x, y = c[order], logh[order]
    ref = stats.linregress(x[train], y[train])
    pred = ref.intercept + ref.slope * x
    r2_test = 1 - np.sum((y[test] - pred[test]) ** 2) / np.sum((y[test] - y[test].mean()) ** 2)
    assert fit.split_r2_train == pytest.approx(ref.rvalue**2, rel=1e-9)
    assert fit.split_r2_test == pytest.approx(r2_test, rel=1e-9)
    assert fit.split_slope == pytest.approx(ref.slope, rel=1e-9)
    assert fit.r2 == pytest.approx(stats.linregress(c, logh).rvalue ** 2, rel=1e-9)
    assert (fit.data["paper_split"] == "test").sum() == 10
    summary = fit.summary()
    assert summary.loc["r2_paper_split_train", "paper_reference"] == 0.85
    assert np.isnan(summary.loc["r2", "paper_reference"])  # the full sample is not the paper's


def test_compare_capabilities_against_scipy():
    rng = np.random.default_rng(8)
    base = pd.Series(rng.normal(size=30), index=[f"m{i}" for i in range(30)])
    other = 0.5 + 1.2 * base + rng.normal(0, 0.05, 30)
    out = an.compare_capabilities(base, other.iloc[::-1])  # order must not matter
    assert out["spearman"] == pytest.approx(stats.spearmanr(base, other).statistic)
    assert out["kendall"] == pytest.approx(stats.kendalltau(base, other).statistic)
    assert out["affine_slope"] == pytest.approx(1.2, abs=0.05)
    assert out["mean_shift"] == pytest.approx(float((other - base).mean()))


# one compiled generator per config instead of hundreds of eager dispatches
_generate = jax.jit(an.generate_world, static_argnums=1)


def test_world_generator_follows_its_definition():
    cfg = an.WorldConfig(n_models=20, n_benchmarks=5)
    w = _generate(jax.random.PRNGKey(0), cfg, jnp.asarray(3.0), jnp.asarray(0.0))
    year = np.asarray(w["year"])
    assert np.all(np.diff(year) >= 0)
    assert np.all(np.asarray(w["capability"]) <= cfg.frontier_path(year, 3.0) + 1e-12)
    # noise 0: scores are exactly the sigmoid of the truth
    mi, bi = np.asarray(w["model_index"]), np.asarray(w["benchmark_index"])
    truth = 1 / (1 + np.exp(-np.asarray(w["slope"])[bi] * (np.asarray(w["capability"])[mi] - np.asarray(w["difficulty"])[bi])))
    np.testing.assert_allclose(np.asarray(w["scores"]), truth, atol=1e-12)
    assert np.asarray(w["observed"])[bi == 0].all()  # the anchor is scored by everyone
    # frontier path: slope s before t_a, f * s after
    g = cfg.frontier_path(np.array([2024.0, 2025.0, 2026.0, 2026.5]), 3.0)
    np.testing.assert_allclose(np.diff(g), [0.5, 0.5, 0.75])
    with pytest.raises(ValueError, match="acceleration_start"):
        an.WorldConfig(acceleration_start=2030.0)


def test_summarise_latency_and_false_positives():
    t_a = 2026.0
    accelerated = pd.DataFrame(
        {
            "noise": 1.0, "factor": 2.0,
            "replicate": [0, 0, 0, 1, 1, 1, 2, 2, 2],
            "obs_year": [2025.5, 2026.0, 2026.25] * 3,
            "flagged": [False, False, True, True, False, False, False, True, True],
            # replicate 2 first blames a kink two years old (noise), then the real one
            "breakpoint_year": [2025.0, 2025.0, 2025.9, 2025.0, 2025.0, 2025.0, 2025.0, 2024.0,
                                2026.1],
            "converged": True,
        }
    )
    s = _summarise(accelerated, t_a).iloc[0]
    # replicate 0 at +3 months; replicate 1 never after t_a; replicate 2 at +3, not at +0
    assert s["detection_rate"] == pytest.approx(2 / 3)
    assert s["mean_latency_months"] == pytest.approx(3.0)
    assert s["false_positive_rate"] == pytest.approx(1 / 3)  # replicate 1 flags before t_a
    # with no tolerance for early breakpoints, replicate 0's 2025.9 no longer counts
    s0 = _summarise(accelerated, t_a, breakpoint_tolerance=0.0).iloc[0]
    assert s0["detection_rate"] == pytest.approx(1 / 3)
    # a world that never accelerates: every flag is a false alarm, nothing is "detected"
    flat = accelerated.assign(factor=1.0)
    f = _summarise(flat, t_a).iloc[0]
    assert f["false_positive_rate"] == 1.0 and np.isnan(f["detection_rate"])
    assert np.isnan(f["median_latency_months"])
    both = pd.concat([accelerated, flat], ignore_index=True)
    study = an.DetectionStudy(an.WorldConfig(), 2.0, both, _summarise(both, t_a))
    cmp = study.paper_comparison()
    assert cmp.loc["median_latency_months_2x_at_1x_noise", "value"] == pytest.approx(3.0)
    # false positives are counted over the worlds without acceleration only
    assert cmp.loc["mean_false_positive_rate", "value"] == pytest.approx(1.0)
    assert cmp.loc["mean_false_positive_rate", "paper_reference"] == 0.38


@pytest.fixture(scope="module")
def known_worlds():
    """One small monthly-hinge study (its compiled program is the slow part), for two tests."""
    cfg = an.WorldConfig(n_models=60, n_benchmarks=6, base_noise=0.02)
    study = an.simulate_detection(
        cfg, protocol="monthly_hinge", factors=(1.0, 4.0), noise_levels=(0.5,), n_replicates=4,
        observation_years=2026.0 + np.arange(-6, 13, 3) / 12.0, n_grid=24, progress=False,
    )
    return cfg, study


def test_detection_study_on_known_worlds(known_worlds):
    # Low noise, four-fold acceleration: found within months; no acceleration: rarely flagged.
    _, study = known_worlds
    s = study.summary.set_index("factor")
    assert s.loc[4.0, "detection_rate"] >= 0.75
    assert s.loc[4.0, "median_latency_months"] <= 9.0
    assert s.loc[1.0, "false_positive_rate"] <= 0.5
    assert np.isnan(s.loc[1.0, "detection_rate"])


def test_refit_and_tiny_detection_study(known_worlds):
    cfg, study = known_worlds
    w = _generate(jax.random.PRNGKey(1), cfg, jnp.asarray(2.0), jnp.asarray(0.5))
    # jitted, as the study calls it: op-by-op dispatch would compile each operation on its own
    cap, conv = jax.jit(lambda world, year: an.refit_world(world, cfg, year))(w, jnp.asarray(cfg.end))
    assert bool(conv)
    truth = np.asarray(w["capability"])
    # the anchor fixes the scale, so the refit lands near the truth itself, not just its ranks
    # (the L2 penalty shrinks capabilities towards 0 a little, hence the loose bound)
    assert stats.spearmanr(np.asarray(cap), truth).statistic > 0.95
    assert np.mean(np.abs(np.asarray(cap) - truth)) < 0.25
    # the shared study: 2 factors x 4 replicates x 7 observation years, one row each
    assert study.runs.shape[0] == 2 * 4 * 7
    assert study.runs["converged"].all()
    late = study.runs[(study.runs["obs_year"] == 2027.0) & (study.runs["factor"] == 4.0)]
    assert len(late) == 4
    # a 4x acceleration a year in is plain to see: the ratio is well above 1
    assert (late["ratio"] > 2.0).all()
    assert (np.abs(late["breakpoint_year"] - 2026.0) < 0.5).all()
