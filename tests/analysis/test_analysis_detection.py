"""The paper's acceleration-detection protocol: the breakpoint scan against NumPy, and a small
end-to-end study."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from platinum_jax import analysis as an


def numpy_scan(x, y, first, threshold=2.0, min_r2=0.6, n_bp=50, min_after=3):
    """The scan written from the paper's description with np.polyfit, in a Python loop."""
    for bp in np.linspace(first, x.max(), n_bp):
        left, right = x <= bp, x > bp
        if right.sum() < min_after or left.sum() < 2 or right.sum() < 2:
            continue
        s1, i1 = np.polyfit(x[left], y[left], 1)
        s2, _ = np.polyfit(x[right], y[right], 1)
        pred = np.where(left, s1 * x + i1, s2 * x + (s1 * bp + i1 - s2 * bp))
        r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
        if s1 > 0 and s2 / s1 >= threshold and r2 >= min_r2:
            return True, bp, s2 / s1, r2
    return False, np.nan, np.nan, np.nan


_SCAN = jax.jit(an.scan_breakpoints, static_argnums=(6, 7))


@pytest.mark.parametrize("seed", range(6))
def test_scan_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n = 60
    x = np.sort(rng.uniform(2024, 2028, n))
    factor = [1.0, 1.0, 2.0, 3.0, 4.0, 1.5][seed]
    y = np.where(x < 2027, 0.5 * (x - 2024), 1.5 + factor * 0.5 * (x - 2027))
    y = np.maximum.accumulate(y + rng.normal(0, 0.15, n))
    valid = rng.uniform(size=n) > 0.1
    valid[0] = False
    # padding rows (valid = False) must not matter, whatever they hold (-inf, NaN)
    y_pad = np.where(valid, y, -np.inf)
    y_pad[1 + seed % 3] = np.where(valid[1 + seed % 3], y_pad[1 + seed % 3], np.nan)
    # jitted as the study calls it (inside its compiled search): one compilation for the six
    # cases, where op-by-op dispatch of the vmapped scan paid seconds per case
    got = _SCAN(jnp.asarray(x), jnp.asarray(y_pad), jnp.asarray(valid), 2027.0, 2.0, 0.6, 50, 3)
    ref = numpy_scan(x[valid], y[valid], 2027.0)
    assert bool(got[0]) == ref[0]
    if ref[0]:
        np.testing.assert_allclose([float(v) for v in got[1:]], ref[1:], rtol=1e-8)


@pytest.mark.slow
def test_paper_protocol_study_end_to_end():
    from platinum_jax.analysis._detection import _generate

    cfg = an.PaperWorldConfig(models_per_year=15, benchmarks_per_year=5, max_wait=0.75,
                              fp_models=30, fp_benchmarks=8, fp_windows=(1.0, 2.0),
                              fp_noise_levels=(0.5,), fp_replicates=3)
    study = an.simulate_detection(cfg, factors=(1.0, 3.0), noise_levels=(0.5,), n_replicates=3,
                                  seed=4, progress=False)
    assert study.protocol == "paper"
    runs = study.runs
    assert len(runs) == 3 and set(runs["factor"]) == {3.0}
    keys = jax.random.split(jax.random.PRNGKey(4), 3)
    t_a = cfg.acceleration_start
    for rep, row in runs.iterrows():
        t = np.asarray(_generate(keys[rep], cfg, cfg.n_models, cfg.n_benchmarks, cfg.start,
                                 cfg.start + cfg.years, 3.0, 0.5)[0])
        after = t[(t > t_a) & (t <= t_a + cfg.max_wait)]
        if row["detected"]:
            # found at a release after t_a, by a breakpoint that passes every rule
            assert row["detection_year"] in after
            assert row["n_checkpoints"] == np.searchsorted(after, row["detection_year"]) + 1
            assert row["latency_months"] == pytest.approx((row["detection_year"] - t_a) * 12)
            assert t_a <= row["breakpoint_year"] <= row["detection_year"]
            assert row["ratio"] >= 2.0 and row["r2"] >= cfg.min_r2
        else:  # searched every release up to max_wait
            assert row["n_checkpoints"] == after.size
            assert np.isnan(row["latency_months"])
    fp = study.false_positive_runs
    assert len(fp) == 3 * 2 and set(fp["window_years"]) == {1.0, 2.0}
    assert fp["converged"].all()
    s = study.summary.set_index("factor")
    assert s.loc[1.0, "false_positive_rate"] == pytest.approx(fp["flagged"].mean())
    assert np.isnan(s.loc[3.0, "false_positive_rate"]) and np.isnan(s.loc[1.0, "detection_rate"])
    assert s.loc[3.0, "detection_rate"] == pytest.approx(runs["detected"].mean())
    cmp = study.paper_comparison()
    assert cmp.loc["mean_false_positive_rate", "value"] == pytest.approx(fp["flagged"].mean())


def test_paper_protocol_validates_inputs():
    with pytest.raises(ValueError, match="acceleration_start"):
        an.PaperWorldConfig(acceleration_start=2031.0)
    with pytest.raises(ValueError, match="PaperWorldConfig"):
        an.simulate_detection(an.WorldConfig(), progress=False)
    with pytest.raises(TypeError, match="observation_years"):
        an.simulate_detection(observation_years=(2027.0,), progress=False)
    with pytest.raises(ValueError, match="protocol must be one of"):
        an.simulate_detection(protocol="hinge")


def test_paper_defaults_and_headline_monte_carlo_error():
    from scipy import stats

    cfg = an.PaperWorldConfig()
    # the paper searches every release to the end of the world (2024 + 6 years, from 2027)
    assert cfg.max_wait is None and cfg.search_years == pytest.approx(3.0)
    assert an.PaperWorldConfig(max_wait=0.5).search_years == 0.5
    assert an.PaperWorldConfig(max_wait=9.0).search_years == pytest.approx(3.0)
    assert cfg.fp_noise_levels == (1.0, 2.0, 4.0) and cfg.fp_replicates == 50
    with pytest.raises(ValueError, match="max_wait"):
        an.PaperWorldConfig(max_wait=0.0)
    with pytest.raises(ValueError, match="fp_replicates"):
        an.PaperWorldConfig(fp_replicates=0)

    rng = np.random.default_rng(3)
    lat = rng.gamma(2.0, 1.0, 20)
    runs = pd.DataFrame({"noise": 1.0, "factor": 2.0, "replicate": np.arange(21),
                         "detected": np.r_[np.ones(20, bool), False],
                         "latency_months": np.r_[lat, np.nan]})
    flags = rng.random(300) < 0.4
    fp = pd.DataFrame({"noise": 1.0, "window_years": 1.0, "replicate": np.arange(300),
                       "flagged": flags, "converged": True})
    study = an.DetectionStudy(cfg, 2.0, runs, pd.DataFrame(), protocol="paper",
                              false_positive_runs=fp)
    cmp = study.paper_comparison(level=0.95)
    row = cmp.loc["mean_false_positive_rate"]
    p = flags.mean()
    assert row["value"] == pytest.approx(p) and row["n_worlds"] == 300
    assert row["se"] == pytest.approx(np.sqrt(p * (1 - p) / 300))
    med = cmp.loc["median_latency_months_2x_at_1x_noise"]
    assert med["value"] == pytest.approx(np.median(lat)) and med["n_worlds"] == 20
    # the order statistics x_(j), x_(n+1-j) bracket the median with probability
    # 1 - 2 P(Bin(n, 1/2) <= j - 1) >= 95%, and j is the largest index that does
    srt = np.sort(lat)
    j = int(np.flatnonzero(srt == med["low"])[0]) + 1
    assert med["high"] == srt[20 - j]
    assert 1 - 2 * stats.binom.cdf(j - 1, 20, 0.5) >= 0.95
    assert 1 - 2 * stats.binom.cdf(j, 20, 0.5) < 0.95
    # five worlds cannot bracket the median at 95% (2 / 2^5 > 5%): no interval is claimed
    few = an.DetectionStudy(cfg, 2.0, runs.iloc[:5], pd.DataFrame(), protocol="paper",
                            false_positive_runs=fp).paper_comparison()
    assert np.isnan(few.loc["median_latency_months_2x_at_1x_noise", "low"])
    det = cmp.loc["detection_rate_2x_at_1x_noise"]
    assert det["value"] == pytest.approx(20 / 21)
    assert det["se"] == pytest.approx(np.sqrt(20 / 21 * (1 / 21) / 21))
