"""The Bayesian drivers, one per method, for every measurement model: :func:`nuts` and
:func:`svi` sample the NumPyro model that :func:`numpyro_model` builds from the model's
declaration and hand the draws to one builder (``_posterior``), so every Bayesian fit returns
the same :class:`Fit`: posterior means and intervals in its frames, an ArviZ ``InferenceData``
labelled with the model's dimension names, a tidy posterior summary and the package's one set
of sampler diagnostics. A model's sampler settings live in its declaration
(``MeasurementModel.nuts_settings``); :func:`loo` and :func:`compare_posteriors` compare fits.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from ._bayes_model import _map_start, _reparam, _sites, numpyro_model
from ._diagnostics import choose_chain_method
from ._nuts_init import compiled_init_nuts
from ._posterior import posterior_fit
from ._problem import Data, Problem
from ._results import Fit
from ._svi import run_svi

__all__ = ["NUTS_SETTINGS", "check_sampler_settings", "compare_posteriors", "loo", "nuts",
           "nuts_settings", "svi"]

#: The package's NUTS settings where neither the call nor the model's ``nuts_settings`` give
#: one. ``dense_mass`` None: a dense mass matrix up to 600 free parameters, diagonal above.
NUTS_SETTINGS = {"warmup": 500, "samples": 500, "target_accept": 0.9, "dense_mass": None,
                 "init": "map", "max_tree_depth": 10}

_NUTS_FIELDS = ("diverging", "num_steps", "energy", "accept_prob", "potential_energy")
SVI_GUIDES = ("normal", "lowrank")


def nuts_settings(model, **given) -> dict:
    """The sampler settings :func:`nuts` uses for ``model``: :data:`NUTS_SETTINGS`, then the
    model's own ``nuts_settings``, then what the call gives (None: not given)."""
    declared = dict(getattr(model, "nuts_settings", None) or {})
    unknown = set(declared) - set(NUTS_SETTINGS)
    if unknown:
        raise ValueError(f"model {getattr(model, 'name', model)!r} declares unknown sampler "
                         f"settings {sorted(unknown)}; the settings are {sorted(NUTS_SETTINGS)}")
    return {**NUTS_SETTINGS, **declared, **{k: v for k, v in given.items() if v is not None}}


def check_sampler_settings(*, chains: int, samples: int, warmup: int, target_accept: float,
                           max_tree_depth: int, init: str = "map") -> None:
    """A ``ValueError`` naming the first sampler setting out of range."""
    for name, value in (("chains", chains), ("samples", samples),
                        ("max_tree_depth", max_tree_depth)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(warmup, bool) or int(warmup) != warmup or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    if not 0.0 < target_accept < 1.0:
        raise ValueError(
            f"target_accept is a probability and must lie strictly between 0 and 1, got "
            f"{target_accept!r}; 0.8-0.99 are the useful values")
    if init not in ("map", "uniform"):
        raise ValueError(f"init must be 'map' or 'uniform' (got {init!r})")


def _bayes_problem(model, table) -> Problem:
    """The problem a Bayesian fit samples: the model's :meth:`~platinum_jax.models.
    MeasurementModel.sampling_model` (never a placeholder noise) bound to the table."""
    from ._point import _problem

    problem = _problem(model, table)
    sampled = problem.model.sampling_model()
    if sampled is not problem.model:
        problem = Problem(sampled, problem.table)
    return problem


def _dense_mass(problem: Problem, dense_mass):
    """The one mass-matrix rule: True, False, a list of site-name tuples (dense blocks), or
    None: dense up to 600 free parameters (its cost is small there), diagonal above."""
    if dense_mass is None:
        return problem.n_free <= 600
    if isinstance(dense_mass, bool):
        return dense_mass
    blocks = [tuple(b) for b in dense_mass]
    known = {s[0] for s in _sites(problem)}
    rep = _reparam(problem)
    known |= set() if rep is None else set(rep.sites())
    unknown = sorted({s for b in blocks for s in b} - known)
    if unknown:
        raise ValueError(f"dense_mass names sites the model does not sample: {unknown}; its "
                         f"sites are {sorted(known)}")
    return blocks


def _run_nuts(problem: Problem, data: Data, key, *, chains: int, warmup: int, samples: int,
              target_accept: float, max_tree_depth: int, dense_mass, chain_method: str,
              init_values: dict | None, progress_bar: bool):
    """NumPyro's NUTS on :func:`numpyro_model`: ``(sites by chain, sample stats)``."""
    from numpyro.infer import MCMC, init_to_uniform, init_to_value

    init = init_to_uniform if init_values is None else init_to_value(values=init_values)
    kernel = compiled_init_nuts()(numpyro_model(problem), target_accept_prob=target_accept,
                                   max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                                   init_strategy=init)
    mcmc = MCMC(kernel, num_warmup=int(warmup), num_samples=int(samples),
                num_chains=int(chains), progress_bar=progress_bar, chain_method=chain_method)
    mcmc.run(key, data, extra_fields=_NUTS_FIELDS)
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    stats = {"diverging": extra["diverging"], "n_steps": extra["num_steps"],
             "acceptance_rate": extra["accept_prob"], "energy": extra["energy"],
             "lp": -extra["potential_energy"]}
    rep = _reparam(problem)
    latent = {s[0] for s in _sites(problem)} | (set() if rep is None else set(rep.sites()))
    # the sampled sites only: deterministic ones are recomputed by the push-forward
    grouped = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()
               if k in latent}
    return grouped, stats


def nuts(
    model,
    table,
    *,
    chains: int = 4,
    warmup: int | None = None,
    samples: int | None = None,
    target_accept: float | None = None,
    max_tree_depth: int | None = None,
    dense_mass=None,
    init: str | None = None,
    seed: int = 0,
    chain_method: str = "auto",
    progress_bar: bool = False,
    log_lik_limit: float = 5e7,
    rhat_max: float = 1.01,
    ess_min: float = 400,
) -> Fit:
    """Sample the posterior of ``model`` on ``table`` (a response table, or a
    :class:`Problem`) with NUTS (NumPyro), ``chains`` chains. The model sampled is the model's
    ``sampling_model()``: a likelihood whose noise is fixed by hand (the least-squares
    objective of point fits) is replaced as the model says or refused, never sampled.

    ``warmup``, ``samples``, ``target_accept``, ``max_tree_depth``, ``dense_mass`` and ``init``
    left as None take the model's own ``nuts_settings`` where it declares them (the Bayesian
    Rosetta model: 1,000, 1,500, 0.99, a full dense mass matrix, a uniform start), else
    :data:`NUTS_SETTINGS` (:func:`nuts_settings`). ``dense_mass``: True, False, a list of
    site-name tuples (dense blocks), or None (dense up to 600 free parameters). ``init``:
    ``"map"`` starts from the MAP fit, so warm-up begins in the typical set (where the
    likelihood reads known standard errors, which the MAP solvers do not pass, and for sites a
    reparameterisation samples, where NumPyro does); ``"uniform"`` from NumPyro's default
    (uniform on (-2, 2) unconstrained). ``chain_method``: ``"auto"``
    (:func:`choose_chain_method`) or NumPyro's ``"parallel"``, ``"vectorized"``,
    ``"sequential"``. ``max_tree_depth``: each draw takes at most ``2**depth - 1`` leapfrog
    steps; ``tree_depth_hits`` in the diagnostics counts the draws that stopped there rather
    than at a U-turn. ``seed`` splits into the sampler's key and the predictive draws' key.

    Returns a :class:`Fit` whose ``inference_data`` holds every group (see ``_posterior``),
    ``posterior_summary`` the tidy summary and ``diagnostics`` divergences, the worst split
    R-hat and the smallest bulk and tail ESS over every posterior variable, the settings, and
    ``ok``; a :class:`SamplingWarning` names each check that fails (R-hat needs two chains).
    Run in float64 (:func:`platinum_jax.enable_float64`).
    """
    problem = _bayes_problem(model, table)
    sampled, _ = problem.in_canonical_order()  # one table, one set of draws, whatever its order
    s = nuts_settings(problem.model, warmup=warmup, samples=samples,
                      target_accept=target_accept, max_tree_depth=max_tree_depth,
                      dense_mass=dense_mass, init=init)
    check_sampler_settings(chains=chains, samples=s["samples"], warmup=s["warmup"],
                           target_accept=s["target_accept"], max_tree_depth=s["max_tree_depth"],
                           init=s["init"])
    mass = _dense_mass(sampled, s["dense_mass"])
    method = choose_chain_method(chains) if chain_method == "auto" else chain_method
    key_fit, key_pp = jax.random.split(jax.random.PRNGKey(seed))
    t0 = time.perf_counter()
    start = _map_start(sampled) if s["init"] == "map" else None
    grouped, stats = _run_nuts(
        sampled, sampled.data(), key_fit, chains=chains, warmup=s["warmup"], samples=s["samples"],
        target_accept=float(s["target_accept"]), max_tree_depth=int(s["max_tree_depth"]),
        dense_mass=mass, chain_method=method, init_values=start, progress_bar=progress_bar)
    wall = time.perf_counter() - t0
    depth = int(s["max_tree_depth"])
    settings = {"warmup": int(s["warmup"]), "samples": int(s["samples"]), "chains": int(chains),
                "target_accept": float(s["target_accept"]), "max_tree_depth": depth,
                "dense_mass": mass if isinstance(mass, bool) else [list(b) for b in mass],
                "init": s["init"], "chain_method": method, "seed": int(seed)}
    diagnostics = {**settings, "tree_depth_hits": int((stats["n_steps"] >= 2**depth - 1).sum())}
    return posterior_fit(problem, "nuts", grouped, key_pp, stats=stats,
                         diagnostics=diagnostics, attrs=_attrs(problem, settings),
                         log_lik_limit=log_lik_limit, ess_min=ess_min, rhat_max=rhat_max,
                         wall=wall)


def _attrs(problem: Problem, settings: dict) -> dict:
    """The run's settings and the model, as netCDF attributes (strings and numbers)."""
    out = {k: (v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else str(v))
           for k, v in settings.items()}
    out.update(model=problem.model.name, likelihood=problem.model.likelihood.name,
               identification=problem.identification.description)
    return out


def svi(
    model,
    table,
    *,
    steps: int = 3000,
    learning_rate: float = 0.01,
    draws: int = 1000,
    guide: str = "normal",
    seed: int = 0,
    log_lik_limit: float = 5e7,
    mesh=None,
    progress_bar: bool = False,
) -> Fit:
    """Variational fit with NumPyro's SVI and an ``AutoNormal`` (``guide="normal"``) or
    ``AutoLowRankMultivariateNormal`` (``"lowrank"``: correlations between parameters, for
    more honest intervals where they trade off) guide, optimised with optax's Adam from the
    MAP; ``draws`` samples of the guide give the posterior, labelled and summarised as
    :func:`nuts` does (one "chain" of independent draws: no R-hat or ESS to check).

    ``mesh``: a 1-D :class:`jax.sharding.Mesh` (or ``True`` for one over every device) across
    which the response rows are sharded during the optimisation (padded with zero-weight rows;
    see :func:`~platinum_jax.inference._first_order.shard_rows`)."""
    import optax
    from numpyro.infer import init_to_value
    from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal

    guides = {"normal": AutoNormal, "lowrank": AutoLowRankMultivariateNormal}
    if guide not in guides:
        raise ValueError(f"guide must be one of {sorted(guides)} (got {guide!r})")
    for name, value in (("steps", steps), ("draws", draws)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    problem = _bayes_problem(model, table)
    sampled, _ = problem.in_canonical_order()
    init = _map_start(sampled)
    data = sampled.data()
    rows = data
    if mesh is not None:
        from ._first_order import row_mesh, shard_rows

        rows = shard_rows(data, row_mesh() if mesh is True else mesh)
    key_fit, key_pp = jax.random.split(jax.random.PRNGKey(seed))
    t0 = time.perf_counter()
    post, losses = run_svi(
        numpyro_model(sampled),
        lambda m, start: guides[guide](m, init_loc_fn=init_to_value(values=start)),
        optax.adam(learning_rate), rows, steps=int(steps), draws=int(draws),
        rng_key=key_fit, posterior_key=jax.random.fold_in(key_fit, 1), init_values=init,
        progress_bar=progress_bar)
    losses = np.asarray(losses)
    wall = time.perf_counter() - t0
    rep = _reparam(sampled)
    latent = {s[0] for s in _sites(sampled)} | (set() if rep is None else set(rep.sites()))
    grouped = {k: np.asarray(v)[None] for k, v in post.items() if k in latent}
    tail = losses[-max(int(steps) // 10, 1):]
    settings = {"steps": int(steps), "learning_rate": float(learning_rate), "draws": int(draws),
                "guide": guide, "seed": int(seed)}
    diagnostics = {**settings, "final_elbo_loss": float(tail.mean()),
                   "elbo_loss_sd_last_10pct": float(tail.std())}
    return posterior_fit(problem, "svi", grouped, key_pp, stats=None,
                         diagnostics=diagnostics, attrs=_attrs(problem, settings),
                         log_lik_limit=log_lik_limit, ess_min=0.0, rhat_max=np.inf, wall=wall)


def loo(fit: Fit):
    """PSIS-LOO (ArviZ) of a NUTS or SVI fit: expected log predictive density and Pareto k."""
    import arviz as az

    if fit.inference_data is None or "log_likelihood" not in fit.inference_data.groups():
        raise ValueError(
            "PSIS-LOO needs the pointwise log-likelihood of a Bayesian fit (nuts or svi); this "
            f"fit is {fit.method!r} or did not store it (raise log_lik_limit)")
    return az.loo(fit.inference_data, pointwise=True)


def compare_posteriors(posteriors, *, ic: str = "loo"):
    """Rank fits by expected log predictive density, PSIS-LOO (``ic="loo"``) or WAIC (ArviZ's
    ``compare``). ``posteriors``: name -> a Bayesian :class:`Fit` (or its ``InferenceData``),
    at least two, whose log likelihoods are densities of the same observations (a lattice
    family's is that of the fraction k / n, so it compares with continuous ones). Returns
    ArviZ's frame (``rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, warning``)."""
    import warnings

    import arviz as az

    if len(posteriors) < 2:
        raise ValueError(f"comparing fits needs at least two, got {list(posteriors)}")
    if ic not in ("loo", "waic"):
        raise ValueError(f"ic must be 'loo' or 'waic', got {ic!r}")
    idatas = {k: v.inference_data if isinstance(v, Fit) else v for k, v in posteriors.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return az.compare(idatas, ic=ic)
