"""Bayesian fits of any measurement model: the NumPyro model is built from the protocol.

:func:`numpyro_model` turns a :class:`~platinum_jax.models.MeasurementModel` bound to data into
a plain NumPyro model function (priors on the free entries of every declared parameter, the
likelihood as one factor), which :func:`nuts` samples with NUTS and :func:`svi` fits with
stochastic variational inference. Both return a :class:`Fit` whose frames carry posterior
means and intervals, and whose ``inference_data`` is an ArviZ ``InferenceData`` with named
coordinates (subject, item) and the pointwise log-likelihood that :func:`loo` (PSIS-LOO) reads.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.models._protocol import MeasurementModel

from ._problem import Data, Problem, Theta
from ._results import Fit, _natural_matrix

__all__ = ["numpyro_model", "nuts", "svi", "loo", "posterior_theta"]


def _sites(problem: Problem):
    """``(site name, block id, param, flat positions of its free entries)`` per sampled site."""
    out = []
    for bid, (label, block, free) in enumerate((("subject", problem.subject, problem.free_S),
                                                ("item", problem.item, problem.free_I),
                                                ("global", problem.glob, problem.free_G))):
        free2 = np.atleast_2d(free)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            if p.map_only:
                continue
            cols = np.zeros(free2.shape, dtype=bool)
            cols[:, a:b] = free2[:, a:b]
            pos = np.flatnonzero(cols.ravel())
            if len(pos) == 0:
                continue
            if p.prior is None:
                raise ValueError(
                    f"{label} parameter {name!r} of model {problem.model.name!r} has no prior; "
                    "a Bayesian fit needs a prior on every fitted parameter (set Param.prior)"
                )
            out.append((f"{label}.{name}", bid, p, pos))
    return out


def _assemble(problem: Problem, values: dict) -> Theta:
    """Sampled free entries -> full raw blocks (fixed and point-fit-only entries at start)."""
    start = problem.start()
    blocks = [b.ravel() for b in start]
    for site, bid, _, pos in _sites(problem):
        blocks[bid] = blocks[bid].at[pos].set(values[site])
    return Theta(*(b.reshape(s.shape) for b, s in zip(blocks, start, strict=True)))


def numpyro_model(problem: Problem):
    """A NumPyro model function ``model(data)`` for ``problem`` (a model bound to data).

    Each declared parameter with free entries becomes one sample site ``"<block>.<name>"``
    over those entries, with the parameter's prior; the responses enter as one factor
    ``sum_rows weight * log p(y | mu)``. Copy and extend it like any NumPyro model.
    """
    import numpyro

    sites = _sites(problem)

    def model(data: Data):
        values = {}
        for site, _, p, pos in sites:
            values[site] = numpyro.sample(site, p.prior.expand([len(pos)]).to_event(1))
        theta = _assemble(problem, values)
        numpyro.factor("log_lik", jnp.sum(data.weight * problem.pointwise_log_lik(theta, data)))

    return model


def _map_start(problem: Problem) -> dict:
    """The MAP fit's free entries per sample site: where NUTS and SVI start."""
    from ._point import fit_map

    start = fit_map(problem, problem.table)
    return {site: jnp.asarray(np.asarray(start.theta[bid]).ravel()[pos], problem.dtype)
            for site, bid, _, pos in _sites(problem)}


def posterior_theta(problem: Problem, samples: dict) -> Theta:
    """Flat posterior samples ``{site: (D, k)}`` -> raw blocks with a leading draw axis."""
    return jax.vmap(lambda values: _assemble(problem, values))(
        {k: jnp.asarray(v) for k, v in samples.items()})


def _inference_data(problem: Problem, draws: Theta, chains: int, log_lik: np.ndarray | None,
                    sample_stats: dict | None):
    import arviz as az

    t = problem.table
    posterior, coords, dims = {}, {"subject": list(t.subjects), "item": list(t.items)}, {}
    for label, block, raw in (("subject", problem.subject, draws.subjects),
                              ("item", problem.item, draws.items)):
        nat = _natural_matrix(block, np.asarray(raw))  # (D, n, p)
        for name, (a, b, shape) in block.slices().items():
            v = nat[..., a:b].reshape(chains, -1, nat.shape[1], *shape)
            posterior[name] = v
            extra = [f"{name}_dim_{k}" for k in range(len(shape))]
            dims[name] = [label, *extra]
    g = _natural_matrix(problem.glob, np.asarray(draws.globals))
    for name, (a, b, shape) in problem.glob.slices().items():
        if dict(problem.glob.decl)[name].map_only:
            continue
        posterior[name] = g[:, a:b].reshape(chains, -1, *shape)
    kwargs = {"posterior": posterior, "coords": coords, "dims": dims}
    if log_lik is not None:
        kwargs["log_likelihood"] = {"y": log_lik.reshape(chains, -1, log_lik.shape[-1])}
        kwargs["dims"] = {**dims, "y": ["response"]}
    if sample_stats:
        kwargs["sample_stats"] = sample_stats
    return az.from_dict(**kwargs)


def _pointwise(problem: Problem, draws: Theta, data: Data, limit: float):
    n_draws = draws.subjects.shape[0]
    if n_draws * problem.table.n_responses > limit:
        return None
    return np.asarray(jax.lax.map(lambda th: problem.pointwise_log_lik(Theta(*th), data),
                                  tuple(draws), batch_size=64))


def _finish(problem, method, samples, chains, data, diagnostics, stats, log_lik_limit):
    draws = posterior_theta(problem, samples)
    draws = Theta(*(np.asarray(d) for d in draws))
    mean = Theta(*(d.mean(axis=0) for d in draws))
    log_lik = _pointwise(problem, draws, data, log_lik_limit)
    idata = _inference_data(problem, draws, chains, log_lik, stats)
    if log_lik is None:
        diagnostics["log_likelihood"] = "not stored (draws x responses above log_lik_limit)"
    return Fit(problem=problem, method=method, theta=mean, draws=draws,
               diagnostics=diagnostics, inference_data=idata,
               objective=float("nan"), converged=diagnostics.get("ok", True))


def nuts(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    chains: int = 4,
    warmup: int = 500,
    samples: int = 500,
    target_accept: float = 0.9,
    dense_mass: bool | None = None,
    seed: int = 0,
    progress_bar: bool = False,
    log_lik_limit: float = 5e7,
    rhat_max: float = 1.01,
    ess_min: float = 400,
) -> Fit:
    """Sample the posterior of ``model`` on ``table`` with NUTS (NumPyro), ``chains`` chains.

    The fit's diagnostics give divergences, the worst split R-hat and the smallest bulk and
    tail ESS over every sampled parameter, and ``ok`` (no divergence, R-hat <= ``rhat_max``,
    ESS >= ``ess_min``; R-hat needs two chains or more, so one chain reports it as
    unavailable). Starts from the MAP fit, so warm-up begins in the typical set.
    ``dense_mass``: a dense mass matrix adapts to correlated parameters (a benchmark's
    difficulty and slope when its scores saturate); None (default) uses it up to 600 free
    parameters, where its cost is small, and a diagonal one above.
    """
    import arviz as az
    from numpyro.infer import MCMC, NUTS, init_to_value

    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1) (got {target_accept})")
    if chains < 1 or warmup < 1 or samples < 1:
        raise ValueError("chains, warmup and samples must be >= 1")
    from ._point import _problem

    problem = _problem(model, table)
    init = _map_start(problem)
    data = problem.data()
    if dense_mass is None:
        dense_mass = problem.n_free <= 600
    kernel = NUTS(numpyro_model(problem), target_accept_prob=target_accept,
                  dense_mass=dense_mass, init_strategy=init_to_value(values=init))
    method = "parallel" if jax.local_device_count() >= chains else "sequential"
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=samples, num_chains=chains,
                chain_method=method, progress_bar=progress_bar)
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), data, extra_fields=("diverging",))
    elapsed = time.perf_counter() - t0
    flat = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    div = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    summary = az.summary(az.from_dict(posterior=flat), kind="diagnostics")
    rhat = float(summary["r_hat"].max()) if chains > 1 else float("nan")
    diagnostics = {
        "chains": chains, "warmup": warmup, "samples": samples, "seconds": elapsed,
        "dense_mass": bool(dense_mass),
        "divergences": int(div.sum()),
        "rhat_max": rhat if chains > 1 else "unavailable with one chain",
        "ess_bulk_min": float(summary["ess_bulk"].min()),
        "ess_tail_min": float(summary["ess_tail"].min()),
        "worst_rhat_parameter": str(summary["r_hat"].idxmax()) if chains > 1 else None,
    }
    diagnostics["ok"] = bool(
        diagnostics["divergences"] == 0
        and (chains == 1 or rhat <= rhat_max)
        and diagnostics["ess_bulk_min"] >= ess_min and diagnostics["ess_tail_min"] >= ess_min
    )
    merged = {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}
    stats = {"diverging": div}
    return _finish(problem, "nuts", merged, chains, data, diagnostics, stats, log_lik_limit)


def svi(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    steps: int = 3000,
    learning_rate: float = 0.01,
    draws: int = 1000,
    guide: str = "normal",
    seed: int = 0,
    log_lik_limit: float = 5e7,
    mesh=None,
) -> Fit:
    """Variational fit with NumPyro's SVI and an ``AutoNormal`` (``guide="normal"``) or
    ``AutoLowRankMultivariateNormal`` (``"lowrank"``) guide, optimised with optax's Adam from
    the MAP; ``draws`` samples of the guide give the intervals.

    ``mesh``: a 1-D :class:`jax.sharding.Mesh` (or ``True`` for one over every device) across
    which the response rows are sharded during the optimisation (padded with zero-weight rows;
    see :func:`~platinum_jax.inference._first_order.shard_rows`)."""
    import optax
    from numpyro.infer import SVI, Trace_ELBO, init_to_value
    from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal

    from ._point import _problem

    guides = {"normal": AutoNormal, "lowrank": AutoLowRankMultivariateNormal}
    if guide not in guides:
        raise ValueError(f"guide must be one of {sorted(guides)} (got {guide!r})")
    problem = _problem(model, table)
    init = _map_start(problem)
    data = problem.data()
    npm = numpyro_model(problem)
    g = guides[guide](npm, init_loc_fn=init_to_value(values=init))
    engine = SVI(npm, g, optax.adam(learning_rate), Trace_ELBO())
    rows = data
    if mesh is not None:
        from ._first_order import row_mesh, shard_rows

        rows = shard_rows(data, row_mesh() if mesh is True else mesh)
    t0 = time.perf_counter()
    result = engine.run(jax.random.PRNGKey(seed), steps, rows, progress_bar=False)
    elapsed = time.perf_counter() - t0
    post = g.sample_posterior(jax.random.PRNGKey(seed + 1), result.params, sample_shape=(draws,))
    post = {k: np.asarray(v) for k, v in post.items() if k in init}
    losses = np.asarray(result.losses)
    tail = losses[-max(steps // 10, 1):]
    diagnostics = {"steps": steps, "seconds": elapsed, "final_elbo_loss": float(tail.mean()),
                   "elbo_loss_sd_last_10pct": float(tail.std()), "guide": guide}
    return _finish(problem, "svi", post, 1, data, diagnostics, None, log_lik_limit)


def loo(fit: Fit):
    """PSIS-LOO (ArviZ) of a NUTS or SVI fit: expected log predictive density and Pareto k."""
    import arviz as az

    if fit.inference_data is None or "log_likelihood" not in fit.inference_data.groups():
        raise ValueError(
            "PSIS-LOO needs the pointwise log-likelihood of a Bayesian fit (nuts or svi); this "
            f"fit is {fit.method!r} or did not store it (raise log_lik_limit)"
        )
    return az.loo(fit.inference_data, pointwise=True)

