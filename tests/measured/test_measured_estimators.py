"""The per-item primitive estimators on synthetic panels with a known truth.

Each expected number is the synthetic truth the test generated or a NumPy one-liner on the
same panel (per-item variances, polyfit slopes), never the package's own output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.data import ResponseTable
from platinum_jax.measured import (
    RELEASE_PRICES_USD,
    cost_from_slopes,
    estimate_cost,
    estimate_noise,
    rank_weights,
    rescale_welfare,
    welfare_bounds,
    welfare_from_rankings,
)

RELEASE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / \
    "principal-agent-benchmarks"


# ---------------------------------------------------------------------------- welfare

SCORES = pd.DataFrame({
    "concept_id": ["a", "b", "c", "d", "e", "x"],
    "p_auto_15": [1.0, 2.0, 3.0, 4.0, 5.0, np.nan],
    "p_aug_15": [5.0, 4.0, 3.0, 2.0, 1.0, np.nan],
    "dropped": [False, False, False, True, False, True],
})


def _ranking(item, gwas, perspective="automation"):
    return pd.DataFrame({"item": item, "perspective": perspective,
                         "rank": np.arange(1, len(gwas) + 1), "concept_id": gwas})


def test_welfare_reciprocal_and_uniform_by_hand():
    r = pd.concat([_ranking("i1", ["e", "d", "c", "b", "a", "x"]),
                   _ranking("i2", ["x", "d", "a"]),
                   _ranking("i3", ["x", "d"])])
    w = welfare_from_rankings(r, SCORES)
    # i1: 5/1 + 0 (d dropped) + 3/3 + 2/4 + 1/5; the 6th GWA is below top-5.
    assert w[("i1", "automation")] == pytest.approx(5 + 1 + 0.5 + 0.2)
    assert w[("i2", "automation")] == pytest.approx(1 / 3)
    assert np.isnan(w[("i3", "automation")])  # no kept GWA in the top 5
    w3 = welfare_from_rankings(r, SCORES, top_k=3, weighting="uniform")
    assert w3[("i1", "automation")] == pytest.approx((5 + 0 + 3) / 3)
    both = pd.concat([_ranking("i1", ["e", "c"]), _ranking("i1", ["e", "c"], "augmentation")])
    wb = welfare_from_rankings(both, SCORES, column={"automation": "p_auto_15",
                                                     "augmentation": "p_aug_15"})
    assert wb[("i1", "automation")] == pytest.approx(5 + 3 / 2)
    assert wb[("i1", "augmentation")] == pytest.approx(1 + 3 / 2)


def test_welfare_rejects_unknown_gwa_and_bad_rank():
    with pytest.raises(ValueError, match="does not list.*'zz'"):
        welfare_from_rankings(_ranking("i1", ["a", "zz"]), SCORES)
    bad = _ranking("i1", ["a", "b"]).assign(rank=[1, 1])
    with pytest.raises(ValueError, match="appears twice"):
        welfare_from_rankings(bad, SCORES)
    with pytest.raises(ValueError, match="weighting"):
        welfare_from_rankings(_ranking("i1", ["a"]), SCORES, weighting="log")


def test_rescaling_uses_the_theoretical_bounds():
    h5 = sum(1 / k for k in range(1, 6))
    assert welfare_bounds() == pytest.approx((h5, 5 * h5))
    np.testing.assert_allclose(rescale_welfare(np.array([h5, 3 * h5, 5 * h5])), [1, 3, 5])
    assert welfare_bounds(4, "uniform") == pytest.approx((1.0, 5.0))
    np.testing.assert_allclose(rank_weights(3), [1, 1 / 2, 1 / 3])


# ------------------------------------------------------------------------------ noise

def _noise_panel(rng, m=300, S=8, K=10):
    sd = rng.uniform(0.02, 0.15, m)
    level = rng.uniform(0.2, 0.8, (m, K))  # p̂ drifts across checkpoints, not across seeds
    level[:20] = 0.03                      # too hard: mean p̂ below 0.10
    sd[20:30] = 0.0                        # no seed-to-seed spread: σ² below 1e-6
    y = np.clip(level[:, :, None] + sd[:, None, None] * rng.standard_normal((m, K, S)), 0, 1)
    i, k, s = np.meshgrid(np.arange(m), np.arange(K), np.arange(S), indexing="ij")
    frame = pd.DataFrame({"task": "t", "doc_id": i.ravel(), "checkpoint": k.ravel(),
                          "seed": s.ravel(), "p": y.ravel()})
    return frame, y, sd


def test_noise_pooled_variance_degrees_of_freedom_and_filter():
    rng = np.random.default_rng(3)
    frame, y, sd = _noise_panel(rng)
    out = estimate_noise(frame, item=["task", "doc_id"], run="seed", response="p")
    assert out.index.names == ["task", "doc_id"] and len(out) == 300
    # Pooled within-checkpoint variance (N = 80, divisor 70) = mean of the K ddof=1 variances.
    np.testing.assert_allclose(out["noise_sigma2"], y.var(axis=2, ddof=1).mean(axis=1),
                               rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(out["noise_mean_phat"], y.mean(axis=(1, 2)), rtol=1e-12)
    assert (out["noise_n_obs"] == 80).all() and (out["noise_dof"] == 70).all()
    # The truth: σ² / sd² ~ χ²_70 / 70 for the unclipped items.
    ratio = out["noise_sigma2"].to_numpy()[30:] / sd[30:] ** 2
    assert abs(ratio.mean() - 1) < 0.05
    expect = (y.mean(axis=(1, 2)) >= 0.10) & (y.mean(axis=(1, 2)) <= 0.90) & \
        (y.var(axis=2, ddof=1).mean(axis=1) >= 1e-6)
    np.testing.assert_array_equal(out["eligible"], expect)
    assert not out["eligible"][:30].any()
    assert out["reason"][:20].str.contains("mean").all()
    assert out["reason"][20:30].str.contains("σ²").all()


def test_noise_unbalanced_cells_and_response_table():
    # Item q: checkpoint 0 has 3 seeds, checkpoint 1 has 2, checkpoint 2 one (adds no dof).
    rows = [("q", 0, 0, 0.2), ("q", 0, 1, 0.4), ("q", 0, 2, 0.6), ("q", 1, 0, 0.5),
            ("q", 1, 1, 0.7), ("q", 2, 0, 0.9), ("r", 0, 0, 0.5)]
    frame = pd.DataFrame(rows, columns=["item", "checkpoint", "run", "response"])
    out = estimate_noise(frame)
    ss = np.var([0.2, 0.4, 0.6]) * 3 + np.var([0.5, 0.7]) * 2
    assert out.loc["q", "noise_dof"] == 3 and out.loc["q", "noise_n_obs"] == 6
    assert out.loc["q", "noise_sigma2"] == pytest.approx(ss / 3)
    assert np.isnan(out.loc["r", "noise_sigma2"]) and not out.loc["r", "eligible"]
    table = ResponseTable.from_frame(frame.assign(
        subject=frame["checkpoint"].astype(str) + "|" + frame["run"].astype(str)
    )[["subject", "item", "response"]])
    via_table = estimate_noise(table, split_subject=lambda s: tuple(s.split("|")))
    pd.testing.assert_series_equal(via_table["noise_sigma2"], out["noise_sigma2"],
                                   check_index_type=False)
    with pytest.raises(ValueError, match="split_subject"):
        estimate_noise(table)


def test_noise_bad_input():
    frame = pd.DataFrame({"item": ["a", "a"], "checkpoint": [0, 0], "run": [0, 0],
                          "response": [0.1, 0.2]})
    with pytest.raises(ValueError, match="appears twice"):
        estimate_noise(frame)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        estimate_noise(frame.assign(run=[0, 1], response=[0.1, 1.5]))
    with pytest.raises(ValueError, match="no column.*'seed'"):
        estimate_noise(frame, run="seed")


def test_noise_from_runs_and_estimate_noise_agree():
    """design.noise_from_runs' diagonal (rank 0) is the same pooled variance."""
    from platinum_jax.design import noise_from_runs

    rng = np.random.default_rng(5)
    frame, y, _ = _noise_panel(rng, m=40)
    frame = frame[frame["doc_id"] >= 30]
    out = estimate_noise(frame, item="doc_id", run="seed", response="p")
    runs = frame.rename(columns={"checkpoint": "subject", "seed": "run", "doc_id": "item",
                                 "p": "response"})
    d, _, dof, _ = noise_from_runs(runs, list(out.index.astype(str)), rank=0)
    np.testing.assert_allclose(d, out["noise_sigma2"], rtol=1e-12)
    np.testing.assert_array_equal(dof, out["noise_dof"])


# ------------------------------------------------------------------------------- cost

def _cost_grid(rng, m=200):
    values = {"PT": np.array([20e9, 40e9, 80e9, 160e9]), "SFT": np.array([1e4, 5e4, 1e5]),
              "RL": np.array([0.0, 500.0, 1000.0, 2000.0])}
    beta = {"PT": rng.normal(0, 2e-12, m), "SFT": rng.normal(0, 1e-6, m),
            "RL": rng.normal(0, 5e-5, m)}
    beta["PT"][:10] = -3e-12
    beta["SFT"][:10] = -4e-6
    beta["RL"][:10] = -2e-4  # items 0-9 improve on no axis (well beyond the noise)
    intercept = rng.uniform(0.3, 0.7, m)
    rows = []
    for a, xs in values.items():
        for x in xs:
            p = intercept + beta[a] * (x - xs.mean()) + rng.normal(0, 0.01, m)
            rows.append(pd.DataFrame({"item": np.arange(m), "axis": a, "value": x,
                                      "p": np.clip(p, 0, 1)}))
    anchor = pd.Series(intercept, index=np.arange(m))
    anchor.iloc[10:15] = 0.97  # outside [0.05, 0.95]
    return pd.concat(rows, ignore_index=True), anchor, beta


def test_cost_slopes_costs_and_filter():
    rng = np.random.default_rng(7)
    grid, anchor, truth = _cost_grid(rng)
    prices = {"PT": 1e-9, "SFT": 0.01, "RL": 2.0}
    out = estimate_cost(grid, anchor, prices=prices, response="p")
    for a in ("PT", "SFT", "RL"):
        sub = grid[grid["axis"] == a]
        ref = [np.polyfit(g["value"], g["p"], 1)[0] for _, g in sub.groupby("item")]
        np.testing.assert_allclose(out[f"beta_{a.lower()}"], ref, rtol=1e-8,
                                   atol=1e-12 * abs(np.mean(ref)))
        b = np.asarray(ref)
        expect = np.where(b > 0, 0.10 / np.where(b > 0, b, 1) * prices[a], np.nan)
        np.testing.assert_allclose(out[f"cost_{a.lower()}_usd"], expect, rtol=1e-10)
        np.testing.assert_array_equal(out[f"axis_{a.lower()}_improving"], b > 0)
    costs = out[["cost_pt_usd", "cost_sft_usd", "cost_rl_usd"]].to_numpy()
    np.testing.assert_allclose(out["cost_min_usd"], pd.DataFrame(costs).min(axis=1), rtol=1e-12)
    names = np.array(["PT", "SFT", "RL"])
    has = ~np.isnan(costs).all(axis=1)
    np.testing.assert_array_equal(out["cheapest_axis"][has],
                                  names[np.nanargmin(costs[has], axis=1)])
    assert out["cheapest_axis"][~has].isna().all()
    expect_eligible = has & anchor.between(0.05, 0.95).to_numpy()
    np.testing.assert_array_equal(out["eligible"], expect_eligible)
    assert not out["eligible"][:15].any()
    assert out["reason"][10:15].str.contains("anchor").all()
    # With a large panel and small noise the slopes recover the generated truth.
    assert np.corrcoef(out["beta_rl"], truth["RL"])[0, 1] > 0.95


def test_cost_bad_input():
    rng = np.random.default_rng(1)
    grid, anchor, _ = _cost_grid(rng, m=20)
    with pytest.raises(ValueError, match=r"no dollar price for axis\(es\) \['RL'\]"):
        estimate_cost(grid, anchor, prices={"PT": 1.0, "SFT": 1.0}, response="p")
    with pytest.raises(ValueError, match="positive"):
        estimate_cost(grid, anchor, prices={"PT": 1.0, "SFT": 0.0, "RL": 1.0}, response="p")
    one_point = grid[~((grid["item"] == 3) & (grid["axis"] == "SFT") & (grid["value"] > 1e4))]
    with pytest.raises(ValueError, match="item 3 .*axis 'SFT'"):
        estimate_cost(one_point, anchor, prices=RELEASE_PRICES_USD, response="p")
    with pytest.raises(ValueError, match="anchor has no p̂"):
        estimate_cost(grid, anchor.iloc[:5], prices=RELEASE_PRICES_USD, response="p")


def test_cost_with_task_and_doc_id_columns():
    rng = np.random.default_rng(2)
    grid, anchor, _ = _cost_grid(rng, m=12)
    one = estimate_cost(grid, anchor, prices=RELEASE_PRICES_USD, response="p")
    keyed = grid.assign(task=np.where(grid["item"] % 2, "odd", "even"),
                        doc_id=grid["item"] // 2).drop(columns="item")
    keys = pd.MultiIndex.from_arrays([np.where(anchor.index % 2, "odd", "even"),
                                      anchor.index // 2], names=["task", "doc_id"])
    two = estimate_cost(keyed, pd.Series(anchor.to_numpy(), index=keys),
                        prices=RELEASE_PRICES_USD, item=["task", "doc_id"], response="p")
    assert two.index.names == ["task", "doc_id"]
    np.testing.assert_array_equal(two.loc[list(keys), "beta_rl"], one["beta_rl"])
    with pytest.raises(ValueError, match="missing values"):
        estimate_cost(grid.assign(axis=grid["axis"].where(grid.index > 0)), anchor,
                      prices=RELEASE_PRICES_USD, response="p")


def test_release_costs_from_its_slopes():
    """cost.csv's dollar costs and cheapest axis from its own slopes and the stated prices (the
    slopes are printed to a few digits, hence the tolerance)."""
    cost = pd.read_csv(RELEASE / "cost.csv").set_index(["task", "doc_id"])
    slopes = cost[["beta_pt", "beta_sft", "beta_rl"]].set_axis(["PT", "SFT", "RL"], axis=1)
    out = cost_from_slopes(slopes, RELEASE_PRICES_USD)
    for a in ("pt", "sft", "rl"):
        np.testing.assert_allclose(out[f"cost_{a}_usd"], cost[f"cost_{a}_usd"], rtol=0.025)
        np.testing.assert_array_equal(out[f"axis_{a}_improving"], cost[f"axis_{a}_improving"])
    np.testing.assert_array_equal(out["cheapest_axis"], cost["cheapest_axis"])
