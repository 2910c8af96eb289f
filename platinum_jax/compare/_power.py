"""Power, minimum detectable effect and the items a difference needs.

For two models answering the same N items with accuracies ``p_A``, ``p_B`` and correlation ρ
between their item scores, the per-item difference has variance

    σ_d² = p_A(1 - p_A) + p_B(1 - p_B) - 2ρ √(p_A(1 - p_A) p_B(1 - p_B))

(ρ = 0 is the unpaired case).  A two-sided test at level α has power ``1 - β`` against a true
difference δ when ``δ ≥ (z_{1-α/2} + z_{1-β}) σ_d / √N``; that bound is the minimum detectable
effect (MDE; for a reduced benchmark, Yauney et al.'s minimum detectable ability difference,
MDAD), and ``N = ((z_{1-α/2} + z_{1-β}) σ_d / δ)²`` items detect δ.  With data, σ_d is the
observed standard deviation of the paired differences, which is the formula above with the
sample variances and the sample correlation (and works for scores that are not 0/1).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special

from ._data import CompareInputError, as_compare_data, model_positions, require_two_models
from ._intervals import cell_moments, strata

__all__ = ["difference_sd", "minimum_detectable_effect", "items_needed", "mdad"]


def _check(alpha, power):
    if not 0 < alpha < 1:
        raise CompareInputError(f"alpha={alpha!r}: pass a significance level in (0, 1)")
    if not 0 < power < 1:
        raise CompareInputError(f"power={power!r}: pass a power in (0, 1), e.g. 0.8")
    return special.ndtri(1 - alpha / 2) + special.ndtri(power)


def difference_sd(p_a, p_b, rho=0.0):
    """σ_d of one item's score difference for 0/1 scores (arrays broadcast)."""
    p_a, p_b, rho = (np.asarray(x, float) for x in (p_a, p_b, rho))
    if np.any((p_a < 0) | (p_a > 1) | (p_b < 0) | (p_b > 1)):
        raise CompareInputError("accuracies must lie in [0, 1]")
    if np.any(np.abs(rho) > 1):
        raise CompareInputError("rho must lie in [-1, 1] (the correlation of the two models' "
                                "item scores; 0 for unpaired)")
    va, vb = p_a * (1 - p_a), p_b * (1 - p_b)
    return np.sqrt(np.maximum(va + vb - 2 * rho * np.sqrt(va * vb), 0.0))


def minimum_detectable_effect(n, p_a, p_b=None, rho=0.0, *, alpha=0.05, power=0.8):
    """Smallest accuracy difference a two-sided test at ``alpha`` detects with ``power`` on
    ``n`` shared items (``p_b`` defaults to ``p_a``: the MDE around a common accuracy)."""
    z = _check(alpha, power)
    n = np.asarray(n, float)
    if np.any(n < 2):
        raise CompareInputError("n must be at least 2 items")
    return z * difference_sd(p_a, p_a if p_b is None else p_b, rho) / np.sqrt(n)


def items_needed(delta, p_a, p_b=None, rho=0.0, *, alpha=0.05, power=0.8):
    """Items needed to detect a difference ``delta`` (rounded up)."""
    z = _check(alpha, power)
    delta = np.asarray(delta, float)
    if np.any(delta <= 0):
        raise CompareInputError("delta must be a positive accuracy difference, e.g. 0.02")
    sd = difference_sd(p_a, p_a if p_b is None else p_b, rho)
    return np.ceil((z * sd / delta) ** 2).astype(int)


def mdad(data, *, items=None, n=None, models=None, unpaired=False, alpha=0.05, power=0.8,
         trials=None, seed=0) -> pd.DataFrame:
    """Per pair and benchmark: the observed σ_d, ρ and the MDE on the shared items, on a subset.

    Args:
        items: evaluate on these item ids only (a reduced benchmark, e.g. from ``subset``).
        n: or a random subset of ``n`` items per benchmark (drawn with ``seed``); the MDE uses
            σ_d estimated on the subset's shared items.
        models: these subjects only, paired in the order given (the pairs and orientation of
            :func:`compare_pairs` with the same ``models``); default every subject.
        unpaired: a pair sharing fewer than two items gets the unpaired MDE from each model's
            own items, ``z sqrt(s_a^2 / N_a + s_b^2 / N_b)`` (``design`` "unpaired"; its
            ``sd_diff`` is that standard error of the difference, ``rho`` NaN), instead of
            being left out.
    Returns:
        One row per (group, a, b): ``design``, ``n_shared``, ``accuracy_a``, ``accuracy_b``,
        ``rho``, ``sd_diff``, ``observed_diff``, ``mde``, ``mde_unpaired`` (ρ set to 0) and
        ``detectable`` (|observed difference| >= MDE). Where the differences have no spread
        (``sd_diff`` 0: the two models score alike item by item, or differ by the same amount
        on every item) the MDE is undefined (NaN) and ``detectable`` is whether the observed
        difference is non-zero.
    """
    data = as_compare_data(data, trials=trials)
    require_two_models(data)
    z = _check(alpha, power)
    keep = np.ones(len(data.items), bool)
    if items is not None:
        items = [str(i) for i in items]
        unknown = [i for i in items if i not in data.items]
        if unknown:
            raise CompareInputError(f"{len(unknown)} subset item(s) are not in {data.source}, "
                                    f"e.g. {unknown[:3]}; pass item ids of the table")
        keep = data.items.isin(items)
    idx = model_positions(data, models)
    rng = np.random.default_rng(seed)
    rows = []
    for label, cols in strata(data, overall=False):
        cols = cols[keep[cols]]
        if n is not None:
            if n > len(cols):
                raise CompareInputError(f"n={n} but {label!r} has {len(cols)} items")
            cols = np.sort(rng.choice(cols, size=n, replace=False))
        answered = [i for i in idx if (data.n[i, cols] > 0).any()]
        if len(answered) < 2:
            continue
        pa, pb = (np.asarray(x) for x in zip(*combinations(answered, 2), strict=True))
        ma, mb = data.n[pa][:, cols] > 0, data.n[pb][:, cols] > 0
        both = ma & mb
        N = both.sum(1)
        ok = N >= 2
        if unpaired:
            rows.append(_unpaired_rows(data, label, cols, pa[~ok], pb[~ok], z))
        pa, pb, both, N = pa[ok], pb[ok], both[ok], N[ok].astype(float)
        ya = np.where(both, data.y[pa][:, cols], 0.0)
        yb = np.where(both, data.y[pb][:, cols], 0.0)
        mean_a, mean_b = ya.sum(1) / N, yb.sum(1) / N
        ea = np.where(both, ya - mean_a[:, None], 0.0)
        eb = np.where(both, yb - mean_b[:, None], 0.0)
        va, vb = (ea ** 2).sum(1) / (N - 1), (eb ** 2).sum(1) / (N - 1)
        cov = (ea * eb).sum(1) / (N - 1)
        sd = np.sqrt(np.maximum(va + vb - 2 * cov, 0.0))  # = sd of the paired differences
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = cov / np.sqrt(va * vb)
        rows.append(pd.DataFrame({
            "group": label, "a": data.subjects[pa], "b": data.subjects[pb], "design": "paired",
            "n_shared": N.astype(int), "accuracy_a": mean_a, "accuracy_b": mean_b, "rho": rho,
            "sd_diff": sd, "observed_diff": mean_a - mean_b, "mde": z * sd / np.sqrt(N),
            "mde_unpaired": z * np.sqrt(va + vb) / np.sqrt(N)}))
    rows = [r for r in rows if len(r)]
    if not rows:
        where = "items" if items is None and n is None else "items of the subset"
        remedy = ("pass a larger subset" if where != "items" else
                  "pass unpaired=True (--unpaired) for pairs without shared items")
        raise CompareInputError(f"{data.source}: no pair of models shares two or more {where}; "
                                f"{remedy}")
    out = pd.concat(rows, ignore_index=True)
    flat = ~(out["sd_diff"] > 0)
    out.loc[flat, "mde"] = np.nan
    out["detectable"] = np.where(flat, out["observed_diff"] != 0,
                                 out["observed_diff"].abs() >= out["mde"])
    return out.set_index(["group", "a", "b"])


def _unpaired_rows(data, label, cols, pa, pb, z) -> pd.DataFrame:
    """The pairs sharing fewer than two items: each model's mean and the variance of that mean
    on its own items of ``cols`` (:func:`cell_moments`, as the unpaired test of
    :func:`compare_pairs` takes them), the MDE of a difference of two independent means."""
    own = cell_moments(data.y[:, cols], data.n[:, cols])
    mean = own["mean"]
    sd = np.sqrt(own["var_iid"][pa] + own["var_iid"][pb])
    return pd.DataFrame({
        "group": label, "a": data.subjects[pa], "b": data.subjects[pb], "design": "unpaired",
        "n_shared": np.zeros(len(pa), int), "accuracy_a": mean[pa], "accuracy_b": mean[pb],
        "rho": np.nan, "sd_diff": sd, "observed_diff": mean[pa] - mean[pb], "mde": z * sd,
        "mde_unpaired": z * sd})
