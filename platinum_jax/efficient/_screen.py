"""Item screening before a subset is chosen: items that measure nothing, or the wrong thing.

:func:`screen_items` checks every item of a fitted bank against the fit's own responses and
lists, with a reason, those a subset should not rely on:

* ``negative discrimination``: the item's expected response *falls* with the ability. With
  ``w_g`` the population weights on the grid (a normal at the fitted abilities' mean and sd),
  the discrimination is the population-averaged slope ``d_i = sum_g w_g d mu_i(theta_g)/d theta``
  (in response units per ability unit, so 1PL-4PL and Rosetta items compare). Models that
  keep slopes positive (the 2PL fits ``log a``) fit a reversed item as a flat one, which the
  next rule and the item-rest correlation catch;
* ``near-zero discrimination``: ``0 <= d_i < min_discrimination * median_j |d_j|``;
* ``solved by none`` / ``solved by all``: every response on the item is 0 / full marks;
* ``negative item-rest correlation``: the point-biserial correlation of the item's responses
  with each subject's mean response on the *other* items is below 0 (the strong subjects fail
  it): the usual signature of a wrong reference answer;
* ``misfit``: the item's outfit or infit mean square exceeds ``max_misfit``. With residuals
  ``e = y - mu`` at the fit and ``v = phi Var(y | mu)`` (the bank's over-dispersion included),
  ``outfit_i = mean(e^2 / v)`` and ``infit_i = sum e^2 / sum v`` over the item's responses;
  both are 1 in expectation when the item behaves as the model says.

The checks that read responses need the fit's data: a bank read from parameters only
(``load_fit`` without data) gets NaN there and is screened on discrimination alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._bank import ItemBank, _unit_variance
from ._select import population_weights

__all__ = ["screen_items"]


def _item_rest_correlation(subject, item, y, n_items) -> np.ndarray:
    """Pearson correlation, per item, of its responses with the subjects' mean response on
    their other items (NaN where it is undefined: constant responses or rest scores)."""
    s_sum = np.bincount(subject, weights=y)
    s_cnt = np.bincount(subject)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (s_sum[subject] - y) / (s_cnt[subject] - 1)
    ok = np.isfinite(rest)
    frame = pd.DataFrame({"item": item[ok], "y": y[ok], "rest": rest[ok]})
    r = frame.groupby("item")[["y", "rest"]].corr().xs("y", level=1)["rest"]
    return r.reindex(range(n_items)).to_numpy()


def screen_items(
    bank: ItemBank,
    *,
    min_discrimination: float = 0.1,
    max_misfit: float = 2.0,
) -> pd.DataFrame:
    """Screen every item of ``bank`` (module docstring for the rules).

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`); its fit's responses
            feed the response checks.
        min_discrimination: share of the median absolute discrimination below which a
            non-negative discrimination counts as near zero (default 0.1).
        max_misfit: largest acceptable infit / outfit mean square (default 2.0).

    Returns:
        One row per item (index ``item``): ``discrimination``, ``n_responses``,
        ``share_solved`` (share of responses at full marks), ``share_failed`` (at 0),
        ``item_rest_r``, ``infit``, ``outfit``, ``flagged`` (bool) and ``reason`` (the rules
        it broke, joined by ``"; "``, empty when none).
    """
    if not (np.isfinite(min_discrimination) and 0 <= min_discrimination < 1):
        raise ValueError(f"min_discrimination must lie in [0, 1) (got {min_discrimination})")
    if not (np.isfinite(max_misfit) and max_misfit > 1):
        raise ValueError(f"max_misfit must be a number above 1 (got {max_misfit}); 1 is what a "
                         "well-fitting item scores on average")
    disc = np.asarray(population_weights(bank) @ bank.slope, np.float64)
    n = bank.n_items
    scale = np.median(np.abs(disc))
    out = pd.DataFrame({"discrimination": disc}, index=pd.Index(bank.items, name="item"))
    reasons = [[] for _ in range(n)]
    for i in np.flatnonzero(disc < 0):
        reasons[i].append(f"negative discrimination ({disc[i]:.3g})")
    for i in np.flatnonzero((disc >= 0) & (disc < min_discrimination * scale)):
        reasons[i].append(f"near-zero discrimination ({disc[i]:.3g} < {min_discrimination:g} x "
                          f"median {scale:.3g})")
    fit = bank.fit
    if fit.diagnostics.get("placeholder_table"):
        for col in ("n_responses", "share_solved", "share_failed", "item_rest_r", "infit",
                    "outfit"):
            out[col] = np.nan
    else:
        t = fit.table
        y = np.asarray(t.response, np.float64)
        trials = np.ones(t.n_responses) if t.trials is None else np.asarray(t.trials, float)
        count = np.bincount(t.item_index, minlength=n)
        solved = np.bincount(t.item_index, weights=y >= 1, minlength=n) / count
        failed = np.bincount(t.item_index, weights=y <= 0, minlength=n) / count
        mu = np.asarray(fit.predict(), np.float64)
        var = bank.dispersion * np.asarray(_unit_variance(fit, mu, trials, t.item_index),
                                           np.float64)
        e2 = (y - mu) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            outfit = np.bincount(t.item_index, weights=np.where(var > 0, e2 / var, 0.0),
                                 minlength=n) / np.bincount(t.item_index, weights=var > 0,
                                                            minlength=n)
            infit = (np.bincount(t.item_index, weights=e2, minlength=n)
                     / np.bincount(t.item_index, weights=var, minlength=n))
        r = _item_rest_correlation(t.subject_index, t.item_index, y, n)
        out["n_responses"], out["share_solved"], out["share_failed"] = count, solved, failed
        out["item_rest_r"], out["infit"], out["outfit"] = r, infit, outfit
        for i in np.flatnonzero(failed == 1):
            reasons[i].append("solved by none")
        for i in np.flatnonzero(solved == 1):
            reasons[i].append("solved by all")
        for i in np.flatnonzero(r < 0):
            reasons[i].append(f"negative item-rest correlation ({r[i]:.2f})")
        worst = np.fmax(infit, outfit)
        for i in np.flatnonzero(worst > max_misfit):
            reasons[i].append(f"misfit (infit {infit[i]:.2f}, outfit {outfit[i]:.2f} > "
                              f"{max_misfit:g})")
    out["reason"] = ["; ".join(r) for r in reasons]
    out["flagged"] = out["reason"] != ""
    return out
