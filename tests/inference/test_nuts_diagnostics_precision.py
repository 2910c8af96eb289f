"""The NUTS fit's diagnostics are the unrounded R-hat and ESS: a check against R-hat <= 1.01
on values rounded to two decimals would pass an R-hat of 1.014."""

from __future__ import annotations

import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit
from platinum_jax.models import TwoPL


def test_nuts_diagnostics_are_not_rounded():
    rng = np.random.default_rng(5)
    n_subjects, n_items = 30, 6
    theta = rng.normal(size=n_subjects)
    b = rng.normal(size=n_items)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    s, i = np.meshgrid(np.arange(n_subjects), np.arange(n_items), indexing="ij")
    table = ResponseTable.from_arrays(s.ravel(), i.ravel(), y.ravel())
    diag = fit(TwoPL(), table, method="nuts", chains=2, warmup=30, samples=30,
               seed=0).diagnostics
    # A computed R-hat or ESS lands on two decimals (or a whole number) with probability 0.
    assert diag["rhat_max"] != round(diag["rhat_max"], 2)
    assert diag["ess_bulk_min"] != round(diag["ess_bulk_min"])
    assert diag["ess_tail_min"] != round(diag["ess_tail_min"])
