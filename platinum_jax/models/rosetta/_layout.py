"""The stitching parameter layout of the Rosetta model (Ho et al. 2025, "A Rosetta Stone for AI
Benchmarks") as flat arrays: the paper's objective over a vector of free parameters.

``score(m, b) = sigmoid(alpha_b (C_m - D_b))`` with a capability ``C_m`` per model, a
difficulty ``D_b`` and a slope ``alpha_b`` per benchmark. An anchor (:class:`BenchmarkAnchor`,
:class:`ModelAnchor`) removes the scale's shift and stretch; a :class:`ParameterLayout` maps the
flat vector ``theta`` of free parameters to the full :class:`StitchingParams` with the anchored
entries filled in. The objective is the paper's regularised least squares, ``0.5 * sum(r**2)``
over the residual vector of :func:`stitching_residuals`; the engine's
:class:`~platinum_jax.models.Rosetta` minimises the same objective on a response table.
"""

from __future__ import annotations

from dataclasses import dataclass

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from platinum_jax._names import UnknownNameError, close_matches_message

from ._anchors import Anchor, BenchmarkAnchor, ModelAnchor
from ._model import LINKS

__all__ = [
    "ParameterLayout",
    "StitchingParams",
    "link_function",
    "penalty_mask",
    "penalty_vector",
    "predict_scores",
    "regularisation_denominator",
    "stitching_cost",
    "stitching_residuals",
]


class StitchingParams(eqx.Module):
    """Full parameter set: ``capability`` (M,), ``difficulty`` (B,), ``slope`` (B,)."""

    capability: Float[Array, " M"]
    difficulty: Float[Array, " B"]
    slope: Float[Array, " B"]


def _as_index(values: tuple[int, ...]) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


@dataclass(frozen=True)
class ParameterLayout:
    """Where each free parameter sits in ``theta`` and which entries the anchor fixes.

    ``theta = concat(C_free, D_free, alpha_free)`` with the free entries in table order. The
    layout is hashable (tuples only) so it can be a static argument of ``jax.jit``.

    ``center_penalty`` (set for benchmark anchors): the paper fits with the anchor's difficulty
    free and shifts all C and D afterwards so that ``D_anchor`` takes its value. The data term
    does not see that shift, so the L2 term picks it: the fit equals ours with the anchor fixed
    and ``sum C^2 + sum D^2`` replaced by its minimum over a common shift ``t``,
    ``sum (C - t)^2 + sum (D - t)^2`` at ``t = mean(C, D)``. Model anchors fix the shift
    themselves, so their penalty is a plain sum; like the paper's model-anchored fit it leaves
    out the two fixed capabilities (see :func:`penalty_vector`).
    """

    n_models: int
    n_benchmarks: int
    fixed_capability: tuple[int, ...] = ()
    fixed_capability_values: tuple[float, ...] = ()
    fixed_difficulty: tuple[int, ...] = ()
    fixed_difficulty_values: tuple[float, ...] = ()
    fixed_slope: tuple[int, ...] = ()
    fixed_slope_values: tuple[float, ...] = ()
    center_penalty: bool = False

    @classmethod
    def from_table(cls, table, anchor: Anchor | None = None) -> ParameterLayout:
        """Layout for a table with ``models`` and ``benchmarks`` name tuples (a stitching
        :class:`~platinum_jax.data.ScoreTable`) under ``anchor`` (default: Winogrande,
        D = 0, alpha = 1); see :meth:`for_names`."""
        anchor = BenchmarkAnchor() if anchor is None else anchor
        return cls.for_names(tuple(table.models), tuple(table.benchmarks), anchor)

    @classmethod
    def for_names(
        cls, models: tuple[str, ...], benchmarks: tuple[str, ...], anchor: Anchor
    ) -> ParameterLayout:
        """Layout from name tuples under ``anchor``.

        Raises :class:`UnknownNameError` (a ``KeyError`` and ``ValueError``) listing close names
        when the anchor names a model or benchmark that is not there, ``TypeError`` for an
        object that is not an anchor.
        """

        def find(kind, name, names):
            if name not in names:
                raise UnknownNameError("anchor: " + close_matches_message(kind, name, names))
            return names.index(name)

        m, b = len(models), len(benchmarks)
        if isinstance(anchor, BenchmarkAnchor):
            k = find("benchmark", anchor.benchmark, benchmarks)
            return cls(
                m, b, (), (), (k,), (float(anchor.difficulty),), (k,), (float(anchor.slope),), True
            )
        if not isinstance(anchor, ModelAnchor):
            raise TypeError(f"anchor must be a BenchmarkAnchor or ModelAnchor, got {anchor!r}")
        idx = [find("model", n, models) for n in anchor.models]
        order = np.argsort(idx)  # keep indices sorted; values follow them
        return cls(
            m,
            b,
            tuple(int(idx[i]) for i in order),
            tuple(float(anchor.capabilities[i]) for i in order),
        )

    # ------------------------------------------------------------------ sizes
    @property
    def n_free_capability(self) -> int:
        return self.n_models - len(self.fixed_capability)

    @property
    def n_free_difficulty(self) -> int:
        return self.n_benchmarks - len(self.fixed_difficulty)

    @property
    def n_free_slope(self) -> int:
        return self.n_benchmarks - len(self.fixed_slope)

    @property
    def n_free(self) -> int:
        return self.n_free_capability + self.n_free_difficulty + self.n_free_slope

    def free_positions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Indices (into C, D, alpha) of the free entries, in ``theta`` order."""
        return (
            np.setdiff1d(np.arange(self.n_models), _as_index(self.fixed_capability)).astype(np.int32),
            np.setdiff1d(np.arange(self.n_benchmarks), _as_index(self.fixed_difficulty)).astype(
                np.int32
            ),
            np.setdiff1d(np.arange(self.n_benchmarks), _as_index(self.fixed_slope)).astype(np.int32),
        )

    # ------------------------------------------------------------------ maps
    def assemble(
        self,
        free_capability: Float[Array, " Mf"],
        free_difficulty: Float[Array, " Bf"],
        free_slope: Float[Array, " Bs"],
    ) -> StitchingParams:
        """Full :class:`StitchingParams` from the free blocks, anchored entries inserted (jittable)."""
        free_c, free_d, free_a = self.free_positions()

        def fill(n, free_idx, free_vals, fixed_idx, fixed_vals):
            if isinstance(free_vals, np.ndarray):  # concrete values: no scatter kernels to compile
                out = np.zeros((n,), dtype=free_vals.dtype)
                out[free_idx] = free_vals
                out[_as_index(fixed_idx)] = np.asarray(fixed_vals, dtype=free_vals.dtype)
                return jnp.asarray(out)
            free_vals = jnp.asarray(free_vals)
            out = jnp.zeros((n,), dtype=free_vals.dtype).at[free_idx].set(free_vals)
            if fixed_idx:
                out = out.at[_as_index(fixed_idx)].set(
                    jnp.asarray(fixed_vals, dtype=free_vals.dtype)
                )
            return out

        return StitchingParams(
            capability=fill(
                self.n_models, free_c, free_capability, self.fixed_capability,
                self.fixed_capability_values,
            ),
            difficulty=fill(
                self.n_benchmarks, free_d, free_difficulty, self.fixed_difficulty,
                self.fixed_difficulty_values,
            ),
            slope=fill(
                self.n_benchmarks, free_a, free_slope, self.fixed_slope, self.fixed_slope_values
            ),
        )

    def split(self, theta: Float[Array, " P"]):
        """``theta`` -> ``(C_free, D_free, alpha_free)``."""
        i = self.n_free_capability
        j = i + self.n_free_difficulty
        return theta[:i], theta[i:j], theta[j:]

    def unpack(self, theta: Float[Array, " P"]) -> StitchingParams:
        """Flat free vector ``theta`` (P,) -> full parameters (jittable)."""
        return self.assemble(*self.split(theta))

    def pack(self, params: StitchingParams) -> Float[Array, " P"]:
        """Full parameters -> ``theta`` (anchored entries are dropped, not checked)."""
        free_c, free_d, free_a = self.free_positions()
        return jnp.concatenate(
            [
                jnp.asarray(params.capability)[free_c],
                jnp.asarray(params.difficulty)[free_d],
                jnp.asarray(params.slope)[free_a],
            ]
        )

    def initial(self, dtype=None) -> Float[Array, " P"]:
        """The paper's start: ``C = 0``, ``D = 0``, ``alpha = 1`` for every free entry."""
        dtype = jnp.result_type(float) if dtype is None else dtype
        return jnp.concatenate(
            [
                jnp.zeros(self.n_free_capability + self.n_free_difficulty, dtype=dtype),
                jnp.ones(self.n_free_slope, dtype=dtype),
            ]
        )

    def free_slope_mask(self) -> np.ndarray:
        """Boolean (B,) mask of the slopes that are free (enter the L2 penalty)."""
        mask = np.ones(self.n_benchmarks, dtype=bool)
        mask[list(self.fixed_slope)] = False
        return mask

    def parameter_names(
        self, models: tuple[str, ...], benchmarks: tuple[str, ...]
    ) -> list[tuple[str, str]]:
        """``(kind, name)`` for each entry of ``theta``; kind is capability/difficulty/slope."""
        free_c, free_d, free_a = self.free_positions()
        return (
            [("capability", models[i]) for i in free_c]
            + [("difficulty", benchmarks[i]) for i in free_d]
            + [("slope", benchmarks[i]) for i in free_a]
        )


def link_function(link: str):
    """The link ``f`` in ``score = f(alpha_b (C_m - D_b))``: ``"sigmoid"`` or ``"clipped_linear"``
    (``clip(1/2 + z/4, 0, 1)``, the paper's Table 9 alternative)."""
    try:
        return LINKS[link]
    except KeyError:
        raise ValueError(f"unknown link {link!r}; choose one of {sorted(LINKS)}") from None


def predict_scores(
    params: StitchingParams,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    link: str = "sigmoid",
) -> Float[Array, " N"]:
    """Predicted scores ``sigmoid(alpha_b (C_m - D_b))`` for each (m, b) row, shape (N,)."""
    c = params.capability[model_index]
    d = params.difficulty[benchmark_index]
    a = params.slope[benchmark_index]
    return link_function(link)(a * (c - d))


def regularisation_denominator(layout: ParameterLayout) -> int:
    """The paper's normaliser of the L2 penalty: the number of parameters its fit leaves free.

    ``M + 2B - 1`` under a benchmark anchor (the paper fits every C and D and all slopes but the
    anchor's, then shifts C and D), ``M + 2B - 2`` under a model anchor (every D and slope, all
    capabilities but the two fixed ones).
    """
    m, b = layout.n_models, layout.n_benchmarks
    return m + 2 * b - 2 if layout.fixed_capability else m + 2 * b - 1


def penalty_mask(layout: ParameterLayout) -> np.ndarray:
    """Boolean (M + 2B,) mask over ``(C, D, alpha)`` of the entries the L2 penalty sums.

    Every difficulty; every capability except those a model anchor fixes; every slope except the
    one a benchmark anchor fixes. This is the paper's choice for both anchors.
    """
    mask = np.ones(layout.n_models + 2 * layout.n_benchmarks, dtype=bool)
    mask[list(layout.fixed_capability)] = False
    mask[layout.n_models + layout.n_benchmarks :] = layout.free_slope_mask()
    return mask


def penalty_vector(params: StitchingParams, layout: ParameterLayout) -> Float[Array, " M+2B"]:
    """Vector ``v`` with ``|v|^2`` the L2 penalty: ``[C - t, D - t, alpha]`` with the entries
    outside :func:`penalty_mask` set to 0.

    ``t = mean(concat(C, D))`` when ``layout.center_penalty`` (benchmark anchors; see
    :class:`ParameterLayout`), else ``t = 0``. Its gradient is ``2 v`` in (C, D, alpha).
    """
    cd = jnp.concatenate([params.capability, params.difficulty])
    if layout.center_penalty:
        cd = cd - jnp.mean(cd)
    v = jnp.concatenate([cd, params.slope])
    return jnp.where(jnp.asarray(penalty_mask(layout)), v, 0.0)


def stitching_residuals(
    theta: Float[Array, " P"],
    layout: ParameterLayout,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    scores: Float[ArrayLike, " N"],
    l2: float | Float[ArrayLike, ""] = 0.1,
    weights: Float[ArrayLike, " N"] | None = None,
    link: str = "sigmoid",
) -> Float[Array, " N+1"]:
    """Residual vector of the paper's objective, shape (N + 1,).

    ``r_i = sqrt(w_i) (sigmoid(alpha_b (C_m - D_b)) - y_i)`` for each score ``i = (m, b)``, and
    ``r_{N+1} = sqrt(lambda (sum C_m^2 + sum D_b^2 + sum alpha_b^2) / K)``, with the sums and ``K``
    as in the paper's code for each anchor:

    * benchmark anchor: all capabilities and difficulties (the anchor's included), the free
      slopes, ``K = M + 2B - 1``; C and D enter after removing their common mean, which
      reproduces the paper's fit-then-shift anchoring exactly (see :class:`ParameterLayout`);
    * model anchor: the free capabilities (the two fixed ones left out), all difficulties and
      slopes, ``K = M + 2B - 2``.
    ``w = 1`` by default; ``w_i = 0`` removes a score (static shapes for vmap).
    """
    params = layout.unpack(theta)
    pred = predict_scores(params, model_index, benchmark_index, link)
    r = pred - jnp.asarray(scores, dtype=pred.dtype)
    if weights is not None:
        r = jnp.sqrt(jnp.asarray(weights, dtype=pred.dtype)) * r
    penalty = jnp.sum(penalty_vector(params, layout) ** 2)
    # sqrt of a sum of squares is not differentiable at 0 (the paper's start has C = D = 0),
    # so add a tiny floor inside; it changes the cost by at most 1e-30.
    reg = jnp.sqrt(l2 * penalty / regularisation_denominator(layout) + 1e-30)
    return jnp.concatenate([r, reg[None]])


def stitching_cost(
    theta: Float[Array, " P"],
    layout: ParameterLayout,
    model_index: Int[ArrayLike, " N"],
    benchmark_index: Int[ArrayLike, " N"],
    scores: Float[ArrayLike, " N"],
    l2: float | Float[ArrayLike, ""] = 0.1,
    weights: Float[ArrayLike, " N"] | None = None,
    link: str = "sigmoid",
) -> Float[Array, ""]:
    """The objective ``0.5 * sum(r**2)`` over :func:`stitching_residuals` (a scalar)."""
    r = stitching_residuals(theta, layout, model_index, benchmark_index, scores, l2, weights, link)
    return 0.5 * jnp.sum(r**2)
