"""A full Bayesian fit of a bound model: sample, push forward, label, summarise, diagnose.

:func:`sample_posterior` runs NUTS or SVI on the NumPyro model that :func:`numpyro_model`
builds for a :class:`Problem`, maps every draw forward through the model (its
reparameterisation's derived quantities, the mean response variance per item, a posterior
predictive draw and the pointwise log likelihood, in one compiled program) and returns a
:class:`Posterior`: ArviZ ``InferenceData`` with the coordinates the caller names, the tidy
summary of :func:`posterior_summary` and the package's one diagnostics vocabulary
(:data:`DIAGNOSTIC_KEYS`). Presets (the Rosetta paper's ``fit_stitching_bayes``) choose the
model, the sampler settings and the labels; the sampling and its bookkeeping live here.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._bayes import _assemble, numpyro_model, run_nuts, run_svi
from ._diagnostics import choose_chain_method
from ._problem import Data, Problem
from ._summary import posterior_summary, summary_diagnostics, warn_on_diagnostics

__all__ = ["Posterior", "check_sampler_settings", "compare_posteriors", "push_forward",
           "sample_posterior"]

_NUTS_FIELDS = ("diverging", "num_steps", "energy", "accept_prob", "potential_energy")
SVI_GUIDES = ("normal", "lowrank")


@dataclass(frozen=True, eq=False)
class Posterior:
    """What :func:`sample_posterior` returns.

    Attributes:
        idata: ``arviz.InferenceData``: posterior (sampled sites and derived quantities),
            sample_stats (NUTS: ``diverging``, ``n_steps``, ``acceptance_rate``, ``energy``,
            ``lp``), log_likelihood and posterior_predictive (``y``), observed_data,
            constant_data.
        summary: :func:`posterior_summary` of ``idata`` (diagnostics columns NaN for SVI).
        diagnostics: :func:`summary_diagnostics` (divergences, rhat_max, ess_bulk_min, ...).
        info: ``chain_method`` (NUTS) or ``svi_guide`` and ``final_elbo_loss`` (SVI).
    """

    idata: object
    summary: pd.DataFrame = field(repr=False)
    diagnostics: Mapping[str, object] = field(default_factory=dict)
    info: Mapping[str, object] = field(default_factory=dict)


def check_sampler_settings(*, method: str, chains: int, samples: int, warmup: int,
                           target_accept: float, max_tree_depth: int) -> None:
    """A ``ValueError`` naming the first sampler setting out of range."""
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    for name, value in (("chains", chains), ("samples", samples)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if int(warmup) != warmup or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    if not 0.0 < target_accept < 1.0:
        raise ValueError(
            f"target_accept is a probability and must lie strictly between 0 and 1, got "
            f"{target_accept!r}; 0.8-0.99 are the useful values"
        )
    if int(max_tree_depth) != max_tree_depth or max_tree_depth < 1:
        raise ValueError(f"max_tree_depth must be a positive integer, got {max_tree_depth!r}")


def push_forward(problem: Problem, key, flat_latent: dict, data: Data,
                 derive: Callable | None = None):
    """Per draw of the sampled sites ``flat_latent`` (``{site: (D, ...)}``): the model's
    derived quantities (its reparameterisation's extras), ``derive(problem, theta)`` if given,
    ``noise_variance`` (the mean response variance over each item's rows: Sigma_bb of the
    optimal-weights problem), a predictive draw ``y`` and the pointwise log likelihood; one
    jitted vmap over the draws. Returns ``(quantities by name, log likelihood (D, n_rows))``.
    """
    lik = problem.model.likelihood
    n_i = problem.table.n_items
    bi = data.item_index
    count = jax.ops.segment_sum(jnp.ones_like(data.response), bi, num_segments=n_i)

    def one(values, k):
        theta, extras = _assemble(problem, values, True)
        out = dict(extras)
        if derive is not None:
            out.update(derive(problem, theta))
        mu = problem.predict(theta, data.subject_index, bi)
        rows = problem.likelihood_rows(theta, data)
        _, var = lik.moments(mu, data.trials, rows)
        out["noise_variance"] = jax.ops.segment_sum(var, bi, num_segments=n_i) / count
        out["y"] = lik.sample(k, mu, data.trials, rows)
        return out, problem.pointwise_log_lik(theta, data)

    n = next(iter(flat_latent.values())).shape[0]
    return jax.jit(jax.vmap(one))(flat_latent, jax.random.split(key, n))


def _draw(problem, data, *, method, chains, samples, warmup, key, target_accept,
          max_tree_depth, dense_mass, chain_method, svi_guide, svi_steps,
          svi_learning_rate, progress_bar):
    """Sampled sites grouped by chain, the NUTS sample stats (None for SVI), the number of
    chains and the run's notes."""
    if method == "nuts":
        cm = choose_chain_method(chains) if chain_method == "auto" else chain_method
        mcmc = run_nuts(problem, data, chains=int(chains), warmup=int(warmup),
                        samples=int(samples), rng_key=key, target_accept=target_accept,
                        max_tree_depth=int(max_tree_depth), dense_mass=dense_mass,
                        chain_method=cm, plain_names=True, extra_fields=_NUTS_FIELDS,
                        progress_bar=progress_bar)
        extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
        stats = {"diverging": extra["diverging"], "n_steps": extra["num_steps"],
                 "acceptance_rate": extra["accept_prob"], "energy": extra["energy"],
                 "lp": -extra["potential_energy"]}
        return mcmc.get_samples(group_by_chain=True), stats, int(chains), {"chain_method": cm}
    import numpyro
    from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal

    guides = {"normal": AutoNormal, "lowrank": AutoLowRankMultivariateNormal}
    if svi_guide not in guides:
        raise ValueError(f"svi_guide must be one of {SVI_GUIDES}, got {svi_guide!r}")
    draws, losses = run_svi(
        numpyro_model(problem, plain_names=True), lambda model, _: guides[svi_guide](model),
        numpyro.optim.Adam(svi_learning_rate), data, steps=int(svi_steps), draws=int(samples),
        rng_key=key, posterior_key=key, progress_bar=progress_bar)
    info = {"svi_guide": svi_guide, "final_elbo_loss": float(np.asarray(losses)[-100:].mean())}
    return {k: v[None] for k, v in draws.items()}, None, 1, info  # one "chain" of draws


def sample_posterior(
    problem: Problem,
    *,
    method: str = "nuts",
    chains: int = 4,
    samples: int = 1000,
    warmup: int = 1000,
    seed: int = 0,
    chain_method: str = "auto",
    target_accept: float = 0.9,
    max_tree_depth: int = 10,
    dense_mass: bool | Sequence[tuple[str, ...]] = False,
    svi_guide: str = "normal",
    svi_steps: int = 5000,
    svi_learning_rate: float = 0.01,
    progress_bar: bool = False,
    data: Data | None = None,
    computed: Sequence[str] = (),
    derive: Callable | None = None,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
    observed: np.ndarray | None = None,
    constant: Mapping[str, np.ndarray] | None = None,
    row_labels: Mapping[str, np.ndarray] | None = None,
    count_scale: np.ndarray | None = None,
    attrs: Mapping[str, object] | None = None,
    ess_min: float = 400.0,
    rhat_max: float = 1.01,
) -> Posterior:
    """Sample ``problem``'s posterior (NUTS or SVI) and return it labelled and diagnosed.

    Sampler settings are those of :func:`run_nuts` and :func:`run_svi` (``svi_guide``
    ``"normal"``: AutoNormal, ``"lowrank"``: AutoLowRankMultivariateNormal; ``samples`` guide
    draws); ``chain_method="auto"`` is :func:`choose_chain_method`. ``seed`` splits into the
    sampler's key and the predictive draws' key. ``computed``: deterministic sites that the
    push-forward recomputes (left out of the sampled ones). ``coords`` and ``dims`` label the
    variables (default: ``subject``, ``item``, ``response``); ``observed`` is the observed
    ``y`` (default the responses), ``constant`` the constant_data group, ``row_labels``
    non-index coordinates of the rows (dimension ``dims["y"][0]``). ``count_scale`` (one
    entry per row): the likelihood is a pmf of counts k of ``count_scale`` trials; the log
    likelihood becomes the density of k / n (adds ``log n``, so it compares with continuous
    likelihoods) and the predictive draws are rounded counts. ``attrs`` join the run's
    settings in ``idata.attrs``. With NUTS a :class:`SamplingWarning` names each failed check
    (divergences, R-hat above ``rhat_max``, ESS below ``ess_min``). Run in float64
    (:func:`platinum_jax.enable_float64`) for reliable diagnostics.
    """
    check_sampler_settings(method=method, chains=chains, samples=samples, warmup=warmup,
                           target_accept=target_accept, max_tree_depth=max_tree_depth)
    data = problem.data() if data is None else data
    key_fit, key_pp = jax.random.split(jax.random.PRNGKey(seed))
    start = time.perf_counter()
    grouped, stats, chains, info = _draw(
        problem, data, method=method, chains=chains, samples=samples, warmup=warmup,
        key=key_fit, target_accept=target_accept, max_tree_depth=max_tree_depth,
        dense_mass=dense_mass, chain_method=chain_method, svi_guide=svi_guide,
        svi_steps=svi_steps, svi_learning_rate=svi_learning_rate, progress_bar=progress_bar)
    jax.block_until_ready(grouped)
    wall = time.perf_counter() - start
    latent = {k: v for k, v in grouped.items() if k not in set(computed) and k != "y"}
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in latent.items()}
    derived, loglik = push_forward(problem, key_pp, flat, data, derive)
    if count_scale is not None:
        loglik = loglik + jnp.log(count_scale)
        derived["y"] = jnp.round(derived["y"] * count_scale)

    def by_chain(x):
        x = np.asarray(x)
        return x.reshape((chains, -1) + x.shape[1:])

    posterior = {k: np.asarray(v) for k, v in latent.items()}
    posterior.update({k: by_chain(v) for k, v in derived.items() if k != "y"})
    t = problem.table
    coords = {"subject": list(t.subjects), "item": list(t.items),
              "response": np.arange(len(data.response))} if coords is None else dict(coords)
    dims = {"noise_variance": ["item"], "y": ["response"]} if dims is None else dict(dims)
    idata = _inference_data(
        posterior, stats, by_chain(loglik), by_chain(derived["y"]),
        np.asarray(data.response) if observed is None else observed, constant or {},
        row_labels or {}, coords, dims)
    idata.attrs.update({**(attrs or {}), "method": method, "seed": int(seed)})
    if method == "nuts":  # the run's settings, so advice after a poor run builds on them
        idata.attrs.update({"target_accept": float(target_accept), "warmup": int(warmup),
                            "samples": int(samples), "chains": int(chains),
                            "max_tree_depth": int(max_tree_depth),
                            "chain_method": info["chain_method"]})
    summary = posterior_summary(idata, with_diagnostics=(method == "nuts"))
    diagnostics = summary_diagnostics(idata, summary, method, wall)
    if method == "nuts":
        warn_on_diagnostics(diagnostics, ess_min=ess_min, rhat_max=rhat_max,
                            run=dict(idata.attrs))
    return Posterior(idata=idata, summary=summary, diagnostics=diagnostics, info=info)


def _inference_data(posterior, stats, loglik, pp, observed, constant, row_labels, coords,
                    dims):
    import arviz as az

    row_dim = dims.get("y", ["response"])[0]
    dims = {**dims, **{k: [row_dim] for k in constant}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        idata = az.from_dict(
            posterior=posterior, sample_stats=stats, log_likelihood={"y": loglik},
            posterior_predictive={"y": pp}, observed_data={"y": np.asarray(observed)},
            constant_data=dict(constant), coords=dict(coords), dims=dims)
    if row_labels:
        labels = {k: (row_dim, np.asarray(v)) for k, v in row_labels.items()}
        for group in ("observed_data", "constant_data"):
            if hasattr(idata, group):
                setattr(idata, group, getattr(idata, group).assign_coords(labels))
    return idata


def compare_posteriors(posteriors: Mapping[str, object], *, ic: str = "loo") -> pd.DataFrame:
    """Rank fits by expected log predictive density, PSIS-LOO (``ic="loo"``) or WAIC (ArviZ's
    ``compare``). ``posteriors``: name -> ``InferenceData`` (or anything with ``.idata``), at
    least two, whose log likelihoods are densities of the same observations. Returns ArviZ's
    frame (``rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, warning``) indexed by name."""
    import arviz as az

    if len(posteriors) < 2:
        raise ValueError(f"comparing fits needs at least two, got {list(posteriors)}")
    if ic not in ("loo", "waic"):
        raise ValueError(f"ic must be 'loo' or 'waic', got {ic!r}")
    idatas = {k: getattr(v, "idata", v) for k, v in posteriors.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return az.compare(idatas, ic=ic)
