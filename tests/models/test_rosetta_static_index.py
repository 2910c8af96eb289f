"""The Bayesian Rosetta coordinates place and read entries at positions fixed by the table
(free capabilities, difficulties and slopes; pooled, centred and offset noise) with slices, small
constant products or, failing those, a scatter. Each form is checked against NumPy's indexing,
values and gradients, on index sets of every shape the helpers tell apart."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from platinum_jax.models.rosetta._reparam import _place, _take, benchmark_means

N = 23
INDEX_SETS = {
    "every entry": np.arange(N),
    "one hole first": np.arange(1, N),
    "one hole inside": np.r_[0:9, 10:N],
    "one hole last": np.arange(N - 1),
    "three runs": np.r_[2:5, 7:8, 12:20],
    "unsorted": np.array([5, 2, 9, 0]),
    "many runs": np.arange(0, N, 2),  # twelve runs of one: the scatter/gather form
    "one entry": np.array([17]),
}


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("name", sorted(INDEX_SETS))
def test_place_and_take_equal_numpy_with_their_gradients(name):
    idx = INDEX_SETS[name]
    rng = np.random.default_rng(len(name))
    fixed = rng.normal(size=N)
    values = rng.normal(size=len(idx))
    want = fixed.copy()
    want[idx] = values
    got = _place(fixed, idx, jnp.asarray(values), jnp.float64)
    np.testing.assert_array_equal(np.asarray(got), want)
    # d/dvalues of sum(w * placed) is w at the placed positions
    w = rng.normal(size=N)
    grad = jax.grad(lambda v: jnp.sum(w * _place(fixed, idx, v, jnp.float64)))(
        jnp.asarray(values))
    np.testing.assert_allclose(np.asarray(grad), w[idx], rtol=0, atol=1e-15)

    x = rng.normal(size=(3, N))
    np.testing.assert_array_equal(np.asarray(_take(jnp.asarray(x), idx, axis=-1)), x[:, idx])
    np.testing.assert_array_equal(np.asarray(_take(jnp.asarray(x[0]), idx)), x[0, idx])
    u = rng.normal(size=len(idx))
    grad = jax.grad(lambda v: jnp.sum(u * _take(v, idx)))(jnp.asarray(x[0]))
    want = np.zeros(N)
    np.add.at(want, idx, u)
    np.testing.assert_allclose(np.asarray(grad), want, rtol=0, atol=1e-15)
    # a few increasing runs are slices and constants: no scatter or gather in the program
    slow = name in ("unsorted", "many runs")
    placed = str(jax.make_jaxpr(lambda v: _place(fixed, idx, v, jnp.float64))(values))
    taken = str(jax.make_jaxpr(lambda v: _take(v, idx))(x[0]))
    assert ("scatter" in placed) == slow and ("gather" in taken) == slow, (placed, taken)


def test_per_benchmark_means_equal_numpy_over_the_rows():
    """Row b of the constant matrix averages a per-model vector over benchmark b's rows (a
    model counted once per row; a benchmark without rows gives 0), as the mean over rows of
    the gathered vector does."""
    rng = np.random.default_rng(3)
    n_models, n_bench, n_rows = 11, 5, 40
    mi = rng.integers(0, n_models, n_rows)
    bi = rng.integers(0, n_bench - 1, n_rows)  # the last benchmark has no rows
    z = rng.normal(size=n_models)
    count = np.bincount(bi, minlength=n_bench)
    want = np.bincount(bi, weights=z[mi], minlength=n_bench) / np.maximum(count, 1)
    np.testing.assert_allclose(benchmark_means(bi, mi, n_bench, n_models) @ z, want, rtol=1e-13, atol=1e-15)
    assert want[-1] == 0.0
