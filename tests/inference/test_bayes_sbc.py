"""Simulation-based calibration: the design generator, the rank test on draws whose calibration
is known by construction, and small calibration runs of two registered models (the Bayesian
Rosetta model and a 2PL)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from platinum_jax.inference import rank_uniformity, run_sbc, sbc_design


def _ranks_frame(truth, draws, group):
    """Rows like run_sbc's for truths (n,) and posterior draws (L, n)."""
    lo50, hi50, lo90, hi90 = np.quantile(draws, [0.25, 0.75, 0.05, 0.95], axis=0)
    return pd.DataFrame(
        {
            "group": group,
            "rank": (draws < truth).sum(0),
            "n_draws": draws.shape[0],
            "in_50": (lo50 <= truth) & (truth <= hi50),
            "in_90": (lo90 <= truth) & (truth <= hi90),
        }
    )


def test_rank_test_tells_calibrated_from_overconfident():
    rng = np.random.default_rng(3)
    n, L = 2000, 99
    # Conjugate normal: theta ~ N(0, 1), y ~ N(theta, 1) => theta | y ~ N(y / 2, 1 / 2).
    theta = rng.normal(size=n)
    y = theta + rng.normal(size=n)
    exact = y / 2 + np.sqrt(0.5) * rng.normal(size=(L, n))
    narrow = y / 2 + 0.3 * rng.normal(size=(L, n))  # posterior sd 0.3 instead of 0.71
    frame = pd.concat([_ranks_frame(theta, exact, "exact"), _ranks_frame(theta, narrow, "narrow")])
    out = rank_uniformity(frame)
    assert out.loc["exact", "chi2_p"] > 1e-3 and out.loc["exact", "ks_p"] > 1e-3
    # 2,000 Bernoulli(0.9) trials: sd 0.0067, so 4 sd either side
    assert abs(out.loc["exact", "coverage_90"] - 0.9) < 0.027
    assert abs(out.loc["exact", "coverage_50"] - 0.5) < 0.045
    assert out.loc["narrow", "chi2_p"] < 1e-10
    # truth inside +-1.645 * 0.3 of y/2 when theta - y/2 ~ N(0, 1/2): P = 2 Phi(0.698) - 1
    from scipy.stats import norm

    expected = 2 * norm.cdf(1.645 * 0.3 / np.sqrt(0.5)) - 1
    assert abs(out.loc["narrow", "coverage_90"] - expected) < 0.04


def test_world_clustered_test_allows_a_shared_shift_within_worlds():
    """Exact posteriors of a hierarchical normal model: the entries of one world share an
    unknown shift, so their ranks move together; the world-clustered test accepts them, and
    still rejects draws that are too narrow."""
    rng = np.random.default_rng(7)
    W, n, L = 60, 40, 99
    # mu_w ~ N(0, 1), theta_wi = mu_w + e_wi (e ~ N(0, 1)), x_wi = theta_wi + N(0, 1): the prior
    # covariance of theta_w is 11^T + I, the noise I, so the posterior is N(P x, P) with
    # P = (prior^-1 + I)^-1.
    prior = np.ones((n, n)) + np.eye(n)
    post_cov = np.linalg.inv(np.linalg.inv(prior) + np.eye(n))
    chol = np.linalg.cholesky(post_cov)
    frames = {"exact": [], "narrow": []}
    for w in range(W):
        theta = rng.normal() + rng.normal(size=n)
        x = theta + rng.normal(size=n)
        mean = post_cov @ x
        z = rng.normal(size=(L, n))
        for name, scale in (("exact", 1.0), ("narrow", 0.5)):
            draws = mean + scale * z @ chol.T
            frames[name].append(_ranks_frame(theta, draws, name).assign(world=w))
    out = rank_uniformity(pd.concat(frames["exact"] + frames["narrow"]))
    assert out.loc["exact", "world_t2_p"] > 1e-3
    assert out.loc["narrow", "world_t2_p"] < 1e-6
    assert out.loc["exact", "ks_p_one_per_world"] > 1e-3  # valid, but with 60 ranks weak
    # Without a world column the clustered test is not defined.
    alone = rank_uniformity(pd.concat(frames["exact"]).drop(columns="world"))
    assert np.isnan(alone.loc["exact", "world_t2_p"])
    assert np.isnan(alone.loc["exact", "ks_p_one_per_world"])


def test_design_is_shaped_like_the_epoch_table():
    d = sbc_design(seed=2)
    n = d.n_responses
    assert abs(n - 1300) <= 40  # the top-up of thin items adds a few
    per_model = np.bincount(d.subject_index, minlength=d.n_subjects)
    per_bench = np.bincount(d.item_index, minlength=d.n_items)
    assert per_model.min() >= 4 and per_bench.min() >= 3
    assert per_bench[0] == per_bench.max()  # the anchor is the most popular benchmark
    pairs = set(zip(d.subject_index.tolist(), d.item_index.tolist(), strict=True))
    assert len(pairs) == n  # no pair twice
    has = np.bincount(d.item_index[d.se > 0], minlength=d.n_items) > 0
    assert not has[0] and 0.1 < has.mean() < 0.5
    assert ((d.se == 0) | ((d.se >= 0.01) & (d.se <= 0.05))).all()
    with pytest.raises(ValueError, match="n_responses"):
        sbc_design(10, 5, 20)


#: the Bayesian Rosetta model's sites by kind of parameter
GROUPS = {"capability": "capability", "difficulty": "difficulty", "slope": "slope",
          "sigma": "noise scale", "noise_log_mu": "hyper-parameter",
          "noise_log_tau": "hyper-parameter", "capability_mu": "hyper-parameter",
          "capability_tau": "hyper-parameter"}


@pytest.mark.slow
def test_small_sbc_run_of_the_bayesian_rosetta_model_is_calibrated():
    from platinum_jax.models import RosettaBayes
    from platinum_jax.models.rosetta import BenchmarkAnchor

    design = sbc_design(16, 4, 64, seed=0)  # every pair scored
    model = RosettaBayes.with_likelihood("gaussian", anchor=BenchmarkAnchor("b00000"))
    # sigma, the likelihood's derived noise scale, is ranked by default
    result = run_sbc(model, design, 10, warmup=200, samples=200, thin=2, seed=1,
                     mass="lowrank", groups=GROUPS)
    assert set(result["group"]) == {
        "capability", "difficulty", "slope", "noise scale", "hyper-parameter"
    }
    assert result["rank"].between(0, 100).all() and (result["n_draws"] == 100).all()
    assert result.loc[result["site"] == "capability", "derived"].all()
    # the default noise samples its level and spread in the site "noise" (NoisyGaussian's
    # pooled_below): the model's names are computed from it
    assert result.loc[result["site"] == "noise_log_mu", "derived"].all()
    caps = result[result["group"] == "capability"]
    assert len(caps) == 10 * 16
    # 160 capability truths: a calibrated 90% interval covers 144 +- 3.8 of them
    assert 0.78 <= caps["in_90"].mean() <= 0.99
    assert 0.78 <= result["in_90"].mean() <= 0.99


def test_small_sbc_run_of_a_2pl_is_calibrated():
    """The same tool on another registered model: a 2PL on binary responses."""
    from platinum_jax.models import TwoPL

    design = sbc_design(30, 5, 150, se_share=0.0, seed=3)
    design = dataclasses.replace(design, se=None)
    result = run_sbc(TwoPL(), design, 8, warmup=150, samples=200, thin=2, seed=2)
    assert {"ability", "difficulty"} <= set(result["site"])
    assert result["rank"].between(0, 100).all()
    abilities = result[result["site"] == "ability"]
    assert len(abilities) == 8 * 30
    # 240 ability truths: a calibrated 90% interval covers 216 +- 4.6 of them (one sd);
    # the entries of a world share its items, so allow about 4 sd.
    assert 0.8 <= abilities["in_90"].mean() <= 0.98
    assert 0.8 <= result["in_90"].mean() <= 0.98


def test_a_world_is_numpyros_prior_predictive_draw():
    """simulate_world (one compiled program) draws what NumPyro's Predictive draws op by op
    from the same key: the same values up to rounding in the last bits."""
    import jax
    from numpyro.infer import Predictive

    from platinum_jax.inference import numpyro_model, simulate_world
    from platinum_jax.inference._sbc import _problem, _with_responses
    from platinum_jax.models import TwoPL

    design = dataclasses.replace(sbc_design(30, 5, 150, se_share=0.0, seed=3), se=None)
    problem = _problem(TwoPL(), design)
    key = jax.random.PRNGKey(4)
    eager = Predictive(numpyro_model(problem), num_samples=1)(
        key, _with_responses(problem, design.response), observed=False)
    got = simulate_world(key, TwoPL(), design)
    assert set(got) == set(eager) and {"ability", "difficulty", "y"} <= set(got)
    for site, value in eager.items():
        np.testing.assert_allclose(got[site], np.asarray(value)[0], rtol=1e-12, atol=1e-300)
