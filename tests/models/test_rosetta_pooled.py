"""Completely pooled noise for sparse benchmarks (``NoisyGaussian(pooled_below=k)``): the joint
prior of the noise site, which benchmarks lose their own noise scale, and the model's log
density against an independent SciPy computation of the same model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from numpyro.infer.util import log_density
from scipy.special import expit

from platinum_jax.models.rosetta import Priors, RosettaBayes
from platinum_jax.models.rosetta._pooled import pooled_noise_prior

PRIORS = Priors(log_noise_loc=-2.5, log_noise_spread=0.5, log_noise_spread_sd=0.4)
# benchmark: (number of scores, known standard error or None)
BENCHES = {"Winogrande": (22, 0.01), "big": (21, None), "mid": (10, None),
           "sparse": (3, None), "sparse_se": (4, 0.02)}


def _table():
    from platinum_jax.data import ScoreTable

    rng = np.random.default_rng(4)
    models = [f"m{i:02d}" for i in range(22)]
    rows = [{"model": m, "benchmark": b, "score": float(rng.uniform(0.1, 0.9)), "stderr": se}
            for b, (n, se) in BENCHES.items() for m in models[:n]]
    return ScoreTable.from_frame(pd.DataFrame(rows))


def _problems(pooled_below=8):
    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.inference import Problem
    from platinum_jax.stitching import stitching_problem

    # the unpooled model (every benchmark its own noise, centred from 20 scores) and the
    # same with pooled_below
    problem, _ = stitching_problem(_table(), priors=PRIORS, centred_min=20, pooled_below=0)
    model = problem.model
    pooled = dataclasses.replace(
        model, likelihood=dataclasses.replace(model.likelihood, pooled_below=pooled_below))
    return problem, Problem(pooled, problem.table)


def test_noise_prior_log_density_matches_scipy():
    d = pooled_noise_prior(PRIORS, 2)
    rng = np.random.default_rng(1)
    for _ in range(5):
        v = rng.normal(size=4) * [1.0, 0.3, 1.0, 1.0] + [-2.5, -0.7, -2.0, -3.0]
        nu, s = v[0], np.exp(v[1])
        expect = (st.norm.logpdf(nu, PRIORS.log_noise_loc, PRIORS.log_noise_loc_scale)
                  # s ~ LogNormal sampled as log s: its density times ds / dlog s = s
                  + st.lognorm.logpdf(s, PRIORS.log_noise_spread_sd,
                                      scale=PRIORS.log_noise_spread) + v[1]
                  + st.norm.logpdf(v[2:], nu, s).sum())
        assert float(d.log_prob(v)) == pytest.approx(expect, rel=1e-10)


def test_noise_prior_samples_follow_the_hierarchy():
    import jax

    v = np.asarray(pooled_noise_prior(PRIORS, 1).sample(jax.random.PRNGKey(0), (20000,)))
    nu, s = v[:, 0], np.exp(v[:, 1])
    p = PRIORS
    pvalues = [st.kstest(nu, st.norm(p.log_noise_loc, p.log_noise_loc_scale).cdf).pvalue,
               st.kstest(s, st.lognorm(p.log_noise_spread_sd, scale=p.log_noise_spread).cdf
                         ).pvalue,
               st.kstest((v[:, 2] - nu) / s, st.norm().cdf).pvalue]
    assert min(pvalues) > 1e-3


def test_sparse_benchmark_without_stderr_has_no_noise_site():
    _, pooled = _problems()
    rep = pooled.model.reparameterise(pooled.table)
    names = list(pooled.table.items)
    # fewer than 8 scores and no standard error: only "sparse" ("sparse_se" has errors)
    assert dict(zip(names, rep.pooled, strict=True)) == {
        "Winogrande": False, "big": False, "mid": False, "sparse": True, "sparse_se": False}
    assert dict(zip(names, rep.centred, strict=True)) == {
        "Winogrande": True, "big": True, "mid": False, "sparse": False, "sparse_se": False}
    sites = rep.sites()
    assert sites["noise"].event_shape == (2 + 2,)  # nu, log s, two centred scales
    assert sites["noise_offset"].event_shape == (2,)  # "mid" and "sparse_se"
    assert not {"noise_log_mu", "noise_log_tau", "noise_log_sigma"} & set(sites)
    assert rep.entry_labels(names) == {"noise": ["nu", "log_s", "Winogrande", "big"],
                                       "noise_offset": ["mid", "sparse_se"]}
    assert "complete pooling" in pooled.model.describe()["noise"]
    assert "pooling" not in _problems(0)[1].model.describe()["noise"]


def _point():
    return {"capability_u": np.linspace(-1.0, 1.2, 22) - np.linspace(-1.0, 1.2, 22).mean(),
            "capability_r2": 19.0, "anchor_intercept": 0.4, "anchor_slope_z": 0.1,
            "intercept": np.array([0.3, -0.5, 0.8, -0.2]),
            "slope_z": np.array([0.2, -0.4, 0.5, -0.1])}


def test_log_density_matches_scipy_and_default_model():
    """The pooled model's likelihood, recomputed with SciPy from C, D and alpha (sigma of
    "sparse" = exp(nu)); and its log density against the default model's at the same point,
    where the default's non-centred offset of "sparse" is 0 (so its sigma_b is exp(nu) too):
    the two differ by the Jacobian of s -> log s and the offset's N(0, 1) density at 0."""
    from platinum_jax.inference import numpyro_model

    default, pooled = _problems()
    nu, s, x_c = -2.9, 0.45, np.array([-3.2, -2.4])  # x_c: Winogrande, big
    off = {"mid": 0.7, "sparse_se": -1.3}
    point = _point() | {"noise": np.array([nu, np.log(s), *x_c]),
                        "noise_offset": np.array([off["mid"], off["sparse_se"]])}
    new, trace = log_density(numpyro_model(pooled), (pooled.data(),), {},
                             point)
    names = list(pooled.table.items)
    log_sigma = {"Winogrande": x_c[0], "big": x_c[1], "mid": nu + s * off["mid"],
                 "sparse": nu, "sparse_se": nu + s * off["sparse_se"]}
    np.testing.assert_allclose(trace["noise_log_sigma"]["value"],
                               [log_sigma[b] for b in names], rtol=1e-12)
    t = pooled.table
    c = np.asarray(trace["capability"]["value"])[t.subject_index]
    d = np.asarray(trace["difficulty"]["value"])[t.item_index]
    a = np.asarray(trace["slope"]["value"])[t.item_index]
    sigma = np.exp(np.array([log_sigma[b] for b in names]))[t.item_index]
    sd = np.sqrt(sigma ** 2 + np.asarray(t.se) ** 2)
    expect = st.norm.logpdf(t.response, expit(a * (c - d)), sd).sum()
    y = trace["y"]
    assert float(np.sum(y["fn"].log_prob(y["value"]))) == pytest.approx(expect, rel=1e-10)

    # the default model: noise_log_sigma holds log sigma (centred) or the offset per benchmark
    old_point = _point() | {"noise_log_mu": nu, "noise_log_tau": s, "noise_log_sigma": np.array(
        [{"Winogrande": x_c[0], "big": x_c[1], "sparse": 0.0}.get(b, off.get(b)) for b in names])}
    old, _ = log_density(numpyro_model(default), (default.data(),), {},
                         old_point)
    assert float(new) == pytest.approx(float(old) + np.log(s) - st.norm.logpdf(0.0), rel=1e-10)


def test_bad_pooling_options_are_refused():
    with pytest.raises(ValueError, match="pooled_below must be a whole number"):
        RosettaBayes.with_likelihood("gaussian", pooled_below=-1)
    with pytest.raises(ValueError, match="pooled_below must be a whole number"):
        RosettaBayes.with_likelihood("gaussian", pooled_below=2.5)
    _, pooled = _problems()
    both = dataclasses.replace(pooled.model, noise_scaled=True)
    with pytest.raises(ValueError, match="set pooled_below=0"):
        both.reparameterise(pooled.table)


def test_the_default_pools_below_30_scores_and_centres_from_30():
    from platinum_jax.models.rosetta import (
        CENTRED_NOISE_MIN_SCORES,
        POOLED_NOISE_BELOW,
        NoisyGaussian,
    )
    from platinum_jax.stitching import stitching_problem

    assert (POOLED_NOISE_BELOW, CENTRED_NOISE_MIN_SCORES) == (30, 30)
    assert (NoisyGaussian().pooled_below, NoisyGaussian().centred_min) == (30, 30)
    problem, _ = stitching_problem(_table(), priors=PRIORS)
    rep = problem.model.reparameterise(problem.table)
    names = list(problem.table.items)
    # every benchmark under 30 scores without standard errors is pooled ("big", 21 scores,
    # too); those with standard errors keep their own noise, non-centred (none has 30 scores)
    assert [b for b, p in zip(names, rep.pooled, strict=True) if p] == ["big", "mid", "sparse"]
    assert not any(rep.centred)
    assert "fewer than 30 scores" in problem.model.describe()["noise"]


def _check_world():
    """Posterior draws at the truth of 40 models on three benchmarks: "calm" and "loud" pooled
    (25 scores each, noise 0.05 and 0.15), "own" not (40 scores); the common level 0.05."""
    import xarray as xr

    rng = np.random.default_rng(11)
    cap = rng.normal(size=40)
    diff, slope = np.array([-0.5, 0.3, 0.0]), np.array([1.2, 0.8, 1.0])
    sd = np.array([0.05, 0.15, 0.05])
    mi = np.concatenate([np.arange(25), np.arange(25), np.arange(40)])
    bi = np.repeat([0, 1, 2], [25, 25, 40])
    eps = rng.normal(size=len(mi)) * sd[bi]
    y = expit(slope[bi] * (cap[mi] - diff[bi])) + eps
    # two draws, both at the truth, with the common level 0.05 and then 0.1
    var = np.array([[0.05, 0.05, 0.05], [0.1, 0.1, 0.1]]) ** 2

    def drawn(x, dim):
        return xr.DataArray(np.broadcast_to(x, (1, 2, len(x))), dims=("chain", "draw", dim),
                            coords={dim: [f"m{i}" for i in range(len(x))] if dim == "model"
                                    else ["calm", "loud", "own"]})

    post = xr.Dataset({"capability": drawn(cap, "model"), "difficulty": drawn(diff, "benchmark"),
                       "slope": drawn(slope, "benchmark"),
                       "noise_variance": (("chain", "draw", "benchmark"), var[None])})
    post = post.assign_coords(benchmark=["calm", "loud", "own"])
    return post, y, mi, bi, eps, var


def test_pooled_noise_check_against_the_chi_square_of_known_residuals():
    from platinum_jax.models.rosetta import pooled_noise_check

    post, y, mi, bi, eps, var = _check_world()
    check = pooled_noise_check(post, y, mi, bi, [True, True, False])
    assert list(check.index) == ["calm", "loud", "own"]
    assert check["noise_pooled"].tolist() == [True, True, False]
    assert check.loc["own", ["noise_scatter", "noise_ppp"]].isna().all()
    for j, name in enumerate(["calm", "loud"]):
        ss = np.sum(eps[bi == j] ** 2)  # the draws sit at the truth: residuals are the noise
        t = ss / var[:, j]
        np.testing.assert_allclose(check.loc[name, "noise_scatter"], np.sqrt(t.mean() / 25),
                                   rtol=1e-9)
        np.testing.assert_allclose(check.loc[name, "noise_ppp"], st.chi2.sf(t, 25).mean(),
                                   rtol=1e-9)
    # loud's scores scatter about 3 and 1.5 times the two levels; calm's about 1 and 0.5
    assert check.loc["loud", "noise_ppp"] < 1e-3 < 0.3 < check.loc["calm", "noise_ppp"]


def test_pooled_misfit_warning_names_the_benchmark_and_the_remedy():
    from platinum_jax.models.rosetta import pooled_noise_check, warn_pooled_misfit

    post, y, mi, bi, _, _ = _check_world()
    check = pooled_noise_check(post, y, mi, bi, [True, True, False])
    with pytest.warns(UserWarning, match=r"loud \(25 scores, .* times\)") as rec:
        warn_pooled_misfit(check, bi, 30)
    text = str(rec[0].message)
    assert "calm" not in text and "fewer than 30 scores" in text and "at most 25" in text
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_pooled_misfit(check.drop(index="loud"), bi[bi != 1], 30)  # nothing to say
