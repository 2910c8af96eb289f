"""BCa bootstrap intervals (design/_intervals.py) against SciPy and by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats


def test_bca_matches_scipy_on_the_same_replicates():
    """scipy.stats.bootstrap(method='BCa') on a skewed sample: same replicates, same jackknife
    (leave one out), same interval."""
    from platinum_jax.design import bca_interval

    rng = np.random.default_rng(11)
    x = rng.lognormal(0.0, 0.8, 40)
    for stat in (np.mean, np.std):
        res = scipy.stats.bootstrap((x,), stat, method="BCa", confidence_level=0.9,
                                    n_resamples=3000, random_state=3, vectorized=False)
        boot = np.asarray(res.bootstrap_distribution)
        jack = np.array([stat(np.delete(x, i)) for i in range(len(x))])
        lo, hi = bca_interval(boot[:, None], stat(x), jack[:, None], 0.9)
        np.testing.assert_allclose([lo[0], hi[0]], [res.confidence_interval.low,
                                                    res.confidence_interval.high], rtol=1e-10)


def test_bca_reduces_to_percentile_and_by_hand():
    """With the estimate at the replicates' median (z0 = 0) and no jackknife, BC is the percentile
    interval; with a shifted estimate and a skewed jackknife, the quantiles read are those of
    Efron's formula written out here."""
    from platinum_jax.design import bca_interval

    rng = np.random.default_rng(5)
    boot = rng.normal(size=(2000, 3))
    med = np.median(boot, axis=0)  # half the replicates below: z0 = 0 exactly
    lo, hi = bca_interval(boot, med, None, 0.8)
    np.testing.assert_allclose(lo, np.quantile(boot, 0.1, axis=0), rtol=1e-12)
    np.testing.assert_allclose(hi, np.quantile(boot, 0.9, axis=0), rtol=1e-12)
    est = med + 0.3
    jack = rng.gamma(2.0, size=(25, 3))
    lo, hi = bca_interval(boot, est, jack, 0.8)
    z0 = scipy.stats.norm.ppf((boot < est).mean(axis=0))
    dev = jack.mean(axis=0) - jack
    a = (dev**3).sum(axis=0) / (6 * ((dev**2).sum(axis=0)) ** 1.5)
    for got, tail in ((lo, 0.1), (hi, 0.9)):
        z = z0 + scipy.stats.norm.ppf(tail)
        q = scipy.stats.norm.cdf(z0 + z / (1 - a * z))
        want = [np.quantile(boot[:, j], q[j]) for j in range(3)]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bca_refuses_bad_input():
    from platinum_jax.design import bca_interval

    boot = np.zeros((10, 2))
    with pytest.raises(ValueError, match="level"):
        bca_interval(boot, np.zeros(2), None, 1.5)
    with pytest.raises(ValueError, match="jackknife"):
        bca_interval(boot, np.zeros(2), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="finite"):
        bca_interval(boot + np.nan, np.zeros(2))
