"""Uncertainty of a stitching fit: the paper's sensitivity analysis, and the engine's Laplace
approximation and bootstrap labelled by the stitching parameters.

Each returns a frame indexed by ``(kind, name)`` over the free parameters (``kind`` in
capability / difficulty / slope) with ``value``, ``lower``, ``upper`` and a width: ``sd`` for
Laplace and the bootstrap, ``halfwidth`` (half the 5%-loss interval, not a standard deviation)
for the sensitivity analysis; :func:`by_kind` splits one into the model and benchmark tables.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.inference import first_crossing, golden_minimum, loss_rise_shifts
from platinum_jax.models.rosetta import stitching_cost

from ._fit import StitchingFit
from ._layout import BootstrapResult as _Replicates

__all__ = ["BootstrapResult", "bootstrap", "by_kind", "laplace", "objective_hessian",
           "sensitivity"]


def _index(fit: StitchingFit) -> pd.MultiIndex:
    names = fit.layout.parameter_names(fit.table.models, fit.table.benchmarks)
    return pd.MultiIndex.from_tuples(names, names=["kind", "name"])


def by_kind(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Rows of one parameter ``kind`` ("capability", "difficulty", "slope"), indexed by name."""
    out = frame.xs(kind, level="kind")
    out.index.name = "model" if kind == "capability" else "benchmark"
    return out


# The paper's code re-fits alpha_b by a bounded scalar search on this range when D_b moves.
_SLOPE_SEARCH = (0.01, 20.0)


def _own_loss(z, target_y, mask):
    # Unregularised squared error of the scores selected by ``mask`` (N,), predictions sigmoid(z).
    return jnp.sum(mask * (jax.nn.sigmoid(z) - target_y) ** 2)


def _best_slope(c, d, y, mask, n_golden):
    # min over alpha in _SLOPE_SEARCH of the benchmark's own loss (unimodal in alpha for fixed
    # C and D in practice)
    def loss(a):
        return _own_loss(a * (c - d), y, mask)

    lo, hi = (jnp.asarray(x, c.dtype) for x in _SLOPE_SEARCH)
    return loss(golden_minimum(loss, lo, hi, n_golden))


@functools.partial(jax.jit, static_argnames=("n_bisect", "n_golden"))
def _own_score_deltas(cap, diff, slope, mi, bi, y, cap_rows, diff_rows, slope_rows, rise,
                      max_shift, n_bisect=60, n_golden=60):
    """(minus, plus) shifts for the capabilities ``cap_rows``, difficulties ``diff_rows`` and
    slopes ``slope_rows`` (indices into C, D, alpha), each under its own-scores loss."""
    start = jnp.asarray(0.05, cap.dtype)

    def both(loss, base):
        target = (1.0 + rise) * base
        up = first_crossing(lambda d: loss(d) - target, start, max_shift, n_bisect)
        down = first_crossing(lambda d: loss(-d) - target, start, max_shift, n_bisect)
        return down, up

    def capability(m):
        mask = (mi == m).astype(y.dtype)
        z0 = slope[bi] * (cap[m] - diff[bi])
        return both(lambda d: _own_loss(z0 + slope[bi] * d, y, mask), _own_loss(z0, y, mask))

    def difficulty(b):
        mask = (bi == b).astype(y.dtype)
        c = cap[mi]
        base = _own_loss(slope[b] * (c - diff[b]), y, mask)
        return both(lambda d: _best_slope(c, diff[b] + d, y, mask, n_golden), base)

    def slope_row(b):
        mask = (bi == b).astype(y.dtype)
        gap = cap[mi] - diff[b]
        return both(lambda d: _own_loss((slope[b] + d) * gap, y, mask),
                    _own_loss(slope[b] * gap, y, mask))

    out_c = jax.vmap(capability)(cap_rows)
    out_d = jax.vmap(difficulty)(diff_rows)
    out_a = jax.vmap(slope_row)(slope_rows)
    minus = jnp.concatenate([out_c[0], out_d[0], out_a[0]])
    plus = jnp.concatenate([out_c[1], out_d[1], out_a[1]])
    return minus, plus


SENSITIVITY_METHODS = ("own_scores", "global_loss")


@functools.partial(jax.jit, static_argnames=("layout",))
def _global_loss_deltas(theta, layout, mi, bi, y, l2, rise, max_shift):
    # the whole regularised objective F must rise by ``rise`` along each coordinate
    return loss_rise_shifts(lambda th: stitching_cost(th, layout, mi, bi, y, l2), theta, rise,
                            max_shift)


def sensitivity(fit: StitchingFit, rise: float = 0.05, *, method: str = "own_scores",
                max_shift: float = 50.0) -> pd.DataFrame:
    """Sensitivity intervals: per parameter, how far it can move before a loss rises by ``rise``.

    ``method="own_scores"`` (default) is the procedure of Ho et al. ("A Rosetta Stone for AI
    Benchmarks", appendix; Epoch's public code): each parameter is judged by the
    *unregularised* squared error of the scores it enters, every other parameter at the fit:
    ``C_m`` by model m's scores; ``D_b`` by benchmark b's scores with its slope re-optimised at
    each ``D`` (bounded search on ``alpha in [0.01, 20]``, as in the paper's code); ``alpha_b``
    (ours, by the same rule) by benchmark b's scores with ``D_b`` held at the fit. The interval
    is ``[value - delta_minus, value + delta_plus]`` with ``L(value +- delta) = (1 + rise)
    L(value)``, all parameters solved in one compiled function; a side on which the loss stays
    below the target up to ``max_shift`` (saturated scores) is ``inf``, never a clipped number.

    ``method="global_loss"``, a cruder variant (not the paper's): the whole regularised
    objective must rise by ``rise`` with one parameter moved (about 20x wider on the Epoch
    data); it adds ``quadratic``, the bracket's start ``sqrt(2 rise F / H_jj)``.

    Returns ``value, delta_minus, delta_plus, halfwidth, lower, upper`` indexed by ``(kind,
    name)``: no probability is attached (the width grows like ``sqrt(rise)``); use
    :func:`laplace` or :func:`bootstrap` for standard errors. Evaluate in float64.
    """
    if not rise > 0:
        raise ValueError(f"rise must be positive (got {rise}); the paper uses 0.05")
    if method not in SENSITIVITY_METHODS:
        raise ValueError(f"method must be one of {SENSITIVITY_METHODS} (got {method!r}); "
                         "'own_scores' is the paper's procedure")
    if not (np.isfinite(max_shift) and max_shift > 0):
        raise ValueError(f"max_shift must be a positive finite number (got {max_shift!r})")
    t = fit.table
    mi, bi, y = jnp.asarray(t.model_index), jnp.asarray(t.benchmark_index), jnp.asarray(t.scores)
    bound, extra = jnp.asarray(max_shift, y.dtype), {}
    if method == "global_loss":
        d0, minus, plus = _global_loss_deltas(jnp.asarray(fit.theta), fit.layout, mi, bi, y,
                                              fit.l2, rise, bound)
        extra["quadratic"] = np.asarray(d0)
    else:
        p = fit.params
        minus, plus = _own_score_deltas(
            jnp.asarray(p.capability), jnp.asarray(p.difficulty), jnp.asarray(p.slope), mi, bi,
            y, *(jnp.asarray(x) for x in fit.layout.free_positions()),
            jnp.asarray(rise, y.dtype), bound)
    minus, plus = np.asarray(minus), np.asarray(plus)
    frame = pd.DataFrame({"value": fit.theta, "delta_minus": minus, "delta_plus": plus, **extra,
                          "halfwidth": 0.5 * (minus + plus), "lower": fit.theta - minus,
                          "upper": fit.theta + plus}, index=_index(fit))
    frame.attrs.update(method=method, rise=float(rise))
    return frame


def objective_hessian(fit: StitchingFit):
    """Exact Hessian (P, P) of the paper's objective over the free (C, D, alpha):
    ``layout_hessian`` of the engine's fit."""
    from ._layout import layout_hessian

    return layout_hessian(fit.engine, fit.layout)


def laplace(fit: StitchingFit, level: float = 0.95, noise_scale: str | float = "residual"):
    """Laplace approximation ``theta ~ N(theta_hat, s^2 H^{-1})`` around the fit.

    The engine's covariance (``layout_laplace``, the one
    ``platinum-jax fit --model rosetta --method laplace`` draws from), with ``s^2 = sum r_i^2 /
    (N - P)`` from the residuals (``"residual"``) or ``s`` given as a number; the penalty's free
    centre is marginalised. A Hessian that is not positive definite raises ``ValueError``.
    Returns ``value, sd, lower, upper`` (normal interval at ``level``); ``attrs`` holds
    ``noise_variance``.
    """
    from ._layout import layout_laplace

    if isinstance(noise_scale, str) and noise_scale != "residual":
        raise ValueError(f"noise_scale must be 'residual' or a positive number (got "
                         f"{noise_scale!r})")
    return layout_laplace(fit.engine, fit.layout, _index(fit), level, noise_scale)


class BootstrapResult(_Replicates):
    """Bootstrap replicates of a stitching fit: :class:`platinum_jax.stitching.BootstrapResult`
    labelled by the fit's free parameters, its ``value`` the fit's estimate. ``seed``: the seed
    of the resampling weights (:func:`platinum_jax.inference.resample_counts`), so that a
    statistic of the same resamples can be recomputed (None for replicates made otherwise)."""

    def __init__(self, fit, thetas, costs, converged, level, seed=None):
        super().__init__(fit, thetas, costs, converged, level, fit.theta, _index(fit))
        self.seed = None if seed is None else int(seed)


def bootstrap(fit: StitchingFit, replicates: int = 1000, *, seed: int = 0, level: float = 0.95,
              chunk: int = 5, block: int = 250, max_steps: int = 200, progress: bool = False):
    """Non-parametric bootstrap over scores: ``layout_bootstrap``
    of the engine's fit (multinomial weights, :func:`platinum_jax.inference.resample_counts`;
    each replicate refitted from the estimate by
    exact-Hessian LM, ``chunk`` vmapped refits at a time in compiled blocks of ``block``: small
    chunks are fastest on a CPU, raise ``chunk`` on a GPU). Replicates that do not converge
    within ``max_steps`` leave the summary, with a ``RuntimeWarning``."""
    from ._layout import layout_bootstrap

    out = layout_bootstrap(fit.engine, fit.layout, _index(fit), replicates, level=level,
                           max_steps=max_steps, seed=seed, chunk=chunk, block=block,
                           progress=progress)
    return BootstrapResult(fit, out.thetas, out.costs, out.converged, level, seed=seed)
