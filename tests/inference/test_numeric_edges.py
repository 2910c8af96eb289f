"""Numerical edges of v* = (M + rΣ)⁻¹Mw: scale-free checks, precision warnings, overflow.

Expected values come from NumPy solves in float64 or from closed forms.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import platinum_jax as pj

M0 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.7]])
S0 = np.array([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 0.8]])
W0 = np.array([1.0, 0.3, -0.2])


def _numpy_weights(M, S, w, r):
    return np.linalg.solve(M + r * S, M @ w)


def _silent(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return np.asarray(fn(*args))


@pytest.mark.parametrize("scale", [1e-12, 1.0, 1e12, 1e150])
def test_weights_are_scale_free_and_so_are_the_checks(scale):
    # v* is unchanged when M and Sigma are multiplied by one factor (float64 here)
    v = _silent(pj.agency.optimal_weights, scale * M0, scale * S0, W0, 1.5)
    np.testing.assert_allclose(v, _numpy_weights(M0, S0, W0, 1.5), rtol=1e-12)


def test_tiny_matrices_are_judged_on_their_own_scale():
    M = 1e-9 * np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3e-9 and -1e-9: indefinite
    with pytest.raises(ValueError, match="M is not positive semi-definite: smallest eigenvalue -1e-09"):
        pj.agency.optimal_weights(M, np.eye(2), np.ones(2), 1.0)
    asym = 1e-12 * np.array([[1.0, 0.5], [0.4, 1.0]])  # 10% asymmetric, however small
    with pytest.raises(ValueError, match="Sigma is not symmetric"):
        pj.agency.optimal_weights(np.eye(2), asym, np.ones(2), 1.0)
    with pytest.raises(ValueError, match="Sigma is not positive definite"):
        pj.agency.optimal_weights(np.eye(2), 1e-12 * np.diag([1.0, -1e-6]), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="not unique"):  # exactly singular, at any scale
        pj.agency.optimal_weights(1e-12 * np.diag([1.0, 0.0]), 1e-12 * np.eye(2), np.ones(2), 0.0)


def test_ill_conditioned_but_valid_input_passes_with_a_precision_warning():
    # cond(Sigma) = cond(M + r Sigma) = 1e12: valid, solvable, worth a warning in float64;
    # closed form v* = w / (1 + r) because M and Sigma are equal diagonal matrices.
    D = np.diag([1.0, 1e-6, 1e-12])
    with pytest.warns(RuntimeWarning, match=r"condition number 1e\+12.*float64"):
        v = np.asarray(pj.agency.optimal_weights(D, D, W0, 0.5))
    np.testing.assert_allclose(v, W0 / 1.5, rtol=1e-3)
    pj.agency.validate_primitives(Sigma=D, C=D)  # the eigenvalue checks alone do not object


def test_float32_warns_where_its_answer_is_meaningless():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    M = (Q * np.geomspace(1.0, 1e-8, 5)) @ Q.T
    M = (M + M.T) / 2
    w, S, r = np.ones(5), np.eye(5), 1e-12
    truth = _numpy_weights(M, S, w, r)
    with pytest.warns(RuntimeWarning, match="in float32 .* enable float64"):
        v32 = np.asarray(pj.agency.optimal_weights(M.astype(np.float32), S.astype(np.float32),
                                            w.astype(np.float32), r))
    assert v32.dtype == np.float32
    # the warning is earned: float32 misses the float64 answer by a large relative error
    assert np.linalg.norm(v32 - truth) / np.linalg.norm(truth) > 1e-2
    v64 = _silent(pj.agency.optimal_weights, M, S, w, 0.5)  # well conditioned at r = 0.5: quiet
    np.testing.assert_allclose(v64, _numpy_weights(M, S, w, 0.5), rtol=1e-10)


def test_overflow_is_named_not_mistaken_for_singularity():
    with jax.enable_x64(False):  # JAX's default: float64 NumPy input is computed in float32
        with pytest.raises(ValueError, match=r"M has entries of size 2e\+150, beyond the largest "
                                             r"float32 .* enable float64"):
            pj.agency.optimal_weights(1e150 * M0, 1e150 * S0, W0, 1.0)
        with pytest.raises(ValueError, match=r"A has entries of size 1e\+40, beyond the largest float32"):
            pj.agency.Primitives(np.full((3, 2), 1e40), np.eye(2), np.eye(3), np.ones(3), 1.0)
        v = _silent(pj.agency.optimal_weights, 1e30 * M0, 1e30 * S0, W0, 1.0)  # in range: fine
        np.testing.assert_allclose(v, _numpy_weights(M0, S0, W0, 1.0), rtol=1e-5)
    with pytest.raises(ValueError, match="M w has entries of size .* beyond the largest float64"):
        pj.agency.optimal_weights(1e300 * np.eye(3), np.eye(3), 1e10 * np.ones(3), 1.0)
