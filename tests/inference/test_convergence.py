"""The vectorised R-hat, bulk and tail ESS and HDI against ArviZ's own, entry by entry."""

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from platinum_jax.inference._convergence import convergence, ess_bulk, ess_tail, hdi, rhat_rank
from platinum_jax.inference._summary import posterior_summary


def _chains(rng, chains, draws, k):
    """AR(1) chains with per-entry persistence and chain offsets, a constant entry and a
    rounded (tied) entry."""
    phi = rng.uniform(-0.5, 0.99, k)
    x = np.zeros((chains, draws, k))
    e = rng.normal(size=x.shape)
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    x += rng.normal(size=(chains, 1, k)) * rng.uniform(0, 1, k)
    x[:, :, 0] = 1.5
    x[:, :, 1] = np.round(x[:, :, 1])
    return x


@pytest.mark.parametrize("shape", [(4, 400, 30), (2, 101, 12), (3, 7, 10), (1, 200, 8),
                                   (4, 5, 6)])
def test_every_entry_matches_arviz(shape):
    x = _chains(np.random.default_rng(sum(shape)), *shape)
    ds = az.convert_to_dataset({"v": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_rhat = az.rhat(ds)["v"].values
        want_bulk = az.ess(ds, method="bulk")["v"].values
        want_tail = az.ess(ds, method="tail")["v"].values
        want_hdi = az.hdi(ds, hdi_prob=0.94)["v"].values
    rh, eb, et = convergence(x)
    for got, want in ((rh, want_rhat), (eb, want_bulk), (et, want_tail),
                      (rhat_rank(x), want_rhat), (ess_bulk(x), want_bulk),
                      (ess_tail(x), want_tail)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-10)
    lo, hi = hdi(x, 0.94)
    np.testing.assert_array_equal(lo, want_hdi[:, 0])
    np.testing.assert_array_equal(hi, want_hdi[:, 1])


def test_nonfinite_draws_give_nan_not_a_number():
    x = _chains(np.random.default_rng(3), 4, 50, 5)
    x[2, 10, 3] = np.nan
    rh, eb, et = convergence(x)
    assert np.isnan([rh[3], eb[3], et[3]]).all()
    assert np.isfinite(eb[[0, 1, 2, 4]]).all()


def test_posterior_summary_equals_arviz_on_labelled_variables():
    rng = np.random.default_rng(7)
    a = _chains(rng, 4, 300, 6)
    b = _chains(rng, 4, 300, 3)[:, :, 2]
    post = xr.Dataset({"cap": (("chain", "draw", "model"), a),
                       "scale": (("chain", "draw"), b)},
                      coords={"model": [f"m{i}" for i in range(6)]})
    idata = az.InferenceData(posterior=post)
    got = posterior_summary(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = az.summary(idata, hdi_prob=0.94, round_to="none")
    assert list(got["variable"]) == ["cap"] * 6 + ["scale"]
    assert list(got["name"][:6]) == [f"m{i}" for i in range(6)]
    varies = got["sd"].to_numpy() > 0
    for ours, theirs in (("mean", "mean"), ("sd", "sd"), ("hdi_3%", "hdi_3%"),
                         ("hdi_97%", "hdi_97%"), ("r_hat", "r_hat"), ("ess_bulk", "ess_bulk"),
                         ("ess_tail", "ess_tail")):
        np.testing.assert_allclose(got[ours].to_numpy()[varies],
                                   want[theirs].to_numpy()[varies], rtol=1e-9)
    assert got.loc[~varies, ["r_hat", "ess_bulk", "ess_tail"]].isna().all().all()
