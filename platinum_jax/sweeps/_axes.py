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

The axes that replace matrices with random draws or given samples (:class:`RandomPrimitives`,
:class:`PrimitiveSamples`) are in ``_random_axes.py``.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

__all__ = [
    "Axis",
    "RiskAversion",
    "CostScale",
    "ConceptShift",
    "NoiseScale",
    "WelfareShift",
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
            f"so use an index in 0..{J - 1} (see platinum_jax.agency.concept_basis for their order)"
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

    ``p_j = G q_j`` with ``q_j`` concept ``j`` of :func:`platinum_jax.agency.concept_basis` and ``G`` its
    metric: when ``M`` and ``Σ`` commute ``p_j = q_j`` (the unit eigenvector of the paper);
    otherwise ``p_j = Σ q_j`` (Σ-normalised ``q_j``), the form that keeps every other concept
    fixed.  Only ``λ_j`` moves, to ``λ_j + δ``, as in :func:`platinum_jax.agency.concept_shift`.
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
