"""A new subject's ability and full-benchmark score from the items it answered.

For subject ``s`` with responses ``y_si`` on the observed items ``O_s`` of a target set ``T``
(the benchmark, ``|T| = N_T``):

* ability posterior on the grid: ``p(theta | y) ∝ p(theta) prod_{i in O_s} p(y_si | mu_i(theta))^(1/phi)``;
* full-benchmark score ``A_s = (sum_{i in O_s ∩ T} y_si + sum_{i in T \\ O_s} y_si) / N_T``, whose
  unseen part is, given theta, a sum of independent responses with mean
  ``m(theta) = sum mu_i(theta)`` and variance ``v(theta) = phi sum Var(y_i | mu_i(theta))``
  (the finite-item term: even a known ability leaves the unseen responses uncertain). The
  predictive distribution of ``A_s`` mixes ``Normal(m(theta), v(theta))`` over the posterior.

This is the estimator of tinyBenchmarks' "gp-IRT" family (observed items count as they are,
the rest is predicted by the item model), with its interval derived rather than bootstrapped.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable

from ._bank import ItemBank, response_range

__all__ = ["estimate_scores", "grid_posterior", "dense_responses"]


def dense_responses(bank: ItemBank, responses: ResponseTable):
    """``(y, trials, observed)`` as ``(S, N)`` arrays over the bank's items; unknown items
    raise, and so do responses the bank's model cannot read (the check ``fit`` makes:
    percentages, counts beside trials, values outside the likelihood's support), so every
    scoring path, adaptive tests included, refuses what ``fit`` refuses. Subjects are
    ``responses.subjects``."""
    from platinum_jax.models import check_responses

    check_responses(bank.fit.model, responses)
    pos = bank.position(responses.items)
    s, n = responses.n_subjects, bank.n_items
    y = np.zeros((s, n))
    tr = np.ones((s, n))
    seen = np.zeros((s, n), bool)
    cols = pos[responses.item_index]
    y[responses.subject_index, cols] = responses.response
    if responses.trials is not None:
        tr[responses.subject_index, cols] = responses.trials
    seen[responses.subject_index, cols] = True
    return y, tr, seen


def grid_posterior(bank: ItemBank, y, trials, seen):
    """Normalised ability posterior ``(S, G)`` of subjects with dense responses ``y``,
    ``trials`` and mask ``seen`` ``(S, N)`` (items of the bank)."""
    dtype = bank.mean.dtype
    y = jnp.asarray(y, dtype)
    trials = jnp.asarray(trials, dtype)
    seen = jnp.asarray(seen, bool)
    idx = jnp.broadcast_to(jnp.arange(bank.n_items), y.shape)
    return _posterior_fn(bank)(y, trials, seen, idx, bank.mean, bank.likelihood_globals,
                               jnp.asarray(bank.dispersion, dtype), bank.log_prior)


# One compiled posterior per likelihood (a few kept): the bank's arrays are its arguments, not
# constants in it, so every bank of one likelihood and shape (a refit, a bank loaded again by
# another command) shares the program.
_POSTERIORS: dict = {}


def _posterior_fn(bank: ItemBank):
    likelihood = bank.fit.problem.model.likelihood
    try:
        key = (likelihood, str(bank.mean.dtype))
        hash(key)
    except TypeError:  # a likelihood holding arrays: one program per bank
        key = (id(bank),)
    hit = _POSTERIORS.get(key)
    if hit is not None and (len(key) > 1 or hit[0] is bank):
        return hit[1]

    def one(y_s, n_s, m_s, i_s, mean, lik_g, phi, log_prior):
        lp = bank.log_lik(y_s, n_s, i_s, mean=mean, lik_g=lik_g, dispersion=phi)  # (G, N)
        return log_prior + jnp.sum(jnp.where(m_s[None], lp, 0.0), axis=1)

    fn = jax.jit(lambda y, n, m, i, *arrays: jax.nn.softmax(
        jax.vmap(one, (0, 0, 0, 0) + (None,) * len(arrays))(y, n, m, i, *arrays), axis=1))
    if len(_POSTERIORS) >= 16:
        _POSTERIORS.pop(next(iter(_POSTERIORS)))
    _POSTERIORS[key] = (bank, fn)
    return fn


def _quantiles(grid: np.ndarray, post: np.ndarray, probs) -> np.ndarray:
    """Quantiles of grid distributions ``(S, G)`` by interpolating the CDF at cell centres."""
    cdf = np.cumsum(post, axis=1) - 0.5 * post
    return np.stack([np.interp(probs, c, grid) for c in cdf])


def estimate_scores(
    bank: ItemBank,
    responses: ResponseTable,
    *,
    target=None,
    interval: float = 0.9,
    draws: int = 4000,
    seed: int = 0,
    scale: float = 1.0,
) -> pd.DataFrame:
    """Ability and full-benchmark score of each subject of ``responses``, with intervals.

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`).
        responses: the new subjects' responses on items of the bank (any subset).
        target: the items whose mean response is "the full-benchmark score" (default: every
            item of the bank). Responses outside it still inform the ability.
        interval: probability of the equal-tailed intervals (default 0.9).
        draws: Monte Carlo draws of the score per subject (ability from the grid posterior,
            then the unseen responses).
        seed: seed of those draws.
        scale: factor on the spread of the score around its mean (1: as the model says; a
            calibrated value from :func:`~platinum_jax.efficient.interval_scale`).

    Returns:
        One row per subject: ``ability`` (posterior mean), ``ability_sd``, ``ability_lo``,
        ``ability_hi``; ``score`` (predictive mean of the full-benchmark score), ``score_sd``,
        ``score_lo``, ``score_hi``; ``observed_mean`` (plain mean of the observed target
        responses, NaN when none), ``n_observed`` (target items answered) and ``n_target``.
        Unseen items are predicted with each subject's median trials; each draw of their sum
        is kept within what they can add up to (responses in :func:`response_range`), so the
        interval lies inside the score's range.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1 (got {interval})")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number (got {scale})")
    if draws < 10:
        raise ValueError(f"draws must be at least 10 (got {draws})")
    tmask = np.ones(bank.n_items, bool)
    if target is not None:
        tmask = np.zeros(bank.n_items, bool)
        tmask[bank.position(target)] = True
    y, tr, seen = dense_responses(bank, responses)
    post = grid_posterior(bank, y, tr, seen)
    grid = np.asarray(bank.grid)
    post_np = np.asarray(post, np.float64)
    mean = post_np @ grid
    sd = np.sqrt(np.maximum(post_np @ grid ** 2 - mean ** 2, 0.0))
    lo_q, hi_q = (1 - interval) / 2, 1 - (1 - interval) / 2
    q = _quantiles(grid, post_np, [lo_q, hi_q])

    # Unseen target responses per subject: mean and variance at each grid ability.
    n_subj = np.array([np.median(tr[s][seen[s]]) if seen[s].any() else 1.0
                       for s in range(len(y))])
    unseen = jnp.asarray(tmask[None] & ~seen, bank.mean.dtype)  # (S, N)
    m_g = unseen @ bank.mean.T  # (S, G)
    var_items = bank.variance(bank.mean[None], jnp.asarray(n_subj)[:, None, None])  # (S, G, N)
    v_g = jnp.einsum("sgn,sn->sg", var_items, unseen)
    obs_sum = np.sum(np.where(seen & tmask[None], y, 0.0), axis=1)
    n_t = int(tmask.sum())
    # Draws: an ability cell by inverting the posterior CDF, then the unseen responses' sum.
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(post_np, axis=1)
    u = rng.random((len(y), draws)) * cdf[:, -1:]
    g = np.minimum(np.stack([np.searchsorted(c, v) for c, v in zip(cdf, u, strict=True)]),
                   len(grid) - 1)
    rows = np.arange(len(y))[:, None]
    m_np, v_np = np.asarray(m_g), np.asarray(v_g)
    unseen_sum = m_np[rows, g] + np.sqrt(v_np[rows, g]) * rng.standard_normal(g.shape)
    # The normal approximation of the unseen sum is kept within what the unseen responses can
    # add up to (each in the response range), so the interval stays inside the score's range.
    lo, hi = response_range(bank.fit.model)
    n_unseen = np.asarray(unseen).sum(1, keepdims=True)
    unseen_sum = np.clip(unseen_sum, lo * n_unseen, hi * n_unseen)
    score = (obs_sum[:, None] + unseen_sum) / n_t  # (S, D)
    # Mean and sd of the mixture in closed form; the interval from the draws.
    s_mean = (obs_sum + np.sum(post_np * m_np, 1)) / n_t
    second = np.sum(post_np * (v_np + m_np ** 2), 1)
    s_sd = np.sqrt(np.maximum(second - np.sum(post_np * m_np, 1) ** 2, 0.0)) / n_t
    score = s_mean[:, None] + scale * (score - s_mean[:, None])
    s_sd = scale * s_sd
    n_obs = (seen & tmask[None]).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        obs_mean = np.where(n_obs > 0, obs_sum / np.maximum(n_obs, 1), np.nan)
    return pd.DataFrame({
        "ability": mean, "ability_sd": sd, "ability_lo": q[:, 0], "ability_hi": q[:, 1],
        "score": s_mean, "score_sd": s_sd,
        "score_lo": np.quantile(score, lo_q, axis=1),
        "score_hi": np.quantile(score, hi_q, axis=1),
        "observed_mean": obs_mean, "n_observed": n_obs, "n_target": n_t,
    }, index=responses.subjects)
