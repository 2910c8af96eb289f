"""Point fits and their uncertainty for any measurement model: MAP with restarts, Laplace,
and scoring new subjects against fixed items (K-fold cross-validation is in ``_cv``).

Enable float64 for fits (``jax.config.update("jax_enable_x64", True)``); in float32 the
solver still runs but stops at float32 precision.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax._memory import MAP_BYTES_PER_RESPONSE, check_memory
from platinum_jax.data import ResponseTable
from platinum_jax.models import MeasurementModel

from ._map import gauss_newton_system, map_solver, per_structure
from ._problem import Problem, Theta
from ._results import Fit

__all__ = ["fit_map", "laplace", "laplace_covariance", "noise_variance", "objective_hessian"]


def _problem(model, table) -> Problem:
    if isinstance(model, Problem):
        return model
    table.check_connected()
    return Problem(model, table)


def _jitter(problem: Problem, theta: Theta, restarts: int, seed: int) -> Theta:
    """The start plus ``restarts`` copies jittered as each :class:`Param` declares."""
    rng = np.random.default_rng(seed)
    out = []
    for block, free, raw in ((problem.subject, problem.free_S, theta.subjects),
                             (problem.item, problem.free_I, theta.items),
                             (problem.glob, problem.free_G, theta.globals)):
        base = np.repeat(np.asarray(raw, np.float64)[None], restarts + 1, axis=0)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            part = base[1:, ..., a:b]
            noise = rng.normal(0.0, p.jitter, part.shape) * free[..., a:b]
            base[1:, ..., a:b] = part * np.exp(noise) if p.relative else part + noise
        out.append(jnp.asarray(base, problem.dtype))
    return Theta(*out)


def fit_map(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    restarts: int = 0,
    seed: int = 0,
    theta0: Theta | None = None,
    solver: str = "lm",
    mesh=None,
    checks: bool = True,
    **solver_options,
) -> Fit:
    """Penalised MAP fit of ``model`` to ``table`` by bipartite Levenberg-Marquardt, or by
    L-BFGS for data too large for it.

    Args:
        restarts: extra starts, jittered around the start as each parameter declares
            (:attr:`Param.jitter`), solved in one vmapped call; the lowest converged objective wins (objectives can have several minima).
        seed: seed of the jitter.
        theta0: a start (raw blocks) instead of the declared one.
        solver: ``"lm"`` (default: Levenberg-Marquardt with Schur elimination, a few dozen
            iterations, each ``O(rows)`` plus a dense solve of the smaller side) or
            ``"first_order"`` (optax L-BFGS on the same objective: ``O(rows)`` per iteration
            and no per-row Hessians; for millions of responses; see
            :func:`~platinum_jax.inference._first_order.solve_first_order`).
        mesh: with ``solver="first_order"``, a 1-D :class:`jax.sharding.Mesh` (or ``True`` for
            one over every device) across which the responses are sharded.
        checks: the checks that a wrong fit never reports success in silence: globals left to
            their prior (``diagnostics["prior_dominated"]``, a warning) and, for a model that
            ``extends()`` another, a fit of the nested model (``diagnostics["nested"]``).
            ``False`` for a start point that nothing reports (the samplers' start).
        solver_options: ``max_steps``, ``gtol``, ``ftol``, ``xtol`` (Levenberg-Marquardt);
            ``max_steps``, ``gtol``, ``ftol``, ``memory`` (first order).

    Raises:
        ValueError: responses the likelihood cannot produce, a disconnected subject-item graph.
    """
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0 (got {restarts})")
    if solver not in ("lm", "first_order"):
        raise ValueError(f"solver must be 'lm' or 'first_order' (got {solver!r})")
    if mesh is not None and solver != "first_order":
        raise ValueError("mesh (sharded responses) needs solver='first_order'")
    problem = _problem(model, table)
    check_memory(MAP_BYTES_PER_RESPONSE * problem.table.n_responses,
                 f"the MAP fit of {problem.table.n_responses:,} responses",
                 "fit a subset of the responses, use a machine with more memory, or for "
                 "binary responses at scale the streamed 2PL (`platinum-jax fit --stream`)")
    start = problem.start() if theta0 is None else Theta(*(jnp.asarray(t, problem.dtype)
                                                            for t in theta0))
    data = problem.data()
    if solver == "first_order":
        if restarts:
            raise ValueError("restarts are for solver='lm'; the first-order path runs one start")
        from ._first_order import first_order_solver, replicate, row_mesh, shard_rows

        if mesh is not None:
            mesh = row_mesh() if mesh is True else mesh
            data, start = shard_rows(data, mesh), replicate(start, mesh)
        res = first_order_solver(problem, **solver_options)(start, data)
        extra = {"solver": "first_order"}
        if mesh is not None:
            extra["devices"] = int(mesh.size)
    elif restarts:
        many = map_solver(problem, batched="theta", **solver_options)(
            _jitter(problem, start, restarts, seed), data)
        cost = np.where(np.asarray(many.converged), np.asarray(many.objective), np.inf)
        best = int(np.argmin(cost)) if np.isfinite(cost).any() else 0
        res = jax.tree_util.tree_map(lambda a: a[best], many)
        extra = {"restarts": restarts, "restart_objectives": np.asarray(many.objective)}
    else:
        res = map_solver(problem, **solver_options)(start, data)
        extra = {}
    theta = Theta(*(np.asarray(t) for t in res.theta))
    from ._checks import nested_check, prior_dominated_globals, warn_prior_dominated

    if checks and solver == "lm" and mesh is None:
        prior_bound = prior_dominated_globals(problem, theta, problem.data())
        if prior_bound:
            extra["prior_dominated"] = prior_bound
            warn_prior_dominated(problem, prior_bound)
    fit = Fit(
        problem=problem,
        method="map",
        theta=theta,
        objective=float(res.objective),
        converged=bool(res.converged),
        diagnostics={"iterations": int(res.iterations),
                     "gradient_norm": float(res.gradient_norm), **extra},
    )
    base = problem.model.extends()
    if checks and base is not None and theta0 is None:
        fit.diagnostics["nested"] = nested_check(
            fit, fit_map(base, problem.table, restarts=restarts, seed=seed, solver=solver,
                         checks=False, **solver_options))
    return fit


# ---------------------------------------------------------------------- Laplace
def _free_index(problem: Problem):
    return [np.flatnonzero(np.asarray(f).ravel()) for f in
            (problem.free_S, problem.free_I, problem.free_G)]


def _from_free(problem: Problem, theta: Theta, x):
    """Free-parameter vector -> full raw blocks (fixed entries from ``theta``)."""
    idx = _free_index(problem)
    out, k = [], 0
    for block, ix in zip(theta, idx, strict=True):
        flat = jnp.asarray(block).ravel()
        flat = flat.at[ix].set(x[k:k + len(ix)])
        out.append(flat.reshape(jnp.shape(block)))
        k += len(ix)
    return Theta(*out)


def _to_free(problem: Problem, theta: Theta):
    idx = _free_index(problem)
    return jnp.concatenate([jnp.asarray(b).ravel()[ix] for b, ix in zip(theta, idx, strict=True)])


_PROGRAMS: dict = {}


def _laplace_programs(problem: Problem) -> dict:
    """The compiled pieces of the Laplace path of ``problem``, kept by problem structure like
    the solvers (the rows come in as an argument, not as constants folded into a program):

    * ``hessian(theta, data)``: the exact Hessian over the free entries, assembled from the
      solver's per-row Newton blocks (one pass over the responses instead of one per
      parameter);
    * ``factor(theta, data)``: its Cholesky factor and the free vector at ``theta``;
    * ``spread(theta, x0, chol, z, scale)``: the draws ``x0 + scale L^-T z`` mapped back to
      raw blocks, and the exact sd of every raw entry (``diag H^-1`` as the column norms of
      ``L^-1``, one triangular solve).

    Each is one program, so a Laplace fit compiles three programs rather than dispatching
    (and compiling) every small operation on its own.
    """
    return per_structure(_PROGRAMS, problem, "laplace", _build_laplace_programs, limit=16)


def _build_laplace_programs(bare: Problem) -> dict:
    free = np.flatnonzero(np.concatenate([np.asarray(f).ravel() for f in
                                          (bare.free_S, bare.free_I, bare.free_G)]))

    def hessian(theta, data):
        sys = gauss_newton_system(bare, theta, data, "newton")
        n_s, p_s = sys.gS.shape
        n_i, p_i = sys.gI.shape
        a, b = n_s * p_s, n_i * p_i
        hss = jnp.einsum("ij,iab->iajb", jnp.eye(n_s), sys.HSS).reshape(a, a)
        hii = jnp.einsum("ij,iab->iajb", jnp.eye(n_i), sys.HII).reshape(b, b)
        hsi = jnp.transpose(sys.HSI, (0, 2, 1, 3)).reshape(a, b)
        hsg, hig = sys.HSG.reshape(a, -1), sys.HIG.reshape(b, -1)
        full = jnp.block([[hss, hsi, hsg], [hsi.T, hii, hig], [hsg.T, hig.T, sys.HGG]])
        return full[np.ix_(free, free)]

    def factor(theta, data):
        return jnp.linalg.cholesky(hessian(theta, data)), _to_free(bare, theta)

    def spread(theta, x0, chol, z, scale):
        steps = scale * jax.scipy.linalg.solve_triangular(chol.T, z.T, lower=False).T
        sample = jax.vmap(lambda d: _from_free(bare, theta, x0 + d))(steps)
        eye = jnp.eye(chol.shape[0], dtype=chol.dtype)
        linv = jax.scipy.linalg.solve_triangular(chol, eye, lower=True)
        sd = scale * jnp.sqrt(jnp.sum(linv**2, axis=0))
        zero = Theta(*(jnp.zeros_like(t) for t in theta))
        return sample, _from_free(bare, zero, sd)

    return {"hessian": jax.jit(hessian), "factor": jax.jit(factor), "spread": jax.jit(spread)}


def objective_hessian(fit: Fit) -> jax.Array:
    """Exact Hessian ``(Q, Q)`` of the fit's objective (negative log-likelihood plus penalties)
    over its ``Q`` free raw parameters, in the order ``concat(S.ravel(), I.ravel(), G)`` of
    the free entries; the matrix whose inverse Laplace scales (float64 advised)."""
    problem = fit.problem
    theta = Theta(*(jnp.asarray(t, problem.dtype) for t in fit.theta))
    return _laplace_programs(problem)["hessian"](theta, problem.data())


NOISE_SCALES = ("auto", "residual", "likelihood")


def _mean_parameter_count(problem: Problem) -> int:
    """Free parameters that the likelihood sees: every free entry but the point-fit devices
    (``map_only`` globals such as the centre of the Rosetta penalty), which use up no residual
    degrees of freedom."""
    devices = 0
    free_g = np.asarray(problem.free_G).ravel()
    for name, (a, b, _) in problem.glob.slices().items():
        if dict(problem.glob.decl)[name].map_only:
            devices += int(free_g[a:b].sum())
    return problem.n_free - devices


def noise_variance(fit: Fit, noise_scale: str | float = "auto") -> dict:
    """The factor ``s^2`` by which a Laplace covariance multiplies the inverse Hessian, and why.

    * ``"residual"``: for a least-squares likelihood (a Gaussian whose noise ``sigma_0`` is fixed
      by hand, e.g. the Rosetta paper's ``0.5 sum r^2``), the noise is estimated from the
      residuals: ``s^2 = sum_i w_i ((y_i - mu_i) / sigma_0)^2 / (n - p)``, with ``n`` the rows of
      positive weight and ``p`` the free parameters of the mean (point-fit devices such as the
      penalty's centre excluded). Reading ``objective / s^2`` as the negative log posterior, the
      covariance is ``s^2 H^{-1}``; with no penalty and a linear mean this is the textbook
      ``sigma_hat^2 (J^T J)^{-1}`` with the unbiased ``sigma_hat^2 = RSS / (n - p)``.
    * ``"likelihood"``: ``s^2 = 1``, the covariance the likelihood implies as written (right for
      families with an estimated or known spread: Bernoulli, Binomial, a free Gaussian noise).
    * ``"auto"`` (default): ``"residual"`` for a least-squares likelihood
      (:attr:`Likelihood.least_squares`), ``"likelihood"`` otherwise.
    * a positive number ``sigma``: the noise sd of the responses, ``s^2 = (sigma / sigma_0)^2``.

    Returns ``{"noise_scale": how, "noise_variance": s^2}`` plus ``"residual_dof"`` (``n - p``)
    for ``"residual"``; these go into a Laplace fit's diagnostics (and ``fit.json``).
    """
    problem = fit.problem
    lik = problem.model.likelihood
    if isinstance(noise_scale, str):
        if noise_scale not in NOISE_SCALES:
            raise ValueError(f"noise_scale must be one of {NOISE_SCALES} or a positive number "
                             f"(got {noise_scale!r})")
        how = noise_scale
        if how == "auto":
            how = "residual" if lik.least_squares else "likelihood"
    else:
        sigma = float(noise_scale)
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"noise_scale must be a positive number (got {noise_scale!r})")
        base = float(lik.noise) if lik.least_squares else 1.0
        return {"noise_scale": "given", "noise_variance": (sigma / base) ** 2}
    if how == "likelihood":
        return {"noise_scale": "likelihood", "noise_variance": 1.0}
    if not lik.least_squares:
        raise ValueError(
            f"noise_scale='residual' is for least-squares likelihoods (a Gaussian with its noise "
            f"fixed, e.g. Gaussian(noise=1.0)); model {problem.model.name!r} has the "
            f"{lik.name} likelihood, whose spread the Hessian already carries: use "
            "noise_scale='likelihood' (or 'auto')")
    t = problem.table
    w = np.ones(t.n_responses) if t.weight is None else np.asarray(t.weight, np.float64)
    n = int(np.sum(w > 0))
    p = _mean_parameter_count(problem)
    if n <= p:
        raise ValueError(
            f"{n} responses for {p} free parameters: too few to estimate the noise from the "
            "residuals; pass noise_scale=<noise sd> or noise_scale='likelihood'")
    r = (np.asarray(fit.predict()) - np.asarray(t.response, np.float64)) / float(lik.noise)
    return {"noise_scale": "residual", "noise_variance": float(np.sum(w * r**2) / (n - p)),
            "residual_dof": n - p}


def _laplace_factor(fit: Fit, max_parameters: int):
    """``(x0, L)``: the free raw parameters at the fit and the Cholesky factor of the Hessian
    of the objective over them (float64 advised)."""
    problem = fit.problem
    n = problem.n_free
    if n > max_parameters:
        raise ValueError(
            f"Laplace needs a dense {n} x {n} Hessian (more than max_parameters="
            f"{max_parameters}); use bootstrap or SVI for a model this large, or raise the limit"
        )
    check_memory(3 * 8 * n * n, f"the Laplace approximation's {n} x {n} Hessian",
                 "use bootstrap or SVI for a model this large")
    theta = Theta(*(jnp.asarray(t, problem.dtype) for t in fit.theta))
    chol, x0 = _laplace_programs(problem)["factor"](theta, problem.data())
    if not bool(jnp.all(jnp.isfinite(chol))):
        raise ValueError(
            "the Hessian of the objective is not positive definite at this fit, so Laplace has "
            "no Gaussian to report: check that the fit converged, and that every free parameter "
            "is pinned down by data or a penalty (an item nobody answered, a missing anchor)"
        )
    return theta, x0, chol


def _free_labels(problem: Problem) -> pd.MultiIndex:
    """``(block, entity, parameter)`` of every free raw entry, in the order of the free vector."""
    t = problem.table
    rows = []
    for kind, block, entities, free in (("subject", problem.subject, t.subjects, problem.free_S),
                                        ("item", problem.item, t.items, problem.free_I),
                                        ("global", problem.glob, [""], problem.free_G)):
        cols = [label for _, label in block.columns()]
        mask = np.asarray(free).reshape(len(entities), len(cols))
        rows += [(kind, e, c) for k, e in enumerate(entities) for j, c in enumerate(cols)
                 if mask[k, j]]
    return pd.MultiIndex.from_tuples(rows, names=["block", "entity", "parameter"])


def laplace_covariance(fit: Fit, *, noise_scale: str | float = "auto",
                       max_parameters: int = 6000) -> pd.DataFrame:
    """The Laplace covariance ``s^2 H^{-1}`` of the free raw parameters at a MAP fit, labelled
    ``(block, entity, parameter)`` on both axes; ``s^2`` as :func:`noise_variance` says
    (recorded in ``attrs``). ``H^{-1}`` comes from Cholesky solves, never an explicit inverse."""
    _, _, chol = _laplace_factor(fit, max_parameters)
    info = noise_variance(fit, noise_scale)
    eye = jnp.eye(chol.shape[0], dtype=chol.dtype)
    cov = info["noise_variance"] * np.asarray(jax.scipy.linalg.cho_solve((chol, True), eye))
    labels = _free_labels(fit.problem)
    out = pd.DataFrame(cov, index=labels, columns=labels)
    out.attrs.update(info)
    return out


def laplace(fit: Fit, *, draws: int = 2000, seed: int = 0, max_parameters: int = 6000,
            noise_scale: str | float = "auto") -> Fit:
    """Gaussian approximation at the MAP: covariance ``s^2 H^{-1}``, ``H`` the Hessian of the
    penalised objective over the free raw parameters (Cholesky, no explicit inverse) and ``s^2``
    the noise factor of :func:`noise_variance` (``noise_scale``: by default the residual
    variance for a least-squares likelihood, 1 otherwise; the diagnostics say which).

    The result carries ``draws`` samples (what ``draws.npz`` and ``platinum-jax weights`` read)
    and the Gaussian's exact standard deviation of every raw entry: a parameter reported on its
    raw scale (no transform) gets that ``_sd`` and the normal interval ``value +- z sd``; a
    transformed one (a log discrimination) gets the sd and quantiles of its mapped draws.

    Raises:
        ValueError: more than ``max_parameters`` free parameters (the Hessian is dense: use
            :func:`bootstrap` or a Bayesian fit), or a Hessian that is not positive definite
            at the fit (not a minimum, or a parameter the data and penalty do not pin down).
    """
    problem = fit.problem
    theta, x0, chol = _laplace_factor(fit, max_parameters)
    info = noise_variance(fit, noise_scale)
    scale = float(np.sqrt(info["noise_variance"]))
    z = jax.random.normal(jax.random.PRNGKey(seed), (draws, x0.shape[0]), problem.dtype)
    # steps ~ N(0, s^2 H^-1); the sd is exact, not from the draws
    sample, raw_sd = _laplace_programs(problem)["spread"](theta, x0, chol, z, scale)
    return dataclasses.replace(
        fit, method="laplace", draws=Theta(*(np.asarray(s) for s in sample)),
        raw_sd=Theta(*(np.asarray(s) for s in raw_sd)),
        diagnostics={**fit.diagnostics, "laplace_draws": draws, **info},
    )
