"""The compiled scalar searches behind loss-rise intervals, against closed forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from platinum_jax.inference import first_crossing, golden_minimum, loss_rise_shifts


def test_first_crossing_finds_the_root_or_reports_inf():
    # d^2 - 7 crosses 0 at sqrt(7), beyond the first bracket [0, 0.05]: the bracket must grow
    got = first_crossing(lambda d: d**2 - 7.0, jnp.asarray(0.05), jnp.asarray(50.0))
    assert float(got) == pytest.approx(np.sqrt(7.0), abs=1e-10)
    # a loss that saturates below the level never reaches it: inf, not the cap
    never = first_crossing(lambda d: 1.0 - jnp.exp(-d) - 2.0, jnp.asarray(0.05), jnp.asarray(50.0))
    assert np.isinf(float(never))
    # vmapped over levels: roots sqrt(c)
    levels = jnp.asarray([0.5, 2.0, 30.0])
    roots = jax.vmap(lambda c: first_crossing(lambda d: d**2 - c, jnp.asarray(0.05),
                                              jnp.asarray(50.0)))(levels)
    np.testing.assert_allclose(np.asarray(roots), np.sqrt([0.5, 2.0, 30.0]), atol=1e-10)


def test_golden_minimum_on_a_bounded_range():
    got = golden_minimum(lambda x: (x - 3.2) ** 2 + 1.0, jnp.asarray(0.01), jnp.asarray(20.0))
    # comparing losses locates a minimum only to about sqrt(machine epsilon)
    assert float(got) == pytest.approx(3.2, abs=1e-7)
    # a minimum outside the range: the search ends at the nearer bound
    edge = golden_minimum(lambda x: (x + 1.0) ** 2, jnp.asarray(0.01), jnp.asarray(20.0))
    assert float(edge) == pytest.approx(0.01, abs=1e-8)


def test_loss_rise_shifts_against_the_quartic_closed_form():
    # F(theta) = 1 + sum_j a_j theta_j^2 + theta_j^4 at theta = 0: F rises by r where
    # a_j d^2 + d^4 = r, d^2 = (-a_j + sqrt(a_j^2 + 4 r)) / 2; the start is sqrt(2 r F / H_jj)
    a, rise = np.array([0.5, 2.0, 8.0]), 0.3

    def objective(theta):
        return 1.0 + jnp.sum(a * theta**2 + theta**4)

    d0, minus, plus = loss_rise_shifts(objective, jnp.zeros(3), rise, jnp.asarray(50.0))
    want = np.sqrt((-a + np.sqrt(a**2 + 4 * rise)) / 2)
    np.testing.assert_allclose(np.asarray(plus), want, atol=1e-10)
    np.testing.assert_allclose(np.asarray(minus), want, atol=1e-10)  # F is even in each theta_j
    np.testing.assert_allclose(np.asarray(d0), np.sqrt(2 * rise / (2 * a)), rtol=1e-12)
