"""The Bayesian stitching model as a plain NumPyro model function.

score_i ~ Likelihood(mu_i, noise_b),   mu_i = sigmoid(alpha_b (C_m - D_b)),  b = b(i), m = m(i)

with the same anchors as the MAP fit (:class:`ParameterLayout` fixes the anchored entries) and
documented, overridable priors (:class:`Priors`).  The model is written against arrays only so a
researcher can copy it, add a covariate or swap a prior, and hand it to any NumPyro inference.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jaxtyping import Array, Float, Int

from ._bayes_options import COUNT_LIKELIHOODS, LIKELIHOODS
from ._model import ParameterLayout, predict_scores

__all__ = [
    "LIKELIHOODS",
    "Priors",
    "BayesData",
    "anchored_benchmark",
    "deterministic_sites",
    "prepare_data",
    "stitching_model",
]

_COUNT_LIKELIHOODS = COUNT_LIKELIHOODS

# Keeps sigmoid outputs strictly inside (0, 1) where Beta / Binomial log densities are finite.
_MU_EPS = 1e-9


@dataclass(frozen=True)
class Priors:
    """Priors of the Bayesian stitching model, on a population-standardised scale.

    The model is written in standardised units, as in item response theory: a model's
    standardised ability z_m, a benchmark's log slope eta_b and its intercept beta_b, all a
    priori normal.  The anchor's scale is reached through the population mean mu_C and spread
    tau_C of the capabilities:

        C_m     = mu_C + tau_C z_m,                   z ~ ZeroSumNormal(1)
        alpha_b = exp(eta_b) / tau_C,                 eta_b = log_slope_loc + log_slope_scale v_b
        D_b     = mu_C + tau_C (zbar_b - beta_b / exp(eta_b)),   beta_b ~ N(intercept_loc, intercept_scale)
        mu_C ~ N(capability_loc, capability_loc_scale),  tau_C ~ HalfNormal(capability_scale)
                      (with a model anchor; with a benchmark anchor see stitching_model)

    with v_b ~ N(0, 1) and zbar_b the mean z_m of the models scored on benchmark b, so that

        alpha_b (C_m - D_b) = exp(eta_b) (z_m - zbar_b) + beta_b.

    beta_b is the logit of the score of benchmark b's typical model, the quantity a benchmark's
    scores pin down best; with the capabilities centred on that typical model, the intercept and
    the slope are nearly uncorrelated.  Sampling the difficulty instead bends the posterior of
    a benchmark whose scores all sit near 0 (FrontierMath Tier 4, OSWorld on the Epoch data)
    into a curved ridge between D_b and alpha_b that NUTS crosses slowly.  Predictions off the
    anchor do not involve (mu_C, tau_C): the shift and stretch of the whole scale, which only
    the anchor pins down, are two coordinates of their own.

    Gaussian noise is hierarchical on the log scale, log sigma_b ~ N(nu, s) with
    nu ~ N(log_noise_loc, log_noise_loc_scale) and s ~ LogNormal(log log_noise_spread,
    log_noise_spread_sd).  A benchmark with at least ``CENTRED_NOISE_MIN_SCORES`` (20) scores
    has its log sigma_b sampled centred: its own scores fix its noise level, and the
    non-centred form would tie nu, s and every such benchmark's offset into one narrow ridge
    (bulk ESS of nu about 30 per 800 draws on the Epoch raw data, against about 200 centred).
    A benchmark with fewer scores is sampled non-centred, log sigma_b = nu + s n_b with
    n_b ~ N(0, 1): its few scores leave sigma_b loose, and centred it can wander into a funnel
    where sigma_b is tiny and its scores must be fitted exactly (a divergence at ScienceQA,
    6 scores, sigma 0.005).  The site ``noise_log_sigma`` holds log sigma_b or n_b accordingly.  The spread's prior keeps away from 0 (benchmarks do differ in noise; below
    s = 0.1 has prior probability 0.3%), which is what a centred hierarchy needs: as s -> 0
    the benchmarks' log noise levels are squeezed together into a funnel NUTS diverges in,
    as it did on synthetic tables whose benchmarks all share one noise level.
    Beta and beta-binomial precision: log phi_b ~ N(log_precision_loc, log_precision_scale).
    Anchored entries are fixed, not sampled.

    The defaults are weakly informative for scores in [0, 1] with the Winogrande anchor
    (beta_b within +-5, typical scores from 0.7% to 99.3%, a priori at 95%); override any
    field, e.g. ``dataclasses.replace(Priors(), log_noise_loc=-2.5)``.
    """

    capability_loc: float = 0.0
    capability_loc_scale: float = 2.0
    capability_scale: float = 2.0
    intercept_loc: float = 0.0
    intercept_scale: float = 2.5
    log_slope_loc: float = 0.5
    log_slope_scale: float = 1.0
    log_noise_loc: float = -3.0  # exp(-3) = 0.05 on the score scale
    log_noise_loc_scale: float = 1.0
    log_noise_spread: float = 0.4  # median spread of log sigma_b across benchmarks
    log_noise_spread_sd: float = 0.5
    log_precision_loc: float = 4.0
    log_precision_scale: float = 1.5

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not np.isfinite(value):
                raise ValueError(f"Priors.{field.name} must be finite, got {value!r}")
            if field.name.endswith(("_scale", "_spread", "_sd")) and value <= 0:
                raise ValueError(
                    f"Priors.{field.name} is a scale and must be > 0, got {value!r}; "
                    "use a small positive number for a tight prior"
                )


class BayesData(NamedTuple):
    """Arrays the model conditions on, one entry per score (shape (n_scores,))."""

    model_index: Int[Array, " n"]
    benchmark_index: Int[Array, " n"]
    # What the likelihood sees (Beta: boundary-adjusted; Binomial: item counts).
    scores: Float[Array, " n"]
    stderr: Float[Array, " n"]  # 0 where unknown
    n_items: Float[Array, " n"]  # 1 where unknown (only the Binomial likelihood uses it)


# Benchmarks with at least this many scores get a centred log noise scale, the others a
# non-centred one (see Priors).
CENTRED_NOISE_MIN_SCORES = 20

STDERR_FLOOR = 0.005  # half of 0.01, the precision to which Epoch reports standard errors


def prepare_data(
    table, likelihood: str, *, beta_boundary: float = 0.005, stderr_floor: float = STDERR_FLOOR
) -> tuple[BayesData, dict]:
    """Turn a :class:`ScoreTable` into :class:`BayesData` for ``likelihood``.

    Beta needs scores strictly inside (0, 1).  Exact 0 and 1 scores are moved inwards by half an
    item, 0.5 / n_items, when the benchmark size is known (the usual continuity correction), and
    by ``beta_boundary`` otherwise; the number moved is returned in ``info`` and reported.
    Binomial and beta-binomial need ``n_items`` for every score and use the count
    k_i = round(score_i n_i).

    Known standard errors below ``stderr_floor`` are raised to it, and their number is returned
    in ``info["n_stderr_floored"]``.  A reported standard error of 0 (Epoch's runs give
    ``0.00`` for a score of 0 out of n, or below 0.005 after rounding to two decimals) would
    claim an exactly known score: the likelihood of a score of 0 then grows without bound as
    the predicted score and the benchmark's noise both go to 0, and NUTS diverges there (69
    divergences on the Epoch raw data).  0.005 is half the reporting precision; pass
    ``stderr_floor=0`` to use the standard errors as given.
    Returns ``(data, info)``.
    """
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
    frame = table.data
    scores = np.asarray(table.scores, dtype=np.float64)
    stderr = frame["stderr"].to_numpy(dtype=np.float64, na_value=np.nan)
    n_items = frame["n_items"].to_numpy(dtype=np.float64, na_value=np.nan)
    if np.any(stderr[np.isfinite(stderr)] < 0):
        raise ValueError("ScoreTable column 'stderr' has negative values; standard errors are >= 0")
    if not (np.isfinite(stderr_floor) and stderr_floor >= 0):
        raise ValueError(f"stderr_floor must be a finite number >= 0, got {stderr_floor!r}")
    low = np.isfinite(stderr) & (stderr < stderr_floor)
    stderr = np.where(low, stderr_floor, stderr)
    info: dict = {
        "likelihood": likelihood,
        "n_boundary_moved": 0,
        "n_stderr_floored": int(low.sum()),
        "stderr_floor": float(stderr_floor),
    }
    if likelihood == "beta":
        if not 0 < beta_boundary < 0.5:
            raise ValueError(f"beta_boundary must lie in (0, 0.5), got {beta_boundary!r}")
        eps = np.where(np.isfinite(n_items) & (n_items > 0), 0.5 / n_items, beta_boundary)
        at_zero, at_one = scores <= 0.0, scores >= 1.0
        info["n_boundary_moved"] = int(at_zero.sum() + at_one.sum())
        scores = np.where(at_zero, eps, np.where(at_one, 1.0 - eps, scores))
    elif likelihood in _COUNT_LIKELIHOODS:
        missing = ~(np.isfinite(n_items) & (n_items >= 1))
        if missing.any():
            names = sorted(set(frame.loc[missing, "benchmark"]))
            raise ValueError(
                f"the {likelihood} likelihood needs n_items for every score; {int(missing.sum())} "
                f"score(s) lack it, on benchmark(s) {names[:8]}; add an 'n_items' column "
                "(number of questions) or use likelihood='gaussian' or 'beta'"
            )
        scores = np.round(scores * n_items)
    data = BayesData(
        model_index=jnp.asarray(table.model_index, dtype=jnp.int32),
        benchmark_index=jnp.asarray(table.benchmark_index, dtype=jnp.int32),
        scores=jnp.asarray(scores),
        stderr=jnp.asarray(np.nan_to_num(stderr, nan=0.0)),
        n_items=jnp.asarray(np.where(np.isfinite(n_items), n_items, 1.0)),
    )
    return data, info


def anchored_benchmark(layout: ParameterLayout) -> int | None:
    """The benchmark whose difficulty and slope the anchor fixes, or None (a model anchor).

    With such an anchor the model derives the scale (mu_C, tau_C) from that benchmark's
    sampled intercept and slope instead of sampling it (see :func:`stitching_model`).
    """
    if (
        not layout.fixed_capability
        and len(layout.fixed_difficulty) == 1
        and layout.fixed_difficulty == layout.fixed_slope
        and layout.fixed_slope_values[0] > 0
    ):
        return int(layout.fixed_difficulty[0])
    return None


def deterministic_sites(layout: ParameterLayout, likelihood: str) -> tuple[str, ...]:
    """Sites of :func:`stitching_model` computed from others (not sampled) under ``layout``."""
    sites = ("capability", "difficulty", "slope", "noise_variance")
    if likelihood == "gaussian":
        sites += ("sigma",)
    if anchored_benchmark(layout) is not None:
        sites += ("capability_mu", "capability_tau")
    return sites


def _per_benchmark_mean(values, benchmark_index, n_benchmarks):
    total = jax.ops.segment_sum(values, benchmark_index, num_segments=n_benchmarks)
    count = jax.ops.segment_sum(jnp.ones_like(values), benchmark_index, num_segments=n_benchmarks)
    return total / jnp.maximum(count, 1.0)


def stitching_model(
    data: BayesData,
    layout: ParameterLayout,
    *,
    likelihood: str = "gaussian",
    priors: Priors = Priors(),
    observed: bool = True,
) -> None:
    """NumPyro model of benchmark stitching.

    Sites: ``capability_mu``, ``capability_tau`` (sampled under a model anchor; under a
    benchmark anchor deterministic, from ``anchor_intercept`` and ``anchor_slope_z``, the
    anchored benchmark's beta and standardised log slope), ``capability_z`` (n_free_capability,),
    ``intercept`` (n_free_difficulty,), ``slope_z`` (n_free_slope,), and the noise
    ``noise_log_mu``, ``noise_log_tau`` and ``noise_log_sigma`` with deterministic ``sigma`` (Gaussian)
    or ``log_precision`` (Beta, beta-binomial) per benchmark; deterministic ``capability``
    (n_models,), ``difficulty`` and ``slope`` (n_benchmarks,) with anchors filled in, and
    ``noise_variance`` (n_benchmarks,): the mean over a benchmark's scores of Var[score | theta],
    the Sigma_bb of the optimal-weights problem.  Observed site ``y`` (n_scores,).

    Likelihoods, with mu_i = sigmoid(alpha_b (C_m - D_b)) and s_i the known standard error:
      gaussian: y_i ~ N(mu_i, sqrt(sigma_b^2 + s_i^2))   (measurement and misfit add as variances)
      beta:     y_i ~ Beta(mu_i phi_i, (1 - mu_i) phi_i), phi_i chosen so the variance is
                mu_i (1 - mu_i) / (1 + phi_b) + s_i^2, floored at phi_i >= 1
      binomial: k_i ~ Binomial(n_i, mu_i)   (a benchmark counts by its items, not by its name)
      betabinomial: k_i ~ BetaBinomial(mu_i phi_b, (1 - mu_i) phi_b, n_i): counts, plus a
                per-benchmark noise scale.  Items of one benchmark share quirks (a model's
                score moves more between benchmarks than binomial sampling allows), so the score
                variance is mu (1 - mu) / n_i * (n_i + phi_b) / (1 + phi_b): binomial as
                phi_b -> infinity, and never below it.
    Pass ``observed=False`` to sample ``y`` from the model (prior / posterior predictive).
    """
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
    n_b = layout.n_benchmarks
    mi, bi = data.model_index, data.benchmark_index
    anchor_k = anchored_benchmark(layout)
    if anchor_k is None:  # two anchored models: the scale's shift and stretch are sampled
        mu_c = numpyro.sample(
            "capability_mu", dist.Normal(priors.capability_loc, priors.capability_loc_scale)
        )
        tau_c = numpyro.sample("capability_tau", dist.HalfNormal(priors.capability_scale))
    # Zero-sum z: mu_C is then the mean free capability, not a shift that all z_m can mimic.
    z_c = numpyro.sample(
        "capability_z", dist.ZeroSumNormal(1.0, event_shape=(layout.n_free_capability,))
    )
    if anchor_k is not None:
        # An anchored benchmark is sampled like any other (intercept, log slope); its fixed
        # D_A, alpha_A then give the scale: alpha_A = exp(eta_A) / tau_C and
        # D_A = mu_C + tau_C (zbar_A - beta_A / exp(eta_A)).  No scale direction is left to
        # sample, and every benchmark is treated alike (see Priors).
        beta_a = numpyro.sample(
            "anchor_intercept", dist.Normal(priors.intercept_loc, priors.intercept_scale)
        )
        v_a = numpyro.sample("anchor_slope_z", dist.Normal(0.0, 1.0))
        alpha_a, d_a = layout.fixed_slope_values[0], layout.fixed_difficulty_values[0]
        tau_c = numpyro.deterministic(
            "capability_tau",
            jnp.exp(priors.log_slope_loc + priors.log_slope_scale * v_a) / alpha_a,
        )
        on_anchor = bi == anchor_k
        z_bar_a = jnp.sum(jnp.where(on_anchor, z_c[mi], 0.0)) / jnp.sum(on_anchor)
        mu_c = numpyro.deterministic("capability_mu", d_a - tau_c * z_bar_a + beta_a / alpha_a)
    with numpyro.plate("free_difficulty", layout.n_free_difficulty):
        beta = numpyro.sample(
            "intercept", dist.Normal(priors.intercept_loc, priors.intercept_scale)
        )
    with numpyro.plate("free_slope", layout.n_free_slope):
        z_s = numpyro.sample("slope_z", dist.Normal(0.0, 1.0))
    # Standardised parameterisation (see Priors): predictions off the anchor ignore mu_C, tau_C.
    free_slope = jnp.exp(priors.log_slope_loc + priors.log_slope_scale * z_s) / tau_c
    no_difficulty = jnp.zeros((layout.n_free_difficulty,), dtype=free_slope.dtype)
    partial = layout.assemble(mu_c + tau_c * z_c, no_difficulty, free_slope)
    # zbar_b: mean standardised capability of benchmark b's models (anchored models included).
    z_all = (partial.capability - mu_c) / tau_c
    z_bar = _per_benchmark_mean(z_all[mi], bi, n_b)
    _, free_d, _ = layout.free_positions()
    std_slope = (partial.slope * tau_c)[free_d]  # exp(eta_b), or the anchor's alpha tau_C
    params = layout.assemble(
        mu_c + tau_c * z_c, mu_c + tau_c * (z_bar[free_d] - beta / std_slope), free_slope
    )
    numpyro.deterministic("capability", params.capability)
    numpyro.deterministic("difficulty", params.difficulty)
    numpyro.deterministic("slope", params.slope)

    mu = jnp.clip(predict_scores(params, mi, bi), _MU_EPS, 1.0 - _MU_EPS)
    var_measure = data.stderr**2
    if likelihood == "gaussian":
        n_scores_b = jax.ops.segment_sum(jnp.ones_like(data.scores), bi, num_segments=n_b)
        nu = numpyro.sample(
            "noise_log_mu", dist.Normal(priors.log_noise_loc, priors.log_noise_loc_scale)
        )
        spread = numpyro.sample(
            "noise_log_tau",
            dist.LogNormal(jnp.log(priors.log_noise_spread), priors.log_noise_spread_sd),
        )
    with numpyro.plate("benchmark", n_b):
        if likelihood == "gaussian":
            # Centred where a benchmark's own scores fix its noise level, non-centred where
            # they are few (see Priors): raw_b is log sigma_b or its standardised offset.
            centred = n_scores_b >= CENTRED_NOISE_MIN_SCORES
            raw = numpyro.sample(
                "noise_log_sigma",
                dist.Normal(jnp.where(centred, nu, 0.0), jnp.where(centred, spread, 1.0)),
            )
            log_sigma = jnp.where(centred, raw, nu + spread * raw)
            sigma = numpyro.deterministic("sigma", jnp.exp(log_sigma))
        elif likelihood in ("beta", "betabinomial"):
            log_phi = numpyro.sample(
                "log_precision", dist.Normal(priors.log_precision_loc, priors.log_precision_scale)
            )
    if likelihood == "gaussian":
        var_i = sigma[bi] ** 2 + var_measure
        y_dist = dist.Normal(mu, jnp.sqrt(var_i))
    elif likelihood == "beta":
        phi_b = jnp.exp(log_phi)
        var_i = mu * (1.0 - mu) / (1.0 + phi_b[bi]) + var_measure
        # phi >= 1 keeps the Beta unimodal-or-flat even when the stderr is large.
        phi_i = jnp.maximum(mu * (1.0 - mu) / var_i - 1.0, 1.0)
        y_dist = dist.Beta(mu * phi_i, (1.0 - mu) * phi_i)
    elif likelihood == "betabinomial":
        phi_i = jnp.exp(log_phi)[bi]
        var_i = mu * (1.0 - mu) / data.n_items * (data.n_items + phi_i) / (1.0 + phi_i)
        y_dist = dist.BetaBinomial(
            mu * phi_i, (1.0 - mu) * phi_i, total_count=data.n_items.astype(jnp.result_type(int))
        )
    else:
        var_i = mu * (1.0 - mu) / data.n_items
        # Integer counts: NumPyro's binomial sampler indexes by total_count.
        y_dist = dist.Binomial(total_count=data.n_items.astype(jnp.result_type(int)), probs=mu)
    numpyro.deterministic("noise_variance", _per_benchmark_mean(var_i, bi, n_b))
    with numpyro.plate("score", data.scores.shape[0]):
        numpyro.sample("y", y_dist, obs=data.scores if observed else None)
