"""A fitted model's items on an ability grid: mean responses, Fisher information, prior.

Everything in :mod:`platinum_jax.efficient` works on one scalar ability per subject (theta_s
of the 1PL-4PL models, C_m of the Rosetta model) and treats the fitted item and global
parameters as known. The ability posterior is then one-dimensional and is computed exactly on
a grid of ``G`` points instead of by a Gaussian approximation: for a handful of responses it is
often skewed, and an interval that ignores that is not honest.

Over-dispersion. Real responses vary more around the fitted curve than the likelihood says
(an item's pass rate is not exactly ``mu_i(theta)``). The bank carries a dispersion factor
``phi`` (Pearson's ``sum (y - mu)^2 / Var(y | mu) / (n - p)`` over the fit's own data by
default): log-likelihoods are divided by ``phi`` and response variances multiplied by it, the
usual quasi-likelihood correction. ``phi = 1`` is the model taken at its word.

Use float64 (``jax.config.update("jax_enable_x64", True)``) for real data; in float32 the
posterior of a subject with hundreds of responses loses precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.inference import Fit, Theta
from platinum_jax.models import Bernoulli, Binomial, Categorical

__all__ = ["ItemBank", "item_bank", "pearson_dispersion", "response_range"]


@dataclass(frozen=True)
class ItemBank:
    """Items of a fit evaluated on an ability grid (all arrays float, no subject data).

    Attributes:
        items: item labels, ``(N,)``.
        grid: ability values ``(G,)`` (raw subject parameter).
        mean: ``mu[g, i]``, the mean response of item ``i`` at ability ``grid[g]``, ``(G, N)``.
        slope: ``d mu[g, i] / d theta``, ``(G, N)``.
        log_prior: the model's ability prior on the grid (log density, unnormalised), ``(G,)``.
        trials: attempts behind one response per item (information and finite-item variance
            of responses that were not observed), ``(N,)``.
        dispersion: the quasi-likelihood factor ``phi`` (module docstring).
        fit: the fit the bank was built from.
    """

    items: pd.Index
    grid: jax.Array
    mean: jax.Array
    slope: jax.Array
    log_prior: jax.Array
    trials: jax.Array
    dispersion: float
    fit: Fit

    @property
    def n_items(self) -> int:
        return len(self.items)

    def variance(self, mu, trials):
        """``Var(y | mu)`` of one response (a fraction of ``trials``), times ``phi``; items
        along the last axis of ``mu``."""
        return self.dispersion * _unit_variance(self.fit, mu, trials, np.arange(self.n_items))

    def information(self, trials=None):
        """Fisher information of each item about the ability, ``I[g, i] = mu'^2 / Var(y)``,
        ``(G, N)``; ``trials`` per item (default :attr:`trials`)."""
        n = self.trials if trials is None else jnp.asarray(trials, self.mean.dtype)
        var = self.variance(self.mean, n[None, :])
        return self.slope ** 2 / jnp.maximum(var, jnp.finfo(self.mean.dtype).tiny)

    @property
    def likelihood_globals(self):
        """The fit's parameters that the likelihood reads: its globals (e.g. a noise or
        precision) and, for a likelihood with parameters per item (a noise scale per
        benchmark), those of the bank's items, ``(N,)``, with a known standard error of 0."""
        return _likelihood_theta(self.fit, np.arange(self.n_items), self.mean.dtype)

    def log_lik(self, y, trials, item_index, *, mean=None, lik_g=None, dispersion=None):
        """Log-likelihood of responses ``y`` (with ``trials``) on items ``item_index`` at every
        grid ability, divided by ``phi``: ``(G, *y.shape)``. ``mean``, ``lik_g`` and
        ``dispersion`` default to the bank's own; a compiled caller passes them as arguments
        so that banks of one likelihood share its program."""
        mean = self.mean if mean is None else mean
        lik_g = self.likelihood_globals if lik_g is None else lik_g
        dispersion = self.dispersion if dispersion is None else dispersion
        per_item = _per_item_names(self.fit)
        theta = {k: (v[item_index] if k in per_item else v) for k, v in lik_g.items()}
        lp = self.fit.problem.model.likelihood.log_prob(y[None], mean[:, item_index],
                                                        trials[None], theta)
        return lp / dispersion

    def position(self, names) -> np.ndarray:
        """Positions of item labels, with a clear error for unknown ones."""
        names = pd.Index(names)
        pos = self.items.get_indexer(names)
        if (pos < 0).any():
            unknown = list(names[pos < 0][:5])
            raise ValueError(
                f"{int((pos < 0).sum())} item(s) are not items of the fitted model, e.g. "
                f"{unknown}; score only items the model was fitted on"
            )
        return pos


def _per_item_names(fit: Fit) -> tuple[str, ...]:
    """Keys of :func:`_likelihood_theta` that hold one value per item."""
    return (*fit.problem.lik_item_names, "se")


def _likelihood_theta(fit: Fit, item_index, dtype=None) -> dict:
    """The likelihood's parameters at the fit's values for responses to the items
    ``item_index`` (:meth:`~platinum_jax.inference.Problem.likelihood_at`), with a known
    standard error of 0 (a new response carries none)."""
    item_index = np.asarray(item_index)
    theta = Theta(fit.theta.subjects, jnp.asarray(fit.theta.items, dtype),
                  jnp.asarray(fit.theta.globals, dtype))
    return fit.problem.likelihood_at(theta, item_index, jnp.zeros(item_index.shape, dtype))


def _unit_variance(fit: Fit, mu, trials, item_index):
    """``Var(y | mu)`` at the fit's parameters, for responses to the items ``item_index``
    (broadcast against ``mu``'s last axes)."""
    lik = fit.model.likelihood
    if isinstance(lik, Categorical):
        raise ValueError(
            f"efficient evaluation reads one expected response per item, and the {lik.name!r} "
            "likelihood (ordered categories) has a probability per category; fit the items "
            "with a bernoulli or binomial likelihood (e.g. k-of-n pass counts) to score "
            "subsets")
    # every likelihood by its own moments (a noise scale per benchmark, a precision)
    theta = _likelihood_theta(fit, item_index, jnp.result_type(mu))
    try:
        _, var = lik.moments(mu, trials, theta)
    except (KeyError, NotImplementedError, TypeError) as exc:
        raise ValueError(
            f"efficient evaluation needs the response variance of the {lik.name!r} likelihood, "
            f"and its moments() could not give it ({type(exc).__name__}: {exc}); use a model "
            "fitted with the bernoulli, binomial or gaussian likelihood") from None
    # at least mu's shape: trials of their own (one per subject, say) add leading axes
    return jnp.broadcast_to(var, jnp.broadcast_shapes(jnp.shape(mu), jnp.shape(var)))


def response_range(model) -> tuple[float, float]:
    """The range ``(lo, hi)`` of one response of ``model`` and so of a mean of responses (a
    full-benchmark score): ``[0, 1]`` for fractions (Bernoulli, binomial, the Rosetta model's
    scores), the real line otherwise."""
    lik = model.likelihood
    if isinstance(lik, (Bernoulli, Binomial)) or getattr(model, "unit_scores", False):
        return 0.0, 1.0
    return -np.inf, np.inf


def _check_scalar_ability(fit: Fit) -> None:
    block = fit.problem.subject
    if block.size != 1:
        raise ValueError(
            f"efficient evaluation needs one scalar ability per subject; the {fit.model.name!r} "
            f"model has {block.size} subject parameters ({list(block.names)})"
        )


def pearson_dispersion(fit: Fit) -> float:
    """Pearson's dispersion ``phi = sum w (y - mu)^2 / Var(y | mu) / (n - p)`` over the fit's
    own responses (``p`` free parameters); 1 when the likelihood is exactly right."""
    t = fit.table
    mu = fit.predict()
    trials = np.ones(t.n_responses) if t.trials is None else t.trials
    var = np.asarray(_unit_variance(fit, jnp.asarray(mu), jnp.asarray(trials), t.item_index))
    w = np.ones(t.n_responses) if t.weight is None else t.weight
    ok = var > 0
    dof = float(w[ok].sum()) - fit.problem.n_free
    if dof <= 0:
        raise ValueError(
            f"Pearson's dispersion needs more responses than free parameters (the fit has "
            f"{int(ok.sum())} informative responses and {fit.problem.n_free} parameters); pass "
            "dispersion=1.0 to take the likelihood at its word"
        )
    return float(np.sum(w[ok] * (t.response[ok] - mu[ok]) ** 2 / var[ok]) / dof)


def item_bank(
    fit: Fit,
    *,
    grid=None,
    dispersion: float | str = "pearson",
    trials=None,
) -> ItemBank:
    """Evaluate the items of ``fit`` on an ability grid.

    Args:
        fit: a fitted model with one scalar ability per subject.
        grid: ability grid (increasing); default 401 points over the fitted abilities widened
            by 4 prior-scale units on each side (at least [-6, 6]).
        dispersion: ``"pearson"`` (from the fit's data) or a positive number (1 = none).
        trials: attempts per item for responses not yet observed (default: the median trials
            of each item's responses in the fit, 1 without a trials column).

    Raises:
        ValueError: a model with more than one subject parameter, a likelihood whose variance
            is unknown, a non-increasing grid or a non-positive dispersion.
    """
    _check_scalar_ability(fit)
    problem = fit.problem
    dtype = problem.dtype
    if grid is None:
        ability = np.asarray(fit.theta.subjects, np.float64).ravel()
        lo = min(-6.0, float(ability.min()) - 4.0)
        hi = max(6.0, float(ability.max()) + 4.0)
        grid = np.linspace(lo, hi, 401)
    grid = np.asarray(grid, np.float64)
    if grid.ndim != 1 or len(grid) < 3 or not np.all(np.diff(grid) > 0):
        raise ValueError("grid must be an increasing 1-d array of at least 3 abilities")
    if isinstance(dispersion, str):
        if dispersion != "pearson":
            raise ValueError(f"dispersion must be 'pearson' or a number (got {dispersion!r})")
        if fit.diagnostics.get("placeholder_table"):
            raise ValueError(
                "this fit was read without its responses, so Pearson's dispersion cannot be "
                "computed; give the training data or a dispersion number (1 = none)"
            )
        dispersion = pearson_dispersion(fit)
    dispersion = float(dispersion)
    if not (np.isfinite(dispersion) and dispersion > 0):
        raise ValueError(f"dispersion must be a positive number (got {dispersion})")
    t = fit.table
    if trials is None:
        if t.trials is None:
            trials = np.ones(t.n_items)
        else:
            trials = pd.Series(t.trials).groupby(t.item_index).median().reindex(
                range(t.n_items)).to_numpy()
    trials = np.asarray(trials, np.float64)
    if trials.shape != (t.n_items,) or not np.all(trials >= 1):
        raise ValueError(f"trials must give one count >= 1 per item ({t.n_items} items)")

    g = jnp.asarray(grid, dtype)
    items_raw = jnp.asarray(fit.theta.items, dtype)
    glob = jnp.asarray(fit.theta.globals, dtype)

    def one(theta, i_row):
        return problem.mean(jnp.reshape(theta, (1,)), i_row, glob)

    per_item = jax.vmap(jax.value_and_grad(one), in_axes=(None, 0))
    mean, slope = jax.jit(jax.vmap(per_item, in_axes=(0, None)))(g, items_raw)
    free = jnp.ones((1,), bool)
    log_prior = -jax.vmap(lambda th: problem.subject_penalty(th[None], free, glob))(g)
    return ItemBank(items=t.items, grid=g, mean=mean, slope=slope, log_prior=log_prior,
                    trials=jnp.asarray(trials, dtype), dispersion=dispersion, fit=fit)
