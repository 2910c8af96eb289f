"""Multidimensional item response theory: K abilities per subject, a loading vector per item.

``P(correct) = sigmoid(a_i . theta_s - d_i)`` with abilities ``theta_s ~ N(0, I_K)``, loadings
``a_i`` (K,) and an intercept ``d_i`` per item. With ``K = 1`` it is the 2PL with ``d_i = a_i
b_i``. The likelihood is unchanged by any rotation of the abilities (``theta -> R theta``,
``a -> R a``); the fit pins it by fixing the loadings above the diagonal of the first ``K - 1``
items to zero (item ``j`` loads only on abilities ``0..j``), and :func:`varimax` rotates a fitted
loading matrix to a readable solution (each item loading mostly on one ability).
"""

from __future__ import annotations

from typing import ClassVar

import jax
import numpy as np

from ._likelihoods import Bernoulli
from ._protocol import Fixed, Identification, Likelihood, MeasurementModel, Param, PriorSpec

__all__ = ["MultidimensionalTwoPL", "varimax"]


class MultidimensionalTwoPL(MeasurementModel):
    """``P = sigmoid(a_i . theta_s - d_i)`` with ``dims`` abilities (default 2)."""

    dims: int = 2
    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "mirt"

    def __check_init__(self):
        if int(self.dims) < 1:
            raise ValueError(f"dims must be >= 1 (got {self.dims})")

    def subject_params(self):
        return {"ability": Param(shape=(self.dims,), prior=PriorSpec("Normal", 0.0, 1.0),
                                 doc="abilities theta_s (K,)")}

    def item_params(self):
        return {
            "intercept": Param(prior=PriorSpec("Normal", 0.0, 3.0), doc="intercept d_i"),
            "loading": Param(shape=(self.dims,), init=0.5, prior=PriorSpec("Normal", 0.0, 1.5),
                             doc="loadings a_i (K,)"),
        }

    def mean(self, subject, item, glob):
        return jax.nn.sigmoid(item["loading"] @ subject["ability"] - item["intercept"])

    def identify(self, table) -> Identification:
        k = self.dims
        n = table.n_items
        if n < k:
            raise ValueError(f"a {k}-dimensional model needs at least {k} items (got {n})")
        mask = np.zeros((n, k), dtype=bool)
        for j in range(k - 1):
            mask[j, j + 1:] = True  # item j loads only on abilities 0..j
        return Identification(
            item={"loading": Fixed(mask, np.zeros((n, k)))},
            description=f"loadings above the diagonal of the first {k - 1} item(s) fixed at 0",
        )

    def describe(self):
        return {**super().describe(), "dims": int(self.dims)}


def varimax(loadings: np.ndarray, *, tol: float = 1e-10, max_iter: int = 500) -> np.ndarray:
    """Orthogonal rotation ``R`` (K, K) maximising the variance of squared loadings (Kaiser's
    varimax); rotate loadings as ``A @ R`` and abilities as ``theta @ R``.

    Uses the singular-value iteration for the rotation; the criterion never decreases.
    """
    a = np.asarray(loadings, dtype=np.float64)
    n, k = a.shape
    rot = np.eye(k)
    crit = 0.0
    for _ in range(max_iter):
        lam = a @ rot
        grad = a.T @ (lam**3 - lam @ np.diag(np.sum(lam**2, axis=0)) / n)
        u, s, vt = np.linalg.svd(grad)
        rot = u @ vt
        new = float(np.sum(s))
        if new < crit * (1 + tol):
            break
        crit = new
    return rot
