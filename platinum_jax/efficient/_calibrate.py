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

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit_map

from ._adaptive import AdaptiveTest, _with, simulate_adaptive
from ._bank import item_bank
from ._combined import _combine, _observed, _pieces, _target_mask
from ._estimate import estimate_scores
from ._select import select_items

__all__ = ["cross_fitted_banks", "interval_scale", "fit_bias_sd", "BiasFit"]


def cross_fitted_banks(
    model,
    table: ResponseTable,
    *,
    folds: int = 5,
    dispersion: float | str = "pearson",
    groups: pd.Series | None = None,
    seed: int = 0,
) -> list[tuple]:
    """``folds`` item banks, each fitted without one fold of the subjects that answered every
    item, with that fold's responses: ``[(bank, held-out frame), ...]``.

    ``groups`` (a Series indexed by subject: family, release period, ...) keeps each group's
    subjects in one fold, so that the calibration models differ from their bank's models as
    much as new models will differ from the training ones (a split by family or by date is
    then mimicked inside the training data). Groups go to folds in a seeded random order,
    each to the fold with the fewest subjects so far."""
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
    if groups is None:
        fold_of[np.flatnonzero(complete)] = rng.permutation(np.arange(complete.sum()) % folds)
    else:
        label = pd.Series(groups).reindex(table.subjects)
        if label.isna().any():
            missing = list(table.subjects[label.isna().to_numpy()][:5])
            raise ValueError(f"groups lacks {int(label.isna().sum())} subject(s), e.g. "
                             f"{missing}; give every subject its group")
        names = rng.permutation(np.unique(label.to_numpy()[complete].astype(str)))
        if len(names) < folds:
            raise ValueError(f"groups has {len(names)} group(s) among the complete subjects, "
                             f"fewer than folds={folds}; use fewer folds or finer groups")
        size = np.zeros(folds)
        lab = label.to_numpy().astype(str)
        for g in names:
            members = complete & (lab == g)
            f = int(np.argmin(size))
            fold_of[members] = f
            size[f] += members.sum()
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
            bank with budget ``k`` (each fold's models tested as new test-takers are, the hard
            cap ``max_exposure`` left out: it counts a population's tests, not one
            taker's); the adaptive tests' scores are those of
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
        asked, _ = _calibration_subset(bank, test, k, method, seed + f)
        est = estimate_scores(bank, asked, interval=interval, seed=seed + f)
        truth = test.groupby("subject").response.mean().reindex(est.index)
        z.append(((truth - est.score) / est.score_sd).to_numpy())
    z = np.concatenate(z)
    return float(np.quantile(np.abs(z), interval) / norm.ppf(0.5 + interval / 2)), z


def _calibration_subset(bank, test, k: int, method, seed: int):
    """The calibration fold's responses on the items ``method`` gives it, and the subset
    frame (None for adaptive tests, whose items differ per subject)."""
    if isinstance(method, AdaptiveTest) or method == "cat":
        # The fold's models are tested as new test-takers are, one by one with the
        # Sympson-Hetter lottery: the hard cap counts tests over a population simulated
        # together, which a fold of a few models is not (a 10% cap would let each item go to
        # one of ten models, and refuse longer tests)
        rules = (AdaptiveTest(bank, budget=k) if isinstance(method, str)
                 else _with(method, bank=bank, budget=k, max_exposure=None))
        run = simulate_adaptive(rules, ResponseTable.from_frame(test, name="a calibration "
                                                                "fold"), seed=seed)
        asked = test.merge(run.trace[["subject", "item"]], on=["subject", "item"])
        return ResponseTable.from_frame(asked, name="the items asked"), None
    chosen = select_items(bank, k, method, seed=seed)
    return ResponseTable.from_frame(test[test.item.isin(chosen.index)],
                                    name="a calibration fold"), chosen


@dataclass(frozen=True)
class BiasFit:
    """Outcome of :func:`fit_bias_sd`.

    Attributes:
        bias_sd: the ``tau`` of least cross-validated mean absolute error.
        scale: the factor on each subject's sd that gives the requested coverage on the
            calibration models (studentised form).
        cv: mean absolute error on the calibration models for every ``tau`` tried.
        z: the standardised errors ``(truth - estimate) / sd`` at ``bias_sd``.
        form: ``"studentised"`` (interval ``+- q |z| sd_s``, a width per subject) or
            ``"absolute"`` (one width for every subject, ``+- q |truth - estimate|``), the
            one whose coverage held better on each calibration fold left out in turn.
        fixed_sd: the absolute form's width as an sd (its quantile over
            ``Phi^-1((1 + interval) / 2)``); NaN for the studentised form.
        fold_coverage: coverage of each form on each calibration fold, calibrated on the
            other folds (rows: folds; columns: the two forms); None with one fold.
        interval: the interval probability calibrated.
        coverage: the chosen form's cross-conformal coverage: the share of calibration
            models whose interval, calibrated on the other folds, holds their score (the
            calibration's own estimate of its coverage on new groups); NaN with one fold.
    """

    bias_sd: float
    scale: float
    cv: pd.Series
    z: np.ndarray
    form: str = "studentised"
    fixed_sd: float = float("nan")
    fold_coverage: pd.DataFrame | None = None
    interval: float = 0.9
    coverage: float = float("nan")

    @property
    def options(self) -> dict:
        """Keyword arguments of :func:`~platinum_jax.efficient.combined_scores` that apply
        this calibration: ``bias_sd``, ``scale`` and ``fixed_sd`` (None when studentised)."""
        return dict(bias_sd=self.bias_sd, scale=self.scale,
                    fixed_sd=None if self.form == "studentised" else self.fixed_sd)


def _conformal_quantile(x: np.ndarray, level: float) -> float:
    """Split-conformal quantile of ``x`` (>= 0): its ``ceil((n + 1) level)``-th smallest value,
    the largest when that exceeds ``n`` (coverage >= ``level`` for an exchangeable new case)."""
    x = np.sort(np.asarray(x, np.float64))
    r = int(np.ceil((len(x) + 1) * level))
    return float(x[min(r, len(x)) - 1])


def _choose_form(abs_z, abs_err, se, fold, interval: float):
    """Cross-conformal choice of the interval's form. Each fold is covered by the width
    calibrated on the other folds, and its coverage is read apart for the subjects whose sd
    is below and above the median: a studentised interval whose sds mean something covers
    both halves alike, a single width over-covers the precise half and under-covers the other.
    The form whose cell coverages stray least from ``interval`` (mean absolute deviation over
    folds x halves) wins, the studentised on a tie. Returns the form, the coverage table
    (rows: folds; columns: the two forms, all subjects) and the chosen form's coverage over
    every subject."""
    cover, dev, pooled = {}, {}, {}
    folds = np.unique(fold)
    high = se > np.median(se)
    for name, x in (("studentised", abs_z), ("absolute", abs_err)):
        inside = np.zeros(len(x), bool)
        for f in folds:
            inside[fold == f] = x[fold == f] <= _conformal_quantile(x[fold != f], interval)
        cover[name] = [float(inside[fold == f].mean()) for f in folds]
        pooled[name] = float(inside.mean())
        cells = [inside[(fold == f) & (high == h)] for f in folds for h in (False, True)]
        dev[name] = np.mean([abs(c.mean() - interval) for c in cells if len(c)])
    table = pd.DataFrame(cover, index=pd.Index(folds, name="fold"))
    form = "absolute" if dev["absolute"] < dev["studentised"] else "studentised"
    return form, table, pooled[form]


def fit_bias_sd(
    banks: list[tuple],
    k: int,
    *,
    method: str | AdaptiveTest = "random",
    repeats: int = 3,
    interval: float = 0.9,
    grid=None,
    seed: int = 0,
) -> BiasFit:
    """Choose the bias spread ``tau`` of :func:`~platinum_jax.efficient.combined_scores` and
    calibrate its interval on calibration models, for one selection method and one ``k``.

    Each fold's models (held out of their bank, :func:`cross_fitted_banks`) are scored from
    ``k`` items chosen by ``method`` on that fold's bank, the same procedure that will choose
    the new models' items replayed (``repeats`` draws of the random methods and of anchor
    points, seeds ``seed + fold + folds * repeat``; adaptive tests run item by item on each
    model), for every ``tau`` of ``grid`` (default 0, 26 values from 0.001 to 0.3 on a log
    scale, and infinity), against their mean response over all items. The ``tau`` of least
    mean absolute error is kept. The interval is split-conformal on the errors at that
    ``tau``, in one of two forms: studentised (factor ``scale`` =
    ``q(|z|) / Phi^-1((1 + interval) / 2)`` on each subject's sd) or absolute (one width,
    ``q(|truth - estimate|)``, for every subject), ``q`` the conformal quantile
    (``ceil((n + 1) interval)``-th of ``n`` errors). The form is chosen by cross-conformal
    coverage: each fold is covered by the width calibrated on the other folds, read apart
    for the subjects of small and of large sd, and the form whose coverages stray least from
    ``interval`` wins (the studentised on a tie). Use
    :attr:`BiasFit.options` as the keyword arguments of ``combined_scores``.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1 (got {interval})")
    if not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"repeats must be a positive whole number (got {repeats!r})")
    if banks and k >= banks[0][0].n_items:
        raise ValueError(
            f"k = {k} asks all {banks[0][0].n_items} items, so every calibration model's score "
            "is its exact mean response (zero error whatever bias_sd), which leaves nothing to "
            "size an interval with; calibrate for a k below the number of items. A subject "
            "that answered every item needs no calibration: combined_scores gives its exact "
            "score, an interval of width 0, for any bias_sd and scale")
    taus = (np.r_[0.0, np.geomspace(1e-3, 0.3, 26), np.inf] if grid is None
            else np.asarray(grid, np.float64))
    if taus.ndim != 1 or len(taus) == 0 or np.any(~(taus >= 0)):
        raise ValueError("grid must be a non-empty list of bias spreads >= 0")
    random_design = isinstance(method, str) and method in ("random", "stratified", "anchor")
    pieces, fold = [], []
    for f, (bank, test) in enumerate(banks):
        for r in range(repeats if random_design else 1):
            asked, subset = _calibration_subset(bank, test, k, method,
                                                seed + f + len(banks) * r)
            y, tr, used, weights = _observed(bank, asked, subset)
            pc = _pieces(bank, y, tr, used, weights, _target_mask(bank, None))
            pc["truth"] = test.groupby("subject").response.mean().reindex(
                asked.subjects).to_numpy()
            pieces.append(pc)
            fold.append(np.full(len(pc["truth"]), f))
    mae = np.array([np.mean(np.concatenate([np.abs(_combine(pc, t)[0] - pc["truth"])
                                            for pc in pieces])) for t in taus])
    best = float(taus[int(np.argmin(mae))])
    err, se = [], []
    for pc in pieces:
        est, sd, _ = _combine(pc, best)
        err.append(pc["truth"] - est)
        se.append(np.maximum(sd, 1e-12))
    err, se, fold = np.concatenate(err), np.concatenate(se), np.concatenate(fold)
    z = err / se
    q_norm = norm.ppf(0.5 + interval / 2)
    scale = _conformal_quantile(np.abs(z), interval) / q_norm
    form, cover, coverage = (("studentised", None, float("nan")) if len(banks) < 2
                             else _choose_form(np.abs(z), np.abs(err), se, fold, interval))
    fixed = (_conformal_quantile(np.abs(err), interval) / q_norm if form == "absolute"
             else float("nan"))
    return BiasFit(bias_sd=best, scale=scale,
                   cv=pd.Series(mae, index=pd.Index(taus, name="bias_sd"), name="mae"), z=z,
                   form=form, fixed_sd=fixed, fold_coverage=cover, interval=interval,
                   coverage=coverage)
