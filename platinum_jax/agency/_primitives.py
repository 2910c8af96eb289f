"""A pytree holding the primitives (A, C, Σ, w, r) of one benchmark-design problem."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from platinum_jax._validation import check_range, is_concrete, validate_primitives
from platinum_jax.agency._core import (
    effort_cost,
    lab_best_response,
    optimal_weights,
    optimal_welfare,
    output_cost,
    welfare,
)

__all__ = ["Primitives"]


class Primitives(eqx.Module):
    """Effectiveness ``A`` (m, n), cost ``C`` (n, n), noise ``Σ`` (m, m), welfare ``w`` (m,), ``r``.

    An ``eqx.Module``, hence a pytree: stack instances with ``jax.tree.map(jnp.stack, ...)`` and
    ``jax.vmap`` over them.  ``M = AC⁻¹Aᵀ`` is derived on access.  Construction validates
    concrete inputs (:func:`platinum_jax.agency.validate_primitives`).
    """

    A: Float[Array, "m n"]
    C: Float[Array, "n n"]
    Sigma: Float[Array, "m m"]
    w: Float[Array, " m"]
    r: Float[Array, ""]

    def __init__(self, A: ArrayLike, C: ArrayLike, Sigma: ArrayLike, w: ArrayLike,
                 r: ArrayLike = 1.0, *, validate: bool = True):
        dtype = jnp.result_type(A, C, Sigma, w, float)
        if validate and is_concrete(A, C, Sigma, w, r):
            validate_primitives(A=A, C=C, Sigma=Sigma, w=w, r=r)
            # float32 (JAX's default) turns entries above 3.4e38 into inf without a word.
            for name, x in (("A", A), ("C", C), ("Sigma", Sigma), ("w", w), ("r", r)):
                check_range(name, np.asarray(x, np.float64), dtype)
        self.A = jnp.asarray(A, dtype)
        self.C = jnp.asarray(C, dtype)
        self.Sigma = jnp.asarray(Sigma, dtype)
        self.w = jnp.asarray(w, dtype)
        self.r = jnp.asarray(r, dtype)

    @classmethod
    def from_output_cost(cls, M: ArrayLike, Sigma: ArrayLike, w: ArrayLike,
                         r: ArrayLike = 1.0) -> Primitives:
        """Primitives with the given ``M``: ``C = I`` and ``A`` the symmetric square root of ``M``.

        Only ``M`` matters for weights and welfare, so this is the natural constructor when the
        activity space is unknown.  Eigenvalues of ``M`` within rounding of zero are set to zero.
        """
        validate_primitives(M=M, Sigma=Sigma, w=w, r=r)
        M = jnp.asarray(M, jnp.result_type(M, float))
        lam, Q = jnp.linalg.eigh(M)
        A = (Q * jnp.sqrt(jnp.maximum(lam, 0.0))) @ Q.T
        return cls(A, jnp.eye(M.shape[0], dtype=M.dtype), Sigma, w, r)

    @property
    def m(self) -> int:
        """Number of benchmark tasks (items)."""
        return self.A.shape[-2]

    @property
    def n(self) -> int:
        """Number of improvement activities."""
        return self.A.shape[-1]

    @property
    def M(self) -> Float[Array, "m m"]:
        """Output-level cost structure ``M = AC⁻¹Aᵀ``."""
        return output_cost(self.A, self.C)

    def optimal_weights(self) -> Float[Array, " m"]:
        """``v* = (M + rΣ)⁻¹Mw``."""
        return optimal_weights(self.M, self.Sigma, self.w, self.r)

    def welfare(self, v: ArrayLike | None = None) -> Float[Array, ""]:
        """``W(v)``; at the optimum when ``v`` is omitted."""
        if v is None:
            return optimal_welfare(self.M, self.Sigma, self.w, self.r)
        return welfare(v, self.M, self.Sigma, self.w, self.r)

    def effort_cost(self, v: ArrayLike | None = None) -> Float[Array, ""]:
        """Lab's effort cost ``½vᵀMv`` (at ``v*`` when ``v`` is omitted)."""
        return effort_cost(self.optimal_weights() if v is None else v, self.M)

    def best_response(self, v: ArrayLike | None = None) -> Float[Array, " n"]:
        """Lab's effort ``a*(v) = C⁻¹Aᵀv`` (at ``v*`` when ``v`` is omitted)."""
        return lab_best_response(self.optimal_weights() if v is None else v, self.A, self.C)
