"""Bayesian fits of any measurement model: the NumPyro model is built from the protocol.

:func:`numpyro_model` turns a :class:`~platinum_jax.models.MeasurementModel` bound to data into
a plain NumPyro model function (priors on the free entries of every declared parameter, the
likelihood as one factor), which :func:`nuts` samples with NUTS and :func:`svi` fits with
stochastic variational inference. Both return a :class:`Fit` whose frames carry posterior
means and intervals, and whose ``inference_data`` is an ArviZ ``InferenceData`` with named
coordinates (subject, item) and the pointwise log-likelihood that :func:`loo` (PSIS-LOO) reads.

SVI's driver, :func:`run_svi`, lives in ``_svi``.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.models import Hierarchical, MeasurementModel

from ._diagnostics import choose_chain_method, rhat_ok, sampler_diagnostics
from ._nuts_init import compiled_init_nuts
from ._problem import Data, Problem, Theta
from ._results import Fit, _natural_matrix
from ._svi import run_svi

__all__ = ["numpyro_model", "nuts", "run_nuts", "run_svi", "svi", "loo", "posterior_theta",
           "posterior_values"]


def _reparam(problem: Problem):
    """The model's :class:`Reparameterisation` for this data, or None (cached per problem)."""
    if not hasattr(problem, "_bayes_reparam"):
        rep = problem.model.reparameterise(problem.table)
        if rep is not None:
            known = set(problem.subject.names) | set(problem.item.names) | set(problem.glob.names)
            unknown = set(rep.replaces) - known
            if unknown:
                raise ValueError(f"the reparameterisation of model {problem.model.name!r} "
                                 f"replaces unknown parameter(s) {sorted(unknown)}")
        problem._bayes_reparam = rep
    return problem._bayes_reparam


def _entity_counts(problem: Problem, bid: int):
    t = problem.table
    if bid == 0:
        return np.bincount(t.subject_index, minlength=t.n_subjects)
    return np.bincount(t.item_index, minlength=t.n_items)


def _sites(problem: Problem, plain: bool = False):
    """Sample sites of the declared parameters: ``(site name, block id, param, flat positions
    of its free entries, centred mask per position or None)``; a reparameterisation's
    parameters are left out (it samples its own sites)."""
    rep = _reparam(problem)
    replaced = set() if rep is None else set(rep.replaces)
    out = []
    # Globals first: a hierarchical prior of a subject or item parameter reads them.
    blocks = (("subject", problem.subject, problem.free_S), ("item", problem.item, problem.free_I),
              ("global", problem.glob, problem.free_G))
    for bid in (2, 0, 1):
        label, block, free = blocks[bid]
        free2 = np.atleast_2d(free)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            if p.map_only or name in replaced:
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
            centred = None
            if isinstance(p.prior, Hierarchical):
                if bid == 2:
                    raise ValueError(f"global parameter {name!r}: a Hierarchical prior belongs "
                                     "to subject or item parameters (its loc and scale are "
                                     "globals)")
                counts = _entity_counts(problem, bid)
                centred = p.prior.centred_mask(counts)[pos // block.size]
            out.append((name if plain else f"{label}.{name}", bid, p, pos, centred))
    return out


def _natural_globals(problem: Problem, g) -> dict:
    return problem.glob.natural(problem.glob.unflatten(g))


def _assemble(problem: Problem, values: dict, plain: bool = False):
    """Sampled values -> full raw blocks and the reparameterisation's extras.

    Fixed and point-fit-only entries keep their start values; a reparameterisation fills the
    parameters it replaces; non-centred hierarchical entries become ``loc + scale * n``."""
    start = problem.start()
    blocks = [b.ravel() for b in start]
    shapes = [b.shape for b in start]
    frees = [np.asarray(f).ravel() for f in (problem.free_S, problem.free_I, problem.free_G)]
    extras: dict = {}
    rep = _reparam(problem)
    if rep is not None:
        out = rep.parameters({k: values[k] for k in rep.sites()})
        for bid, block in enumerate((problem.subject, problem.item, problem.glob)):
            for name, (a, b, _) in block.slices().items():
                if name not in rep.replaces:
                    continue
                full = blocks[bid].reshape(shapes[bid])
                new = jnp.asarray(out[name], full.dtype).reshape(*full.shape[:-1], b - a)
                cols = full.at[..., a:b].set(new).ravel()
                blocks[bid] = jnp.where(frees[bid], cols, blocks[bid])
        extras = {k: v for k, v in out.items() if k not in rep.replaces}
        extras.update({k: out[k] for k in rep.replaces})
    sites = _sites(problem, plain)
    for site, bid, _, pos, _ in sites:
        if bid == 2:
            blocks[2] = blocks[2].at[pos].set(values[site])
    glob = _natural_globals(problem, blocks[2])
    for site, bid, p, pos, centred in sites:
        if bid == 2:
            continue
        v = values[site]
        if centred is not None:
            loc, scale = glob[p.prior.loc], glob[p.prior.scale]
            v = jnp.where(centred, v, loc + scale * v)
        blocks[bid] = blocks[bid].at[pos].set(v)
    theta = Theta(*(b.reshape(s) for b, s in zip(blocks, shapes, strict=True)))
    return theta, extras


def numpyro_model(problem: Problem, *, plain_names: bool = False):
    """A NumPyro model function ``model(data, observed=True)`` for ``problem`` (a model bound
    to data).

    Each declared parameter with free entries becomes one sample site over those entries,
    named ``"<block>.<name>"`` (``"<name>"`` with ``plain_names``), with the parameter's prior;
    a :class:`~platinum_jax.models.Hierarchical` prior is sampled centred or non-centred as it
    says, after the globals it reads. A model's
    :class:`~platinum_jax.models.Reparameterisation` replaces its parameters' sites by its own
    and records what it computes (the replaced parameters included) as deterministic sites.
    The responses are one observed site ``"y"`` whose log density is
    ``weight * log p(y | mu, theta)`` per row; ``observed=False`` samples it (prior and
    posterior predictive). Copy and extend it like any NumPyro model.
    """
    import numpyro
    import numpyro.distributions as dist

    from ._rows import Responses

    sites = _sites(problem, plain_names)
    rep = _reparam(problem)
    rep_sites = {} if rep is None else rep.sites()
    clash = set(rep_sites) & {s[0] for s in sites}
    if clash:
        raise ValueError(f"reparameterisation site names clash with parameters: {sorted(clash)}")

    def model(data: Data, observed: bool = True):
        values = {}
        # Order: the reparameterisation's coordinates, the globals, then subjects and items
        # (hierarchical priors read the globals).
        for site, d in rep_sites.items():
            values[site] = numpyro.sample(site, d)
        for site, bid, p, pos, _ in sites:
            if bid == 2:
                values[site] = numpyro.sample(site, p.prior.expand([len(pos)]).to_event(1))
        glob = None
        for site, bid, p, pos, centred in sites:
            if bid == 2:
                continue
            if centred is None:
                prior = p.prior.expand([len(pos)])
            else:
                if glob is None:  # the globals as sampled so far (hierarchical priors read them)
                    g = _assemble_globals(problem, values, plain_names)
                    glob = _natural_globals(problem, g)
                loc, scale = glob[p.prior.loc], glob[p.prior.scale]
                prior = dist.Normal(jnp.where(centred, loc, 0.0), jnp.where(centred, scale, 1.0))
            values[site] = numpyro.sample(site, prior.to_event(1))
        theta, extras = _assemble(problem, values, plain_names)
        for k, v in extras.items():
            if k not in rep_sites:  # a sampled coordinate passed through is recorded already
                numpyro.deterministic(k, v)
        numpyro.sample("y", Responses(problem, theta, data),
                       obs=data.response if observed else None)

    return model


def assemble_parameters(problem: Problem, values: dict, plain: bool = False):
    """Sampled site values (one draw) -> ``(theta, extras)``: the model's full raw parameter
    blocks, with fixed entries at their start values and reparameterised or non-centred entries
    mapped back, and the reparameterisation's extra quantities. Jittable and vmappable."""
    return _assemble(problem, values, plain)


def _assemble_globals(problem: Problem, values: dict, plain: bool):
    g = problem.start().globals
    frees = np.asarray(problem.free_G).ravel()
    rep = _reparam(problem)
    if rep is not None and any(n in rep.replaces for n in problem.glob.names):
        out = rep.parameters({k: values[k] for k in rep.sites()})
        for name, (a, b, _) in problem.glob.slices().items():
            if name in rep.replaces:
                new = g.at[a:b].set(jnp.asarray(out[name], g.dtype).reshape(b - a))
                g = jnp.where(frees, new, g)
    for site, bid, _, pos, _ in _sites(problem, plain):
        if bid == 2:
            g = g.at[pos].set(values[site])
    return g


def _map_start(problem: Problem) -> dict:
    """The MAP fit's free entries per sample site: where NUTS and SVI start."""
    from ._point import fit_map

    if problem.has_se and problem.model.likelihood.reads_se:
        # The MAP solvers do not pass known standard errors to the likelihood; a start that
        # ignored them would be a different model's mode, so start where NumPyro does.
        return {}
    start = fit_map(problem, problem.table)
    # Hierarchical non-centred entries and reparameterised sites start where NumPyro puts them.
    return {site: jnp.asarray(np.asarray(start.theta[bid]).ravel()[pos], problem.dtype)
            for site, bid, _, pos, centred in _sites(problem) if centred is None}


def posterior_theta(problem: Problem, samples: dict, *, plain_names: bool = False) -> Theta:
    """Flat posterior samples ``{site: (D, k)}`` -> raw blocks with a leading draw axis."""
    return posterior_values(problem, samples, plain_names=plain_names)[0]


def posterior_values(problem: Problem, samples: dict, *, plain_names: bool = False):
    """Flat samples ``{site: (D, ...)}`` -> ``(Theta, extras)`` with a leading draw axis:
    the raw blocks and what the model's reparameterisation derives (one compiled map)."""
    fn = jax.jit(jax.vmap(lambda values: _assemble(problem, values, plain_names)))
    return fn({k: jnp.asarray(v) for k, v in samples.items()})


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
    # One program (outside it, lax.map's batching would reshape and pad op by op).
    per_draw = jax.jit(lambda th, rows: jax.lax.map(
        lambda one: problem.pointwise_log_lik(Theta(*one), rows), th, batch_size=64))
    return np.asarray(per_draw(tuple(draws), data))


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


def run_nuts(
    problem: Problem,
    data: Data,
    *,
    chains: int,
    warmup: int,
    samples: int,
    rng_key,
    target_accept: float = 0.9,
    max_tree_depth: int = 10,
    dense_mass=False,
    chain_method: str = "auto",
    init_values: dict | None = None,
    plain_names: bool = False,
    extra_fields: tuple[str, ...] = ("diverging",),
    progress_bar: bool = False,
):
    """Run NumPyro's NUTS on the model :func:`numpyro_model` builds for ``problem``; returns
    the finished ``numpyro.infer.MCMC`` (samples by site, extra fields by chain).

    ``dense_mass``: True, False or NumPyro's list of site-name tuples (dense blocks);
    ``chain_method``: ``"auto"`` (the package's one policy, :func:`choose_chain_method`) or
    NumPyro's ``"parallel"``, ``"vectorized"``, ``"sequential"``;
    ``init_values``: start values by site (others start uniform on (-2, 2) unconstrained).
    The sampler's initialisation runs as one compiled program (see :func:`._nuts_init.compiled_init_nuts`).
    Presets that need the sampler's raw output (their own summaries) call this directly.
    """
    from numpyro.infer import MCMC, init_to_uniform, init_to_value

    init = init_to_uniform if init_values is None else init_to_value(values=init_values)
    kernel = compiled_init_nuts()(numpyro_model(problem, plain_names=plain_names),
                                   target_accept_prob=target_accept,
                                   max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                                   init_strategy=init)
    mcmc = MCMC(kernel, num_warmup=int(warmup), num_samples=int(samples),
                num_chains=int(chains), progress_bar=progress_bar,
                chain_method=(choose_chain_method(chains) if chain_method == "auto"
                              else chain_method))
    mcmc.run(rng_key, data, extra_fields=extra_fields)
    return mcmc


#: The sampler settings of :func:`nuts` for a model that declares no ``nuts_settings``.
NUTS_SETTINGS = {"warmup": 500, "samples": 500, "target_accept": 0.9}


def nuts(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    chains: int = 4,
    warmup: int | None = None,
    samples: int | None = None,
    target_accept: float | None = None,
    max_tree_depth: int = 10,
    dense_mass: bool | None = None,
    seed: int = 0,
    progress_bar: bool = False,
    log_lik_limit: float = 5e7,
    rhat_max: float = 1.01,
    ess_min: float = 400,
    init: str = "map",
) -> Fit:
    """Sample the posterior of ``model`` on ``table`` with NUTS (NumPyro), ``chains`` chains.

    ``warmup``, ``samples`` and ``target_accept`` left as None take the model's own
    ``nuts_settings`` where it declares them (the Bayesian Rosetta model: 1,000, 1,500 and
    0.99), else 500, 500 and 0.9 (``NUTS_SETTINGS``).

    The fit's diagnostics give divergences, the worst split R-hat and the smallest bulk and
    tail ESS over every sampled parameter, and ``ok`` (no divergence, R-hat <= ``rhat_max``,
    ESS >= ``ess_min``; R-hat needs two chains or more, so one chain reports it as
    unavailable). Starts from the MAP fit, so warm-up begins in the typical set (except where
    the likelihood reads known standard errors, which the MAP solvers do not pass: then as
    ``init="uniform"``).
    ``dense_mass``: a dense mass matrix adapts to correlated parameters (a benchmark's
    difficulty and slope when its scores saturate); None (default) uses it up to 600 free
    parameters, where its cost is small, and a diagonal one above. ``init="uniform"`` starts
    from NumPyro's default (uniform on (-2, 2) in unconstrained space) instead of the MAP fit.
    ``max_tree_depth``: each iteration takes at most ``2**max_tree_depth - 1`` leapfrog steps
    (NumPyro's default 10); a smaller depth bounds the cost of an iteration where the posterior
    is badly scaled, at the price of more correlated draws. ``tree_depth_hits`` in the
    diagnostics counts the draws that stopped at that limit rather than at a U-turn (many
    hits: a badly scaled posterior, or a limit set too low); ``sample_stats.n_steps`` holds
    each draw's number of leapfrog steps.
    """
    import arviz as az

    given = {"warmup": warmup, "samples": samples, "target_accept": target_accept}
    settings = {**NUTS_SETTINGS, **dict(getattr(model, "nuts_settings", None) or {}),
                **{k: v for k, v in given.items() if v is not None}}
    warmup, samples, target_accept = (settings[k] for k in given)
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1) (got {target_accept})")
    if chains < 1 or warmup < 1 or samples < 1:
        raise ValueError("chains, warmup and samples must be >= 1")
    if int(max_tree_depth) != max_tree_depth or max_tree_depth < 1:
        raise ValueError(f"max_tree_depth must be a positive integer, got {max_tree_depth!r}")
    if init not in ("map", "uniform"):
        raise ValueError(f"init must be 'map' or 'uniform' (got {init!r})")
    from ._point import _problem

    problem = _problem(model, table)
    data = problem.data()
    if dense_mass is None:
        dense_mass = problem.n_free <= 600
    method = choose_chain_method(chains)
    t0 = time.perf_counter()
    mcmc = run_nuts(problem, data, chains=chains, warmup=warmup, samples=samples,
                    target_accept=target_accept, max_tree_depth=int(max_tree_depth),
                    dense_mass=dense_mass, chain_method=method,
                    init_values=_map_start(problem) if init == "map" else None,
                    extra_fields=("diverging", "num_steps"),
                    rng_key=jax.random.PRNGKey(seed), progress_bar=progress_bar)
    elapsed = time.perf_counter() - t0
    flat = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    fields = mcmc.get_extra_fields(group_by_chain=True)
    div, n_steps = np.asarray(fields["diverging"]), np.asarray(fields["num_steps"])
    # unrounded: ArviZ rounds to two decimals by default, and R-hat 1.014 would read 1.01
    summary = az.summary(az.from_dict(posterior=flat), kind="diagnostics", round_to="none")
    diagnostics = sampler_diagnostics(summary, int(div.sum()), chains=chains, samples=samples,
                                      chain_method=method, seconds=elapsed)
    # draws whose trajectory stopped at the depth limit rather than at a U-turn
    diagnostics.update(warmup=warmup, target_accept=float(target_accept),
                       dense_mass=bool(dense_mass),
                       max_tree_depth=int(max_tree_depth),
                       tree_depth_hits=int((n_steps >= 2 ** int(max_tree_depth) - 1).sum()))
    diagnostics["ok"] = bool(
        diagnostics["divergences"] == 0
        and (chains == 1 or rhat_ok(diagnostics, rhat_max))
        and diagnostics["ess_bulk_min"] >= ess_min and diagnostics["ess_tail_min"] >= ess_min
    )
    merged = {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}
    stats = {"diverging": div, "n_steps": n_steps}
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
    from numpyro.infer import init_to_value
    from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal

    from ._point import _problem

    guides = {"normal": AutoNormal, "lowrank": AutoLowRankMultivariateNormal}
    if guide not in guides:
        raise ValueError(f"guide must be one of {sorted(guides)} (got {guide!r})")
    problem = _problem(model, table)
    init = _map_start(problem)
    data = problem.data()
    rows = data
    if mesh is not None:
        from ._first_order import row_mesh, shard_rows

        rows = shard_rows(data, row_mesh() if mesh is True else mesh)
    t0 = time.perf_counter()
    post, losses = run_svi(
        numpyro_model(problem),
        lambda m, start: guides[guide](m, init_loc_fn=init_to_value(values=start)),
        optax.adam(learning_rate), rows, steps=steps, draws=draws,
        rng_key=jax.random.PRNGKey(seed), posterior_key=jax.random.PRNGKey(seed + 1),
        init_values=init)
    losses = np.asarray(losses)
    elapsed = time.perf_counter() - t0
    rep = _reparam(problem)
    latent = {s[0] for s in _sites(problem)} | (set() if rep is None else set(rep.sites()))
    post = {k: np.asarray(v) for k, v in post.items() if k in latent}
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

