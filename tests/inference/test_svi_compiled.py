"""The SVI fit runs compiled: a handful of programs, not one per operation, and a start with
no finite log density is refused with a clear error."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from platinum_jax.inference._svi import run_svi


class _Compilations(logging.Handler):
    """Counts the programs JAX compiles (or loads from the cache) while installed."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Compiling "):
            self.names.append(message.split()[1])

    def __enter__(self):
        self._logger = logging.getLogger("jax")
        self._level = self._logger.level
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        self._log = jax.config.jax_log_compiles
        jax.config.update("jax_log_compiles", True)
        return self

    def __exit__(self, *exc):
        jax.config.update("jax_log_compiles", self._log)
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)


def _known_noise(y):
    loc = numpyro.sample("loc", dist.Normal(0.0, 1.0).expand([7]).to_event(1))
    numpyro.sample("y", dist.Normal(loc[:, None], 1.0).to_event(2), obs=y)


def test_compiled_svi_is_one_program_and_fits_a_normal_mean():
    from numpyro.infer.autoguide import AutoNormal

    y = jnp.asarray(np.random.default_rng(2).normal(3.0, 1.0, size=(7, 13)))
    args = dict(steps=1500, draws=400, rng_key=jax.random.PRNGKey(0),
                posterior_key=jax.random.PRNGKey(1))
    with _Compilations() as seen:
        draws, losses = run_svi(_known_noise, lambda m, _: AutoNormal(m),
                                numpyro.optim.Adam(0.02), y, compiled=True, **args)
    assert seen.names == ["jit(fit)"], seen.names
    assert losses.shape == (1500,) and np.isfinite(np.asarray(losses)).all()
    # The conjugate posterior of each location, which the mean-field guide can match exactly:
    # Normal(13 ybar / 14, 1 / sqrt(14)). Allowed: four standard errors of the mean of 400
    # draws, and 0.02 for the optimiser's last steps.
    sd = 1 / np.sqrt(14)
    post = np.asarray(draws["loc"])
    np.testing.assert_allclose(post.mean(axis=0), np.asarray(y).mean(axis=1) * 13 / 14,
                               atol=4 * sd / np.sqrt(400) + 0.02)
    np.testing.assert_allclose(post.std(axis=0), sd, rtol=0.25)


def test_svi_sets_up_compiled_and_draws_the_same_posterior():
    """The default path: the guide's set-up, NumPyro's loop and the draws are three programs
    (not one per operation), on the same random streams as the one-program fit."""
    from numpyro.infer.autoguide import AutoNormal

    # The shapes, steps and draws of the test above, so its one-program fit is reused here.
    y = jnp.asarray(np.random.default_rng(3).normal(-1.0, 1.0, size=(7, 13)))
    args = dict(steps=1500, draws=400, rng_key=jax.random.PRNGKey(4),
                posterior_key=jax.random.PRNGKey(5))
    with _Compilations() as seen:
        draws, losses = run_svi(_known_noise, lambda m, _: AutoNormal(m),
                                numpyro.optim.Adam(0.02), y, **args)
    # (and NumPyro's map of the fitted scales to positive values, one operation)
    assert seen.names[:2] == ["jit(set_up)", "jit(scan)"] and seen.names[-1] == "jit(sample)"
    assert len(seen.names) <= 4, seen.names
    whole, whole_losses = run_svi(_known_noise, lambda m, _: AutoNormal(m),
                                  numpyro.optim.Adam(0.02), y, compiled=True, **args)
    np.testing.assert_allclose(np.asarray(losses), np.asarray(whole_losses), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(draws["loc"]), np.asarray(whole["loc"]), rtol=1e-9)


def test_svi_refuses_a_start_without_finite_density():
    from numpyro.infer import init_to_value
    from numpyro.infer.autoguide import AutoNormal

    def half(y):
        s = numpyro.sample("s", dist.HalfNormal(1.0))
        numpyro.factor("nowhere", jnp.where(s > 1e9, 0.0, -jnp.inf))

    with pytest.raises(RuntimeError, match="SVI found no start where the model's log density"):
        run_svi(half, lambda m, _: AutoNormal(m, init_loc_fn=init_to_value(values={"s": 1.0})),
                numpyro.optim.Adam(0.02), jnp.zeros(3), steps=5, draws=5,
                rng_key=jax.random.PRNGKey(0), posterior_key=jax.random.PRNGKey(1))
