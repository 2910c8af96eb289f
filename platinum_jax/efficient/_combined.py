"""The shrunk difference estimate: item-model prediction, observed items and design in one score.

Two estimates of a new AI model's full-benchmark score sit at the ends of one line. The
item-model estimate (:func:`~platinum_jax.efficient.estimate_scores`) counts the observed items
as they are and predicts the rest from the ability: precise, but biased when the new model
departs from the item profile the older models taught the fit. The difference estimate
(:func:`~platinum_jax.efficient.assisted_scores`) adds the mean residual of the observed items:
unbiased over random subsets, but it carries the residuals' sampling noise. Which is better
depends on how far new models stray from the item model, against how noisy their residuals
are, and an empirical-Bayes weight settles it per model.

For subject ``s`` with observed target items ``S`` (``k`` of the ``N`` target items, design
weights ``w_i`` summing to 1; equal weights for adaptive tests), posterior-mean predictions
``mu_i`` from the ability posterior given ``S`` and residuals ``e_i = y_i - mu_i``:

    P     = (sum_{i in S} y_i + sum_{i in T \\ S} mu_i) / N          (the item-model estimate)
    e_bar = sum_{i in S} w_i e_i,   v = k / (k - 1) sum_{i in S} w_i^2 (e_i - e_bar)^2
    B ~ Normal(0, tau^2)    the subject's bias: the mean residual of its unseen items
    e_bar | B ~ Normal(B, v)   =>   E[B | e_bar] = lambda e_bar,  lambda = tau^2 / (tau^2 + v)
    A_hat = P + (1 - k/N) lambda e_bar
    Var   = (1 - k/N)^2 (lambda v + s_e^2 / (N - k))

with ``s_e^2`` the sample variance of the residuals (the unseen items' own noise around their
bias). ``tau = 0`` gives the item-model estimate, ``tau = inf`` the difference estimate of a
simple random sample (its variance, finite-population correction included, is the ``lambda =
1`` case). ``tau`` (``bias_sd``) is the spread of new models' bias, which the item model
cannot know: :func:`fit_bias_sd` chooses it by cross-validation on calibration models (the
training models held out of refitted banks), the one honest source, and calibrates the
interval's width there too (the split-conformal factor of
:func:`~platinum_jax.efficient.interval_scale`). Because the weight is model-based, any design
works (Fisher and anchor subsets, adaptive tests); their intervals rest on that calibration.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from platinum_jax.data import ResponseTable

from ._bank import ItemBank, response_range
from ._estimate import dense_responses, grid_posterior

__all__ = ["combined_scores"]


def _target_mask(bank: ItemBank, target) -> np.ndarray:
    tmask = np.ones(bank.n_items, bool)
    if target is not None:
        tmask = np.zeros(bank.n_items, bool)
        tmask[bank.position(target)] = True
    return tmask


def _observed(bank: ItemBank, responses: ResponseTable, subset):
    """Dense responses and the design: ``(y, trials, used (S, N), weights (S, N))``."""
    y, tr, seen = dense_responses(bank, responses)
    if subset is None:  # every answered item, equal weights (adaptive tests)
        used = seen
        weights = used / np.maximum(used.sum(1, keepdims=True), 1)
    else:
        if not isinstance(subset, pd.DataFrame) or "weight" not in subset.columns:
            raise ValueError("subset must be the frame of select_items (index item, column "
                             "weight), or None to use every item each subject answered")
        pos = bank.position(subset.index)
        if len(np.unique(pos)) != len(pos):
            raise ValueError("subset lists an item twice")
        w = subset["weight"].to_numpy(np.float64)
        if not (np.isfinite(w) & (w > 0)).all():
            raise ValueError("subset weights must be positive and finite")
        missing = ~seen[:, pos]
        if missing.any():
            s, i = np.argwhere(missing)[0]
            raise ValueError(
                f"subject {responses.subjects[s]!r} has no response to subset item "
                f"{bank.items[pos[i]]!r} ({int(missing.sum())} missing in all); give every "
                "subject's responses to every subset item, or pass subset=None to weigh each "
                "subject's answered items equally")
        used = np.zeros_like(seen)
        used[:, pos] = True
        weights = np.zeros(seen.shape)
        weights[:, pos] = w
    return y, tr, used, weights


def _pieces(bank: ItemBank, y, tr, used, weights, tmask):
    """Per subject: the item-model estimate ``P``, ``e_bar``, ``v``, ``s_e^2``, ``k/N`` and
    the posterior-mean ability (arrays ``(S,)``)."""
    post = np.asarray(grid_posterior(bank, y, tr, used), np.float64)
    mu = post @ np.asarray(bank.mean, np.float64)  # (S, N)
    obs = used & tmask[None]
    k = obs.sum(1)
    if (k < 2).any():
        s = int(np.argmax(k < 2))
        raise ValueError(f"subject number {s} answered {int(k[s])} target item(s); the "
                         "estimate needs at least 2")
    n_t = int(tmask.sum())
    w = np.where(obs, weights, 0.0)
    w = w / w.sum(1, keepdims=True)
    e = np.where(obs, y - mu, 0.0)
    e_bar = (w * e).sum(1)
    v = k / (k - 1) * (w ** 2 * np.where(obs, (e - e_bar[:, None]) ** 2, 0.0)).sum(1)
    s2 = np.where(obs, (e - e.sum(1, keepdims=True) / k[:, None]) ** 2, 0.0).sum(1) / (k - 1)
    p = (np.where(obs, y, 0.0).sum(1) + np.where(tmask[None] & ~used, mu, 0.0).sum(1)) / n_t
    return dict(p=p, e_bar=e_bar, v=v, s2=s2, frac=k / n_t, n_unseen=n_t - k,
                ability=post @ np.asarray(bank.grid, np.float64), k=k, n_t=n_t)


def _combine(pc: dict, bias_sd: float):
    """``(estimate, se, lambda)`` of the module docstring for one ``tau``."""
    if np.isinf(bias_sd):
        lam = np.ones_like(pc["v"])
    else:
        tau2 = bias_sd ** 2
        lam = tau2 / np.maximum(tau2 + pc["v"], 1e-300)
    rest = 1.0 - pc["frac"]
    est = pc["p"] + rest * lam * pc["e_bar"]
    var = rest ** 2 * (lam * pc["v"] + pc["s2"] / np.maximum(pc["n_unseen"], 1))
    return est, np.sqrt(var), lam


def combined_scores(
    bank: ItemBank,
    responses: ResponseTable,
    subset: pd.DataFrame | None = None,
    *,
    bias_sd: float,
    target=None,
    interval: float = 0.9,
    scale: float = 1.0,
    fixed_sd: float | None = None,
) -> pd.DataFrame:
    """Shrunk difference estimate of each subject's full-benchmark score (module docstring).

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`).
        responses: the subjects' responses.
        subset: the items chosen (:func:`~platinum_jax.efficient.select_items`; every
            subject must have answered each), or None: each subject's answered items with
            equal weights (an adaptive test's items).
        bias_sd: ``tau``, the spread of new models' mean residual (``0``: the item-model
            estimate; ``inf``: the difference estimate), usually from :func:`fit_bias_sd`.
        target: items whose mean response is the score (default all).
        interval: probability of the normal interval ``A_hat +- z sd``.
        scale: factor on the sd (the calibrated ``scale`` of :func:`fit_bias_sd`).
        fixed_sd: one sd for every subject instead of ``scale`` times its own (the absolute
            form of :func:`fit_bias_sd`, ``fixed_sd`` of its result); pass
            ``**bias_fit.options`` to apply whichever form the calibration chose.

    A subject that answered every target item gets its mean response as the score, exactly:
    sd 0 and an interval of width 0, whatever ``bias_sd``, ``scale`` and ``fixed_sd``.

    Returns:
        One row per subject: ``ability``, ``score``, ``score_se``, ``score_lo``, ``score_hi``,
        ``predicted`` (``P``), ``residual`` (``e_bar``), ``shrinkage`` (``lambda``),
        ``n_observed`` and ``n_target``.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1 (got {interval})")
    if not (bias_sd >= 0):
        raise ValueError(f"bias_sd must be >= 0 (got {bias_sd}); take it from fit_bias_sd")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number (got {scale})")
    if fixed_sd is not None and not (np.isfinite(fixed_sd) and fixed_sd > 0):
        raise ValueError(f"fixed_sd must be a positive number or None (got {fixed_sd}); "
                         "take it from fit_bias_sd(...).options")
    tmask = _target_mask(bank, target)
    y, tr, used, weights = _observed(bank, responses, subset)
    pc = _pieces(bank, y, tr, used, weights, tmask)
    est, se, lam = _combine(pc, float(bias_sd))
    lo, hi = response_range(bank.fit.model)
    est = np.clip(est, lo, hi)
    sd = scale * se if fixed_sd is None else np.full_like(se, float(fixed_sd))
    # A subject that answered every target item has its exact score: nothing to widen.
    sd = np.where(pc["n_unseen"] == 0, 0.0, sd)
    half = norm.ppf(0.5 + interval / 2) * sd
    return pd.DataFrame({
        "ability": pc["ability"], "score": est, "score_se": sd,
        "score_lo": np.maximum(est - half, lo), "score_hi": np.minimum(est + half, hi),
        "predicted": pc["p"], "residual": pc["e_bar"], "shrinkage": lam,
        "n_observed": pc["k"], "n_target": pc["n_t"],
    }, index=pd.Index(responses.subjects, name="subject"))
