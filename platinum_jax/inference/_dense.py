"""Small dense linear algebra of the MAP solver: the nearest positive semi-definite matrix of a
row's curvature, and a Cholesky solve that stays inside XLA for small systems."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve


def _psd(h):
    """Nearest positive semi-definite matrix (eigenvalues floored at 0); scalar fast path."""
    if h.shape == (1, 1):
        return jnp.maximum(h, 0.0)
    w, v = jnp.linalg.eigh(h)
    return (v * jnp.maximum(w, 0.0)) @ v.T


_SMALL = 128  # dense systems up to this size are solved without LAPACK (see _spd_solve)


def _small_cholesky(a):
    """Lower Cholesky factor of a small symmetric positive definite matrix, column by column in
    XLA (NaN where ``a`` is not positive definite, as LAPACK's factor is reported)."""
    n = a.shape[0]
    idx = jnp.arange(n)

    def column(j, L):
        lj = jnp.where(idx < j, L[j], 0.0)  # row j of the factor, left of the diagonal
        d = jnp.sqrt(a[j, j] - lj @ lj)
        c = (a[:, j] - L @ lj) / d
        return L.at[:, j].set(jnp.where(idx > j, c, jnp.where(idx == j, d, 0.0)))

    return jax.lax.fori_loop(0, n, column, jnp.zeros_like(a))


def _small_cho_solve(L, b):
    n = L.shape[0]
    idx = jnp.arange(n)

    def forward(j, y):
        return y.at[j].set((b[j] - jnp.where(idx < j, L[j], 0.0) @ y) / L[j, j])

    def backward(k, x):
        j = n - 1 - k
        return x.at[j].set((y[j] - jnp.where(idx > j, L[:, j], 0.0) @ x) / L[j, j])

    y = jax.lax.fori_loop(0, n, forward, jnp.zeros_like(b))
    return jax.lax.fori_loop(0, n, backward, jnp.zeros_like(b))


def _spd_solve(a, b):
    """Solve ``a x = b`` for symmetric positive definite ``a`` by Cholesky (NaN if ``a`` is not).

    Up to ``_SMALL`` unknowns the factorisation runs in XLA itself: a compiled program without
    LAPACK calls then loads without LAPACK's set-up (about 0.2 s, which imports SciPy's linear
    algebra), which is most of the start-up of a small fit. Larger systems use LAPACK."""
    if a.shape[0] <= _SMALL:
        return _small_cho_solve(_small_cholesky(a), b)
    return cho_solve((jnp.linalg.cholesky(a), True), b)
