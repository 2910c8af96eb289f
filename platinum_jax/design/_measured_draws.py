"""Draws of the measured primitives, and optimal weights and platinum items with their posterior.

Each draw of :func:`measured_draws` takes, independently per item,

* the noise variance from its sampling distribution: the release's ``σ̂²_i`` pools ``N = 80``
  observations (8 seeds × 10 checkpoints) with divisor ``N − K = 70``, so (Jeffreys prior)
  ``σ²_i | σ̂²_i ~ ν σ̂²_i / χ²_ν`` with ``ν = 70``, the scaled inverse-χ² distribution
  (mean ``ν σ̂²/(ν − 2)``, variance ``2ν² σ̂⁴ / ((ν − 2)²(ν − 4))``);
* the cost from its bootstrap rank interval: the ranks ``[rank_lo, rank_hi]`` (2.5% and 97.5%
  of 1000 residual-bootstrap re-rankings) are mapped to costs through the empirical cost
  quantiles of the release, and ``log c_i ~ N(μ_i, s_i²)`` is the lognormal whose central 95%
  interval is that cost interval (``μ_i`` the midpoint of the logs, ``s_i`` the half-width over
  1.96);
* the welfare weights from one judge-and-aggregation variant drawn at random: judge (Claude, the
  headline, or OpenAI), top-3, 4 or 5 GWAs, reciprocal or uniform rank weights, GWA scores as the
  share of workers (the headline) or the mean rating (the authors' robustness set 1).  Each
  variant goes through :func:`platinum_jax.measured.welfare_from_rankings`;

and items whose noise or cost was not measured (concept view) take the values of a measured item
of the same family drawn at random, so their draws spread as widely as the family does.  The
draws then go through :func:`platinum_jax.design.posterior_decisions` (one jitted, vmapped
function over draws and the ``r`` grid): ``v*``, Definition 1's flags and the welfare gains.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from platinum_jax.measured import welfare_from_rankings

from ._measured import VIEWS, _check_view, gwa_loadings, measured_items
from ._posterior import PrimitiveDraws, WeightsPosterior, posterior_decisions

__all__ = ["MeasuredPlatinum", "measured_draws", "platinum_from_release", "task_average_weights",
           "welfare_variants"]

DEFAULT_R_FACTORS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
_Z975 = 1.959963984540054  # standard normal 97.5% quantile: the rank interval is central 95%
_PERSPECTIVE = {"auto": ("automation", "p_auto_15"), "aug": ("augmentation", "p_aug_15")}
HEADLINE = ("claude", 5, "reciprocal", "fraction")  # the variant that welfare.csv reports
WELFARE_ROUNDING = 1e-5  # welfare.csv holds six decimals


def welfare_variants(release, index: pd.Index, *, welfare: str = "auto",
                     variants: str = "all") -> pd.DataFrame:
    """Welfare of every item of ``index`` under each judge-and-aggregation variant.

    Columns are a MultiIndex ``(judge, top_k, weighting, scores)``; ``variants="headline"``
    keeps only ``(claude, 5, reciprocal, fraction)``, which reproduces the release's
    ``welfare.csv``.  The OpenAI judge and the mean scores enter when the release has them.
    Raises ``ValueError`` when an item has no welfare under a variant.
    """
    if variants not in ("all", "headline"):
        raise ValueError(f"variants must be 'all' or 'headline', got {variants!r}")
    perspective, column = _PERSPECTIVE[welfare]
    judges = sorted(set(release.loadings["judge"]), key=lambda j: j != "claude")
    scores = {"fraction": release.concept_scores}
    if release.concept_scores_mean is not None:
        scores["mean"] = release.concept_scores_mean
    grid = (list(itertools.product(judges, (3, 4, 5), ("reciprocal", "uniform"), scores))
            if variants == "all" else [HEADLINE])
    out = {}
    for judge, k, weighting, score in grid:
        sel = release.loadings[(release.loadings["judge"] == judge)
                               & (release.loadings["perspective"] == perspective)]
        w = welfare_from_rankings(sel[["task", "doc_id", "rank", "concept_id"]], scores[score],
                                  column=column, top_k=k, weighting=weighting)
        w = w.reindex(index)
        if w.isna().any():
            raise ValueError(f"item {w.index[w.isna().to_numpy()][0]} has no welfare under the "
                             f"{judge} judge with top-{k} {weighting} weights and {score} "
                             "scores (no ranking, or none of its GWAs has a score); use "
                             "variants='headline' or complete the rankings")
        out[(judge, k, weighting, score)] = w.to_numpy(np.float64)
    cols = pd.MultiIndex.from_tuples(list(out), names=["judge", "top_k", "weighting", "scores"])
    return pd.DataFrame(np.column_stack(list(out.values())), index=index, columns=cols)


def _check_release_agrees(release, items: pd.DataFrame, headline: pd.Series,
                          welfare: str) -> None:
    """Refuse a release whose reported welfare and costs are not what the draws are made
    from: ``welfare.csv``'s ``w_<welfare>`` against the headline variant recomputed from the
    judges' rankings (the release rounds it to six decimals), and each ``cost_min_usd``
    against its ``rank_headline`` among the release's costs (ties move a rank by one)."""
    column = f"w_{welfare}"
    gap = (headline - items["w"]).abs()
    if gap.max() > WELFARE_ROUNDING:
        worst, n_off = gap.idxmax(), int((gap > WELFARE_ROUNDING).sum())
        raise ValueError(
            f"welfare.csv's {column} and the welfare recomputed from the judges' rankings "
            f"(judge_loadings.jsonl, the headline variant: Claude, top-5 GWAs, reciprocal "
            f"weights, share of workers) differ by up to {gap.max():.4g} ({n_off} "
            f"item(s); item {worst}: {items.loc[worst, 'w']:.6g} "
            f"against {headline.loc[worst]:.6g}); the weights' draws are made from the "
            "rankings, so the two must agree: restore welfare.csv or the rankings from the "
            "release")
    cost = release.cost
    rank = cost["cost_min_usd"].rank(method="average")
    off = (rank - cost["rank_headline"]).abs() > 1.0
    if off.any():
        worst = (rank - cost["rank_headline"]).abs().idxmax()
        raise ValueError(
            f"cost.csv: {int(off.sum())} item(s) have a cost_min_usd whose rank among the "
            f"release's costs is not their rank_headline (item {worst}: cost "
            f"{cost.loc[worst, 'cost_min_usd']:.6g} ranks {rank.loc[worst]:g}, rank_headline "
            f"{cost.loc[worst, 'rank_headline']:g}); the cost draws come from each item's "
            "bootstrap rank interval, so the costs and their ranks must agree: restore "
            "cost.csv from the release")


def task_average_weights(items: pd.DataFrame) -> np.ndarray:
    """The benchmark's current weights: each task (``task``) equal weight ``1/T``, split
    equally among its items in ``items``."""
    task = items.index.get_level_values("task")
    size = pd.Series(task).map(pd.Series(task).value_counts()).to_numpy(np.float64)
    return 1.0 / (len(set(task)) * size)


def _resample_family(items: pd.DataFrame, flag: str, rng, D: int) -> np.ndarray:
    """Row positions (D, m): an item's own row where measured, else a random measured item of
    its family (of all items when the family has none)."""
    m = len(items)
    pos = np.broadcast_to(np.arange(m), (D, m)).copy()
    measured = ~items[flag].to_numpy()
    family = items["family"].to_numpy()
    for i in np.flatnonzero(~measured):
        pool = np.flatnonzero(measured & (family == family[i]))
        if pool.size == 0:
            pool = np.flatnonzero(measured)
        pos[:, i] = rng.choice(pool, size=D)
    return pos


def measured_draws(release, *, view: str = "items", welfare: str = "auto",
                   n_draws: int = 400, seed: int = 0, variants: str = "all"):
    """``(PrimitiveDraws, items, variants)``: ``n_draws`` draws of the primitives.

    ``items`` is :func:`platinum_jax.design.measured_items`' table, ``variants`` (D,) the
    welfare variant of each draw (``judge/top_k/weighting/scores``, a column of
    :func:`welfare_variants`).  In the item view the
    cost enters as ``A = diag(c)^{-1/2}`` with ``C = I`` (the same ``M = diag(1/c)`` as ``A = I``,
    ``C = diag(c)``: :class:`PrimitiveDraws` shares ``C`` across draws, the cost is drawn).
    """
    _check_view(view, welfare)
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 2:
        raise ValueError(f"n_draws must be a whole number >= 2, got {n_draws!r}")
    items = measured_items(release, view=view, welfare=welfare)
    rng = np.random.default_rng(seed)
    D, m = int(n_draws), len(items)
    wv = welfare_variants(release, items.index, welfare=welfare, variants=variants)
    _check_release_agrees(release, items, wv[HEADLINE], welfare)
    pick = rng.integers(0, wv.shape[1], size=D)
    w = wv.to_numpy().T[pick]
    pos = _resample_family(items, "noise_imputed", rng, D)
    s2 = items["sigma2"].to_numpy(np.float64)[pos]
    dof = items["noise_dof"].to_numpy(np.float64)[pos]
    sigma2 = dof * s2 / rng.chisquare(dof)
    pos = _resample_family(items, "cost_imputed", rng, D)
    lo = items["cost_log_lo"].to_numpy(np.float64)[pos]
    hi = items["cost_log_hi"].to_numpy(np.float64)[pos]
    cost = np.exp(0.5 * (lo + hi) + (hi - lo) / (2 * _Z975) * rng.standard_normal((D, m)))
    scale = 1.0 / np.sqrt(cost)
    if view == "items":
        A = np.zeros((D, m, m))
        A[:, np.arange(m), np.arange(m)] = scale
        abilities = tuple(items["item"])
    else:
        persp = _PERSPECTIVE[welfare][0]
        ranked = release.loadings[release.loadings["perspective"] == persp]
        concepts = sorted(set(ranked["concept_id"]))
        cache = {}
        A = np.empty((D, m, len(concepts)))
        for d in range(D):
            judge, k, weighting, _ = wv.columns[pick[d]]
            key = (judge, k, weighting)
            if key not in cache:
                cache[key] = gwa_loadings(ranked[ranked["judge"] == judge], items.index,
                                          concepts, top_k=k, weighting=weighting).to_numpy()
            A[d] = cache[key] * scale[d][:, None]
        abilities = tuple(concepts)
    counts = {flag: {str(f): int(n) for f, n in
                     items.loc[items[flag]].groupby("family").size().items()}
              for flag in ("noise_imputed", "cost_imputed")}
    notes = {
        "view": view,
        "A": "identity (effort per item); cost carried as A = diag(c)^-1/2, C = I"
        if view == "items" else "GWA rank weights (unit rows) / sqrt(cost); C = I",
        "noise": "sigma2 ~ dof * sigma2_hat / chi2(dof), dof = noise_n_obs - 10 = 70",
        "cost": "log c ~ normal matched to the costs at the bootstrap rank interval "
                "(central 95%), c = cost_min_usd in dollars",
        "welfare_weights": f"w_{welfare}; per draw one of {wv.shape[1]} judge/aggregation "
                           f"variants ({', '.join(wv.columns.names)})",
        "imputed_noise_by_family": counts["noise_imputed"],
        "imputed_cost_by_family": counts["cost_imputed"],
        "n_noise_imputed": int(items["noise_imputed"].sum()),
        "n_cost_imputed": int(items["cost_imputed"].sum()),
    }
    prims = PrimitiveDraws(A=A, C=np.eye(A.shape[2]), d=sigma2, F=np.zeros((D, m, 0)), w=w,
                           items=tuple(items["item"]), abilities=abilities, notes=notes)
    labels = np.array(["/".join(map(str, c)) for c in wv.columns])[pick]
    return prims, items, labels


@dataclass(frozen=True)
class MeasuredPlatinum:
    """Result of :func:`platinum_from_release`.

    ``posterior``: the :class:`WeightsPosterior` (``items`` per item: ``w``, ``mean``, ``sd``,
    ``lo``, ``hi`` of ``v*``, ``share_mean``, ``p_platinum``; ``sensitivity`` per ``r``);
    ``items``: the measured primitives per item (:func:`measured_items`) joined with the
    posterior; ``r``: the risk aversion used (1/$); ``thresholds``: Definition 1's.
    """

    posterior: WeightsPosterior
    items: pd.DataFrame
    r: float
    thresholds: dict
    summary: dict


def platinum_from_release(release, *, view: str = "items", welfare: str = "auto",
                          n_draws: int = 400, seed: int = 0, r: float | None = None,
                          r_factors=DEFAULT_R_FACTORS, tau_w: float | None = None,
                          tau_m: float | None = None, tau_e: float = 1.0,
                          interval: float = 0.9, variants: str = "all") -> MeasuredPlatinum:
    """Optimal weights, P(platinum) and welfare gains from the measured primitives.

    Args:
        release: :func:`platinum_jax.importers.read_principal_agent_release`'s result.
        view, welfare: see :func:`measured_items`.
        n_draws, seed, variants: see :func:`measured_draws`.
        r: the lab's risk aversion in 1/$; default ``1 / median(c_i σ̂²_i)`` over the items with
            both measured, the ``r`` at which the median item's signal-to-noise-cost ratio
            ``1/(r c_i σ²_i)`` is 1 (``--r`` sweeps ``r_factors`` times it).
        tau_w, tau_m, tau_e: Definition 1's thresholds.  Default ``tau_w = tau_m = 1/√m``:
            with ``m`` items, a direction spread evenly over all of them has cosine ``1/√m``
            with each, so the paper's fixed 0.3 is out of reach for every item once
            ``m > 11`` (in the item view ``cos φ_i = w_i/‖w‖`` and ``1/√m`` means "welfare at
            least the root mean square").  ``tau_e = 1``.
        interval: probability of the intervals (0.9).

    The current weights are the benchmark's task averages (:func:`task_average_weights`).
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    prims, items, labels = measured_draws(release, view=view, welfare=welfare, n_draws=n_draws,
                                        seed=seed, variants=variants)
    m = len(items)
    measured = items[~items["noise_imputed"] & ~items["cost_imputed"]]
    r_rule = "given"
    if r is None:
        r = float(1.0 / np.median(measured["cost"] * measured["sigma2"]))
        r_rule = "1 / median(cost * sigma2): the median item's signal-to-noise-cost ratio is 1"
    tau_w = 1.0 / np.sqrt(m) if tau_w is None else float(tau_w)
    tau_m = 1.0 / np.sqrt(m) if tau_m is None else float(tau_m)
    current = task_average_weights(items)
    post = posterior_decisions(prims, r, r_factors=r_factors, tau_w=tau_w, tau_m=tau_m,
                               tau_e=tau_e, current=current, interval=interval)
    table = items.join(post.items.drop(columns="w").set_axis(items.index))
    table["current_weight"] = current
    if view == "concepts":  # the activity each item loads on most (headline judge and weights)
        ranked = release.loadings[(release.loadings["perspective"] == _PERSPECTIVE[welfare][0])
                                  & (release.loadings["judge"] == "claude")]
        table["top_gwa"] = gwa_loadings(ranked, items.index, prims.abilities).idxmax(axis=1)
    thresholds = {"tau_w": tau_w, "tau_m": tau_m, "tau_e": tau_e}
    p = table["p_platinum"]
    summary = dict(post.summary)
    summary.update({
        "view": view, "welfare": f"w_{welfare}", "r_rule": r_rule,
        "current_weights": "task average (each task equal weight, split among its items)",
        "n_platinum_p_above_0.9": int((p > 0.9).sum()),
        "n_platinum_p_above_0.5": int((p > 0.5).sum()),
        "n_items_noise_imputed": int(items["noise_imputed"].sum()),
        "n_items_cost_imputed": int(items["cost_imputed"].sum()),
        # where each reported column comes from, and what the decisions are drawn from
        "columns": {
            "w": f"welfare.csv's w_{welfare} (the headline variant; checked against the "
                 "judges' rankings, from which every draw's welfare is recomputed)",
            "cost": "cost.csv's cost_min_usd (checked against its rank_headline); the draws "
                    "come from its bootstrap rank interval",
            "sigma2": "noise.csv's noise_sigma2; the draws from its scaled inverse chi-square",
            "mean, sd, lo, hi, p_platinum": "over the draws"},
        "welfare_variant_draws": {str(k): int(n) for k, n in
                                  pd.Series(labels).value_counts().sort_index().items()},
    })
    return MeasuredPlatinum(post, table, float(r), thresholds, summary)
