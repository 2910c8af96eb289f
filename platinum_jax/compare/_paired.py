"""Is model A better than model B?  Paired comparisons on shared items, for all pairs at once.

For a pair (A, B) in a benchmark, on the N items both answered, ``d_i = y_Ai - y_Bi``:

* ``diff = mean(d)`` with the paired standard error ``sd(d)/√N`` (or the cluster-robust one
  with a cluster column: ``√(G/(G-1) Σ_g (Σ_{i∈g} (d_i - diff))²) / N``), a t-test with N-1
  (G-1) degrees of freedom: the ``paired-t`` test.  Sharing items cancels the item difficulty
  both models see, so the paired SE is ``√(σ_A² + σ_B² - 2ρσ_Aσ_B)/√N`` where an unpaired
  z-test would use ``√(σ_A² + σ_B²)/√N``.
* McNemar's test when each item is one 0/1 outcome per model: ``b`` items only A solved,
  ``c`` items only B solved; exact binomial ``b ~ Bin(b + c, ½)`` when ``b + c < 50``, else the
  chi-squared statistic ``(b - c)²/(b + c)`` with one degree of freedom.
* A paired bootstrap interval of ``diff`` (items or whole clusters resampled).
* ``p_a_better`` = P(A > B | data).  For 0/1 outcomes: a Dirichlet(½, ½, ½, ½) posterior over
  the 2x2 table (both right, A only, B only, both wrong); A beats B when P(A only) > P(B only),
  and that share of the discordant mass is Beta(b + ½, c + ½), so P(A > B) = P(Beta > ½).
  Otherwise a flat-prior normal posterior on the mean difference: ``Φ(diff / se)``.

The primary p-value (``test``) is McNemar for independent 0/1 items and the paired t-test
otherwise; it is adjusted across every pair and benchmark by Benjamini-Hochberg (false
discovery rate) and Holm (family-wise error).  A pair with no shared items in a benchmark is
compared unpaired (Welch z on the two accuracies) only when ``unpaired=True``; the ``design``
column says which was used.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special, stats

from ._data import (
    CompareInputError,
    NonBinaryScoresError,
    NoSharedItemsError,
    as_compare_data,
    model_positions,
    require_two_models,
)
from ._intervals import bootstrap_means, cell_moments, strata

__all__ = ["compare_pairs", "mcnemar", "p_better_matrix", "adjust_bh", "adjust_holm"]


def _adjust_finite(p, step) -> np.ndarray:
    """``step(sorted finite p-values, m)`` -> adjusted values in that order, put back in place;
    NaN stays NaN and is left out of the count ``m``."""
    p = np.asarray(p, float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q)
    adj = np.empty(m)
    adj[order] = np.minimum(step(q[order], m), 1.0)
    out[ok] = adj
    return out


def adjust_bh(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (NaN kept in place, excluded from the count)."""
    return _adjust_finite(p, lambda q, m: np.minimum.accumulate(
        (q * m / np.arange(1, m + 1))[::-1])[::-1])


def adjust_holm(p) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN kept in place, excluded from the count)."""
    return _adjust_finite(p, lambda q, m: np.maximum.accumulate(q * (m - np.arange(m))))


def mcnemar(b, c, exact_below: int = 50) -> np.ndarray:
    """Two-sided McNemar p-value from the discordant counts ``b`` (A only) and ``c`` (B only);
    exact binomial when ``b + c < exact_below``, else chi-squared with 1 df (arrays broadcast).
    """
    b, c = np.asarray(b, float), np.asarray(c, float)
    if np.any((b < 0) | (c < 0) | (b != np.round(b)) | (c != np.round(c))):
        raise NonBinaryScoresError("McNemar needs whole discordant counts b, c >= 0 (items only "
                                   "A solved, only B solved); pass counts of 0/1 outcomes")
    t = b + c
    exact = np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(b, c), t, 0.5))
    with np.errstate(invalid="ignore", divide="ignore"):
        chi = stats.chi2.sf((b - c) ** 2 / t, 1)
    return np.where(t == 0, 1.0, np.where(t < exact_below, exact, chi))


def _group_pairs(data, label, cols, pa, pb, clus, level, replicates, rng, unpaired):
    """Rows for the pairs ``(pa[k], pb[k])`` in one benchmark, all pairs at once."""
    ya, yb = data.y[pa][:, cols], data.y[pb][:, cols]
    na, nb = data.n[pa][:, cols], data.n[pb][:, cols]
    shared = (na > 0) & (nb > 0)
    N = shared.sum(1)
    P = len(pa)
    rows = {"group": np.full(P, label, dtype=object), "a": np.asarray(data.subjects[pa]),
            "b": np.asarray(data.subjects[pb]), "n_shared": N,
            "n_only_a": ((na > 0) & ~shared).sum(1), "n_only_b": ((nb > 0) & ~shared).sum(1)}
    none = N == 0
    if none.any() and not unpaired:
        k = int(np.flatnonzero(none)[0])
        raise NoSharedItemsError(
            f"{data.source}: {rows['a'][k]!r} and {rows['b'][k]!r} share no items in {label!r}, so "
            "they cannot be compared paired; pass unpaired=True (--unpaired) for an unpaired "
            "comparison of their accuracies, or give them responses on common items"
        )
    z = special.ndtri(0.5 + level / 2)
    d = np.where(shared, ya - yb, np.nan)
    mo = cell_moments(d, shared.astype(float), clus)
    if clus is not None:
        var, df = mo["var_cluster"], mo["n_clusters"] - 1
    else:
        var, df = mo["var_iid"], N - 1.0
    diff, se = mo["mean"], np.sqrt(var)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(diff) / se
        p_t = np.where(se > 0, 2 * stats.t.sf(t, df), np.where(diff == 0, 1.0, 0.0))
        acc_a = np.where(shared, ya, 0).sum(1) / N
        acc_b = np.where(shared, yb, 0).sum(1) / N
        ea, eb = np.where(shared, ya - acc_a[:, None], 0), np.where(shared, yb - acc_b[:, None], 0)
        rho = (ea * eb).sum(1) / np.sqrt((ea ** 2).sum(1) * (eb ** 2).sum(1))
        boot = bootstrap_means(d, shared.astype(float), clus, replicates, rng)
        with warnings.catch_warnings():  # pairs with no shared items have no resamples
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
        post_normal = np.where(se > 0, special.ndtr(diff / se), np.sign(diff) / 2 + 0.5)
    rows |= {"design": np.full(P, "paired", dtype=object), "accuracy_a": acc_a,
             "accuracy_b": acc_b, "diff": diff, "se": se, "lo": lo, "hi": hi,
             "p_paired_t": p_t, "rho": rho}
    single = (data.binary and not data.repeated
              and bool(np.all(np.where(shared, (na == 1) & (nb == 1), True))))
    if single:
        bb = (shared & (ya == 1) & (yb == 0)).sum(1)
        cc = (shared & (ya == 0) & (yb == 1)).sum(1)
        p_mc = mcnemar(bb, cc)
        rows |= {"b_only_a": bb.astype(float), "c_only_b": cc.astype(float), "p_mcnemar": p_mc,
                 "p_a_better": stats.beta.sf(0.5, bb + 0.5, cc + 0.5),
                 "posterior": np.full(P, "dirichlet 2x2", dtype=object)}
        test, p_value = ("mcnemar", p_mc) if clus is None else ("paired-t (clustered)", p_t)
    else:
        rows |= {"b_only_a": np.full(P, np.nan), "c_only_b": np.full(P, np.nan),
                 "p_mcnemar": np.full(P, np.nan), "p_a_better": post_normal,
                 "posterior": np.full(P, "normal", dtype=object)}
        test = "paired-t (clustered)" if clus is not None else "paired-t"
        p_value = p_t
    rows |= {"test": np.full(P, test, dtype=object), "p_value": np.array(p_value, float)}
    if none.any():  # unpaired=True: Welch z on each model's own items
        both = np.concatenate([pa[none], pb[none]])
        ym, nm = data.y[both][:, cols], data.n[both][:, cols]
        own = cell_moments(ym, nm, clus)
        v = own["var_cluster"] if clus is not None else own["var_iid"]
        k = int(none.sum())
        da = own["mean"][:k] - own["mean"][k:]
        s = np.sqrt(v[:k] + v[k:])
        pv = 2 * special.ndtr(-np.abs(da) / s)
        new = {"accuracy_a": own["mean"][:k], "accuracy_b": own["mean"][k:], "diff": da,
               "se": s, "lo": da - z * s, "hi": da + z * s, "p_value": pv,
               "p_a_better": special.ndtr(da / s), "design": "unpaired", "test": "welch-z",
               "posterior": "normal", "p_paired_t": np.nan, "rho": np.nan,
               "p_mcnemar": np.nan, "b_only_a": np.nan, "c_only_b": np.nan}
        for col, val in new.items():
            rows[col] = np.array(rows[col], dtype=object if isinstance(val, str) else float)
            rows[col][none] = val
    return pd.DataFrame(rows)


def compare_pairs(
    data,
    *,
    models=None,
    level: float = 0.9,
    alpha: float = 0.05,
    replicates: int = 2000,
    seed: int = 0,
    unpaired: bool = False,
    trials: int | None = None,
    overall: bool = False,
) -> pd.DataFrame:
    """Every pair of models in every benchmark (group) both answered, compared.

    Args:
        data: a response table (see :func:`as_compare_data`).
        models: restrict to these subjects (default all).
        level: coverage of the difference's interval; ``alpha``: the significance level the
            ``significant_*`` columns use after adjustment.
        replicates, seed: paired bootstrap.
        unpaired: compare pairs with no shared items unpaired instead of raising.
        overall: also compare on every item (the ``(all)`` group) when there are several groups.

    Returns:
        One row per (group, a, b), ``a`` before ``b`` in name order: ``design``, ``n_shared``,
        accuracies, ``diff = acc_a - acc_b`` with ``se``, ``lo``, ``hi`` (bootstrap), ``test``,
        ``p_value``, ``p_paired_t``, ``p_mcnemar``, ``b_only_a``, ``c_only_b``, ``p_a_better``,
        ``posterior``, ``rho`` (correlation of the two models' item scores), ``p_bh``,
        ``p_holm``, ``significant_bh``, ``significant_holm``.

    Raises:
        TooFewModelsError: fewer than two models.
        NoSharedItemsError: a pair with no shared items in a benchmark they both answered,
            unless ``unpaired``.
    """
    data = as_compare_data(data, trials=trials)
    require_two_models(data)
    if not 0 < alpha < 1:
        raise CompareInputError(f"alpha={alpha!r}: pass a significance level in (0, 1)")
    idx = model_positions(data, models)
    rng = np.random.default_rng(seed)
    rows = []
    for label, cols in strata(data, overall):
        clus = None if data.item_cluster is None else data.item_cluster[cols]
        answered = [i for i in idx if (data.n[i, cols] > 0).any()]
        if len(answered) < 2:
            continue
        pa, pb = (np.asarray(x) for x in zip(*combinations(answered, 2), strict=True))
        rows.append(_group_pairs(data, label, cols, pa, pb, clus, level, replicates, rng,
                                 unpaired))
    if not rows:
        raise NoSharedItemsError(f"{data.source}: no benchmark has responses from two of the "
                                 "models; pass responses of at least two models on one benchmark")
    out = pd.concat(rows, ignore_index=True)
    out["p_bh"] = adjust_bh(out["p_value"])
    out["p_holm"] = adjust_holm(out["p_value"])
    out["significant_bh"] = out["p_bh"] < alpha
    out["significant_holm"] = out["p_holm"] < alpha
    return out.set_index(["group", "a", "b"])


def p_better_matrix(pairs: pd.DataFrame, group: str) -> pd.DataFrame:
    """P(row model > column model) in ``group`` as a square labelled matrix (NaN diagonal)."""
    sub = pairs.xs(group, level="group")
    names = sorted(set(sub.index.get_level_values("a")) | set(sub.index.get_level_values("b")))
    mat = pd.DataFrame(np.nan, index=pd.Index(names, name="a"), columns=pd.Index(names, name="b"))
    for (a, b), p in sub["p_a_better"].items():
        mat.loc[a, b], mat.loc[b, a] = p, 1 - p
    return mat
