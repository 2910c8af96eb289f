"""Sweep axes that replace the primitives' matrices wholesale: random draws of ``A``, ``C``
and/or ``Σ`` from a user's distribution (:class:`RandomPrimitives`, with
:func:`wishart_noise` as a ready sampler) and given stacks of samples, e.g. posterior draws
(:class:`PrimitiveSamples`). A sweep applies these before every other axis.

From Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking
and Platinum Benchmarks", sections 2-3.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from platinum_jax.agency import output_cost

from ._axes import Axis, DenseState
from ._fingerprint import callable_fingerprint

__all__ = ["RandomPrimitives", "PrimitiveSamples", "wishart_noise"]


Sampler = Callable[[Array, DenseState], dict]


class RandomPrimitives(Axis):
    """``n`` random draws of ``A``, ``C`` and/or ``Σ`` from a user distribution.

    ``sample(key, base)`` gets a ``jax.random`` key and the base primitives as a
    :class:`DenseState` (``base.M``, ``base.Sigma``, ``base.w``, ``base.r``; the base ``A`` and
    ``C`` are not passed, so a sampler that needs them closes over them, e.g. ``prims.A``) and
    returns a dict with any of ``"A"``, ``"C"``, ``"Sigma"``.  It is traced inside the compiled
    sweep, so write it with ``jax.numpy``/``jax.random``.  Draw ``i`` uses
    ``jax.random.fold_in(key, i)``, so every grid point is reproducible and independent of the
    chunking.  New ``A`` or ``C`` give ``M = A C⁻¹ Aᵀ`` (Cholesky solves), the missing one taken
    from the base.  Breaks the concept basis, so sweeps with this axis take the general
    (batched-solve) path.  A stored sweep records :func:`callable_fingerprint` of ``sample``
    (code, constants, closure, defaults), so editing the sampler invalidates the store.
    """

    values: Float[Array, " n"]
    key: Array
    sample: Callable = eqx.field(static=True)
    name: str = eqx.field(static=True)
    base_A: Array | None = None
    base_C: Array | None = None
    replaces: ClassVar[bool] = True

    def __init__(self, n: int, key: Array, sample: Callable, *, name: str = "draw",
                 base_A=None, base_C=None):
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"RandomPrimitives({name!r}): n must be a positive integer, got {n!r}")
        if not callable(sample):
            raise ValueError(f"RandomPrimitives({name!r}): sample must be a callable (key, base) -> dict")
        self.values = np.arange(int(n), dtype=np.float64)
        self.key = key
        self.sample = sample
        self.name = name
        self.base_A = base_A
        self.base_C = base_C

    def bind(self, ctx):
        label = f"RandomPrimitives({self.name!r})"
        base = DenseState(ctx.M, ctx.Sigma, ctx.w, np.asarray(ctx.r))
        out = self.sample(jax.random.fold_in(self.key, 0), base)
        if not isinstance(out, dict) or not out:
            raise ValueError(f"{label}: sample must return a non-empty dict with keys A, C or Sigma")
        unknown = set(out) - {"A", "C", "Sigma"}
        if unknown:
            raise KeyError(f"{label}: sample returned unknown key(s) {sorted(unknown)}; use A, C, Sigma")
        m = ctx.M.shape[0]
        if ("A" in out or "C" in out) and (ctx.A is None or ctx.C is None):
            if not ("A" in out and "C" in out):
                raise ValueError(f"{label}: the base has no (A, C); the sampler must draw both")
        from platinum_jax._validation import validate_primitives

        A = np.asarray(out.get("A", ctx.A)) if ("A" in out or "C" in out) else None
        C = np.asarray(out.get("C", ctx.C)) if ("A" in out or "C" in out) else None
        Sig = np.asarray(out["Sigma"]) if "Sigma" in out else None
        try:
            validate_primitives(A=A, C=C, Sigma=Sig)
        except ValueError as exc:
            raise ValueError(f"{label}: the first draw is invalid: {exc}") from exc
        if A is not None and A.shape[0] != m:
            raise ValueError(f"{label}: drawn A has {A.shape[0]} rows, the base has m = {m} items")
        if Sig is not None and Sig.shape != (m, m):
            raise ValueError(f"{label}: drawn Sigma has shape {Sig.shape}, expected ({m}, {m})")
        return RandomPrimitives(len(self.values), self.key, self.sample, name=self.name,
                                base_A=ctx.A, base_C=ctx.C)

    def dense(self, state, value):
        draw = self.sample(jax.random.fold_in(self.key, value.astype(jnp.int32)), state)
        if "A" in draw or "C" in draw:
            state = state._replace(M=output_cost(draw.get("A", self.base_A),
                                                 draw.get("C", self.base_C)))
        if "Sigma" in draw:
            state = state._replace(Sigma=draw["Sigma"])
        return state

    def fingerprint(self):
        key = self.key
        if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        return super().fingerprint() + (np.asarray(key).tobytes(),
                                        callable_fingerprint(self.sample))


@jax.jit
def _stack_defects(stack: Array) -> tuple[Array, Array]:
    """Per matrix of ``stack`` (n, k, k): its largest asymmetry relative to its scale, and
    whether it is positive definite (one compiled pass: no per-sample host round trips)."""
    scale = jnp.maximum(1.0, jnp.abs(stack).max(axis=(1, 2)))
    asym = jnp.abs(stack - jnp.swapaxes(stack, 1, 2)).max(axis=(1, 2)) / scale
    # A failed factorisation comes back as an all-NaN matrix, so its diagonal tells.  The
    # transpose is the column-major operand LAPACK wants, with no strided copy.
    L = jax.lax.linalg.cholesky(jnp.swapaxes(stack, 1, 2), symmetrize_input=False)
    return asym, jnp.isfinite(jnp.diagonal(L, axis1=1, axis2=2)).all(axis=1)


def _check_pd_stack(label: str, stack: Array) -> None:
    """Every matrix of ``stack`` (n, k, k) symmetric and positive definite (one batched check)."""
    if stack.ndim != 3 or stack.shape[1] != stack.shape[2]:
        raise ValueError(f"{label} must be a stack of square matrices (n, k, k), got {stack.shape}")
    asym, ok = (np.asarray(x) for x in _stack_defects(stack))
    if (asym > 1e-8).any():
        i = int(np.argmax(asym > 1e-8))
        scale = max(1.0, float(np.abs(np.asarray(stack[i])).max()))
        raise ValueError(f"{label} sample {i} is not symmetric (max asymmetry {asym[i] * scale:.3g})")
    if not ok.all():
        i = int(np.argmin(ok))
        raise ValueError(f"{label} sample {i} is not positive definite; fix or drop that sample")


class PrimitiveSamples(Axis):
    """Given samples of ``A``, ``C`` and/or ``Σ`` (e.g. posterior draws), stacked on axis 0.

    Grid point ``i`` of this axis replaces the base matrices with sample ``i``; new ``A`` or
    ``C`` give ``M = A C⁻¹ Aᵀ``.  Breaks the concept basis (general path).
    """

    values: Float[Array, " n"]
    A: Float[Array, "n m k"] | None
    C: Float[Array, "n k k"] | None
    Sigma: Float[Array, "n m m"] | None
    name: str = eqx.field(static=True)
    base_A: Array | None = None
    base_C: Array | None = None
    replaces: ClassVar[bool] = True

    def __init__(self, *, A=None, C=None, Sigma=None, name: str = "sample", base_A=None,
                 base_C=None):
        label = f"PrimitiveSamples({name!r})"
        given = {k: np.asarray(x, dtype=np.float64) for k, x in
                 (("A", A), ("C", C), ("Sigma", Sigma)) if x is not None}
        if not given:
            raise ValueError(f"{label}: give at least one of A=, C=, Sigma= (stacked samples)")
        sizes = {k: x.shape[0] if x.ndim == 3 else None for k, x in given.items()}
        bad = [k for k, n in sizes.items() if n is None or n == 0]
        if bad:
            raise ValueError(f"{label}: {bad[0]} must be a non-empty stack of matrices "
                             f"(n, rows, cols), got shape {given[bad[0]].shape}")
        if len(set(sizes.values())) != 1:
            raise ValueError(f"{label}: the stacks hold different numbers of samples: {sizes}")
        for k, x in given.items():
            if not np.isfinite(x).all():
                raise ValueError(f"{label}: {k} contains NaN or inf")
        n = next(iter(sizes.values()))
        self.values = np.arange(n, dtype=np.float64)
        self.A, self.C, self.Sigma = given.get("A"), given.get("C"), given.get("Sigma")
        self.name = name
        self.base_A, self.base_C = base_A, base_C

    def bind(self, ctx):
        label = f"PrimitiveSamples({self.name!r})"
        m = ctx.M.shape[0]
        if (self.A is None) != (self.C is None) and (ctx.A is None or ctx.C is None):
            raise ValueError(f"{label}: the base has no (A, C); give both A= and C= samples")
        if self.Sigma is not None and self.Sigma.shape[1:] != (m, m):
            raise ValueError(f"{label}: Sigma samples are {self.Sigma.shape[1:]}, expected ({m}, {m})")
        if self.A is not None and self.A.shape[1] != m:
            raise ValueError(f"{label}: A samples have {self.A.shape[1]} rows, expected m = {m}")
        # Copy each stack to the device once: the checks and every chunk of the sweep share it.
        stacks = {k: None if x is None else jnp.asarray(x)
                  for k, x in (("A", self.A), ("C", self.C), ("Sigma", self.Sigma))}
        for key in ("C", "Sigma"):
            if stacks[key] is not None:
                _check_pd_stack(f"{label}: {key}", stacks[key])
        # Already validated at construction: swap in the device copies without re-checking.
        fields = lambda a: (a.A, a.C, a.Sigma, a.base_A, a.base_C)  # noqa: E731
        return eqx.tree_at(fields, self, (stacks["A"], stacks["C"], stacks["Sigma"], ctx.A, ctx.C),
                           is_leaf=lambda x: x is None)

    def dense(self, state, value):
        i = value.astype(jnp.int32)
        if self.A is not None or self.C is not None:
            A = self.base_A if self.A is None else self.A[i]
            C = self.base_C if self.C is None else self.C[i]
            state = state._replace(M=output_cost(A, C))
        if self.Sigma is not None:
            state = state._replace(Sigma=self.Sigma[i])
        return state

    def fingerprint(self):
        parts = [np.asarray(x).tobytes() if x is not None else b"" for x in (self.A, self.C, self.Sigma)]
        return super().fingerprint() + (hashlib.sha256(b"".join(parts)).hexdigest(),)


def wishart_noise(df: int) -> Sampler:
    """A sampler for :class:`RandomPrimitives`: ``Σ ~ Wishart(Σ_base / df, df)`` (mean ``Σ_base``).

    ``Σ = L Z Zᵀ Lᵀ / df`` with ``Σ_base = LLᵀ`` and ``Z`` (m, df) standard normal; needs
    ``df ≥ m`` for a positive-definite draw.
    """
    if isinstance(df, bool) or not isinstance(df, int | np.integer) or df < 1:
        raise ValueError(f"wishart_noise: df must be a positive integer, got {df!r}")

    def sample(key, base):
        m = base.Sigma.shape[0]
        if df < m:
            raise ValueError(f"wishart_noise: df = {df} < m = {m} gives singular Sigma; use df >= m")
        L = jnp.linalg.cholesky(base.Sigma)
        Z = jax.random.normal(key, (m, df), dtype=jnp.result_type(base.Sigma))
        X = L @ Z
        return {"Sigma": X @ X.T / df}

    sample.__qualname__ = f"wishart_noise(df={df})"
    return sample
