"""The Bayesian Rosetta model (Ho et al. 2025, "A Rosetta Stone for AI Benchmarks"), declared
on the measurement-model protocol in the coordinates NUTS samples well.

``score_i ~ Likelihood(mu_i, noise_b)``, ``mu_i = sigmoid(alpha_b (C_m - D_b))`` for model
``m = m(i)`` on benchmark ``b = b(i)``, with the paper's anchors (:class:`BenchmarkAnchor`:
Winogrande, D = 0, alpha = 1, or :class:`ModelAnchor`). Four likelihoods, with ``s_i`` the
row's known standard error (the response table's ``se``, 0 where unknown):

* :class:`NoisyGaussian`: ``y_i ~ N(mu_i, sqrt(sigma_b^2 + s_i^2))``, a noise scale per
  benchmark drawn around a common level (a :class:`Hierarchical` prior);
* :class:`NoisyBeta`: ``y_i ~ Beta(mu_i phi_i, (1 - mu_i) phi_i)`` with ``phi_i`` chosen so the
  variance is ``mu_i (1 - mu_i) / (1 + phi_b) + s_i^2`` (floored at ``phi_i >= 1``);
* :class:`~platinum_jax.models.Binomial`: ``k_i ~ Binomial(n_i, mu_i)`` (``trials`` = items);
* :class:`ItemBetaBinomial`: ``k_i ~ BetaBinomial(mu_i phi_b, (1 - mu_i) phi_b, n_i)``, a
  precision per benchmark: items of one benchmark share quirks, so scores move more between
  benchmarks than binomial sampling allows.

Everything about sampling geometry is in :class:`RosettaReparameterisation` (see
:class:`Priors` for the coordinates and why); the engine builds the NumPyro model from this
declaration (:func:`platinum_jax.inference.numpyro_model`). NumPyro is imported only when a
prior is asked for, so point fits never load it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, xlogy

from .._likelihoods import BetaBinomial
from .._protocol import (
    Hierarchical,
    Identification,
    Likelihood,
    MeasurementModel,
    Param,
)
from ._anchors import Anchor, BenchmarkAnchor, ModelAnchor
from ._reparam import RosettaReparameterisation

__all__ = ["CENTRED_NOISE_MIN_SCORES", "POOLED_NOISE_BELOW", "ItemBetaBinomial", "NoisyBeta",
           "NoisyGaussian", "Priors", "RosettaBayes"]

# Keeps sigmoid outputs strictly inside (0, 1) where Beta / Binomial log densities are finite.
_MU_EPS = 1e-9

# Benchmarks with at least this many scores get a centred log noise scale, the others a
# non-centred one (see Priors).  30 rather than fewer: with 23 scores and no standard errors a
# benchmark's lower tail of log sigma_b is bounded by the hierarchy more than by its scores,
# which a centred coordinate samples slowly (ARC AI2 on a subset of Epoch's raw directory).
CENTRED_NOISE_MIN_SCORES = 30

# Benchmarks with fewer scores than this and no known standard errors share the common noise
# level (NoisyGaussian's complete pooling). With a handful of scores their intercept, slope and
# noise form a funnel NUTS diverges in; up to about 30 scores the lower tail of log sigma_b is
# left to the hierarchy, since a joint fit can absorb a benchmark's residuals into the
# capabilities of the models it scores, and that coordinate mixed slowly centred or not (ARC AI2
# with 23 scores on subsets of Epoch's raw directory). Equal to CENTRED_NOISE_MIN_SCORES, so a
# benchmark without standard errors has its own noise scale, sampled centred, or none.
POOLED_NOISE_BELOW = 30


def _dist():
    import numpyro.distributions as dist

    return dist


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
                      (with a model anchor; with a benchmark anchor see RosettaReparameterisation)

    with v_b ~ N(0, 1) and zbar_b the mean z_m of the models scored on benchmark b, so that

        alpha_b (C_m - D_b) = exp(eta_b) (z_m - zbar_b) + beta_b.

    beta_b is the logit of the score of benchmark b's typical model, the quantity a benchmark's
    scores pin down best; with the capabilities centred on that typical model, the intercept and
    the slope are nearly uncorrelated.  Sampling the difficulty instead bends the posterior of
    a benchmark whose scores all sit near 0 (FrontierMath Tier 4, OSWorld on the Epoch data)
    into a curved ridge between D_b and alpha_b that NUTS crosses slowly.  Predictions off the
    anchor do not involve (mu_C, tau_C): the shift and stretch of the whole scale, which only
    the anchor pins down, are two coordinates of their own.

    The scores see a slope only through |z| exp(eta_b), so the length of z and every log
    slope trade along one ridge that only the priors bound (and a stretch between eras of
    models that few models link).  z is sampled in polar form, z = sqrt(r2) u / |u| with
    r2 = |z|^2 ~ chi^2(n - 1) (``capability_r2``) and u uniform in direction on the zero-sum
    subspace (``capability_u``, on a thin shell: :mod:`platinum_jax.models.rosetta._zero_sum_shell`),
    exactly the ZeroSumNormal(1) prior of z; the ridge then lies in (log r2, slopes) alone,
    which the low-rank part of the sampler's mass matrix follows.  ``RosettaBayes(polar_scale=False)`` samples z itself.

    Gaussian noise is hierarchical on the log scale, log sigma_b ~ N(nu, s) with
    nu ~ N(log_noise_loc, log_noise_loc_scale) and s ~ LogNormal(log log_noise_spread,
    log_noise_spread_sd).  A benchmark with at least ``CENTRED_NOISE_MIN_SCORES`` (30) scores
    has its log sigma_b sampled centred: its own scores fix its noise level, and the
    non-centred form would tie nu, s and every such benchmark's offset into one narrow ridge
    (bulk ESS of nu about 30 per 800 draws on the Epoch raw data, against about 200 centred).
    A benchmark with fewer scores is sampled non-centred, log sigma_b = nu + s n_b with
    n_b ~ N(0, 1): its few scores leave sigma_b loose, and centred it can wander into a funnel
    where sigma_b is tiny and its scores must be fitted exactly (a divergence at ScienceQA,
    6 scores, sigma 0.005).  A benchmark with fewer than ``POOLED_NOISE_BELOW`` (30) scores and
    no standard errors has no noise scale of its own: sigma_b = exp(nu), the common level
    (:class:`NoisyGaussian`'s ``pooled_below``; sites ``noise`` and ``noise_offset``, see
    :mod:`platinum_jax.models.rosetta._pooled`).  With ``pooled_below=0`` every benchmark has
    its own, and the site ``noise_log_sigma`` holds log sigma_b or n_b accordingly.  By
    default the two bars are equal, so only benchmarks with standard errors and fewer than 30
    scores are sampled non-centred.  The
    spread's prior keeps away from 0 (benchmarks do differ in noise; below s = 0.1 has prior
    probability 0.3%), which is what a centred hierarchy needs: as s -> 0
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


class NoisyGaussian(Likelihood):
    """``y ~ N(mu, sqrt(sigma_b^2 + se^2))``: a noise scale ``sigma_b`` per item (benchmark) and
    the row's known standard error added in variance (measurement and misfit add).

    Per item: ``noise_log_sigma`` = log sigma_b with prior ``Normal(noise_log_mu,
    noise_log_tau)`` (:class:`Hierarchical`, centred for items with at least ``centred_min``
    responses). Globals: ``noise_log_mu`` ~ N(log_noise_loc, log_noise_loc_scale) and the
    spread ``noise_log_tau`` ~ LogNormal(log log_noise_spread, log_noise_spread_sd) (its raw
    value is the spread itself, kept positive by the sampler's own transform).

    ``pooled_below`` (Bayesian fits of :class:`RosettaBayes`): a benchmark with fewer scores
    than this and no known standard error has no noise scale of its own but the common level,
    sigma_b = exp(noise_log_mu) (complete pooling: in a joint fit its scores cannot estimate
    their own noise; see :mod:`platinum_jax.models.rosetta._pooled`). The default,
    :data:`POOLED_NOISE_BELOW` (30, the bar for centring), passed a sweep over seeds and random
    subsets of Epoch's raw directory with no divergent transition and every coordinate mixed
    (``benchmarks/bench_bayes_defaults.py``); 0 pools none (the fully hierarchical noise,
    whose sites are ``noise_log_mu``, ``noise_log_tau`` and ``noise_log_sigma``).
    """

    priors: Priors = Priors()
    centred_min: int = CENTRED_NOISE_MIN_SCORES
    pooled_below: int = POOLED_NOISE_BELOW
    name: ClassVar[str] = "gaussian"
    reads_se: ClassVar[bool] = True

    def params(self):
        d, p = _dist(), self.priors
        return {
            "noise_log_mu": Param(init=p.log_noise_loc,
                                  prior=d.Normal(p.log_noise_loc, p.log_noise_loc_scale),
                                  doc="common level nu of the log noise scales"),
            "noise_log_tau": Param(init=p.log_noise_spread,
                                   prior=d.LogNormal(float(np.log(p.log_noise_spread)),
                                                     p.log_noise_spread_sd),
                                   doc="spread s of the log noise scales (> 0)"),
        }

    def item_params(self):
        return {"noise_log_sigma": Param(
            init=self.priors.log_noise_loc,
            prior=Hierarchical("noise_log_mu", "noise_log_tau", centred=int(self.centred_min)),
            doc="log noise scale log sigma_b")}

    def derived(self, item):
        return {"sigma": jnp.exp(item["noise_log_sigma"])}  # sigma_b

    def _sd(self, theta):
        return jnp.sqrt(jnp.exp(2.0 * theta["noise_log_sigma"]) + theta["se"] ** 2)

    def log_prob(self, y, mu, trials, theta):
        s = self._sd(theta)
        return -0.5 * ((y - mu) / s) ** 2 - jnp.log(s) - 0.5 * jnp.log(2 * jnp.pi)

    def sample(self, key, mu, trials, theta):
        return mu + self._sd(theta) * jax.random.normal(key, jnp.shape(mu), jnp.result_type(mu))

    def moments(self, mu, trials, theta):
        return mu, jnp.broadcast_to(self._sd(theta) ** 2, jnp.shape(mu))


def _log_precision(priors: Priors) -> dict[str, Param]:
    d = _dist()
    return {"log_precision": Param(
        init=priors.log_precision_loc,
        prior=d.Normal(priors.log_precision_loc, priors.log_precision_scale),
        doc="log precision log phi_b")}


class NoisyBeta(Likelihood):
    """``y ~ Beta(mu phi_i, (1 - mu) phi_i)`` with a precision ``phi_b`` per item and the row's
    known standard error added in variance: ``phi_i`` gives variance ``mu (1 - mu) / (1 +
    phi_b) + se^2``, floored at ``phi_i >= 1`` (unimodal or flat even when ``se`` is large).
    Responses strictly inside (0, 1)."""

    priors: Priors = Priors()
    name: ClassVar[str] = "beta"
    reads_se: ClassVar[bool] = True

    def item_params(self):
        return _log_precision(self.priors)

    def _variance(self, mu, theta):
        return mu * (1.0 - mu) / (1.0 + jnp.exp(theta["log_precision"])) + theta["se"] ** 2

    def _shape(self, mu, theta):
        phi = jnp.maximum(mu * (1.0 - mu) / self._variance(mu, theta) - 1.0, 1.0)
        return mu * phi, (1.0 - mu) * phi

    def log_prob(self, y, mu, trials, theta):
        a, b = self._shape(mu, theta)
        # log Gamma terms rather than jax's betaln, which is good to about 1e-7 only.
        log_norm = gammaln(a + b) - gammaln(a) - gammaln(b)
        return xlogy(a - 1.0, y) + xlogy(b - 1.0, 1.0 - y) + log_norm

    def sample(self, key, mu, trials, theta):
        a, b = self._shape(mu, theta)
        y = jax.random.beta(key, a, b)
        tiny = jnp.finfo(jnp.result_type(y)).tiny
        return jnp.clip(y, tiny, 1.0 - jnp.finfo(jnp.result_type(y)).epsneg)

    def moments(self, mu, trials, theta):
        return mu, self._variance(mu, theta)

    def check(self, response, trials, source):
        if np.any((response <= 0.0) | (response >= 1.0)):
            raise ValueError(f"{source}: the beta likelihood needs responses strictly inside "
                             "(0, 1); move exact 0 and 1 scores inwards first")


class ItemBetaBinomial(BetaBinomial):
    """:class:`~platinum_jax.models.BetaBinomial` with its precision ``phi_b`` per item
    (benchmark) instead of one for all."""

    priors: Priors = Priors()
    name: ClassVar[str] = "beta_binomial"

    def params(self):
        return {}

    def item_params(self):
        return _log_precision(self.priors)


class RosettaBayes(MeasurementModel):
    """The Bayesian Rosetta model: ``score = sigmoid(alpha_b (C_m - D_b))`` with one of the
    likelihoods of this module and the priors :class:`Priors`, sampled in the coordinates of
    :class:`RosettaReparameterisation`.

    Args:
        anchor: :class:`BenchmarkAnchor` (default: Winogrande, D = 0, alpha = 1) or
            :class:`ModelAnchor`; anchored entries are fixed, not sampled.
        likelihood: :class:`NoisyGaussian` (default), :class:`NoisyBeta`,
            :class:`~platinum_jax.models.Binomial` or :class:`ItemBetaBinomial`.
        priors: :class:`Priors`.
        polar_scale: sample the standardised capabilities in polar form (default; see
            :class:`Priors`) or, False, as they are.
        noise_scaled: Gaussian likelihood: sample the intercept of a benchmark with few scores
            and no standard errors relative to its noise scale (opt-in; see
            :mod:`platinum_jax.models.rosetta._noise`).

    The declared priors of ``capability``, ``difficulty`` and ``slope`` (wide normals) serve
    point fits only; Bayesian fits sample the reparameterisation. ``nuts_settings``: the
    sampler settings :func:`~platinum_jax.inference.nuts` (and ``fit --method nuts``) use where
    not given, those of ``stitch-bayes`` (4 chains x 2,000 draws after 600 warm-up
    iterations, target acceptance 0.95, a low-rank mass matrix), checked over seeds and
    subsets of Epoch's raw data (the Bayesian guide lists the runs).
    """

    anchor: Anchor = BenchmarkAnchor()
    likelihood: Likelihood = NoisyGaussian()
    priors: Priors = Priors()
    polar_scale: bool = True
    noise_scaled: bool = False
    name: ClassVar[str] = "rosetta_bayes"
    dim_names: ClassVar[tuple[str, str, str]] = ("model", "benchmark", "score")
    nuts_settings: ClassVar[dict] = {"warmup": 600, "samples": 2000, "target_accept": 0.95,
                                     "mass": "lowrank", "init": "uniform"}

    def subject_params(self):
        return {"capability": Param(prior=_dist().Normal(0.0, 3.0), doc="capability C_m")}

    def item_params(self):
        d = _dist()
        return {
            "difficulty": Param(prior=d.Normal(0.0, 3.0), doc="difficulty D_b"),
            "slope": Param(init=1.0, prior=d.Normal(1.0, 1.0), jitter=0.3, relative=True,
                           doc="slope alpha_b"),
        }

    def mean(self, subject, item, glob):
        z = item["slope"] * (subject["capability"] - item["difficulty"])
        return jnp.clip(jax.nn.sigmoid(z), _MU_EPS, 1.0 - _MU_EPS)

    def identify(self, table) -> Identification:
        from ._model import Rosetta

        ident = Rosetta(anchor=self.anchor).identify(table)
        return Identification(subject=ident.subject, item=ident.item,
                              description=ident.description)

    def describe(self):
        out = {**super().describe(), "anchor": self.anchor.describe(),
               "priors": dataclasses.asdict(self.priors)}
        if isinstance(self.likelihood, NoisyGaussian):
            lik = self.likelihood
            out["noise"] = (
                f"log sigma_b ~ N(nu, s) per benchmark, centred from {int(lik.centred_min)} "
                "scores" + (f"; a benchmark with fewer than {int(lik.pooled_below)} scores and "
                            "no standard errors has sigma_b = exp(nu) (complete pooling)"
                            if lik.pooled_below > 0 else ""))
        return out

    @classmethod
    def with_likelihood(cls, likelihood: str = "gaussian", *, anchor: Anchor | None = None,
                        priors: Priors | None = None,
                        centred_min: int = CENTRED_NOISE_MIN_SCORES,
                        pooled_below: int = POOLED_NOISE_BELOW) -> RosettaBayes:
        """The model with a likelihood by name: ``"gaussian"`` (:class:`NoisyGaussian`, with
        ``centred_min`` and ``pooled_below``), ``"beta"`` (:class:`NoisyBeta`), ``"binomial"``
        or ``"beta_binomial"`` (:class:`ItemBetaBinomial`), all with ``priors``: what
        ``stitch-bayes`` and ``fit --model rosetta_bayes`` both sample."""
        from .._likelihoods import Binomial

        priors = Priors() if priors is None else priors
        name = likelihood
        for arg, value in (("centred_min", centred_min), ("pooled_below", pooled_below)):
            if isinstance(value, bool) or int(value) != value or value < 0:
                raise ValueError(f"{arg} must be a whole number of scores >= 0, got {value!r}")
        made = {"gaussian": lambda: NoisyGaussian(priors=priors, centred_min=int(centred_min),
                                                  pooled_below=int(pooled_below)),
                "beta": lambda: NoisyBeta(priors=priors),
                "binomial": Binomial,
                "beta_binomial": lambda: ItemBetaBinomial(priors=priors)}
        if name not in made:
            raise ValueError(f"the Bayesian Rosetta model takes the likelihood "
                             f"{tuple(made)}, got {likelihood!r}")
        return cls(anchor=BenchmarkAnchor() if anchor is None else anchor,
                   likelihood=made[name](), priors=priors)

    def reparameterise(self, table) -> RosettaReparameterisation:
        ident = self.identify(table)
        m, b = table.n_subjects, table.n_items

        def split(fixed, n):
            if fixed is None:
                return tuple(range(n)), np.zeros(n)
            return (tuple(int(i) for i in np.flatnonzero(~fixed.mask)),
                    np.where(fixed.mask, fixed.values, 0.0))

        free_c, fix_c = split(ident.subject.get("capability"), m)
        free_d, fix_d = split(ident.item.get("difficulty"), b)
        free_s, fix_s = split(ident.item.get("slope"), b)
        anchor_k = None
        if isinstance(self.anchor, BenchmarkAnchor):
            anchor_k = int(table.items.get_loc(self.anchor.benchmark))
        elif not isinstance(self.anchor, ModelAnchor):  # pragma: no cover - checked by identify
            raise TypeError(f"anchor must be a BenchmarkAnchor or ModelAnchor, got {self.anchor!r}")
        rep = RosettaReparameterisation(
            priors=self.priors, n_models=m, n_benchmarks=b, free_capability=free_c,
            free_difficulty=free_d, free_slope=free_s, fixed_capability=fix_c,
            fixed_difficulty=fix_d, fixed_slope=fix_s, anchor_benchmark=anchor_k,
            model_index=np.asarray(table.subject_index), benchmark_index=np.asarray(table.item_index),
            polar=bool(self.polar_scale))
        lik = self.likelihood
        pooled = isinstance(lik, NoisyGaussian) and lik.pooled_below > 0
        if self.noise_scaled and pooled:
            raise ValueError("RosettaBayes: noise_scaled=True and a pooled noise "
                             f"(NoisyGaussian(pooled_below={lik.pooled_below})) are two "
                             "answers to one funnel; set pooled_below=0 for noise_scaled")
        if self.noise_scaled and isinstance(lik, NoisyGaussian):
            from ._noise import scaled_noise

            return scaled_noise(rep, table, lik.centred_min)
        if pooled:
            from ._pooled import pooled_noise

            return pooled_noise(rep, table, int(lik.centred_min), int(lik.pooled_below))
        return rep
