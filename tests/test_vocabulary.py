"""One vocabulary across the engine and the stitching presets: diagnostics keys, likelihood
names and the chain policy; old names are refused, not translated."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood
from platinum_jax.inference import DIAGNOSTIC_KEYS, choose_chain_method
from platinum_jax.inference._diagnostics import sampler_diagnostics
from platinum_jax.models import BetaBinomial, make_model

OLD_TO_NEW = {  # written out here, not read from the package
    "n_divergent": "divergences", "max_r_hat": "rhat_max", "min_ess_bulk": "ess_bulk_min",
    "min_ess_tail": "ess_tail_min", "worst_r_hat": "worst_rhat_parameter",
    "worst_ess_bulk": "worst_ess_bulk_parameter", "worst_ess_tail": "worst_ess_tail_parameter",
    "n_chains": "chains", "n_draws": "samples", "wall_s": "seconds",
}


def _summary():
    return pd.DataFrame({"r_hat": [1.002, 1.03, np.nan], "ess_bulk": [900.0, 350.0, 1200.0],
                         "ess_tail": [800.0, 700.0, 390.0]}, index=["C[a]", "D[b]", "tau"])


def test_sampler_diagnostics_keys_and_values():
    d = sampler_diagnostics(_summary(), 2, chains=4, samples=500, chain_method="vmap",
                            seconds=1.5)
    assert set(d) == set(DIAGNOSTIC_KEYS)
    assert d["divergences"] == 2 and d["rhat_max"] == 1.03
    assert d["worst_rhat_parameter"] == "D[b]"
    assert (d["ess_bulk_min"], d["worst_ess_bulk_parameter"]) == (350.0, "D[b]")
    assert (d["ess_tail_min"], d["worst_ess_tail_parameter"]) == (390.0, "tau")
    one = sampler_diagnostics(_summary(), 0, chains=1, samples=500, chain_method="threads",
                              seconds=1.0)
    assert one["rhat_max"] == "unavailable with one chain" and one["worst_rhat_parameter"] is None
    json.dumps(d)  # written to fit.json as a plain dict


def test_old_keys_are_gone():
    d = sampler_diagnostics(_summary(), 2, chains=4, samples=500, chain_method="vmap",
                            seconds=1.5)
    assert type(d) is dict  # a plain dict: no translation of old names
    for old in OLD_TO_NEW:
        assert old not in d


def test_one_chain_policy(monkeypatch):
    import jax

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert choose_chain_method(1) == "threads" and choose_chain_method(4) == "threads"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(jax, "local_device_count", lambda: 1)
    assert choose_chain_method(4) == "vmap"
    monkeypatch.setattr(jax, "local_device_count", lambda: 4)
    assert choose_chain_method(4) == "pmap"
    with pytest.raises(ValueError, match="chains"):
        choose_chain_method(0)


def test_one_likelihood_name():
    assert "beta_binomial" in LIKELIHOODS and "betabinomial" not in LIKELIHOODS
    assert BetaBinomial.name == "beta_binomial"
    from platinum_jax.models.rosetta import ItemBetaBinomial

    assert ItemBetaBinomial.name == "beta_binomial"
    for old in ("betabinomial", "beta-binomial"):  # one spelling: the old one is refused
        with pytest.raises(ValueError, match="likelihood must be one of"):
            check_likelihood(old)
        with pytest.raises(ValueError, match="unknown likelihood"):
            make_model("2pl", likelihood=old)
