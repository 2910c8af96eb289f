"""The protocol's sampling declarations (per-item likelihood parameters with known standard
errors, hierarchical priors, a reparameterisation) against log densities written in SciPy."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pandas as pd
import pytest
import scipy.stats as st
from numpyro.infer.util import log_density

from platinum_jax.data import ResponseTable
from platinum_jax.inference import Problem, fit_map, numpyro_model
from platinum_jax.inference._bayes_model import posterior_values
from platinum_jax.models import (
    Hierarchical,
    Likelihood,
    MeasurementModel,
    Param,
    Reparameterisation,
)

jax.config.update("jax_enable_x64", True)


class _NoisyNormal(Likelihood):
    """Per-item log noise around a common level; standard errors added in variance."""

    name: ClassVar[str] = "noisy_normal"
    reads_se: ClassVar[bool] = True
    centred: int = 3

    def params(self):
        return {"level": Param(init=-1.0, prior=dist.Normal(-1.0, 1.0)),
                "spread": Param(init=0.5, prior=dist.LogNormal(np.log(0.5), 0.5))}

    def item_params(self):
        return {"log_sigma": Param(prior=Hierarchical("level", "spread", centred=self.centred))}

    def _sd(self, theta):
        return jnp.sqrt(jnp.exp(2 * theta["log_sigma"]) + theta["se"] ** 2)

    def log_prob(self, y, mu, trials, theta):
        return jax.scipy.stats.norm.logpdf(y, mu, self._sd(theta))

    def sample(self, key, mu, trials, theta):
        return mu + self._sd(theta) * jax.random.normal(key, jnp.shape(mu))


class _Standardised(Reparameterisation):
    n: int
    replaces: ClassVar[tuple[str, ...]] = ("ability",)

    def sites(self):
        return {"mu": dist.Normal(0.0, 1.0), "tau": dist.HalfNormal(1.0),
                "z": dist.Normal(0.0, 1.0).expand([self.n]).to_event(1)}

    def parameters(self, values):
        return {"ability": values["mu"] + values["tau"] * values["z"], "tau": values["tau"]}


class _Toy(MeasurementModel):
    """mean = ability_s - easiness_i, abilities sampled standardised when ``standardise``."""

    likelihood: Likelihood = _NoisyNormal()
    standardise: bool = True
    name: ClassVar[str] = "toy"

    def subject_params(self):
        return {"ability": Param(prior=dist.Normal(0.0, 2.0))}

    def item_params(self):
        return {"easiness": Param(prior=dist.Normal(0.0, 1.0))}

    def mean(self, subject, item, glob):
        return subject["ability"] + item["easiness"]

    def reparameterise(self, table):
        return _Standardised(n=table.n_subjects) if self.standardise else None


def _table(with_se=True):
    # item "a": 4 responses (centred with centred=3), item "b": 2 (non-centred)
    frame = pd.DataFrame({
        "subject": ["s0", "s1", "s2", "s3", "s0", "s1"],
        "item": ["a", "a", "a", "a", "b", "b"],
        "response": [0.3, -0.2, 1.1, 0.4, 0.9, -0.5],
    })
    if with_se:
        frame["se"] = [0.1, 0.0, 0.2, 0.0, 0.3, 0.0]  # 0: no known error
    return ResponseTable.from_frame(frame)


def test_log_density_of_all_three_declarations_matches_scipy():
    table = _table()
    problem = Problem(_Toy(), table)
    model = numpyro_model(problem)
    point = {"level": -0.7, "spread": 0.6, "mu": 0.2, "tau": 0.8,
             "z": np.array([0.5, -1.0, 0.3, 1.2]), "easiness": np.array([0.1, -0.4]),
             "log_sigma": np.array([-0.9, 0.7])}  # a: log sigma itself; b: standardised offset
    ours, trace = log_density(model, (problem.data(),), {}, point)

    ability = point["mu"] + point["tau"] * point["z"]
    log_sigma = np.array([-0.9, point["level"] + point["spread"] * 0.7])
    se = np.nan_to_num(table.se)
    sd = np.sqrt(np.exp(2 * log_sigma[table.item_index]) + se**2)
    mean = ability[table.subject_index] + point["easiness"][table.item_index]
    expected = (
        st.norm.logpdf(point["level"], -1.0, 1.0)
        + st.lognorm.logpdf(point["spread"], 0.5, scale=0.5)
        + st.norm.logpdf(point["mu"]) + st.halfnorm.logpdf(point["tau"])
        + st.norm.logpdf(point["z"]).sum() + st.norm.logpdf(point["easiness"]).sum()
        + st.norm.logpdf(-0.9, point["level"], point["spread"])  # centred entry
        + st.norm.logpdf(0.7)  # non-centred entry
        + st.norm.logpdf(table.response, mean, sd).sum()
    )
    assert float(ours) == pytest.approx(expected, rel=1e-10)
    # the reparameterisation's outputs are recorded; the replaced prior is not used
    assert np.allclose(trace["ability"]["value"], ability)
    assert "tau" in trace and trace["tau"]["type"] == "sample"


def test_posterior_values_decode_non_centred_entries_and_keep_fixed_ones():
    table = _table()
    problem = Problem(_Toy(), table)
    draws = {"level": np.array([0.0, 1.0]), "spread": np.array([2.0, 0.5]),
             "mu": np.array([0.0, 1.0]), "tau": np.array([1.0, 2.0]),
             "z": np.ones((2, 4)), "easiness": np.zeros((2, 2)),
             "log_sigma": np.array([[0.3, 1.0], [0.3, 1.0]])}
    theta, extras = posterior_values(problem, draws)
    items = problem.item.unflatten(theta.items)
    # b is non-centred: level + spread * 1.0; a centred: 0.3 as sampled
    assert np.allclose(items["log_sigma"][:, 1], [2.0, 1.5])
    assert np.allclose(items["log_sigma"][:, 0], 0.3)
    assert np.allclose(extras["ability"], [[1.0] * 4, [3.0] * 4])


def test_without_reparameterisation_every_parameter_is_its_own_site():
    problem = Problem(_Toy(standardise=False), _table())
    model = numpyro_model(problem)
    trace = jax.tree_util.tree_map(lambda x: x, {})
    from numpyro import handlers

    trace = handlers.trace(handlers.seed(model, 0)).get_trace(problem.data())
    # one site per parameter, named as the parameter
    assert {"ability", "easiness", "log_sigma", "level", "spread", "y"} <= set(trace)
    assert trace["y"]["is_observed"]


def test_map_refuses_to_drop_known_standard_errors():
    with pytest.raises(ValueError, match="se column"):
        fit_map(_Toy(standardise=False), _table(with_se=True))


def test_bad_centred_choice_is_rejected():
    with pytest.raises(ValueError, match="centred"):
        Hierarchical("level", "spread", centred=-1)
