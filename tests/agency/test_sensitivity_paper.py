"""The paper's sensitivity intervals (own-scores loss, slope re-fitted for difficulties) against an
independent SciPy re-implementation on the real Epoch table."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from platinum_jax.data import ScoreTable
from platinum_jax.stitching import fit_stitching, sensitivity

GPT5 = "gpt-5-2025-08-07_high"
FRONTIERMATH = "FrontierMath-2025-02-28-Private"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _bisect_shift(loss, target, sign, first=5.0, wide=20.0, steps=60):
    """Distance from 0 in direction ``sign`` at which ``loss`` crosses ``target`` (bracket [0, 5],
    widened to [0, 20] when 5 is not enough; NaN when even 20 is not)."""
    far = first if loss(sign * first) >= target else wide
    if loss(sign * far) < target:
        return np.nan
    lo, hi = 0.0, far
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if loss(sign * mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def scipy_capability_interval(table, params, model, rise=0.05):
    rows = table.data["model"].to_numpy() == model
    b = table.benchmark_index[rows]
    y = table.scores[rows]
    a, d = params["slope"][b], params["difficulty"][b]
    c0 = params["capability"][table.models.index(model)]

    def loss(shift):
        return np.sum((_sigmoid(a * (c0 + shift - d)) - y) ** 2)

    target = (1 + rise) * loss(0.0)
    return _bisect_shift(loss, target, -1), _bisect_shift(loss, target, +1)


def scipy_difficulty_interval(table, params, bench, rise=0.05):
    j = table.benchmarks.index(bench)
    rows = table.benchmark_index == j
    c = params["capability"][table.model_index[rows]]
    y = table.scores[rows]
    d0, a0 = params["difficulty"][j], params["slope"][j]

    def refit_loss(shift):
        def of_slope(a):
            return np.sum((_sigmoid(a * (c - d0 - shift)) - y) ** 2)

        return minimize_scalar(of_slope, bounds=(0.01, 20.0), method="bounded",
                               options={"xatol": 1e-10}).fun

    target = (1 + rise) * np.sum((_sigmoid(a0 * (c - d0)) - y) ** 2)
    return _bisect_shift(refit_loss, target, -1), _bisect_shift(refit_loss, target, +1)


def scipy_slope_interval(table, params, bench, rise=0.05):
    j = table.benchmarks.index(bench)
    rows = table.benchmark_index == j
    gap = params["capability"][table.model_index[rows]] - params["difficulty"][j]
    y = table.scores[rows]
    a0 = params["slope"][j]

    def loss(shift):
        return np.sum((_sigmoid((a0 + shift) * gap) - y) ** 2)

    target = (1 + rise) * loss(0.0)
    return _bisect_shift(loss, target, -1), _bisect_shift(loss, target, +1)


@pytest.fixture(scope="module")
def real(scores_long_csv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the reported name normalisation
        table = ScoreTable.from_csv(scores_long_csv)
    fit = fit_stitching(table)
    full = fit.layout.unpack(fit.theta)
    params = {k: np.asarray(getattr(full, k)) for k in ("capability", "difficulty", "slope")}
    return table, fit, params, sensitivity(fit), sensitivity(fit, method="global_loss")


def _check(ours_row, ref, rel):
    minus, plus = ref
    assert ours_row["delta_minus"] == pytest.approx(minus, rel=rel)
    assert ours_row["delta_plus"] == pytest.approx(plus, rel=rel)


def test_headline_intervals_match_scipy(real):
    table, _, params, sens, glob = real
    gpt5 = sens.loc[("capability", GPT5)]
    _check(gpt5, scipy_capability_interval(table, params, GPT5), 1e-3)
    fm = sens.loc[("difficulty", FRONTIERMATH)]
    _check(fm, scipy_difficulty_interval(table, params, FRONTIERMATH), 1e-3)
    # the paper's figures: about +-0.02 for GPT-5 and -0.05/+0.03 for FrontierMath
    assert 0.015 < gpt5["delta_minus"] < 0.03 and 0.015 < gpt5["delta_plus"] < 0.03
    assert 0.04 < fm["delta_minus"] < 0.06 and 0.025 < fm["delta_plus"] < 0.04
    # the global-loss variant is many times wider
    assert glob.loc[("capability", GPT5), "halfwidth"] > 10 * gpt5["halfwidth"]


def test_random_parameters_match_scipy(real):
    table, _, params, sens, _ = real
    rng = np.random.default_rng(2024)
    caps = sens.xs("capability", level="kind").index
    diffs = sens.xs("difficulty", level="kind").index
    slopes = sens.xs("slope", level="kind").index
    for model in rng.choice(caps, 6, replace=False):
        _check(sens.loc[("capability", model)], scipy_capability_interval(table, params, model), 1e-3)
    for bench in rng.choice(diffs, 3, replace=False):
        _check(sens.loc[("difficulty", bench)], scipy_difficulty_interval(table, params, bench), 1e-3)
    for bench in rng.choice(slopes, 3, replace=False):
        _check(sens.loc[("slope", bench)], scipy_slope_interval(table, params, bench), 1e-3)


def test_interval_ends_raise_the_own_loss_by_five_percent(real):
    table, _, params, sens, _ = real
    model = "claude-3-opus-20240229"
    row = sens.loc[("capability", model)]
    rows = table.data["model"].to_numpy() == model
    b = table.benchmark_index[rows]
    y = table.scores[rows]

    def loss(c):
        return np.sum((_sigmoid(params["slope"][b] * (c - params["difficulty"][b])) - y) ** 2)

    for end in ("lower", "upper"):
        assert loss(row[end]) == pytest.approx(1.05 * loss(row["value"]), rel=1e-8)
    np.testing.assert_allclose(sens["halfwidth"], (sens["upper"] - sens["lower"]) / 2, rtol=1e-12)
    assert sens.attrs["method"] == "own_scores"


def test_bad_method_and_rise_are_named():
    from platinum_jax.datasets import synthetic_score_table
    from platinum_jax.models.rosetta import BenchmarkAnchor

    table, _ = synthetic_score_table(seed=1, n_models=8, n_benchmarks=3, density=1.0)
    fit = fit_stitching(table, BenchmarkAnchor(table.benchmarks[0]))
    with pytest.raises(ValueError, match="method must be one of"):
        sensitivity(fit, method="paper")
    with pytest.raises(ValueError, match="rise must be positive"):
        sensitivity(fit, rise=0.0)
    with pytest.raises(ValueError, match="max_shift"):
        sensitivity(fit, max_shift=np.inf)


def test_saturated_side_is_infinite_not_clipped():
    import pandas as pd

    from platinum_jax.models.rosetta import BenchmarkAnchor

    # 'ace' scores 1.0 everywhere: pushing its capability up never raises its loss by 5%
    rows = []
    rng = np.random.default_rng(0)
    for m in range(8):
        for b in range(3):
            rows.append((f"m{m}", f"b{b}", float(np.clip(rng.uniform(0.2, 0.8), 0, 1))))
    rows += [("ace", f"b{b}", 1.0) for b in range(3)]
    table = ScoreTable.from_frame(pd.DataFrame(rows, columns=["model", "benchmark", "score"]))
    fit = fit_stitching(table, BenchmarkAnchor("b0"))
    row = sensitivity(fit).loc[("capability", "ace")]
    assert np.isinf(row["delta_plus"]) and np.isfinite(row["delta_minus"])
