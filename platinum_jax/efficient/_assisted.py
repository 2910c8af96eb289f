"""Model-assisted (difference) estimate of a full-benchmark score from a random item subset.

The plain item-model estimate of :func:`~platinum_jax.efficient.estimate_scores` predicts the
unseen items from the ability alone. When a new AI model departs from the item profile the
older models taught the fit (it solves some kinds of problem more or less often than its
ability predicts), that prediction is biased, and the bias does not shrink as more items are
seen: on LiveCodeBench the plain mean of a random subset beats it at k = 100. The survey
sampler's difference estimator keeps the item model as a *control variate* and lets the
observed items correct it.

For subject ``s`` and target set ``T`` (``N`` items) let ``mu_i`` be the posterior-mean
prediction of item ``i`` given the subset responses, ``mu_i = sum_g p(theta_g | y) mu_i(theta_g)``,
and ``e_i = y_i - mu_i`` the residual of an observed item. With the subset ``S`` drawn at random
(within strata ``h`` of ``N_h`` items, ``n_h`` drawn; ``W_h = N_h / N``; the design weights
``w_i = W_h / n_h`` of :func:`~platinum_jax.efficient.select_items`):

    A_hat = (1/N) sum_{i in T} mu_i  +  sum_{i in S} w_i e_i
    Var   = sum_h W_h^2 (1 - n_h / N_h) s_h^2 / n_h,      s_h^2 the sample variance of e in h.

The first term is the item model's full-benchmark prediction, the second the design-weighted
mean residual that removes its bias: over random subsets ``A_hat`` is unbiased for the
subject's true mean over ``T`` whatever the item model gets wrong (up to the small dependence
of ``mu`` on the subset through the ability), and its variance is that of the residuals rather
than of the responses, so a good item model makes it more precise than the plain mean of the
subset. ``(1 - n_h / N_h)`` is the finite-population correction: the truth is the mean over
*these* ``N`` items, so a subset of all of them has no error. The interval is
``A_hat +- t_{k-1} sqrt(Var)``; with a stratum of fewer than two items the strata are pooled into
one (the simple-random-sampling formula, conservative for proportional allocation).

The interval is a *design-based* statement: it holds for subsets drawn at random (``"random"``,
``"stratified"``). Subsets chosen deterministically (``"fisher"``) or one item per cluster
(``"anchor"``) are not probability samples: a subset whose ``method`` column names one of them
is refused. The estimate and its interval are projected onto the range of the score (``[0, 1]``
for fractions), which holds the truth by definition: the projection never moves the estimate
away from the truth, though it gives up exact unbiasedness at the edges.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from platinum_jax.data import ResponseTable

from ._bank import ItemBank, response_range
from ._estimate import dense_responses, grid_posterior

__all__ = ["assisted_scores", "PROBABILITY_SAMPLES"]

# Selection methods whose subsets are drawn at random (known inclusion probabilities).
PROBABILITY_SAMPLES = ("random", "stratified")


def _design(subset: pd.DataFrame, bank: ItemBank, tmask: np.ndarray):
    """Positions, design weights and strata of the subset's target items (validated)."""
    if not isinstance(subset, pd.DataFrame) or "weight" not in subset.columns:
        raise ValueError("subset must be the frame of select_items (index item, column weight, "
                         "optionally group)")
    if "method" in subset.columns:
        methods = sorted(set(subset["method"].astype(str)))
        if methods != [m for m in methods if m in PROBABILITY_SAMPLES]:
            raise ValueError(
                f"the subset was chosen by {', '.join(methods)}, which is not a probability "
                f"sample; the design-based interval needs items drawn at random (select_items "
                f"method {' or '.join(PROBABILITY_SAMPLES)}); score this subset with the item "
                "model alone (estimate_scores, or `platinum-jax score` without --subset)")
    pos = bank.position(subset.index)
    if len(np.unique(pos)) != len(pos):
        raise ValueError("subset lists an item twice; a sample holds each item once")
    w = subset["weight"].to_numpy(np.float64)
    if not (np.isfinite(w) & (w > 0)).all():
        raise ValueError("subset weights must be positive and finite")
    group = (subset["group"].to_numpy() if "group" in subset.columns
             else np.full(len(subset), -1))
    keep = tmask[pos]
    if keep.sum() < 2:
        raise ValueError(f"the subset holds {int(keep.sum())} item(s) of the target; the "
                         "estimate needs at least 2")
    pos, w, group = pos[keep], w[keep], group[keep]
    return pos, w / w.sum(), group


def _strata(w: np.ndarray, group: np.ndarray, n_target: int):
    """``(labels, W_h, n_h, N_h)``; strata pooled into one when any has fewer than 2 items."""
    labels, inverse, n_h = np.unique(group, return_inverse=True, return_counts=True)
    if (n_h < 2).any() or len(labels) == 1:
        return np.zeros(len(w), int), np.array([1.0]), np.array([len(w)]), np.array([n_target])
    big_w = np.bincount(inverse, weights=w)
    big_n = np.maximum(np.rint(big_w * n_target), n_h)
    return inverse, big_w, n_h, big_n


def assisted_scores(
    bank: ItemBank,
    responses: ResponseTable,
    subset: pd.DataFrame,
    *,
    target=None,
    interval: float = 0.9,
) -> pd.DataFrame:
    """Model-assisted full-benchmark score of each subject with a design-based interval.

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`).
        responses: the subjects' responses; every subject must have answered every item of
            ``subset`` (further responses are ignored).
        subset: the items drawn, as returned by :func:`~platinum_jax.efficient.select_items`
            (``weight``: design weight; ``group``: stratum, -1 for none).
        target: the items whose mean response is the full-benchmark score (default: all).
        interval: probability of the interval (default 0.9).

    Returns:
        One row per subject: ``ability`` (posterior mean from the subset), ``score`` (the
        difference estimate), ``score_se``, ``score_lo``, ``score_hi``, ``predicted`` (the item
        model's mean prediction over the target), ``residual`` (the weighted mean residual
        that corrects it), ``n_observed`` and ``n_target``.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1 (got {interval})")
    tmask = np.ones(bank.n_items, bool)
    if target is not None:
        tmask = np.zeros(bank.n_items, bool)
        tmask[bank.position(target)] = True
    n_t = int(tmask.sum())
    pos, w, group = _design(subset, bank, tmask)
    y, tr, seen = dense_responses(bank, responses)
    missing = ~seen[:, pos]
    if missing.any():
        s, i = np.argwhere(missing)[0]
        raise ValueError(
            f"subject {responses.subjects[s]!r} has no response to subset item "
            f"{bank.items[pos[i]]!r} ({int(missing.sum())} missing in all); the design-based "
            "estimate needs every drawn item answered: score that subject with the item model "
            "alone (estimate_scores; `platinum-jax score` without --subset)"
        )
    only = np.zeros_like(seen)
    only[:, pos] = True  # the ability comes from the drawn items, as the design assumes
    post = np.asarray(grid_posterior(bank, y, tr, only), np.float64)
    grid = np.asarray(bank.grid, np.float64)
    mu = post @ np.asarray(bank.mean, np.float64)  # (S, N) posterior-mean predictions
    predicted = mu[:, tmask].mean(axis=1)
    resid = y[:, pos] - mu[:, pos]  # (S, k)
    correction = resid @ w
    labels, big_w, n_h, big_n = _strata(w, group, n_t)
    var = np.zeros(len(y))
    for h in range(len(big_w)):
        r = resid[:, labels == h]
        var += big_w[h] ** 2 * (1 - n_h[h] / big_n[h]) * r.var(axis=1, ddof=1) / n_h[h]
    se = np.sqrt(var)
    q = stats.t.ppf(0.5 + interval / 2, len(pos) - 1)
    lo, hi = response_range(bank.fit.model)
    score = np.clip(predicted + correction, lo, hi)
    return pd.DataFrame({
        "ability": post @ grid, "score": score, "score_se": se,
        "score_lo": np.maximum(score - q * se, lo), "score_hi": np.minimum(score + q * se, hi),
        "predicted": predicted, "residual": correction,
        "n_observed": len(pos), "n_target": n_t,
    }, index=pd.Index(responses.subjects, name="subject"))
