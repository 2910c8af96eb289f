"""One vocabulary across the engine and the stitching presets: diagnostics keys, likelihood
names and the chain policy (old names still read, with a DeprecationWarning)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from platinum_jax._names import BAYES_LIKELIHOOD_CHOICES as ACCEPTED_NAMES
from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS
from platinum_jax._names import check_bayes_likelihood as check_likelihood
from platinum_jax.inference import (
    DIAGNOSTIC_KEYS,
    Diagnostics,
    canonical_diagnostics,
    choose_chain_method,
    sampler_diagnostics,
)
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
    d = sampler_diagnostics(_summary(), 2, chains=4, samples=500, chain_method="vectorized",
                            seconds=1.5)
    assert set(d) == set(DIAGNOSTIC_KEYS)
    assert d["divergences"] == 2 and d["rhat_max"] == 1.03
    assert d["worst_rhat_parameter"] == "D[b]"
    assert (d["ess_bulk_min"], d["worst_ess_bulk_parameter"]) == (350.0, "D[b]")
    assert (d["ess_tail_min"], d["worst_ess_tail_parameter"]) == (390.0, "tau")
    one = sampler_diagnostics(_summary(), 0, chains=1, samples=500, chain_method="parallel",
                              seconds=1.0)
    assert one["rhat_max"] == "unavailable with one chain" and one["worst_rhat_parameter"] is None
    json.dumps(d)  # written to fit.json as a plain dict


def test_old_keys_read_with_a_deprecation_warning():
    d = sampler_diagnostics(_summary(), 2, chains=4, samples=500, chain_method="vectorized",
                            seconds=1.5)
    for old, new in OLD_TO_NEW.items():
        assert old in d
        with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated; read '{new}'"):
            assert d[old] == d[new]
        with pytest.warns(DeprecationWarning):
            assert d.get(old) == d[new]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert d["rhat_max"] == 1.03  # the new names read silently
    # A file written with the old names reads back under the new ones.
    old_file = {"n_divergent": 3, "max_r_hat": 1.2, "wall_s": 9.0, "other": "kept"}
    back = canonical_diagnostics(json.loads(json.dumps(old_file)))
    assert isinstance(back, Diagnostics)
    assert dict(back) == {"divergences": 3, "rhat_max": 1.2, "seconds": 9.0, "other": "kept"}


def test_one_chain_policy(monkeypatch):
    import jax

    monkeypatch.setattr(jax, "local_device_count", lambda: 1)
    assert choose_chain_method(1) == "parallel"
    assert choose_chain_method(4) == "vectorized"
    monkeypatch.setattr(jax, "local_device_count", lambda: 4)
    assert choose_chain_method(4) == "parallel"


def test_one_likelihood_name():
    assert "beta_binomial" in LIKELIHOODS and "betabinomial" not in LIKELIHOODS
    assert "betabinomial" in ACCEPTED_NAMES  # the command line still parses it
    assert BetaBinomial.name == "beta_binomial"
    from platinum_jax.models.rosetta_bayes import ItemBetaBinomial

    assert ItemBetaBinomial.name == "beta_binomial"
    with pytest.warns(DeprecationWarning, match="'betabinomial' is deprecated; use 'beta_binomial'"):
        assert check_likelihood("betabinomial") == "beta_binomial"
    with pytest.warns(DeprecationWarning, match="betabinomial"):
        model = make_model("2pl", likelihood="betabinomial")
    assert isinstance(model.likelihood, BetaBinomial)
    with pytest.raises(ValueError, match="likelihood must be one of"):
        check_likelihood("beta-binomial")
