"""Accuracy of each model per benchmark, with an interval that holds at small N.

Accuracy is the mean item score ``p̂ = (1/N) Σ_i y_i`` over the N items a model answered (an
item's score ``y_i`` is the mean of its samples, so every item counts once).  Its variance:

* independent items: ``v = Σ (y_i - p̂)² / (N (N - 1))``;
* clustered items (a ``cluster`` column; Miller, "Adding Error Bars to Evals"):
  ``v = G/(G-1) · Σ_g (Σ_{i∈g} (y_i - p̂))² / N²`` over the G clusters;
* repeated samples (``run`` or ``trials``): ``v`` splits into a within-item part
  ``v_w = Σ_i y_i(1-y_i)/(n_i-1) / N²`` (sampling noise of the n_i samples of item i, unbiased)
  and a between-item part ``v_b = v - v_w`` (the spread of the items' true accuracies).

Intervals (``method``):

* ``wilson`` -- the score interval;
* ``clopper-pearson`` -- the exact binomial interval (never below the nominal level);
* ``jeffreys`` / ``uniform`` -- equal-tailed Beta-binomial posterior intervals under a
  Beta(½, ½) or Beta(1, 1) prior, with the Jeffreys end set to 0 (1) at x = 0 (x = n);
* ``jeffreys-modified`` -- Brown, Cai and DasGupta's modified Jeffreys interval (the exact
  end at x = 0 and x = n, an open end at x = 1 and x = n - 1; see :func:`beta_interval`);
* ``clt`` -- ``p̂ ± z √v`` with the independent-items variance; ``clustered`` -- the same
  with the cluster-robust variance;
* ``bootstrap`` -- percentiles of the mean over items (or whole clusters) resampled with
  replacement.

The count-based intervals (Wilson, Clopper-Pearson, Beta) use the successes and items directly
when each item is one 0/1 sample and items are independent; otherwise they use effective counts
``n_eff = p̂(1-p̂)/v``, ``x_eff = p̂ n_eff`` (the design-effect idea of Korn and Graubard), so
clusters widen and repeats narrow them by exactly the amount the variance says; ``n_eff`` is
the number of independent units (clusters, else items) where ``v`` says nothing (``p̂`` at 0
or 1), and it shrinks by Korn and Graubard's factor ``(z / t_{U-1})²`` for a variance estimated
from U units.

The default (``method="auto"``) is chosen by the data: the modified Jeffreys interval for
scores in [0, 1] (over N in 10..1000 and accuracies 0.02..0.98 its exact coverage at 90%
nominal never falls below 88%, while CLT intervals collapse to a point at 0 or 1 and cover
18% at N = 10, p = 0.02), the bootstrap for scores outside [0, 1].  CLT intervals are never the default.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from ._data import CompareData, CompareInputError, NonBinaryScoresError, as_compare_data

__all__ = ["accuracy", "wilson_interval", "clopper_pearson_interval", "beta_interval",
           "METHODS"]

METHODS = ("auto", "jeffreys-modified", "jeffreys", "uniform", "wilson", "clopper-pearson",
           "clt", "clustered", "bootstrap")
_COUNT_METHODS = ("wilson", "clopper-pearson", "jeffreys", "jeffreys-modified", "uniform")


def _z(level: float) -> float:
    return float(special.ndtri(0.5 + level / 2))


def wilson_interval(x, n, level: float = 0.9):
    """Wilson score interval for ``x`` successes in ``n`` trials (arrays broadcast; ``x`` may be
    an effective, non-integer count)."""
    x, n = np.asarray(x, float), np.asarray(n, float)
    z = _z(level)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def clopper_pearson_interval(x, n, level: float = 0.9):
    """Clopper-Pearson interval: Beta(x, n-x+1) and Beta(x+1, n-x) quantiles."""
    x, n = np.asarray(x, float), np.asarray(n, float)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(x > 0, stats.beta.ppf(a, np.maximum(x, 1e-300), n - x + 1), 0.0)
        hi = np.where(x < n, stats.beta.ppf(1 - a, x + 1, np.maximum(n - x, 1e-300)), 1.0)
    return lo, hi


def beta_interval(x, n, level: float = 0.9, prior: str = "jeffreys", modified: bool = False):
    """Equal-tailed interval of the Beta(x + a, n - x + a) posterior, ``a`` = ½ (Jeffreys) or 1
    (uniform).  The Jeffreys interval's end is 0 at x = 0 and 1 at x = n (Brown, Cai and
    DasGupta's boundary rule).  ``modified`` applies their modification near the boundary as
    well: the upper end at x = 0 is the exact ``1 - (α/2)^(1/n)`` (and the lower end at x = n
    its mirror), and the lower end is 0 for x ≤ 1 (the upper 1 for x ≥ n - 1); without it the
    plain interval's coverage dips to about 82% at 90% nominal for p near 1/n."""
    if prior not in ("jeffreys", "uniform"):
        raise ValueError(f"prior={prior!r}: pass 'jeffreys' or 'uniform'")
    a0 = 0.5 if prior == "jeffreys" else 1.0
    x, n = np.asarray(x, float), np.asarray(n, float)
    a = (1 - level) / 2
    lo = stats.beta.ppf(a, x + a0, n - x + a0)
    hi = stats.beta.ppf(1 - a, x + a0, n - x + a0)
    if prior == "jeffreys":
        lo = np.where(x <= 0, 0.0, lo)
        hi = np.where(x >= n, 1.0, hi)
    if modified:
        hi = np.where(x <= 0, 1 - a ** (1 / n), np.where(x >= n - 1, 1.0, hi))
        lo = np.where(x >= n, a ** (1 / n), np.where(x <= 1, 0.0, lo))
    return lo, hi


def strata(data: CompareData, overall: bool = True) -> list[tuple[str, np.ndarray]]:
    """(group label, item positions) for each group, plus ``(all)`` over every item when the
    table has several groups and ``overall`` is true."""
    out = [(str(g), data.group_items(j)) for j, g in enumerate(data.groups)]
    if overall and len(data.groups) > 1:
        out.append(("(all)", np.arange(len(data.items))))
    return out


def cell_moments(y, n, item_cluster=None):
    """Mean and variances of each row of ``y[S, N]`` (NaN = not answered).

    Returns a dict of ``[S]`` arrays: ``n_items``, ``n_samples``, ``n_clusters``, ``mean``,
    ``var_iid``, ``var_cluster`` (NaN without clusters), ``var_within`` (NaN without repeats).
    """
    m = n > 0
    N = m.sum(1).astype(float)
    ys = np.where(m, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = ys.sum(1) / N
        e = np.where(m, y - mean[:, None], 0.0)
        var_iid = (e ** 2).sum(1) / (N * (N - 1))
        rep = m & (n > 1)
        w = np.where(rep, ys * (1 - ys) / np.where(rep, n - 1, 1.0), 0.0)
        var_within = np.where(rep.any(1), w.sum(1) / N ** 2, np.nan)
        if item_cluster is not None:
            codes, inv = np.unique(item_cluster, return_inverse=True)
            onehot = np.zeros((len(item_cluster), len(codes)))
            onehot[np.arange(len(item_cluster)), inv] = 1.0
            E = e @ onehot
            G = ((m.astype(float) @ onehot) > 0).sum(1).astype(float)
            var_cluster = G / (G - 1) * (E ** 2).sum(1) / N ** 2
        else:
            G = np.full(len(N), np.nan)
            var_cluster = np.full(len(N), np.nan)
    return {"n_items": N, "n_samples": np.where(m, n, 0).sum(1), "n_clusters": G, "mean": mean,
            "var_iid": var_iid, "var_cluster": var_cluster, "var_within": var_within}


def bootstrap_means(y, n, item_cluster, replicates: int, rng: np.random.Generator):
    """``[B, S]`` means of each row of ``y`` over items (or whole clusters) resampled with
    replacement; a row's mean is over the resampled items it answered."""
    m = (n > 0).astype(float)
    ys = np.where(n > 0, y, 0.0)
    if item_cluster is None:
        N = y.shape[1]
        W = rng.multinomial(N, np.full(N, 1.0 / N), size=replicates).astype(float)
    else:
        codes, inv = np.unique(item_cluster, return_inverse=True)
        G = len(codes)
        W = rng.multinomial(G, np.full(G, 1.0 / G), size=replicates).astype(float)[:, inv]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (W @ ys.T) / (W @ m.T)


def accuracy(
    data,
    *,
    method: str = "auto",
    level: float = 0.9,
    replicates: int = 2000,
    seed: int = 0,
    trials: int | None = None,
    overall: bool = True,
) -> pd.DataFrame:
    """Accuracy of every model per benchmark (group), with an interval.

    Args:
        data: a response table (see :func:`as_compare_data`).
        method: one of :data:`METHODS` (module docstring); ``"auto"`` picks by the data.
        level: the interval's nominal coverage (default 0.9).
        replicates, seed: bootstrap resamples and random seed (``method="bootstrap"``).
        trials: samples behind each fractional response when there is no trials column.
        overall: add an ``(all)`` row per model over every item when there are several groups.

    Returns:
        A DataFrame indexed by ``(group, subject)`` with ``accuracy, lo, hi, se, method,
        basis, level, n_items, n_samples, n_clusters, n_eff, var_within, var_between``
        (``basis``: ``counts``, ``effective counts``, ``normal`` or ``resampled``).
    """
    if method not in METHODS:
        raise CompareInputError(f"method={method!r}: pass one of {', '.join(METHODS)}")
    if not 0 < level < 1:
        raise CompareInputError(f"level={level!r}: pass a coverage between 0 and 1, e.g. 0.9")
    data = as_compare_data(data, trials=trials)
    in_unit = bool(np.all((data.y[data.n > 0] >= 0) & (data.y[data.n > 0] <= 1)))
    chosen = ("jeffreys-modified" if in_unit else "bootstrap") if method == "auto" else method
    if chosen in _COUNT_METHODS and not in_unit:
        raise NonBinaryScoresError(
            f"{data.source}: method={chosen!r} needs scores in [0, 1] (0/1 outcomes or shares "
            "of successes); pass method='bootstrap' or 'clt' for other scores"
        )
    if chosen == "clustered" and data.clusters is None:
        raise CompareInputError(f"{data.source} has no cluster column; method='clustered' needs "
                                "one (items sharing a passage or source): add it, or pass "
                                "method='clt' for independent items")
    rng = np.random.default_rng(seed)
    frames = []
    for label, cols in strata(data, overall):
        y, n = data.y[:, cols], data.n[:, cols]
        present = (n > 0).any(1)
        if not present.any():
            continue
        y, n = y[present], n[present]
        clus = None if data.item_cluster is None else data.item_cluster[cols]
        mo = cell_moments(y, n, clus)
        p, N = mo["mean"], mo["n_items"]
        v = mo["var_cluster"] if clus is not None else mo["var_iid"]
        exact = data.binary and not data.repeated and clus is None
        units = mo["n_clusters"] if clus is not None else N  # independent units
        with np.errstate(invalid="ignore", divide="ignore"):
            n_eff = np.where((v > 0) & (p > 0) & (p < 1), p * (1 - p) / v, units)
            # Korn and Graubard's degrees-of-freedom factor: a variance estimated from few
            # units is itself uncertain, so the effective count shrinks by (z / t_df)².
            df = np.maximum(units - 1, 1)
            n_eff = n_eff * (_z(level) / stats.t.ppf(0.5 + level / 2, df)) ** 2
        n_eff = np.minimum(n_eff, mo["n_samples"]) if not exact else N
        basis = "counts" if exact else "effective counts"
        x_eff = p * n_eff
        if chosen == "wilson":
            lo, hi = wilson_interval(x_eff, n_eff, level)
        elif chosen == "clopper-pearson":
            lo, hi = clopper_pearson_interval(x_eff, n_eff, level)
        elif chosen in ("jeffreys", "uniform", "jeffreys-modified"):
            lo, hi = beta_interval(x_eff, n_eff, level, prior=chosen.split("-")[0],
                                   modified=chosen == "jeffreys-modified")
        elif chosen in ("clt", "clustered"):
            vv = mo["var_cluster"] if chosen == "clustered" else mo["var_iid"]
            h = _z(level) * np.sqrt(vv)
            lo, hi, basis = p - h, p + h, "normal"
        else:
            boot = bootstrap_means(y, n, clus, replicates, rng)
            lo, hi = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
            basis = "resampled"
        frames.append(pd.DataFrame({
            "group": label, "subject": data.subjects[present], "accuracy": p, "lo": lo,
            "hi": hi, "se": np.sqrt(v), "method": chosen, "basis": basis, "level": level,
            "n_items": N.astype(int), "n_samples": mo["n_samples"], "n_clusters":
            mo["n_clusters"], "n_eff": n_eff, "var_within": mo["var_within"],
            "var_between": v - mo["var_within"],
        }))
    return pd.concat(frames).set_index(["group", "subject"])
