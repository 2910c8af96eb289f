"""The NUTS fit's diagnostics: the unrounded R-hat and ESS (a check against R-hat <= 1.01 on
values rounded to two decimals would pass an R-hat of 1.014), and the tree-depth limit."""

from __future__ import annotations

import numpy as np
import pytest

from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit
from platinum_jax.models import TwoPL


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    n_subjects, n_items = 30, 6
    theta = rng.normal(size=n_subjects)
    b = rng.normal(size=n_items)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    s, i = np.meshgrid(np.arange(n_subjects), np.arange(n_items), indexing="ij")
    return ResponseTable.from_arrays(s.ravel(), i.ravel(), y.ravel())


def test_nuts_diagnostics_are_not_rounded(table):
    diag = fit(TwoPL(), table, method="nuts", chains=2, warmup=30, samples=30,
               seed=0).diagnostics
    # A computed R-hat or ESS lands on two decimals (or a whole number) with probability 0.
    assert diag["rhat_max"] != round(diag["rhat_max"], 2)
    assert diag["ess_bulk_min"] != round(diag["ess_bulk_min"])
    assert diag["ess_tail_min"] != round(diag["ess_tail_min"])


def test_the_tree_depth_limit_bounds_every_trajectory(table):
    post = fit(TwoPL(), table, method="nuts", chains=2, warmup=30, samples=30, seed=0,
               max_tree_depth=2)
    n_steps = post.inference_data.sample_stats["n_steps"].values
    assert n_steps.shape == (2, 30)
    # A tree of depth 2 holds at most 2^2 - 1 = 3 leapfrog steps.
    assert n_steps.max() <= 3 and n_steps.min() >= 1
    assert post.diagnostics["max_tree_depth"] == 2
    assert post.diagnostics["tree_depth_hits"] == int((n_steps == 3).sum())
    with pytest.raises(ValueError, match="max_tree_depth"):
        fit(TwoPL(), table, method="nuts", max_tree_depth=0)


def test_a_model_s_own_nuts_settings_fill_in_what_is_not_given(table, monkeypatch):
    from platinum_jax.inference._bayes import NUTS_SETTINGS
    from platinum_jax.models.rosetta import RosettaBayes

    assert NUTS_SETTINGS == {"warmup": 500, "samples": 1000, "target_accept": 0.9,
                             "mass": "lowrank", "init": "map", "max_tree_depth": 10}
    # the Bayesian Rosetta model declares the settings stitch-bayes samples with
    assert set(RosettaBayes.nuts_settings) <= set(NUTS_SETTINGS)
    monkeypatch.setattr(TwoPL, "nuts_settings", {"warmup": 20, "samples": 12,
                                                 "target_accept": 0.85}, raising=False)
    d = fit(TwoPL(), table, method="nuts", chains=1, seed=0, max_tree_depth=3).diagnostics
    assert (d["warmup"], d["samples"], d["target_accept"]) == (20, 12, 0.85)
    d = fit(TwoPL(), table, method="nuts", chains=1, seed=0, max_tree_depth=3, samples=7,
            target_accept=0.8).diagnostics  # what is given wins
    assert (d["warmup"], d["samples"], d["target_accept"]) == (20, 7, 0.8)


def test_the_model_s_settings_have_one_home():
    """The sampler settings live in the model's declaration: the preset and its command leave
    them unset (None), so the model's nuts_settings fill them wherever the fit is asked for."""
    import inspect

    from platinum_jax.cli import build_parser
    from platinum_jax.models.rosetta import RosettaBayes
    from platinum_jax.stitching import fit_stitching_bayes

    defaults = inspect.signature(fit_stitching_bayes).parameters
    assert all(defaults[k].default is None for k in RosettaBayes.nuts_settings
               if k in defaults)
    argv = ["stitch-bayes", "d.csv", "--out", "o"]
    args = vars(build_parser([argv[0]]).parse_args(argv))
    assert all(args[k] is None for k in RosettaBayes.nuts_settings if k in args)
