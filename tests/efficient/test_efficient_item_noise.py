"""Efficient evaluation on a fit whose likelihood has a parameter per item: the Bayesian
Rosetta model's noise scale per benchmark. Variances, Pearson's dispersion and the grid
posterior use each benchmark's own sigma_b, checked against NumPy and SciPy."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pandas as pd
from scipy import stats

from platinum_jax.data import ResponseTable
from platinum_jax.efficient import estimate_scores, item_bank
from platinum_jax.inference import nuts
from platinum_jax.models import RosettaBayes
from platinum_jax.models.rosetta import BenchmarkAnchor

jax.config.update("jax_enable_x64", True)


def _world(seed=0, n_models=24, n_bench=4):
    rng = np.random.default_rng(seed)
    c = rng.normal(0.0, 1.0, n_models)
    d = rng.normal(0.0, 0.8, n_bench)
    noise = np.array([0.02, 0.05, 0.1, 0.04])[:n_bench]  # a noise per benchmark
    rows = [(f"m{m:02d}", f"b{b}", float(np.clip(1 / (1 + np.exp(-(c[m] - d[b])))
                                                 + noise[b] * rng.normal(), 0.01, 0.99)))
            for m in range(n_models) for b in range(n_bench)]
    return pd.DataFrame(rows, columns=["subject", "item", "response"])


def test_item_noise_reaches_variance_dispersion_and_posterior():
    table = ResponseTable.from_frame(_world())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nuts(RosettaBayes(anchor=BenchmarkAnchor("b0")), table, chains=1, warmup=60,
                   samples=40, seed=0)
    sigma = np.exp(fit.items["noise_log_sigma"].to_numpy())  # the fit's sigma_b
    bank = item_bank(fit, dispersion=1.0)
    var = np.asarray(bank.variance(bank.mean, 1.0))
    np.testing.assert_allclose(var, np.broadcast_to(sigma ** 2, var.shape), rtol=1e-12)
    # Pearson's dispersion over the fit's own rows, each with its benchmark's sigma_b
    mu = np.asarray(fit.predict())
    r2 = (table.response - mu) ** 2 / sigma[table.item_index] ** 2
    want = r2.sum() / (table.n_responses - fit.problem.n_free)
    np.testing.assert_allclose(item_bank(fit).dispersion, want, rtol=1e-10)
    # one new model's grid posterior: the Gaussian density with each benchmark's own sigma
    new = ResponseTable.from_frame(pd.DataFrame({"subject": "new", "item": ["b1", "b2", "b3"],
                                                 "response": [0.7, 0.4, 0.6]}))
    out = estimate_scores(bank, new)
    grid, mean = np.asarray(bank.grid), np.asarray(bank.mean)
    pos = bank.position(new.items)[new.item_index]
    log_post = np.asarray(bank.log_prior) + sum(
        stats.norm.logpdf(y, mean[:, k], sigma[k]) for y, k in zip(new.response, pos, strict=True))
    post = np.exp(log_post - log_post.max())
    post /= post.sum()
    assert abs(out.loc["new", "ability"] - float(post @ grid)) < 1e-6


def test_a_likelihood_by_its_own_moments_or_a_named_refusal():
    """A beta likelihood's variance mu (1 - mu) / (1 + phi) at the fitted precision (NumPy);
    ordered categories, which have no single expected response, are refused by name."""
    import pytest

    from platinum_jax.inference import fit_map, simulate
    from platinum_jax.models import Beta, GradedResponse, TwoPL

    model = TwoPL(likelihood=Beta())
    table, _ = simulate(model, 40, 10, seed=1)
    fit = fit_map(model, table)
    bank = item_bank(fit, dispersion=1.0)
    mu = np.asarray(bank.mean)
    raw = fit.problem.split_globals(fit.theta.globals)[1]  # the likelihood's raw globals
    phi = np.exp(float(np.asarray(raw["log_precision"])))
    np.testing.assert_allclose(np.asarray(bank.variance(bank.mean, 1.0)),
                               mu * (1 - mu) / (1 + phi), rtol=1e-10)
    graded = GradedResponse(categories=3)
    g_table, _ = simulate(graded, 40, 10, seed=1)
    with pytest.raises(ValueError, match="probability per category"):
        item_bank(fit_map(graded, g_table))
