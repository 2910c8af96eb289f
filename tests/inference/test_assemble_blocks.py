"""A Bayesian fit's sampled sites become the parameter blocks the likelihood reads: by their
columns side by side when they cover the block in whole columns, by a scatter otherwise. Both
give NumPy's placement, values and gradients alike."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from platinum_jax.inference._bayes_model import _fill


def _columns(rows, width, a, b):
    return (np.arange(rows)[:, None] * width + np.arange(a, b)[None]).ravel()


CASES = {
    # (block shape, [positions of each site])
    "two whole columns": ((7, 2), [_columns(7, 2, 0, 1), _columns(7, 2, 1, 2)]),
    "columns given in reverse": ((7, 3), [_columns(7, 3, 1, 3), _columns(7, 3, 0, 1)]),
    "a column left fixed": ((7, 2), [_columns(7, 2, 1, 2)]),
    "an entity left fixed": ((7, 2), [np.r_[0:10, 12:14]]),
    "a flat block": ((9,), [np.arange(9)]),
    "part of a flat block": ((9,), [np.r_[0, 3, 4, 8]]),
}


COVERING = {"two whole columns", "columns given in reverse", "a flat block"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_blocks_equal_numpy_placement(name):
    shape, sites = CASES[name]
    rng = np.random.default_rng(len(name))
    with jax.enable_x64(True):
        start = rng.normal(size=int(np.prod(shape)))
        values = [rng.normal(size=len(pos)) for pos in sites]
        want = start.copy()
        for pos, v in zip(sites, values, strict=True):
            want[pos] = v
        got = _fill(jnp.asarray(start), shape,
                    [(pos, jnp.asarray(v)) for pos, v in zip(sites, values, strict=True)])
        np.testing.assert_array_equal(np.asarray(got), want)
        w = rng.normal(size=want.size)
        grads = jax.grad(lambda vs: jnp.sum(w * _fill(jnp.asarray(start), shape, list(
            zip(sites, vs, strict=True)))))([jnp.asarray(v) for v in values])
        for pos, g in zip(sites, grads, strict=True):
            np.testing.assert_array_equal(np.asarray(g), w[pos])
        # sites that cover the block in whole columns build it without a scatter
        jaxpr = str(jax.make_jaxpr(lambda vs: _fill(jnp.asarray(start), shape, list(
            zip(sites, vs, strict=True))))([jnp.asarray(v) for v in values]))
        assert ("scatter" in jaxpr) == (name not in COVERING), jaxpr
