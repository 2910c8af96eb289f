"""The paper's acceleration-detection protocol: the breakpoint scan against NumPy, and a small
end-to-end study."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
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
    got = an.scan_breakpoints(jnp.asarray(x), jnp.asarray(y_pad), jnp.asarray(valid), 2027.0,
                              2.0, 0.6, 50, 3)
    ref = numpy_scan(x[valid], y[valid], 2027.0)
    assert bool(got[0]) == ref[0]
    if ref[0]:
        np.testing.assert_allclose([float(v) for v in got[1:]], ref[1:], rtol=1e-8)


@pytest.mark.slow
def test_paper_protocol_study_end_to_end():
    import jax

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
