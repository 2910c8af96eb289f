"""The Rosetta model's flat parameter layout on the engine's blocks.

A :class:`~platinum_jax.models.rosetta.ParameterLayout` orders the free parameters of the Rosetta model
(Ho et al. 2025, "A Rosetta Stone for AI Benchmarks") as ``theta = concat(C_free, D_free,
alpha_free)``; the engine keeps them as raw blocks ``S = C[:, None]``, ``I = [D, alpha]`` and
the globals (the centre ``t`` of the L2 penalty, a point-fit device the data never see). These
maps convert between the two, and :func:`layout_problem` builds the engine's problem from the
sizes of a layout alone, for array-level refits vmapped over weights, data and L2 strengths
(:func:`solve_layout`, the objective's derivatives :func:`layout_system`).
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable
from platinum_jax.inference import (
    Data,
    Fit,
    MAPResult,
    Problem,
    Theta,
    bootstrap_replicates,
    laplace_covariance,
    objective_hessian,
    solve_map,
)
from platinum_jax.models import Fixed, Identification, Rosetta
from platinum_jax.models.rosetta import (
    BenchmarkAnchor,
    ParameterLayout,
    penalty_vector,
    predict_scores,
    regularisation_denominator,
)

__all__ = ["BootstrapResult", "from_engine_theta", "layout_batch", "layout_bootstrap",
           "layout_entries", "layout_hessian", "layout_laplace", "layout_laplace_sd", "layout_problem",
           "layout_system", "solve_layout", "to_engine_theta"]


def to_engine_theta(layout: ParameterLayout, theta) -> Theta:
    """Layout vector ``(P,)`` -> engine raw blocks, the penalty centre ``t`` at its optimum.

    The paper's penalty centres C and D on their mean when a benchmark fixes the scale; the
    engine keeps that centre as a free global whose best value given C and D is that mean.
    Concrete input is mapped in NumPy (float64), a traced one in JAX (jittable).
    """
    traced = isinstance(theta, jax.core.Tracer)
    xp = jnp if traced else np
    p = layout.unpack(theta if traced else np.asarray(theta, dtype=np.float64))
    c, d, a = (xp.asarray(x) for x in (p.capability, p.difficulty, p.slope))
    cd = xp.concatenate([c, d])
    shift = xp.mean(cd) if layout.center_penalty else xp.zeros((), cd.dtype)
    return Theta(c[:, None], xp.stack([d, a], axis=1), xp.reshape(shift, (1,)))


def from_engine_theta(layout: ParameterLayout, theta: Theta) -> np.ndarray:
    """Engine raw blocks -> layout vector ``(P,)`` (in NumPy: no compiled call per gather)."""
    return layout_batch(layout, np.asarray(theta.subjects)[None], np.asarray(theta.items)[None])[0]


def layout_batch(layout: ParameterLayout, subjects, items) -> np.ndarray:
    """Batched engine blocks ``S (R, M, 1)``, ``I (R, B, 2)`` -> layout vectors ``(R, P)``."""
    free_c, free_d, free_a = layout.free_positions()
    s, i = np.asarray(subjects), np.asarray(items)
    return np.concatenate([s[:, free_c, 0], i[:, free_d, 0], i[:, free_a, 1]], axis=1)


def layout_entries(problem: Problem, layout: ParameterLayout):
    """``(x, g)``: the flat positions, in the engine's ``concat(S.ravel(), I.ravel(), G)``, of
    the layout's free parameters (C, then D, then alpha) and of the free globals."""
    n_s, n_i, p_i = problem.table.n_subjects, problem.table.n_items, problem.item.size
    col = {name: k for k, name in enumerate(problem.item.names)}
    free_c, free_d, free_a = layout.free_positions()
    base_i = n_s * problem.subject.size
    x = np.concatenate([free_c * problem.subject.size, base_i + free_d * p_i + col["difficulty"],
                        base_i + free_a * p_i + col["slope"]]).astype(np.int64)
    g = base_i + n_i * p_i + np.flatnonzero(np.asarray(problem.free_G).ravel())
    return x, g


def layout_problem(layout: ParameterLayout, l2: float = 0.1, link: str = "sigmoid") -> Problem:
    """The engine's Rosetta :class:`Problem` for arrays laid out as ``layout`` says.

    The problem knows only the sizes (its rows are placeholders), so the rows come in as
    :class:`Data` at solve time. The L2 term is the layout's: centred on the best common shift
    of C and D when ``layout.center_penalty``, plain otherwise, normalised by
    :func:`~platinum_jax.models.rosetta.regularisation_denominator`; a layout with no fixed entry (the
    scale held by the penalty alone) is allowed.
    """
    m, b = layout.n_models, layout.n_benchmarks
    table = ResponseTable.from_arrays(np.repeat(np.arange(m), b), np.tile(np.arange(b), m),
                                      np.full(m * b, 0.5), name="a stitching layout")

    def fixed(n, positions, values):
        mask, vals = np.zeros(n, bool), np.zeros(n)
        mask[list(positions)], vals[list(positions)] = True, values
        return Fixed(mask, vals)

    ident = Identification(
        subject={"capability": fixed(m, layout.fixed_capability, layout.fixed_capability_values)},
        item={"difficulty": fixed(b, layout.fixed_difficulty, layout.fixed_difficulty_values),
              "slope": fixed(b, layout.fixed_slope, layout.fixed_slope_values)},
        glob={} if layout.center_penalty else {"shift": Fixed(np.ones((), bool), np.zeros(()))},
        description="fixed entries of a stitching parameter layout",
    )
    # The model divides lambda by M + 2B - 1 (its benchmark-anchor count); rescale lambda so
    # the penalty is divided by the layout's own count instead.
    l2 = float(l2) * (m + 2 * b - 1) / regularisation_denominator(layout)
    return Problem(Rosetta(link=link, l2=l2, anchor=BenchmarkAnchor()), table,
                   identification=ident, validate=False)


def layout_system(theta, layout: ParameterLayout, model_index, benchmark_index, scores, weights,
                  l2, link: str = "sigmoid", newton: bool = False):
    """Cost ``0.5 |r|^2`` (:func:`~platinum_jax.models.rosetta.stitching_cost`), gradient (P,) and
    Gauss-Newton (exact with ``newton``) Hessian (P, P) of the paper's objective over the
    layout's free parameters, by autodiff (jittable, ``layout`` static)."""
    return _layout_system(jnp.asarray(theta), layout, model_index, benchmark_index, scores,
                          weights, l2, link, newton)


@functools.partial(jax.jit, static_argnames=("layout", "link", "newton"))
def _layout_system(theta, layout, mi, bi, y, w, l2, link, newton):
    def data_residuals(t):
        return jnp.sqrt(w) * (predict_scores(layout.unpack(t), mi, bi, link) - y)

    def penalty(t):  # quadratic, so its Hessian is exact in the Gauss-Newton matrix too
        v = penalty_vector(layout.unpack(t), layout)
        return 0.5 * l2 * jnp.sum(v**2) / regularisation_denominator(layout)

    def cost(t):
        return 0.5 * jnp.sum(data_residuals(t) ** 2) + penalty(t)

    if newton:
        hess = jax.hessian(cost)(theta)
    else:
        jac = jax.jacfwd(data_residuals)(theta)
        hess = jac.T @ jac + jax.hessian(penalty)(theta)
    return cost(theta), jax.grad(cost)(theta), hess


@functools.partial(jax.jit, static_argnames=("layout", "max_steps", "gtol", "xtol", "ftol",
                                             "link", "newton"))
def solve_layout(theta0, layout: ParameterLayout, model_index, benchmark_index, scores,
                 weights=None, l2=0.1, *, max_steps: int = 500, gtol: float = 1e-9,
                 xtol: float = 1e-12, ftol: float = 1e-14, link: str = "sigmoid",
                 newton: bool = False) -> MAPResult:
    """Minimise the paper's objective from the layout vector ``theta0`` with the engine's
    Levenberg-Marquardt (:func:`solve_map` on :func:`layout_problem`, ``l2`` its traced
    penalty scale; ``weights`` 0 drop scores). Jittable and vmappable over starts, weights and
    ``l2``; returns a :class:`MAPResult` whose ``theta`` is a layout vector (P,)."""
    y = jnp.asarray(scores, jnp.asarray(theta0).dtype)
    w = jnp.ones_like(y) if weights is None else jnp.asarray(weights, y.dtype)
    res = solve_map(layout_problem(layout, 1.0, link), to_engine_theta(layout, theta0),
                    Data(jnp.asarray(model_index), jnp.asarray(benchmark_index), y,
                         jnp.ones_like(y), w),
                    max_steps=max_steps, gtol=gtol, xtol=xtol, ftol=ftol, penalty_scale=l2,
                    curvature="newton" if newton else "gauss-newton")
    c, d, a = layout.free_positions()
    s, i = res.theta.subjects, res.theta.items
    return res._replace(theta=jnp.concatenate([s[c, 0], i[d, 0], i[a, 1]]))


def _free_rows(fit: Fit, layout: ParameterLayout):
    """Rows, among the engine's free entries (its Hessian's and covariance's), of the layout's
    free parameters and of the free globals (the penalty's centre)."""
    p = fit.problem
    free = np.flatnonzero(np.concatenate([np.asarray(f).ravel()
                                          for f in (p.free_S, p.free_I, p.free_G)]))
    x, g = layout_entries(p, layout)
    return np.searchsorted(free, x), np.searchsorted(free, g)


def layout_hessian(fit: Fit, layout: ParameterLayout) -> jax.Array:
    """Exact Hessian (P, P) of a MAP fit's objective over the layout's free parameters:
    :func:`objective_hessian` with the free globals profiled out (Schur complement, a solve),
    the Hessian of the paper's objective with its penalty centred on the mean of C and D."""
    x, g = _free_rows(fit, layout)
    h = objective_hessian(fit)
    if g.size == 0:
        return h[np.ix_(x, x)]
    h_xg = h[np.ix_(x, g)]
    return h[np.ix_(x, x)] - h_xg @ jnp.linalg.solve(h[np.ix_(g, g)], h_xg.T)


def layout_laplace_sd(fit: Fit, layout: ParameterLayout, noise_scale="auto"):
    """Laplace standard deviations (P,) of the layout's free parameters from
    :func:`laplace_covariance` (the free globals marginalised), and the noise variance used."""
    cov = laplace_covariance(fit, noise_scale=noise_scale)
    x, _ = _free_rows(fit, layout)
    return np.sqrt(np.diag(cov.to_numpy())[x]), cov.attrs["noise_variance"]


def layout_laplace(fit: Fit, layout: ParameterLayout, labels, level: float = 0.95,
                   noise_scale="auto") -> pd.DataFrame:
    """Laplace intervals of the layout's free parameters (:func:`layout_laplace_sd`):
    ``value`` (the fit's layout vector), ``sd`` and the normal interval ``lower``, ``upper`` at
    ``level``, indexed by ``labels``; ``attrs["noise_variance"]`` is the noise variance used."""
    from scipy.stats import norm

    sd, noise = layout_laplace_sd(fit, layout, noise_scale)
    value, half = from_engine_theta(layout, fit.theta), norm.ppf(0.5 + level / 2) * sd
    frame = pd.DataFrame({"value": value, "sd": sd, "lower": value - half,
                          "upper": value + half}, index=labels)
    frame.attrs["noise_variance"] = noise
    return frame


class BootstrapResult:
    """Bootstrap replicates on a layout: ``thetas`` (R, P), ``costs`` (R,), ``converged`` (R,)
    for every replicate, and ``summary`` (``value`` the estimate, ``sd``, percentile
    ``lower``/``upper`` at ``level``, ``mean``) over the converged ones only (NaN where too
    few), indexed by ``labels``; ``summary.attrs`` records ``replicates``, ``n_converged``,
    ``n_failed``, ``converged_fraction`` and ``level``. ``fit`` is the fit it came from."""

    def __init__(self, fit, thetas, costs, converged, level, value, labels):
        self.fit, self.thetas, self.costs, self.labels = fit, thetas, costs, labels
        self.converged = np.asarray(converged, dtype=bool)
        ok = thetas[self.converged]
        n_ok, nan = len(ok), np.full(thetas.shape[1], np.nan)
        lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2], axis=0) if n_ok else (nan, nan)
        self.summary = pd.DataFrame(
            {"value": value, "sd": ok.std(axis=0, ddof=1) if n_ok >= 2 else nan,
             "lower": lo, "upper": hi, "mean": ok.mean(axis=0) if n_ok else nan}, index=labels)
        self.summary.attrs.update(
            replicates=thetas.shape[0], n_converged=int(n_ok), n_failed=int(len(thetas) - n_ok),
            converged_fraction=float(np.mean(self.converged)), level=float(level))

    @property
    def replicates(self) -> pd.DataFrame:
        """Every replicate (failed ones too; see ``converged``), one column per label."""
        return pd.DataFrame(self.thetas, columns=self.labels,
                            index=pd.RangeIndex(len(self.thetas), name="replicate"))


def layout_bootstrap(fit: Fit, layout: ParameterLayout, labels, replicates: int = 1000, *,
                     level: float = 0.95, max_steps: int = 200, **options) -> BootstrapResult:
    """:func:`bootstrap_replicates` of a MAP fit (exact-Hessian refits from the estimate; the
    ``options`` ``seed``, ``chunk``, ``block``, ``progress`` go there) on the layout's vector.
    Replicates that do not converge within ``max_steps`` stay in ``thetas`` but leave the
    summary, with a ``RuntimeWarning``."""
    res = bootstrap_replicates(fit, replicates, max_steps=max_steps, gtol=1e-8, xtol=1e-8,
                               ftol=1e-10, curvature="newton", **options)
    out = BootstrapResult(fit, layout_batch(layout, res.theta.subjects, res.theta.items),
                          res.objective, res.converged, level, from_engine_theta(layout, fit.theta),
                          labels)
    if n_failed := out.summary.attrs["n_failed"]:
        warnings.warn(
            f"{n_failed} of {replicates} bootstrap replicates did not converge within "
            f"max_steps={max_steps}; they are left out of sd, lower, upper and mean and flagged "
            "False in .converged. Try a larger max_steps, or a larger l2 if some parameters "
            "are barely identified (e.g. a benchmark scored by only a few models)",
            RuntimeWarning, stacklevel=3)
    return out
