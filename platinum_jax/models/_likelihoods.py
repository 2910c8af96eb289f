"""Likelihood families for responses given their mean ``mu`` (one file, one idea each).

===================  ==========================  =====================================
family               responses                   global parameters (raw)
===================  ==========================  =====================================
:class:`Bernoulli`   0/1 (fractions: see below)  none
:class:`Binomial`    fractions of ``trials``     none
:class:`Gaussian`    any real number             ``log_noise`` unless ``noise`` given
:class:`Beta`        fractions strictly in (0,1) ``log_precision`` (phi)
:class:`BetaBinomial` fractions of ``trials``    ``log_precision`` (phi)
:class:`Categorical` categories 0..K-1            none (``mu``: K log-probabilities)
===================  ==========================  =====================================

Every family also gives the mean and variance of a response (:meth:`Likelihood.moments`),
which residuals and the infit/outfit statistics of :mod:`platinum_jax.models.diagnostics` read.

Inside logarithms ``mu`` is kept a few machine epsilons away from 0 and 1, so a saturated
prediction gives a large finite loss rather than ``inf``; data are never altered.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln, gammaln, xlogy

from ._protocol import Likelihood, Param, PriorSpec

__all__ = ["Bernoulli", "Binomial", "Gaussian", "Beta", "BetaBinomial", "Categorical",
           "LIKELIHOODS"]


def _safe(mu):
    eps = 8 * jnp.finfo(jnp.result_type(mu)).eps
    return jnp.clip(mu, eps, 1.0 - eps)


def _check_unit(response, source, *, closed=True, what="responses", trials=None):
    lo, hi = float(np.min(response)), float(np.max(response))
    ok = (lo >= 0 and hi <= 1) if closed else (lo > 0 and hi < 1)
    if ok:
        return
    interval = "[0, 1]" if closed else "(0, 1), excluding 0 and 1"
    raise ValueError(f"{source}: {what} must lie in {interval} (min {lo:g}, max {hi:g})"
                     f"{unit_hint(response, trials)}")


def unit_hint(response, trials=None) -> str:
    """What to do with responses outside [0, 1]: counts of successes beside a trials column
    are divided by the trials, percentages (no trials column) by 100; anything else is said
    to be on another scale."""
    y = np.asarray(response, np.float64)
    if trials is not None:
        n = np.asarray(trials, np.float64)
        if np.all(y >= 0) and np.all(y <= n) and np.all(y == np.round(y)):
            return (" -- with a trials column these look like counts of successes; the "
                    "response is the fraction: divide each response by its trials")
        return (" -- with a trials column the response is the fraction of the trials that "
                "succeeded, in [0, 1]")
    if y.min() >= 0 and 1.5 < y.max() <= 100:  # 0/100 answers included
        return " -- these look like percentages; divide by 100"
    return (" -- these are not fractions; rescale them to [0, 1] or choose a likelihood for "
            "such responses (e.g. --likelihood gaussian)")


class Bernoulli(Likelihood):
    """``y ~ Bernoulli(mu)``; a fraction ``y`` in [0, 1] is read as a share of successes
    (the cross-entropy ``y log mu + (1-y) log(1-mu)``, a quasi-likelihood; prefer
    :class:`Binomial` when the number of attempts is known)."""

    name: ClassVar[str] = "bernoulli"

    def log_prob(self, y, mu, trials, theta):
        m = _safe(mu)
        return xlogy(y, m) + xlogy(1.0 - y, 1.0 - m)

    def sample(self, key, mu, trials, theta):
        return jax.random.bernoulli(key, mu).astype(jnp.result_type(mu))

    def check(self, response, trials, source):
        _check_unit(response, source, trials=trials)


class Binomial(Likelihood):
    """``y * trials ~ Binomial(trials, mu)``: pass@1 over several samples, a benchmark's share
    of items solved. Rows without a ``trials`` column count as one attempt."""

    name: ClassVar[str] = "binomial"
    lattice: ClassVar[bool] = True

    def log_prob(self, y, mu, trials, theta):
        n = 1.0 if trials is None else trials
        k = y * n
        m = _safe(mu)
        log_choose = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
        return log_choose + xlogy(k, m) + xlogy(n - k, 1.0 - m)

    def loss(self, y, mu, trials, theta):
        n = 1.0 if trials is None else trials
        m = _safe(mu)
        return -(xlogy(y * n, m) + xlogy((1.0 - y) * n, 1.0 - m))

    def sample(self, key, mu, trials, theta):
        n = jnp.ones_like(mu) if trials is None else trials
        return jax.random.binomial(key, n, mu).astype(jnp.result_type(mu)) / n

    def moments(self, mu, trials, theta):
        n = 1.0 if trials is None else trials
        return mu, mu * (1.0 - mu) / n

    def check(self, response, trials, source):
        _check_unit(response, source, trials=trials)
        if trials is not None:
            k = response * trials
            bad = np.abs(k - np.round(k)) > 1e-6 * np.maximum(trials, 1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"{source}: {int(bad.sum())} response(s) are not a whole number of successes "
                    f"out of their trials (e.g. row {i}: response {response[i]:g} x trials "
                    f"{trials[i]:g}); check the trials column or use the beta likelihood"
                )


class Gaussian(Likelihood):
    """``y ~ Normal(mu, sigma)``. With ``noise`` given, sigma is known and MAP is least squares
    ``0.5 sum ((y - mu)/sigma)^2`` (the Rosetta paper's objective with ``noise=1``); with
    ``noise=None`` sigma is a global parameter ``log_noise``."""

    noise: float | None = None
    name: ClassVar[str] = "gaussian"

    def params(self):
        if self.noise is not None:
            return {}
        return {"log_noise": Param(init=float(np.log(0.1)), prior=PriorSpec("Normal", np.log(0.1), 1.5),
                                   transform=jnp.exp, doc="measurement noise sd (log)")}

    @property
    def least_squares(self) -> bool:
        return self.noise is not None

    def _sigma(self, theta):
        return self.noise if self.noise is not None else jnp.exp(theta["log_noise"])

    def log_prob(self, y, mu, trials, theta):
        s = self._sigma(theta)
        return -0.5 * ((y - mu) / s) ** 2 - jnp.log(s) - 0.5 * jnp.log(2 * jnp.pi)

    def loss(self, y, mu, trials, theta):
        s = self._sigma(theta)
        known = self.noise is not None  # a known noise adds only constants: leave them out
        return 0.5 * ((y - mu) / s) ** 2 + (0.0 if known else jnp.log(s))

    def sample(self, key, mu, trials, theta):
        return mu + self._sigma(theta) * jax.random.normal(key, jnp.shape(mu), jnp.result_type(mu))

    def moments(self, mu, trials, theta):
        return mu, jnp.broadcast_to(jnp.square(self._sigma(theta)), jnp.shape(mu))

    def check(self, response, trials, source):
        if self.noise is not None and not (np.isfinite(self.noise) and self.noise > 0):
            raise ValueError(f"Gaussian noise must be a positive number (got {self.noise})")


class Beta(Likelihood):
    """``y ~ Beta(mu phi, (1 - mu) phi)`` for continuous fractions strictly inside (0, 1)
    (partial credit); ``phi`` (global ``log_precision``) sets the spread."""

    name: ClassVar[str] = "beta"

    def params(self):
        return {"log_precision": Param(init=float(np.log(20.0)),
                                       prior=PriorSpec("Normal", np.log(20.0), 1.5), transform=jnp.exp,
                                       doc="precision phi (log)")}

    def log_prob(self, y, mu, trials, theta):
        phi = jnp.exp(theta["log_precision"])
        m = _safe(mu)
        a, b = m * phi, (1.0 - m) * phi
        return xlogy(a - 1.0, y) + xlogy(b - 1.0, 1.0 - y) - betaln(a, b)

    def sample(self, key, mu, trials, theta):
        phi = jnp.exp(theta["log_precision"])
        m = _safe(mu)
        y = jax.random.beta(key, m * phi, (1.0 - m) * phi)
        # A draw from a Beta with a tiny shape parameter can round to exactly 0 or 1 in
        # floating point; simulated worlds keep it at the nearest representable interior value.
        tiny = jnp.finfo(jnp.result_type(y)).tiny
        return jnp.clip(y, tiny, 1.0 - jnp.finfo(jnp.result_type(y)).epsneg)

    def moments(self, mu, trials, theta):
        return mu, mu * (1.0 - mu) / (1.0 + jnp.exp(theta["log_precision"]))

    def check(self, response, trials, source):
        _check_unit(response, source)
        edge = (response == 0.0) | (response == 1.0)
        if edge.any():
            rows = [int(i) for i in np.flatnonzero(edge)[:8]]
            more = f" and {int(edge.sum()) - len(rows)} more" if edge.sum() > len(rows) else ""
            raise ValueError(
                f"{source}: the beta likelihood needs fractions strictly inside (0, 1), but "
                f"{int((response == 0.0).sum())} response(s) are exactly 0 and "
                f"{int((response == 1.0).sum())} exactly 1 (rows {rows}{more}); use the binomial "
                "or beta_binomial likelihood with a trials column for k-of-n scores, or derive a "
                "response inside (0, 1) yourself, e.g. (k + 0.5) / (n + 1) for k successes out "
                "of n, or on the command line `fit --from-fractions squeeze` (the package never moves "
                "your data unasked)"
            )


class BetaBinomial(Likelihood):
    """``y * trials ~ BetaBinomial(trials, mu phi, (1 - mu) phi)``: a binomial whose success
    probability varies around ``mu`` (over-dispersion, global ``log_precision``)."""

    name: ClassVar[str] = "beta_binomial"
    lattice: ClassVar[bool] = True

    def params(self):
        return {"log_precision": Param(init=float(np.log(20.0)),
                                       prior=PriorSpec("Normal", np.log(20.0), 1.5), transform=jnp.exp,
                                       doc="precision phi (log)")}

    def log_prob(self, y, mu, trials, theta):
        n = 1.0 if trials is None else trials
        k = y * n
        phi = jnp.exp(theta["log_precision"])
        m = _safe(mu)
        a, b = m * phi, (1.0 - m) * phi
        log_choose = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
        return log_choose + betaln(k + a, n - k + b) - betaln(a, b)

    def sample(self, key, mu, trials, theta):
        n = jnp.ones_like(mu) if trials is None else trials
        phi = jnp.exp(theta["log_precision"])
        k1, k2 = jax.random.split(key)
        m = _safe(mu)
        p = jax.random.beta(k1, m * phi, (1.0 - m) * phi)
        return jax.random.binomial(k2, n, p).astype(jnp.result_type(mu)) / n

    def moments(self, mu, trials, theta):
        n = 1.0 if trials is None else trials
        phi = jnp.exp(theta["log_precision"])
        return mu, mu * (1.0 - mu) * (phi + n) / (n * (phi + 1.0))

    def check(self, response, trials, source):
        Binomial().check(response, trials, source)


class Categorical(Likelihood):
    """``y ~ Categorical(exp(mu))`` for ordered (or unordered) categories ``0 .. K-1``; ``mu``
    is the vector of the K category log-probabilities (e.g. from the graded response model;
    logs keep the tails exact). Responses must be whole numbers in ``0 .. K-1``; the moments
    are those of the category number (mean ``sum_k k p_k``)."""

    categories: int = 2
    name: ClassVar[str] = "categorical"

    def __check_init__(self):
        if int(self.categories) < 2:
            raise ValueError(f"categories must be >= 2 (got {self.categories})")

    def log_prob(self, y, mu, trials, theta):
        k = jnp.asarray(y).astype(jnp.int32)
        return jnp.take_along_axis(mu, k[..., None], axis=-1)[..., 0]

    def sample(self, key, mu, trials, theta):
        return jax.random.categorical(key, mu, axis=-1).astype(jnp.result_type(mu))

    def moments(self, mu, trials, theta):
        p = jnp.exp(mu)
        k = jnp.arange(mu.shape[-1], dtype=jnp.result_type(mu))
        mean = jnp.sum(k * p, axis=-1)
        return mean, jnp.sum(k**2 * p, axis=-1) - mean**2

    def check(self, response, trials, source):
        k = int(self.categories)
        bad = (response != np.round(response)) | (response < 0) | (response > k - 1)
        if bad.any():
            rows = [int(i) for i in np.flatnonzero(bad)[:8]]
            raise ValueError(
                f"{source}: {int(bad.sum())} response(s) are not a category 0..{k - 1} (rows "
                f"{rows}, e.g. {response[rows[0]]:g}); ordered categories are whole numbers "
                f"from 0 (lowest) to {k - 1} (highest): derive them from scores first (for "
                "k-of-n pass counts, the count k itself, or 0 = none, 1 = some, 2 = all)"
            )
        if trials is not None:
            raise ValueError(f"{source}: a trials column has no meaning for ordered categories; "
                             "drop it, or fit k-of-n fractions with the binomial likelihood")


LIKELIHOODS = {
    "bernoulli": Bernoulli,
    "binomial": Binomial,
    "gaussian": Gaussian,
    "beta": Beta,
    "beta_binomial": BetaBinomial,
}
