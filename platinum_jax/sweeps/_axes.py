"""Sweep axes: small composable transformations of the primitives.

From Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking
and Platinum Benchmarks", sections 2-3.

An axis owns a 1-D array of ``values`` (its coordinates) and says how one value changes the
primitives of a grid point.  Every axis has two views of that change:

* ``dense(state, value)`` acts on the full matrices ``(M, Σ, w, r)``; always available;
* ``spectral(state, value)`` acts on the concept spectrum ``(λ, σ, Pᵀw, r)`` of a fixed concept
  basis ``M = P diag(λ) Pᵀ``, ``Σ = P diag(σ) Pᵀ``; only for axes that keep that basis
  (``keeps_basis = True``), which lets a sweep skip the O(m³) solve at every point.

Axes are applied to a grid point in the order they are listed, except that
:class:`RandomPrimitives` (which replaces matrices wholesale) is applied first.

Longer than the package's 500-line guide: every axis is a small class of the same shape, and
the registry that the command line reads lists them in one place.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from platinum_jax.agency import output_cost

from ._fingerprint import callable_fingerprint

__all__ = [
    "Axis",
    "RiskAversion",
    "CostScale",
    "ConceptShift",
    "NoiseScale",
    "WelfareShift",
    "RandomPrimitives",
    "PrimitiveSamples",
    "wishart_noise",
    "DenseState",
    "SpectralState",
    "Basis",
]


class DenseState(NamedTuple):
    """Primitives of one grid point as full matrices: ``M`` (m, m), ``Σ`` (m, m), ``w`` (m,), ``r``."""

    M: Array
    Sigma: Array
    w: Array
    r: Array


class SpectralState(NamedTuple):
    """Primitives of one grid point in a fixed concept basis: ``λ`` (J,), ``σ`` (J,), ``Pᵀw`` (J,), ``r``."""

    lam: Array
    sig: Array
    pw: Array
    r: Array


class Basis(eqx.Module):
    """A concept basis written as ``M = P diag(λ) Pᵀ`` and ``Σ = P diag(σ) Pᵀ``, ``Q = P⁻ᵀ``.

    For a commuting pair (``kind="commuting"``) ``P = Q`` is orthonormal; for the generalized
    problem ``M q = λ Σ q`` with ``QᵀΣQ = I`` (``kind="generalized"``) ``P = ΣQ`` and ``σ = 1``.
    Either way ``v* = Q diag(λ / (λ + rσ)) Pᵀ w``.
    """

    Q: Float[Array, "m J"]
    P: Float[Array, "m J"]
    lam: Float[Array, " J"]
    sig: Float[Array, " J"]
    kind: str = eqx.field(static=True)


class _Context(NamedTuple):
    """What axes may look at when they are bound to a base problem (concrete NumPy arrays)."""

    M: np.ndarray
    Sigma: np.ndarray
    w: np.ndarray
    r: float
    A: np.ndarray | None
    C: np.ndarray | None
    basis: Basis | None
    item_names: tuple[str, ...]


def _as_values(name: str, values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim != 1:
        raise ValueError(f"{name}: values must be a 1-D sequence of numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: values is empty; give at least one grid value for this axis")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name}: values contain NaN or inf at position {int(np.argmax(bad))}; "
            "give finite grid values"
        )
    return arr


def _require_basis(axis_name: str, ctx: _Context) -> Basis:
    if ctx.basis is None:
        raise ValueError(
            f"{axis_name}: the base primitives have no full concept basis (M and Sigma could not "
            "be diagonalised together); this axis is defined along a concept of that basis"
        )
    return ctx.basis


def _check_concept(axis_name: str, concept: int, basis: Basis) -> None:
    J = basis.lam.shape[0]
    if isinstance(concept, bool) or not isinstance(concept, int | np.integer):
        raise ValueError(f"{axis_name}: concept must be an integer index, got {concept!r}")
    if not 0 <= concept < J:
        raise ValueError(
            f"{axis_name}: unknown concept index {concept}; the concept basis has {J} concepts, "
            f"so use an index in 0..{J - 1} (see platinum_jax.concept_basis for their order)"
        )


class Axis(eqx.Module):
    """Base class of sweep axes.

    Subclasses define ``values`` (n,), a static ``name`` (the dimension name in the result),
    :meth:`dense` and, when ``keeps_basis`` is true, :meth:`spectral`.  :meth:`bind` checks the
    axis against the base problem and precomputes what the per-point maps need.
    """

    keeps_basis: ClassVar[bool] = False
    replaces: ClassVar[bool] = False

    def bind(self, ctx: _Context) -> Axis:
        return self

    def dense(self, state: DenseState, value: Array) -> DenseState:
        raise NotImplementedError

    def spectral(self, state: SpectralState, value: Array) -> SpectralState:
        raise NotImplementedError(f"{type(self).__name__} does not keep the concept basis")

    def coords(self) -> np.ndarray:
        """Coordinate values of this axis in the result."""
        return np.asarray(self.values)

    def fingerprint(self) -> tuple:
        """Hashable description used to recognise a stored sweep when resuming."""
        return (type(self).__name__, self.name, np.asarray(self.values).tobytes())


class RiskAversion(Axis):
    """Lab risk aversion ``r ≥ 0`` (replaces the base ``r``).  Keeps the concept basis."""

    values: Float[Array, " n"]
    name: str = eqx.field(static=True)
    keeps_basis: ClassVar[bool] = True

    def __init__(self, values: ArrayLike, *, name: str = "r"):
        vals = _as_values(f"RiskAversion({name!r})", values)
        if (vals < 0).any():
            raise ValueError(
                f"RiskAversion({name!r}): r must be >= 0 (CARA coefficient), got "
                f"{vals[vals < 0][0]:g}; remove negative values from the grid"
            )
        self.values = vals
        self.name = name

    def bind(self, ctx):
        if (np.asarray(self.values) == 0).any():
            # r = 0 leaves M v = M w, whose solution is unique only when M is non-singular.
            lam = np.asarray(ctx.basis.lam) if ctx.basis is not None else np.linalg.eigvalsh(ctx.M)
            if lam.min() <= 1e-12 * max(1.0, float(np.abs(lam).max())):
                raise ValueError(
                    f"RiskAversion({self.name!r}): r = 0 needs a non-singular M, but M has a zero "
                    "eigenvalue here, so v* is not unique; start the grid at a small r > 0"
                )
        return self

    def dense(self, state, value):
        return state._replace(r=value)

    def spectral(self, state, value):
        return state._replace(r=value)


class CostScale(Axis):
    """Uniform cost change ``M ↦ M / κ`` with ``κ > 0`` (Haupt et al. §3, "uniform changes").

    Equivalent to ``v*(κ) = (M + κ rΣ)⁻¹ M w``: larger ``κ`` means costlier improvement, which
    acts like more measurement risk and moves weight toward well-measured concepts.
    """

    values: Float[Array, " n"]
    name: str = eqx.field(static=True)
    keeps_basis: ClassVar[bool] = True

    def __init__(self, values: ArrayLike, *, name: str = "kappa"):
        vals = _as_values(f"CostScale({name!r})", values)
        if (vals <= 0).any():
            raise ValueError(
                f"CostScale({name!r}): kappa must be > 0 (M is divided by it), got "
                f"{vals[vals <= 0][0]:g}; remove zero or negative values from the grid"
            )
        self.values = vals
        self.name = name

    def dense(self, state, value):
        return state._replace(M=state.M / value)

    def spectral(self, state, value):
        return state._replace(lam=state.lam / value)


class ConceptShift(Axis):
    """Concept-separable cost change ``M ↦ M + δ p_j p_jᵀ`` (Haupt et al., eq. 3).

    ``p_j = G q_j`` with ``q_j`` concept ``j`` of :func:`platinum_jax.concept_basis` and ``G`` its
    metric: when ``M`` and ``Σ`` commute ``p_j = q_j`` (the unit eigenvector of the paper);
    otherwise ``p_j = Σ q_j`` (Σ-normalised ``q_j``), the form that keeps every other concept
    fixed.  Only ``λ_j`` moves, to ``λ_j + δ``, as in :func:`platinum_jax.concept_shift`.
    Values must keep ``M`` positive semi-definite: ``δ ≥ −λ_j``.
    """

    values: Float[Array, " n"]
    concept: int = eqx.field(static=True)
    name: str = eqx.field(static=True)
    p: Float[Array, " m"] | None = None
    keeps_basis: ClassVar[bool] = True

    def __init__(self, concept: int, values: ArrayLike, *, name: str = "delta", p=None):
        self.values = _as_values(f"ConceptShift({name!r})", values)
        self.concept = concept
        self.name = name
        self.p = p

    def bind(self, ctx):
        label = f"ConceptShift({self.name!r})"
        basis = _require_basis(label, ctx)
        _check_concept(label, self.concept, basis)
        floor = -float(basis.lam[self.concept])
        vals = np.asarray(self.values)
        if (vals < floor - 1e-12 * max(1.0, abs(floor))).any():
            raise ValueError(
                f"{label}: delta = {vals.min():g} would make M indefinite along concept "
                f"{self.concept} (its cost eigenvalue lambda = {-floor:.6g} allows delta >= "
                f"{floor:.6g}); raise the lower end of the grid"
            )
        return ConceptShift(self.concept, vals, name=self.name,
                            p=np.asarray(basis.P[:, self.concept]))

    def dense(self, state, value):
        return state._replace(M=state.M + value * jnp.outer(self.p, self.p))

    def spectral(self, state, value):
        return state._replace(lam=state.lam.at[self.concept].add(value))

    def fingerprint(self):
        return super().fingerprint() + (self.concept,)


class NoiseScale(Axis):
    """Noise scaling ``σ_j ↦ s σ_j`` along concept ``j`` (or ``Σ ↦ sΣ`` when ``concept=None``).

    Along one concept: ``Σ ↦ Σ + (s − 1) σ_j p_j p_jᵀ``, which rescales exactly one noise
    eigenvalue of the base concept basis.  ``s > 0``; smaller ``s`` means more precise items.
    """

    values: Float[Array, " n"]
    concept: int | None = eqx.field(static=True)
    name: str = eqx.field(static=True)
    pp: Float[Array, "m m"] | None = None
    keeps_basis: ClassVar[bool] = True

    def __init__(self, values: ArrayLike, concept: int | None = None, *,
                 name: str = "noise_scale", pp=None):
        vals = _as_values(f"NoiseScale({name!r})", values)
        if (vals <= 0).any():
            raise ValueError(
                f"NoiseScale({name!r}): the noise scale s must be > 0 (Sigma must stay positive "
                f"definite), got {vals[vals <= 0][0]:g}"
            )
        self.values = vals
        self.concept = concept
        self.name = name
        self.pp = pp

    def bind(self, ctx):
        if self.concept is None:
            return self
        label = f"NoiseScale({self.name!r})"
        basis = _require_basis(label, ctx)
        _check_concept(label, self.concept, basis)
        p = np.asarray(basis.P[:, self.concept])
        pp = float(basis.sig[self.concept]) * np.outer(p, p)
        return NoiseScale(self.values, self.concept, name=self.name, pp=pp)

    def dense(self, state, value):
        if self.concept is None:
            return state._replace(Sigma=state.Sigma * value)
        return state._replace(Sigma=state.Sigma + (value - 1.0) * self.pp)

    def spectral(self, state, value):
        if self.concept is None:
            return state._replace(sig=state.sig * value)
        return state._replace(sig=state.sig.at[self.concept].multiply(value))

    def fingerprint(self):
        return super().fingerprint() + (self.concept,)


class WelfareShift(Axis):
    """Welfare-weight perturbation ``w ↦ w + t d`` along a direction ``d`` (m,).

    Give ``direction`` (an array) or ``item`` (an item index or name, ``d = e_item``).  The cost
    and noise structure are untouched, so the concept basis is kept.
    """

    values: Float[Array, " n"]
    name: str = eqx.field(static=True)
    item: int | str | None = eqx.field(static=True)
    direction: Float[Array, " m"] | None = None
    pd: Float[Array, " J"] | None = None
    keeps_basis: ClassVar[bool] = True

    def __init__(self, values: ArrayLike, direction: ArrayLike | None = None, *,
                 item: int | str | None = None, name: str = "welfare_shift", pd=None):
        self.values = _as_values(f"WelfareShift({name!r})", values)
        if (direction is None) == (item is None):
            raise ValueError(
                f"WelfareShift({name!r}): give exactly one of direction= (an (m,) array) or "
                "item= (an item index or name)"
            )
        self.name = name
        self.item = item
        self.direction = None if direction is None else np.asarray(direction, dtype=np.float64)
        self.pd = pd

    def bind(self, ctx):
        label = f"WelfareShift({self.name!r})"
        m = ctx.w.shape[0]
        if self.item is not None:
            idx = self.item
            if isinstance(idx, str):
                if idx not in ctx.item_names:
                    close = difflib.get_close_matches(idx, ctx.item_names, n=3)
                    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                    raise KeyError(f"{label}: unknown item {idx!r}{hint}")
                idx = ctx.item_names.index(idx)
            if not 0 <= int(idx) < m:
                raise ValueError(f"{label}: item index {idx} is out of range 0..{m - 1}")
            d = np.zeros(m)
            d[int(idx)] = 1.0
        else:
            d = self.direction
            if d.shape != (m,):
                raise ValueError(f"{label}: direction must have shape ({m},), got {d.shape}")
            if not np.isfinite(d).all():
                raise ValueError(f"{label}: direction contains NaN or inf")
            if not np.any(d):
                raise ValueError(f"{label}: direction is all zeros; give a non-zero direction")
        pd = None if ctx.basis is None else np.asarray(ctx.basis.P).T @ d
        out = WelfareShift(self.values, d, name=self.name, pd=pd)
        return out

    def dense(self, state, value):
        return state._replace(w=state.w + value * self.direction)

    def spectral(self, state, value):
        return state._replace(pw=state.pw + value * self.pd)

    def fingerprint(self):
        return super().fingerprint() + (np.asarray(self.direction).tobytes(),)


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
