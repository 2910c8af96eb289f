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
from ._posterior import posterior_fit
from ._problem import Problem
from ._results import Fit
from ._svi import run_svi

__all__ = ["MASS_MATRICES", "NUTS_SETTINGS", "check_sampler_settings", "compare_posteriors", "loo", "nuts",
           "nuts_settings", "svi"]

#: The package's NUTS settings where neither the call nor the model's ``nuts_settings`` give
#: one. ``mass``: ``"lowrank"`` (a diagonal plus up to 16 directions, adapted from draws and
#: gradients) or ``"diagonal"``; see :func:`nuts`.
NUTS_SETTINGS = {"warmup": 500, "samples": 1000, "target_accept": 0.9, "mass": "lowrank",
                 "init": "map", "max_tree_depth": 10}
MASS_MATRICES = ("lowrank", "diagonal")

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
                           max_tree_depth: int, init: str = "map",
                           mass: str = "lowrank") -> None:
    """A ``ValueError`` naming the first sampler setting out of range."""
    for name, value in (("chains", chains), ("samples", samples),
                        ("max_tree_depth", max_tree_depth)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(warmup, bool) or int(warmup) != warmup or warmup < 1:
        raise ValueError(f"warmup must be a positive integer (the step size and mass matrix "
                         f"are set during warm-up), got {warmup!r}")
    if not 0.0 < target_accept < 1.0:
        raise ValueError(
            f"target_accept is a probability and must lie strictly between 0 and 1, got "
            f"{target_accept!r}; 0.8-0.99 are the useful values")
    if init not in ("map", "uniform"):
        raise ValueError(f"init must be 'map' or 'uniform' (got {init!r})")
    if mass not in MASS_MATRICES:
        raise ValueError(f"mass must be 'lowrank' (a diagonal plus a low-rank correction) or "
                         f"'diagonal', got {mass!r}")


def _bayes_problem(model, table) -> Problem:
    """The problem a Bayesian fit samples: the model's :meth:`~platinum_jax.models.
    MeasurementModel.sampling_model` (never a placeholder noise) bound to the table."""
    from ._point import _problem

    problem = _problem(model, table)
    sampled = problem.model.sampling_model()
    if sampled is not problem.model:
        problem = Problem(sampled, problem.table)
    return problem


def _fingerprint(problem: Problem) -> str:
    """A digest of everything the NumPyro model of ``problem`` closes over (the model's
    fields and the table's), so a second fit of the same model on the same data reuses the
    compiled sampler (a model whose repr shows an object's address never matches: safe)."""
    import dataclasses
    import hashlib

    h = hashlib.sha256(repr(problem.model).encode())
    h.update(str(problem.dtype).encode())
    for f in dataclasses.fields(problem.table):
        v = getattr(problem.table, f.name)
        h.update(f.name.encode())
        if isinstance(v, np.ndarray):
            h.update(str((v.dtype, v.shape)).encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(None if v is None else list(v) if hasattr(v, "__iter__")
                          and not isinstance(v, str) else v).encode())
    return h.hexdigest()


def _warm_state(warm):
    """The :class:`~._nuts_run.Adapted` state of ``warm_start`` (a NUTS :class:`Fit` or its
    ``adaptation``), or a clear error."""
    from ._nuts_run import Adapted

    state = warm.adaptation if isinstance(warm, Fit) else warm
    if not isinstance(state, Adapted):
        what = " without an adaptation (an SVI or point fit?)" if isinstance(warm, Fit) else ""
        raise ValueError("warm_start must be a NUTS fit of this package (or its .adaptation); "
                         f"got {type(warm).__name__}{what}")
    return state


def nuts(
    model,
    table,
    *,
    chains: int = 4,
    warmup: int | None = None,
    samples: int | None = None,
    target_accept: float | None = None,
    max_tree_depth: int | None = None,
    mass: str | None = None,
    init: str | None = None,
    warm_start=None,
    seed: int = 0,
    chain_method: str = "auto",
    progress_bar: bool = False,
    log_lik_limit: float = 5e7,
    rhat_max: float = 1.01,
    ess_min: float = 400,
) -> Fit:
    """Sample the posterior of ``model`` on ``table`` (a response table, or a
    :class:`Problem`) with NUTS, ``chains`` chains. The model sampled is the model's
    ``sampling_model()``: a likelihood whose noise is fixed by hand (the least-squares
    objective of point fits) is replaced as the model says or refused, never sampled.

    The trajectories are NumPyro's NUTS on the model's potential; the warm-up is the
    package's own (:mod:`platinum_jax.inference._nuts_adapt`): the mass matrix is adapted from
    the draws *and* the gradients at them (the Fisher-divergence estimate of Seyboldt,
    Carlson and Carpenter's nutpie), refreshed every iteration from running windows, and the
    step size by dual averaging towards ``target_accept``. ``mass``: ``"lowrank"`` (a
    diagonal plus up to 16 directions where the posterior is stretched or squeezed; the
    default) or ``"diagonal"``.

    ``warmup``, ``samples``, ``target_accept``, ``max_tree_depth``, ``mass`` and ``init``
    left as None take the model's own ``nuts_settings`` where it declares them (the Bayesian
    Rosetta model: 600 warm-up iterations, 2,000 draws, 0.95, low rank, a uniform start), else
    :data:`NUTS_SETTINGS` (:func:`nuts_settings`). ``init``: ``"map"`` starts from the MAP
    fit, so warm-up begins in the typical set (where the likelihood reads known standard
    errors, which the MAP solvers do not pass, and for sites a reparameterisation samples,
    uniformly); ``"uniform"`` uniformly on (-2, 2) unconstrained, as NumPyro does.

    ``warm_start``: a previous NUTS fit of the same model on data of the same shape (or its
    ``adaptation``): the chains start from its last positions, step size and mass matrix, and
    the warm-up (default a fifth of the model's) only refines them; the compiled program is
    the cold fit's, so a refit neither compiles nor adapts from scratch.

    ``chain_method``: ``"auto"`` (:func:`choose_chain_method`: on a CPU one thread per chain,
    all the host's cores), ``"threads"``, ``"vmap"`` (one batched program), ``"pmap"`` (a
    device per chain) or ``"sequential"``. ``max_tree_depth``: each draw takes at most
    ``2**depth - 1`` leapfrog steps; ``tree_depth_hits`` in the diagnostics counts the draws
    that stopped there. ``seed`` splits into the sampler's key and the predictive draws' key.
    ``progress_bar``: a bar over the chains' iterations (its program is compiled apart from
    the one without, and not written to JAX's persistent compilation cache).

    Returns a :class:`Fit` whose ``inference_data`` holds every group (see ``_posterior``),
    ``posterior_summary`` the tidy summary, ``adaptation`` the warm-up's result and
    ``diagnostics`` divergences, the worst split R-hat and the smallest bulk and tail ESS over
    every posterior variable, the settings, the compile and sampling seconds, leapfrog steps a
    draw, and ``ok``; a :class:`SamplingWarning` names each check that fails (R-hat needs two
    chains). Run in float64 (:func:`platinum_jax.enable_float64`).
    """
    import dataclasses

    from ._diagnostics import CHAIN_METHODS
    from ._nuts_adapt import WarmupSettings
    from ._nuts_run import adapted, sample_model

    problem = _bayes_problem(model, table)
    sampled, _ = problem.in_canonical_order()  # one table, one set of draws, whatever its order
    s = nuts_settings(problem.model, warmup=warmup, samples=samples,
                      target_accept=target_accept, max_tree_depth=max_tree_depth,
                      mass=mass, init=init)
    state = None if warm_start is None else _warm_state(warm_start)
    cold_warmup = int(s["warmup"] if state is None or not state.warmup else state.warmup)
    if state is not None and warmup is None:
        s["warmup"] = max(cold_warmup // 5, 1)  # a fifth of the cold warm-up
    check_sampler_settings(chains=chains, samples=s["samples"], warmup=s["warmup"],
                           target_accept=s["target_accept"], max_tree_depth=s["max_tree_depth"],
                           init=s["init"], mass=s["mass"])
    if chain_method != "auto" and chain_method not in CHAIN_METHODS:
        raise ValueError(f"chain_method must be 'auto' or one of {list(CHAIN_METHODS)}, got "
                         f"{chain_method!r}")
    method = choose_chain_method(chains) if chain_method == "auto" else chain_method
    from platinum_jax._memory import check_memory, nuts_bytes

    check_memory(nuts_bytes(sampled, chains=int(chains), samples=int(s["samples"])),
                 f"NUTS ({chains} chains x {s['samples']} draws of {sampled.n_free:,} "
                 f"parameters, {sampled.table.n_responses:,} responses)",
                 "draw fewer samples or chains, or fit by SVI or MAP with Laplace")
    key_fit, key_pp = jax.random.split(jax.random.PRNGKey(seed))
    depth = int(s["max_tree_depth"])
    settings = WarmupSettings(target_accept=float(s["target_accept"]), max_tree_depth=depth,
                              mass=s["mass"])
    t0 = time.perf_counter()
    cache_key = ("nuts", _fingerprint(sampled))
    data = sampled.data()
    model_fn = numpyro_model(sampled)
    start = _map_start(sampled) if s["init"] == "map" and state is None else None
    seed_fit = int(jax.random.randint(key_fit, (), 0, 2**31 - 1))
    values, out, timing = sample_model(
        model_fn, (data,), chains=int(chains), num_warmup=int(s["warmup"]),
        num_samples=int(s["samples"]), settings=settings, seed=seed_fit, method=method,
        warm=state, max_warmup=max(cold_warmup, int(s["warmup"])), cache_key=cache_key,
        init_values=start, progress_bar=progress_bar)
    wall = time.perf_counter() - t0
    rep = _reparam(sampled)
    latent = {x[0] for x in _sites(sampled)} | (set() if rep is None else set(rep.sites()))
    # the sampled sites only: deterministic ones are recomputed by the push-forward
    grouped = {k: v for k, v in values.items() if k in latent}
    stats = {"diverging": out["diverging"], "n_steps": out["num_steps"],
             "acceptance_rate": out["accept_prob"], "energy": out["energy"],
             "lp": -out["potential_energy"]}
    nw = int(s["warmup"])
    settings_out = {"warmup": nw, "samples": int(s["samples"]), "chains": int(chains),
                    "target_accept": float(s["target_accept"]), "max_tree_depth": depth,
                    "mass": s["mass"], "init": "warm_start" if state is not None else s["init"],
                    "chain_method": method, "seed": int(seed)}
    diagnostics = {
        **settings_out,
        "tree_depth_hits": int((stats["n_steps"] >= 2**depth - 1).sum()),
        "steps_per_draw": float(np.mean(out["num_steps"])),
        "warmup_steps_per_draw": float(np.mean(out["warmup_num_steps"][:, :nw])),
        "step_size": float(np.mean(out["step_size"])),
        "compile_seconds": float(timing["compile_wall_s"]),
        "sampling_seconds": float(timing["run_wall_s"]),
        # CPU of this process while the sampler ran (set-up, compiling, chains, constraining)
        "sampler_cpu_seconds": float(timing["total_cpu_s"]),
        "compiles": int(timing["compiles"]),
    }
    fit = posterior_fit(problem, "nuts", grouped, key_pp, stats=stats,
                        diagnostics=diagnostics, attrs=_attrs(problem, settings_out),
                        log_lik_limit=log_lik_limit, ess_min=ess_min, rhat_max=rhat_max,
                        wall=wall)
    return dataclasses.replace(fit, adaptation=adapted(out, cold_warmup))


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
