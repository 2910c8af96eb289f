"""Uncertainty of a stitching fit: the paper's sensitivity analysis, Laplace, and the bootstrap.

All three return a frame indexed by ``(kind, name)`` over the free parameters (``kind`` in
capability / difficulty / slope) with columns ``value``, ``lower``, ``upper`` and a width:
``sd`` (a standard deviation) for Laplace and the bootstrap, ``halfwidth`` (half the 5%-loss
interval, not a standard deviation) for the sensitivity analysis. :func:`by_kind` splits such a
frame into the capability and benchmark tables.

The Laplace covariance and the bootstrap's refits are the engine's
(:func:`platinum_jax.inference.laplace_covariance`,
:func:`platinum_jax.inference.bootstrap_replicates`); what stays here is the paper's
sensitivity analysis and the labelling of all three by the stitching parameters.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float

from ._engine import engine_problem, layout_batch, layout_entries
from ._fit import StitchingFit
from ._model import stitching_cost

__all__ = [
    "sensitivity",
    "laplace",
    "bootstrap",
    "BootstrapResult",
    "bootstrap_weights",
    "by_kind",
    "objective_hessian",
]


def _index(fit: StitchingFit) -> pd.MultiIndex:
    names = fit.layout.parameter_names(fit.table.models, fit.table.benchmarks)
    return pd.MultiIndex.from_tuples(names, names=["kind", "name"])


def _arrays(fit: StitchingFit):
    t = fit.table
    return (
        jnp.asarray(t.model_index),
        jnp.asarray(t.benchmark_index),
        jnp.asarray(t.scores),
    )


def by_kind(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Rows of one parameter ``kind`` ("capability", "difficulty", "slope"), indexed by name."""
    out = frame.xs(kind, level="kind")
    out.index.name = "model" if kind == "capability" else "benchmark"
    return out


# ---------------------------------------------------------------------- sensitivity
@functools.partial(jax.jit, static_argnames=("layout", "n_bisect"))
def _sensitivity_deltas(theta, layout, mi, bi, y, l2, rise, n_bisect=60):
    f0 = stitching_cost(theta, layout, mi, bi, y, l2)
    target = (1.0 + rise) * f0
    hess_diag = jnp.diag(jax.hessian(stitching_cost)(theta, layout, mi, bi, y, l2))
    # Quadratic model: F(theta + d e_j) ~ F + 0.5 H_jj d^2 reaches the target at d0.
    d0 = jnp.sqrt(2.0 * rise * f0 / jnp.maximum(hess_diag, 1e-12))
    p = theta.shape[0]
    eye = jnp.eye(p, dtype=theta.dtype)

    def excess(d, j, sign):
        return stitching_cost(theta + sign * d * eye[j], layout, mi, bi, y, l2) - target

    def solve(j, sign, start):
        # Grow the bracket until the loss passes the target (F rises without bound: the L2 term).
        def grow(_, hi):
            return jnp.where(excess(hi, j, sign) < 0, 2.0 * hi, hi)

        hi = jax.lax.fori_loop(0, 40, grow, start)
        lo = jnp.where(excess(start, j, sign) < 0, jnp.minimum(start, hi), 0.0)
        lo = jnp.where(lo >= hi, 0.0, lo)

        def halve(_, bounds):
            a, b = bounds
            mid = 0.5 * (a + b)
            below = excess(mid, j, sign) < 0
            return jnp.where(below, mid, a), jnp.where(below, b, mid)

        a, b = jax.lax.fori_loop(0, n_bisect, halve, (lo, hi))
        return 0.5 * (a + b)

    idx = jnp.arange(p)
    plus = jax.vmap(solve, in_axes=(0, None, 0))(idx, 1.0, d0)
    minus = jax.vmap(solve, in_axes=(0, None, 0))(idx, -1.0, d0)
    return d0, minus, plus


# The paper's code re-fits alpha_b by a bounded scalar search on this range when D_b moves.
_SLOPE_SEARCH = (0.01, 20.0)
_GOLDEN = 0.5 * (np.sqrt(5.0) - 1.0)


def _own_loss(z, target_y, mask):
    # Unregularised squared error of the scores selected by ``mask`` (N,), predictions sigmoid(z).
    return jnp.sum(mask * (jax.nn.sigmoid(z) - target_y) ** 2)


def _best_slope(c, d, y, mask, n_golden):
    # min over alpha in _SLOPE_SEARCH of the benchmark's own loss: golden-section search (the
    # loss of one benchmark is unimodal in alpha for fixed C and D in practice).
    lo, hi = _SLOPE_SEARCH

    def loss(a):
        return _own_loss(a * (c - d), y, mask)

    def step(_, bounds):
        a, b = bounds
        x1 = b - _GOLDEN * (b - a)
        x2 = a + _GOLDEN * (b - a)
        left = loss(x1) < loss(x2)
        return jnp.where(left, a, x1), jnp.where(left, x2, b)

    a, b = jax.lax.fori_loop(0, n_golden, step, (jnp.asarray(lo, c.dtype), jnp.asarray(hi, c.dtype)))
    return loss(0.5 * (a + b))


def _shift_to_target(excess, start, max_shift, n_bisect):
    """Smallest ``d > 0`` with ``excess(d) = 0`` (``excess(0) <= 0``), or ``inf`` past ``max_shift``.

    The bracket starts at ``start`` and doubles until the excess is non-negative; bisection then
    refines it. Pure and vmappable (fixed iteration counts).
    """

    def growing(bounds):
        return (bounds[2] < 0) & (bounds[1] < max_shift)

    def grow(bounds):
        hi = jnp.minimum(2.0 * bounds[1], max_shift)
        return bounds[1], hi, excess(hi)

    lo, hi, last = jax.lax.while_loop(growing, grow, (jnp.zeros_like(start), start, excess(start)))
    reached = last >= 0

    def halve(_, bounds):
        a, b = bounds
        mid = 0.5 * (a + b)
        below = excess(mid) < 0
        return jnp.where(below, mid, a), jnp.where(below, b, mid)

    a, b = jax.lax.fori_loop(0, n_bisect, halve, (lo, hi))
    return jnp.where(reached, 0.5 * (a + b), jnp.inf)


@functools.partial(jax.jit, static_argnames=("n_bisect", "n_golden"))
def _own_score_deltas(cap, diff, slope, mi, bi, y, cap_rows, diff_rows, slope_rows, rise,
                      max_shift, n_bisect=60, n_golden=60):
    """(minus, plus) shifts for the capabilities ``cap_rows``, difficulties ``diff_rows`` and
    slopes ``slope_rows`` (indices into C, D, alpha), each under its own-scores loss."""
    start = jnp.asarray(0.05, cap.dtype)

    def both(loss, base):
        target = (1.0 + rise) * base
        up = _shift_to_target(lambda d: loss(d) - target, start, max_shift, n_bisect)
        down = _shift_to_target(lambda d: loss(-d) - target, start, max_shift, n_bisect)
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


def sensitivity(
    fit: StitchingFit,
    rise: float = 0.05,
    *,
    method: str = "own_scores",
    max_shift: float = 50.0,
) -> pd.DataFrame:
    """Sensitivity intervals: per parameter, how far it can move before a loss rises by ``rise``.

    ``method="own_scores"`` (default) is the procedure of Ho et al. ("A Rosetta Stone for AI
    Benchmarks", appendix; Epoch's public code): each parameter is judged by the *unregularised*
    squared error of the scores it enters, with every other parameter at the fit,

    * capability ``C_m``: ``L_m(C) = sum_b (sigmoid(alpha_b (C - D_b)) - y_mb)^2`` over model m's
      scores;
    * difficulty ``D_b``: ``L_b(D) = min_alpha sum_m (sigmoid(alpha (C_m - D)) - y_mb)^2`` over
      benchmark b's scores, the slope re-optimised at each ``D`` (bounded search on
      ``alpha in [0.01, 20]``, as in the paper's code);
    * slope ``alpha_b`` (the paper reports none; ours, by the same rule): benchmark b's loss with
      ``D_b`` held at the fit.

    The interval is ``[value - delta_minus, value + delta_plus]`` with ``L(value +- delta) =
    (1 + rise) L(value)`` at the fit's value, found by a doubling bracket and 60 bisections; all
    parameters are solved in one compiled function (``vmap`` over parameters). A side on which the
    loss stays below the target up to ``max_shift`` (saturated scores, e.g. a model that aces
    every benchmark it took) is ``inf``, never a clipped number.

    ``method="global_loss"``: a cruder variant, not the paper's: the *regularised* objective of
    the whole fit ``F(theta)`` must rise by ``rise`` with one free parameter moved and all others
    (the slope too) held fixed. Because one parameter's scores are a small part of ``F``, its
    intervals are many times wider (about 20x on the Epoch data). It adds a ``quadratic``
    column, the seed ``sqrt(2 rise F / H_jj)`` of its bracket (``H`` the autodiff Hessian).

    Returns a frame indexed by ``(kind, name)`` with ``value, delta_minus, delta_plus,
    halfwidth, lower, upper``, ``halfwidth = (delta_minus + delta_plus) / 2``. The half-width is
    half the interval on which that loss stays within ``rise`` of its value at the fit: no
    probability is attached and it grows like ``sqrt(rise)``. Use :func:`laplace` or
    :func:`bootstrap` for standard errors. Evaluate in float64
    (``jax.config.update("jax_enable_x64", True)``); the fit itself should be float64 too.
    """
    if not rise > 0:
        raise ValueError(f"rise must be positive (got {rise}); the paper uses 0.05")
    if method not in SENSITIVITY_METHODS:
        raise ValueError(
            f"method must be one of {SENSITIVITY_METHODS} (got {method!r}); 'own_scores' is the "
            "paper's procedure"
        )
    if not (np.isfinite(max_shift) and max_shift > 0):
        raise ValueError(f"max_shift must be a positive finite number (got {max_shift!r})")
    mi, bi, y = _arrays(fit)
    extra = {}
    if method == "global_loss":
        d0, minus, plus = _sensitivity_deltas(
            jnp.asarray(fit.theta), fit.layout, mi, bi, y, fit.l2, rise
        )
        extra["quadratic"] = np.asarray(d0)
    else:
        params = fit.layout.unpack(jnp.asarray(fit.theta))
        free_c, free_d, free_a = fit.layout.free_positions()
        minus, plus = _own_score_deltas(
            params.capability, params.difficulty, params.slope, mi, bi, y,
            jnp.asarray(free_c), jnp.asarray(free_d), jnp.asarray(free_a),
            jnp.asarray(rise, y.dtype), jnp.asarray(max_shift, y.dtype),
        )
    minus, plus = np.asarray(minus), np.asarray(plus)
    frame = pd.DataFrame(
        {
            "value": fit.theta,
            "delta_minus": minus,
            "delta_plus": plus,
            **extra,
            "halfwidth": 0.5 * (minus + plus),
            "lower": fit.theta - minus,
            "upper": fit.theta + plus,
        },
        index=_index(fit),
    )
    frame.attrs["method"] = method
    frame.attrs["rise"] = float(rise)
    return frame


# ---------------------------------------------------------------------- Laplace
def objective_hessian(fit: StitchingFit) -> Float[Array, "P P"]:
    """Exact Hessian of the fit's objective over its free parameters (C, D, alpha), (P, P).

    The engine's :func:`platinum_jax.inference.objective_hessian` of the Rosetta preset, read
    at the layout's free entries. Where the centre of the L2 penalty is a free global, it is
    profiled out (Schur complement, by a solve), which is the Hessian of the paper's objective
    with the penalty centred on its mean.
    """
    from platinum_jax.inference import Fit
    from platinum_jax.inference import objective_hessian as engine_hessian

    problem, theta = engine_problem(fit)
    hess = engine_hessian(Fit(problem=problem, method="map", theta=theta,
                              converged=fit.converged))
    x_pos, g_pos = _free_positions(problem, fit.layout)
    h_xx = hess[np.ix_(x_pos, x_pos)]
    if g_pos.size == 0:
        return h_xx
    h_xg = hess[np.ix_(x_pos, g_pos)]
    h_gg = hess[np.ix_(g_pos, g_pos)]
    return h_xx - h_xg @ jnp.linalg.solve(h_gg, h_xg.T)


def _free_positions(problem, layout):
    """The layout's free entries and the free globals as positions among the engine's free
    entries (the rows of its Hessian and covariance)."""
    free = np.flatnonzero(np.concatenate([np.asarray(f).ravel() for f in
                                          (problem.free_S, problem.free_I, problem.free_G)]))
    x_pos, g_pos = layout_entries(problem, layout)
    return np.searchsorted(free, x_pos), np.searchsorted(free, g_pos)


def laplace(fit: StitchingFit, level: float = 0.95, noise_scale: str | float = "residual"):
    """Laplace approximation around the fit: ``theta ~ N(theta_hat, s^2 H^{-1})``.

    ``H`` is the exact Hessian of the objective ``F = 0.5 sum r^2 + penalty``; reading
    ``F / s^2`` as a negative log posterior (Gaussian score noise of variance ``s^2``, Gaussian
    prior from the L2 term), the covariance is ``s^2 H^{-1}``. ``noise_scale="residual"``
    estimates ``s^2 = sum r_i^2 / (N - P)`` from the score residuals; a number sets ``s``
    directly. The covariance is the engine's
    (:func:`platinum_jax.inference.laplace_covariance` of the Rosetta model, the one
    ``platinum-jax fit --model rosetta --method laplace`` draws from), with the penalty's free
    centre marginalised, which equals profiling it out of ``H``. A Hessian that is not positive
    definite (the fit is not at a minimum) raises ``ValueError``. Returns ``value, sd, lower,
    upper`` (normal interval at ``level``).
    """
    from scipy.stats import norm

    from platinum_jax.inference import Fit, laplace_covariance

    if isinstance(noise_scale, str) and noise_scale != "residual":
        raise ValueError(f"noise_scale must be 'residual' or a positive number (got "
                         f"{noise_scale!r})")
    problem, theta = engine_problem(fit)
    engine_fit = Fit(problem=problem, method="map", theta=theta, converged=fit.converged)
    cov = laplace_covariance(engine_fit, noise_scale=noise_scale)
    k, _ = _free_positions(problem, fit.layout)
    sd = np.sqrt(np.diag(cov.to_numpy())[k])
    z = norm.ppf(0.5 + level / 2)
    frame = pd.DataFrame(
        {"value": fit.theta, "sd": sd, "lower": fit.theta - z * sd, "upper": fit.theta + z * sd},
        index=_index(fit),
    )
    frame.attrs["noise_variance"] = cov.attrs["noise_variance"]
    return frame


# ---------------------------------------------------------------------- bootstrap
class BootstrapResult:
    """Bootstrap replicates and their summary.

    Attributes: ``fit``; ``thetas`` (R, P), ``costs`` (R,) and ``converged`` (R,) for every
    replicate, converged or not; ``summary``, a frame indexed like the fit's parameters with
    ``value`` (the MAP estimate), ``sd``, ``lower``, ``upper`` (percentile interval at ``level``)
    and ``mean``, computed from the converged replicates only. ``summary.attrs`` records
    ``replicates`` (R), ``n_converged``, ``n_failed``, ``converged_fraction`` and ``level``.
    With fewer than two converged replicates ``sd`` is NaN (and with none, every column but
    ``value``).
    """

    def __init__(self, fit, thetas, costs, converged, level):
        self.fit = fit
        self.thetas = thetas
        self.costs = costs
        self.converged = np.asarray(converged, dtype=bool)
        ok = thetas[self.converged]
        n_ok, p = ok.shape
        nan = np.full(p, np.nan)
        if n_ok:
            lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2], axis=0)
            mean = ok.mean(axis=0)
        else:
            lo, hi, mean = nan, nan, nan
        self.summary = pd.DataFrame(
            {
                "value": fit.theta,
                "sd": ok.std(axis=0, ddof=1) if n_ok >= 2 else nan,
                "lower": lo,
                "upper": hi,
                "mean": mean,
            },
            index=_index(fit),
        )
        self.summary.attrs["replicates"] = thetas.shape[0]
        self.summary.attrs["n_converged"] = int(n_ok)
        self.summary.attrs["n_failed"] = int(thetas.shape[0] - n_ok)
        self.summary.attrs["converged_fraction"] = float(np.mean(self.converged))
        self.summary.attrs["level"] = float(level)

    @property
    def replicates(self) -> pd.DataFrame:
        """All replicates (failed ones included), one row each, columns ``(kind, name)``; index
        ``replicate``. ``self.converged`` flags the rows the summary uses."""
        return pd.DataFrame(
            self.thetas, columns=_index(self.fit), index=pd.RangeIndex(len(self.thetas), name="replicate")
        )


def bootstrap_weights(seed: int, replicates: int, n_scores: int) -> np.ndarray:
    """The (replicates, N) resampling counts that :func:`bootstrap` uses for ``seed``
    (:func:`platinum_jax.inference.resample_counts`)."""
    from platinum_jax.inference import resample_counts

    return resample_counts(seed, replicates, n_scores)


def bootstrap(
    fit: StitchingFit,
    replicates: int = 1000,
    *,
    seed: int = 0,
    level: float = 0.95,
    chunk: int = 5,
    block: int = 250,
    max_steps: int = 200,
    progress: bool = False,
) -> BootstrapResult:
    """Non-parametric bootstrap over scores, every replicate refitted by the engine's LM.

    The engine's :func:`platinum_jax.inference.bootstrap_replicates` on the Rosetta preset:
    replicate ``k`` reweights score ``i`` by ``w_i ~ Multinomial(N, 1/N)`` (a resample with
    replacement; ``w_i = 0`` drops a score) and refits from the MAP estimate by exact-Hessian LM
    (``curvature="newton"``, which converges in fewer steps from there), in compiled blocks of
    ``block`` replicates, ``chunk`` vmapped refits at a time: the default 1,000 replicates are
    four calls of 50 vmapped chunks. Small chunks are fastest on a CPU (the default, 5,
    measured best on two cores); raise ``chunk`` on a GPU.

    Replicates that hit ``max_steps`` before converging are kept in the result (``thetas``,
    ``converged``) but left out of ``summary``; when there are any, a ``RuntimeWarning`` says how
    many. Returns a :class:`BootstrapResult`; its ``summary`` has ``value, sd, lower, upper,
    mean`` (percentile interval at ``level``).
    """
    from platinum_jax.inference import Fit, bootstrap_replicates

    problem, engine_theta = engine_problem(fit)
    res = bootstrap_replicates(
        Fit(problem=problem, method="map", theta=engine_theta, converged=fit.converged),
        replicates, seed=seed, chunk=chunk, block=block, progress=progress,
        max_steps=max_steps, gtol=1e-8, xtol=1e-8, ftol=1e-10, curvature="newton")
    thetas = layout_batch(fit.layout, res.theta.subjects, res.theta.items)
    result = BootstrapResult(fit, thetas, res.objective, res.converged, level)
    n_failed = result.summary.attrs["n_failed"]
    if n_failed:
        warnings.warn(
            f"{n_failed} of {replicates} bootstrap replicates did not converge within "
            f"max_steps={max_steps}; they are left out of sd, lower, upper and mean (which use "
            f"the {replicates - n_failed} that did) and flagged False in .converged. Try a "
            "larger max_steps, or a larger l2 if some parameters are barely identified by the "
            "data (e.g. a benchmark scored by only a few models)",
            RuntimeWarning,
            stacklevel=2,
        )
    return result
