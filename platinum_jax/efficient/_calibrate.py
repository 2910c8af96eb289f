"""Calibrating score intervals on held-out subjects of the training data.

The intervals of :func:`~platinum_jax.efficient.estimate_scores` hold when the item model is
right and its item parameters are exact. For new AI models neither is quite true: items are
estimated from a few dozen subjects, and a new model family can solve some problems more
often than its ability predicts. :func:`interval_scale` measures how much wider the intervals
must be, using only the training data: the subjects that answered every item are split into
``folds``; for each fold the model is refitted without it (:func:`cross_fitted_banks`), the fold's subjects are scored from ``k`` items chosen by
``method``, and the standardised errors ``z = (truth - score) / score_sd`` are collected
(truth: the subject's mean response over all items). The returned scale is
``quantile(|z|, interval) / Phi^-1((1 + interval) / 2)``: multiplying the predictive spread by
it gives the requested coverage on subjects the items were not fitted to (a split-conformal
calibration of the interval's width).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit_map

from ._adaptive import AdaptiveTest, _with, simulate_adaptive
from ._bank import item_bank
from ._estimate import estimate_scores
from ._select import select_items

__all__ = ["cross_fitted_banks", "interval_scale"]


def cross_fitted_banks(
    model,
    table: ResponseTable,
    *,
    folds: int = 5,
    dispersion: float | str = "pearson",
    seed: int = 0,
) -> list[tuple]:
    """``folds`` item banks, each fitted without one fold of the subjects that answered every
    item, with that fold's responses: ``[(bank, held-out frame), ...]``."""
    if folds < 2:
        raise ValueError(f"folds must be >= 2 (got {folds})")
    complete = np.bincount(table.subject_index, minlength=table.n_subjects) == table.n_items
    if complete.sum() < folds:
        raise ValueError(
            f"calibration scores subjects that answered every item; only {int(complete.sum())} "
            f"of {table.n_subjects} did, fewer than folds={folds}"
        )
    rng = np.random.default_rng(seed)
    fold_of = np.full(table.n_subjects, -1)
    fold_of[np.flatnonzero(complete)] = rng.permutation(np.arange(complete.sum()) % folds)
    frame = table.to_frame()
    out = []
    for f in range(folds):
        held = fold_of[table.subject_index] == f
        fit = fit_map(model, table.rows(~held))
        if not np.array_equal(fit.table.items, table.items):
            raise ValueError(f"fold {f} leaves some items without responses; use fewer folds")
        out.append((item_bank(fit, dispersion=dispersion), frame[held]))
    return out


def interval_scale(
    banks: list[tuple],
    k: int,
    *,
    method: str | AdaptiveTest = "random",
    interval: float = 0.9,
    seed: int = 0,
) -> tuple[float, np.ndarray]:
    """Scale of the score intervals that gives ``interval`` coverage on held-out subjects.

    Args:
        banks: :func:`cross_fitted_banks` of the training data.
        k, method: the subset size and selection method to calibrate for: a method of
            :func:`~platinum_jax.efficient.select_items`, ``"cat"`` (an
            :class:`~platinum_jax.efficient.AdaptiveTest` with budget ``k`` and no exposure
            control) or an :class:`~platinum_jax.efficient.AdaptiveTest` whose rules
            (randomesque, Sympson-Hetter parameters, content groups) are run on each fold's
            bank with budget ``k``; the adaptive tests' scores are those of
            :func:`~platinum_jax.efficient.estimate_scores` from the items asked.
        interval: the interval probability to calibrate.
        seed: seed of the random subsets (``seed + fold``).

    Returns:
        ``(scale, z)``: the factor and the standardised errors it came from.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1 (got {interval})")
    z = []
    for f, (bank, test) in enumerate(banks):
        if isinstance(method, AdaptiveTest) or method == "cat":
            rules = (AdaptiveTest(bank, budget=k) if isinstance(method, str)
                     else _with(method, bank=bank, budget=k))
            held = ResponseTable.from_frame(test, name="a calibration fold")
            run = simulate_adaptive(rules, held, seed=seed + f)
            asked = test.merge(run.trace[["subject", "item"]], on=["subject", "item"])
            est = estimate_scores(bank, ResponseTable.from_frame(asked, name="the items asked"),
                                  interval=interval, seed=seed + f)
        else:
            chosen = select_items(bank, k, method, seed=seed + f)
            est = estimate_scores(bank, ResponseTable.from_frame(
                test[test.item.isin(chosen.index)], name="a calibration fold"),
                interval=interval, seed=seed + f)
        truth = test.groupby("subject").response.mean().reindex(est.index)
        z.append(((truth - est.score) / est.score_sd).to_numpy())
    z = np.concatenate(z)
    return float(np.quantile(np.abs(z), interval) / norm.ppf(0.5 + interval / 2)), z
