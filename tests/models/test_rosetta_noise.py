"""The noise-scaled coordinates of the Bayesian Rosetta model: the same prior and the same
posterior as the default coordinates, in other variables."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from numpyro.infer.util import log_density

from platinum_jax.models.rosetta import Priors
from platinum_jax.models.rosetta._noise import noise_intercept_prior

PRIORS = Priors(log_noise_loc=-2.5, intercept_scale=1.5, log_noise_spread=0.5)
CENTRED = (True, False, False)
FREE_D = (1, 2)
SCALED = (False, True)
BETA_HAT = (0.3, -1.1)
K = (0.4, 0.7)


def _prior():
    return noise_intercept_prior(PRIORS, centred=CENTRED, scaled=SCALED, beta_hat=BETA_HAT,
                                 k=K, free_difficulty=FREE_D)


def _scipy_log_prior(v):
    nu, log_s, r, delta = v[0], v[1], v[2:5], v[5:]
    s = np.exp(log_s)
    # s ~ LogNormal, sampled as log s: the density of log s is the LogNormal's times s
    lp = st.norm.logpdf(nu, PRIORS.log_noise_loc, PRIORS.log_noise_loc_scale)
    lp += st.lognorm.logpdf(s, PRIORS.log_noise_spread_sd, scale=PRIORS.log_noise_spread) + log_s
    x = np.empty(3)
    for b in range(3):
        if CENTRED[b]:
            lp += st.norm.logpdf(r[b], nu, s)
            x[b] = r[b]
        else:  # non-centred: r ~ N(0, 1), log sigma = nu + s r
            lp += st.norm.logpdf(r[b])
            x[b] = nu + s * r[b]
    for f in range(2):
        if SCALED[f]:  # beta = betahat + k sigma delta: the prior of beta times d beta / d delta
            jac = K[f] * np.exp(x[FREE_D[f]])
            beta = BETA_HAT[f] + jac * delta[f]
            lp += st.norm.logpdf(beta, PRIORS.intercept_loc, PRIORS.intercept_scale) + np.log(jac)
        else:
            lp += st.norm.logpdf(delta[f], PRIORS.intercept_loc, PRIORS.intercept_scale)
    return lp


def test_joint_prior_log_density_matches_scipy():
    rng = np.random.default_rng(3)
    d = _prior()
    for _ in range(5):
        v = rng.normal(size=7) * np.array([1, 0.3, 1, 1, 1, 1, 2]) + np.array([-2.5, -0.7,
                                                                                -2, 0, 0, 0, 0])
        assert float(d.log_prob(v)) == pytest.approx(_scipy_log_prior(v), rel=1e-10, abs=1e-10)


def test_joint_prior_samples_are_the_model_prior():
    import jax

    v = np.asarray(_prior().sample(jax.random.PRNGKey(0), (20000,)))
    nu, s, r, delta = v[:, 0], np.exp(v[:, 1]), v[:, 2:5], v[:, 5:]
    x = np.where(CENTRED, r, nu[:, None] + s[:, None] * r)
    beta = np.where(SCALED, BETA_HAT + K * np.exp(x[:, FREE_D]) * delta, delta)
    p = PRIORS
    tests = [st.kstest(nu, st.norm(p.log_noise_loc, p.log_noise_loc_scale).cdf),
             st.kstest(s, st.lognorm(p.log_noise_spread_sd, scale=p.log_noise_spread).cdf)]
    tests += [st.kstest((x[:, b] - nu) / s, st.norm().cdf) for b in range(3)]
    tests += [st.kstest(beta[:, f], st.norm(p.intercept_loc, p.intercept_scale).cdf)
              for f in range(2)]
    assert min(t.pvalue for t in tests) > 1e-3


def _table():
    from platinum_jax.data import ScoreTable

    rng = np.random.default_rng(0)
    models = [f"m{i}" for i in range(6)]
    rows = []
    for b, n, se in (("Winogrande", 6, 0.01), ("wide", 6, 0.02), ("sparse", 3, None)):
        for m in models[:n]:
            rows.append({"model": m, "benchmark": b, "score": float(rng.uniform(0.1, 0.9)),
                         "stderr": se})
    return ScoreTable.from_frame(pd.DataFrame(rows))


def test_scaled_model_is_the_default_model_in_new_coordinates():
    """log p_new(v) = log p_default(theta(v)) + log |d theta / d v|, with the Jacobian of
    s -> log s and of each scaled intercept (k_b sigma_b)."""
    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.inference import Problem, numpyro_model
    from platinum_jax.stitching import stitching_problem

    table = _table()
    problem, _ = stitching_problem(table, priors=PRIORS, pooled_below=0)  # unpooled noise
    scaled = Problem(dataclasses.replace(problem.model, noise_scaled=True), problem.table)
    rep = scaled.model.reparameterise(scaled.table)
    sparse = list(table.benchmarks).index("sparse")
    f = list(rep.free_difficulty).index(sparse)  # its place among the free intercepts
    assert rep.scaled == tuple(i == f for i in range(2)) and not any(rep.centred)
    n_scores, p = 3, np.clip(np.mean(table.data.loc[table.data.benchmark == "sparse", "score"]),
                             0.02, 0.98)
    assert rep.k[f] == pytest.approx(1 / (p * (1 - p) * np.sqrt(n_scores)))
    assert rep.beta_hat[f] == pytest.approx(np.log(p / (1 - p)))
    point = {"capability_u": np.array([1.2, -0.4, 0.3, -0.9, 0.1, -0.3]) * 2.1,
             "capability_r2": 4.2, "anchor_intercept": 0.6, "anchor_slope_z": -0.2,
             "intercept": np.array([0.4, -0.8]), "slope_z": np.array([0.3, -0.5]),
             "noise_log_mu": -2.7, "noise_log_tau": 0.45,
             "noise_log_sigma": np.array([0.3, -1.1, 0.8])}
    old, _ = log_density(numpyro_model(problem), (problem.data(),), {}, point)
    x = point["noise_log_mu"] + point["noise_log_tau"] * point["noise_log_sigma"]
    jac = rep.k[f] * np.exp(x[sparse])
    delta = point["intercept"].copy()
    delta[f] = (delta[f] - rep.beta_hat[f]) / jac
    new_point = {k: v for k, v in point.items() if not k.startswith(("noise", "intercept"))}
    new_point["noise_intercept"] = np.concatenate(
        [[point["noise_log_mu"], np.log(point["noise_log_tau"])], point["noise_log_sigma"],
         delta])
    new, trace = log_density(numpyro_model(scaled), (scaled.data(),), {},
                             new_point)
    assert float(new) == pytest.approx(float(old) + np.log(point["noise_log_tau"])
                                       + np.log(jac), rel=1e-10)
    np.testing.assert_allclose(trace["intercept"]["value"], point["intercept"], rtol=1e-12)
