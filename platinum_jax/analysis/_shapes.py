"""Trajectory shapes of the frontier compared by PSIS-LOO: linear, quadratic, power, saturating.

Does capability grow along a line, bend upwards (quadratic, power) or level off (logistic)? Each
shape is a small NumPyro regression of the frontier capabilities C_j on release time, written as
a plain Python function that a user can copy and extend. Time is rescaled to ``u`` in (0, 1]
(``u = (t - t_0) / (t_max - t_0)``, with ``t_0`` one month before the first frontier release) and
capabilities are standardised (``z = (C - mean) / sd``), so one set of weakly informative priors
serves every data set:

* ``linear``:    mu = a + b u
* ``quadratic``: mu = a + b u + c u^2
* ``power``:     mu = a + b u^p,                       p > 0 (p = 1 is linear)
* ``logistic``:  mu = a + h sigmoid(k (u - u_mid)),    h, k > 0 (levels off at a + h)

with ``z_j ~ Normal(mu_j, sqrt(sigma^2 + s_j^2))``: sigma is the scatter about the curve and s_j
the measurement error of C_j, the standard deviation of its bootstrap (or posterior) draws, so a
model whose capability is poorly pinned down weighs less. Every shape is sampled with NUTS; the
per-observation log-likelihoods go into ArviZ InferenceData (dimension ``model``), and
``arviz.loo`` / ``arviz.compare`` rank the shapes by expected log predictive density (elpd), with
the standard error of each difference and the Pareto-k diagnostic of every observation (k > 0.7:
the importance-sampling estimate for that model is unreliable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._frontier_lag import capability_draw_matrix
from ._trends import as_capabilities, decimal_year, frontier_mask, year_to_timestamp

__all__ = ["SHAPES", "ShapeComparison", "compare_shapes", "shape_models"]

_MONTH = 1.0 / 12.0


def _likelihood(mu, noise, z):
    import numpyro
    import numpyro.distributions as dist

    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.deterministic("mu", mu)
    with numpyro.plate("model", mu.shape[0]):
        numpyro.sample("z", dist.Normal(mu, jnp.sqrt(sigma**2 + noise**2)), obs=z)


def linear(u, noise, z=None):
    """mu = a + b u."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 3.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    _likelihood(a + b * u, noise, z)


def quadratic(u, noise, z=None):
    """mu = a + b u + c u^2."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 3.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    c = numpyro.sample("c", dist.Normal(0.0, 5.0))
    _likelihood(a + b * u + c * u**2, noise, z)


def power(u, noise, z=None):
    """mu = a + b u^p with p > 0 (log-normal prior centred on p = 1, the linear case)."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 3.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    p = numpyro.sample("p", dist.LogNormal(0.0, 0.75))
    _likelihood(a + b * u**p, noise, z)


def logistic(u, noise, z=None):
    """mu = a + h sigmoid(k (u - u_mid)): rises by h in total, fastest at u_mid, then levels off."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(-1.0, 3.0))
    h = numpyro.sample("h", dist.HalfNormal(5.0))
    k = numpyro.sample("k", dist.HalfNormal(10.0))
    mid = numpyro.sample("u_mid", dist.Normal(0.5, 1.0))
    _likelihood(a + h * jax.nn.sigmoid(k * (u - mid)), noise, z)


SHAPES = ("linear", "quadratic", "power", "logistic")


def shape_models() -> dict[str, Any]:
    """The shapes by name: ``{"linear": linear, ...}``; each ``model(u, noise, z=None)``."""
    return {"linear": linear, "quadratic": quadratic, "power": power, "logistic": logistic}


@dataclass(frozen=True, eq=False)
class ShapeComparison:
    """Result of :func:`compare_shapes` (immutable).

    ``comparison``: ``arviz.compare``'s frame, indexed by shape (``rank``, ``elpd_loo``, ``p_loo``,
    ``elpd_diff``, ``weight``, ``se``, ``dse``, ``warning``), with ``max_pareto_k`` and
    ``n_bad_pareto_k`` (k > 0.7) added. ``pareto_k``: per frontier model (rows) and shape.
    ``data``: the frontier models used (``release_date``, ``year``, ``capability``,
    ``measurement_sd``). ``curves``: posterior median and ``level`` band of each shape's mean on a
    grid of dates, in capability units (columns ``shape``, ``median``, ``lower``, ``upper``).
    ``loo`` and ``idata``: ArviZ objects per shape. ``diagnostics``: ``divergences`` and
    ``rhat_max`` (the package's diagnostics keys).
    """

    comparison: pd.DataFrame
    pareto_k: pd.DataFrame
    data: pd.DataFrame
    curves: pd.DataFrame
    loo: dict
    idata: dict
    diagnostics: pd.DataFrame
    level: float

    @property
    def best(self) -> str:
        """The shape ranked first."""
        return str(self.comparison.index[0])


def _standardise(caps, sd, top_n):
    year = decimal_year(caps["release_date"])
    c = caps["capability"].to_numpy(dtype=np.float64)
    on = np.asarray(frontier_mask(jnp.asarray(c), jnp.asarray(year), jnp.ones(len(c), bool), int(top_n)))
    if on.sum() < 6:
        raise ValueError(
            f"{int(on.sum())} frontier models: comparing trajectory shapes needs at least 6 "
            "(the logistic shape has 5 parameters); raise top_n or use more models"
        )
    order = np.argsort(year[on], kind="stable")
    names = caps.index[on][order]
    y, t, s = c[on][order], year[on][order], sd[on][order]
    t0, span = t.min() - _MONTH, t.max() - (t.min() - _MONTH)
    centre, scale = y.mean(), y.std()
    if not scale > 0:
        raise ValueError("the frontier capabilities are all equal; there is no trajectory to compare")
    data = pd.DataFrame({"release_date": caps.loc[names, "release_date"].to_numpy(), "year": t,
                         "capability": y, "measurement_sd": s}, index=pd.Index(names, name="model"))
    return data, (t0, span, centre, scale)


def compare_shapes(
    capabilities: Any,
    *,
    draws: Any = None,
    shapes: Sequence[str] = SHAPES,
    top_n: int = 1,
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 2,
    level: float = 0.90,
    seed: int = 0,
) -> ShapeComparison:
    """Rank trajectory shapes of the capability frontier by PSIS-LOO.

    Args:
        capabilities: a StitchingFit or a frame with ``capability`` and ``release_date`` (e.g.
            the posterior means of the Bayesian Rosetta fit).
        draws: a stitching bootstrap result, or a frame of capability draws (replicates or
            posterior draws x models), of the same fit: their standard deviation is each
            frontier model's measurement error. None: no measurement error.
        shapes: names from :data:`SHAPES`.
        top_n: frontier = top ``top_n`` at release.
        num_warmup, num_samples, num_chains: NUTS settings (chains run one after another on one
            compiled sampler, which compiles in half the time of vectorised chains). The
            frontier's data are arguments of the compiled sampler, not constants in it: a
            second comparison with as many frontier models and the same settings reuses it.
        level: width of the band of the fitted curves.
        seed: random seed of the sampler.

    Use float64 (``jax_enable_x64``) for stable log-likelihoods.
    """
    import arviz as az
    from numpyro.infer import MCMC, NUTS, Predictive

    bad = [s for s in shapes if s not in SHAPES]
    if bad or not shapes:
        raise ValueError(f"shapes must be chosen from {SHAPES} (got {list(shapes)})")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    for name, v in (("num_warmup", num_warmup), ("num_samples", num_samples), ("num_chains", num_chains)):
        if int(v) < 1:
            raise ValueError(f"{name} must be a positive integer (got {v})")
    caps = as_capabilities(capabilities)
    sd = np.zeros(len(caps)) if draws is None else capability_draw_matrix(draws, caps.index).std(axis=0, ddof=1)
    data, (t0, span, centre, scale) = _standardise(caps, sd, top_n)
    u = jnp.asarray((data["year"].to_numpy() - t0) / span)
    noise = jnp.asarray(data["measurement_sd"].to_numpy() / scale)
    z = jnp.asarray((data["capability"].to_numpy() - centre) / scale)
    grid_year = np.linspace(data["year"].min(), data["year"].max(), 60)
    grid_u = jnp.asarray((grid_year - t0) / span)
    models = shape_models()
    q = [(1 - level) / 2, 0.5, (1 + level) / 2]
    idatas, loos, curves, diag = {}, {}, [], []
    key = jax.random.PRNGKey(int(seed))
    for name in dict.fromkeys(shapes):
        key, k_run, k_pred = jax.random.split(key, 3)
        mcmc = MCMC(NUTS(models[name], target_accept_prob=0.9), num_warmup=int(num_warmup),
                    num_samples=int(num_samples), num_chains=int(num_chains),
                    chain_method="sequential", progress_bar=False, jit_model_args=True)
        mcmc.run(k_run, u, noise, z=z)
        idata = az.from_numpyro(mcmc, coords={"model": data.index.to_numpy()}, dims={"z": ["model"], "mu": ["model"]})
        idatas[name] = idata
        loos[name] = az.loo(idata, pointwise=True)
        samples = mcmc.get_samples()
        mu = Predictive(models[name], samples, return_sites=["mu"])(k_pred, grid_u, jnp.zeros(grid_u.shape))["mu"]
        band = np.quantile(centre + scale * np.asarray(mu), q, axis=0)
        curves.append(pd.DataFrame({"shape": name, "median": band[1], "lower": band[0], "upper": band[2]},
                                   index=pd.Index(year_to_timestamp(grid_year), name="date")))
        rhat = az.rhat(idata, var_names=[v for v in idata.posterior.data_vars if v != "mu"])
        diag.append({"shape": name,
                     "divergences": int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum()),
                     "rhat_max": float(max(float(rhat[v].max()) for v in rhat.data_vars))})
    cmp = az.compare(loos, ic="loo")
    pk = pd.DataFrame({name: np.asarray(lo.pareto_k) for name, lo in loos.items()}, index=data.index)
    cmp["max_pareto_k"] = pk.max().reindex(cmp.index)
    cmp["n_bad_pareto_k"] = (pk > 0.7).sum().reindex(cmp.index)
    cmp.index.name = "shape"
    return ShapeComparison(cmp, pk, data, pd.concat(curves), loos, idatas,
                           pd.DataFrame(diag).set_index("shape"), float(level))
