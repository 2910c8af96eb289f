"""Principal-agent primitives from the measured per-item noise, cost and welfare.

The measurements are those of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo, "Welfare,
Improvability, and Noise: A Principal–Agent Theory of Optimal Benchmark Item Aggregation"
(read by :func:`platinum_jax.importers.read_principal_agent_release`); the model is that of
Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking and
Platinum Benchmarks".  Two views of the same items:

``view="items"`` (effort per item): ``A = I``, ``C = diag(c_i)``, ``Σ = diag(σ²_i)``, ``w_i``, so
``M = diag(1/c_i)`` and ``v*_i = w_i / (1 + r c_i σ²_i)``.  Only items with all three
measurements (149 in the authors' release).

``view="concepts"`` (effort per work activity): the activities are the O*NET generalized work
activities (GWAs) the judge ranks; ``A_ik = ℓ_ik / √c_i`` where ``ℓ_i`` are item ``i``'s rank
weights over its top-k GWAs scaled to unit length, and ``C = I``.  A unit of effort on GWA ``k``
lifts item ``i`` by ``ℓ_ik/√c_i``, so ``M_ii = 1/c_i`` as in the item view, and items that share
GWAs share improvements.  Definition 1's concepts are then directions in GWA space (each reported
with the GWA it loads on most).  All welfare items (317); those without a measured noise or cost
get one imputed from the measured items of the same ``dataset_family`` (counted, flagged per
item, and drawn afresh per draw, see :func:`measured_draws`).

Units: ``c_i`` is the release's ``cost_min_usd`` as given, in dollars on the cheapest improving
axis.  The release's schema calls it the cost of a 0.10 lift, while the authors' Table 1 code
prints ``0.10 · cost_min_usd`` as that cost (so per unit of probability); only the unit of ``r``
(1/$, the lab's absolute risk aversion over dollars, with ``σ²_i`` in probability²) depends on
the reading: ``v*``, the flags and the gains depend on ``r c_i`` alone, and the default ``r``
is set relative to the median ``c_i σ²_i``.  ``w`` is the raw welfare score (reciprocal-rank sum of
GWA worker shares), of which only the direction matters for ``v*``'s shape and Definition 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from platinum_jax.agency import Primitives
from platinum_jax.measured import rank_weights

__all__ = [
    "CHECKPOINTS",
    "COST_RANK_INTERVAL",
    "gwa_loadings",
    "measured_items",
    "primitives_from_measurements",
]

CHECKPOINTS = 10  # K: the noise is pooled within 10 checkpoints, so dof = N - K = 80 - 10 = 70
COST_RANK_INTERVAL = 0.95  # the release's rank_lo/rank_hi: [2.5, 97.5]% of 1000 bootstrap ranks
VIEWS = ("items", "concepts")
WELFARE_COLUMNS = {"auto": "w_auto", "aug": "w_aug"}


def _check_view(view: str, welfare: str) -> None:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    if welfare not in WELFARE_COLUMNS:
        raise ValueError(f"welfare must be 'auto' (w_auto, automation) or 'aug' (w_aug, "
                         f"augmentation), got {welfare!r}")


def _rank_quantiles(cost: pd.DataFrame) -> np.ndarray:
    """Sorted ``cost_min_usd`` of every costed item: rank ρ (1 = cheapest) maps to entry ρ − 1."""
    values = np.sort(cost["cost_min_usd"].to_numpy(np.float64))
    return values


def _cost_at_rank(sorted_cost: np.ndarray, rank: np.ndarray) -> np.ndarray:
    grid = np.arange(1, sorted_cost.size + 1, dtype=np.float64)
    return np.interp(np.asarray(rank, np.float64), grid, sorted_cost)


def _check_measured(out: pd.DataFrame, cost: pd.DataFrame, directory) -> None:
    """Named errors for measured values the model cannot take (the reader checks its files;
    this guards tables built by hand)."""
    checks = (("sigma2", "noise_imputed", "noise.csv", "noise_sigma2", "a positive variance"),
              ("cost", "cost_imputed", "cost.csv", "cost_min_usd", "a positive dollar cost"),
              ("cost_log_lo", "cost_imputed", "cost.csv", "rank_lo", "a rank among its items"),
              ("cost_log_hi", "cost_imputed", "cost.csv", "rank_hi", "a rank among its items"))
    for col, flag, file, source, what in checks:
        x = out.loc[~out[flag], col].to_numpy(np.float64)
        ok = np.isfinite(x) & ((x > 0) if col in ("sigma2", "cost") else True)
        if not ok.all():
            item = out.index[~out[flag]][int(np.argmin(ok))]
            raise ValueError(f"{directory}/{file}: column {source!r} of item {item} must be "
                             f"{what}; fix or remove the row")
    ranks = cost[["rank_lo", "rank_hi"]].to_numpy(np.float64)
    if np.nanmax(ranks) > len(cost) or np.nanmin(ranks) < 1:
        raise ValueError(f"{directory}/cost.csv: rank_lo and rank_hi must be ranks among the "
                         f"file's {len(cost)} items (1 = cheapest); found "
                         f"{np.nanmin(ranks):g} to {np.nanmax(ranks):g}")


def measured_items(release, *, view: str = "items", welfare: str = "auto") -> pd.DataFrame:
    """One row per item of ``view`` with the measured (or imputed) primitives.

    Args:
        release: a :class:`platinum_jax.importers.PrincipalAgentRelease`.
        view: ``"items"`` (the items with noise, cost and welfare) or ``"concepts"`` (every
            welfare item; missing noise or cost imputed, see below).
        welfare: ``"auto"`` (``w_auto``, the headline) or ``"aug"`` (``w_aug``).

    Returns:
        Frame indexed by ``(task, doc_id)`` with ``item`` (``task:doc_id``), ``family``
        (``dataset_family``), ``w``, ``sigma2`` (σ²_i), ``noise_dof`` (``n_obs − 10``),
        ``cost`` (c_i, ``cost_min_usd``), ``cost_log_lo``,
        ``cost_log_hi`` (logs of the costs at the item's bootstrap rank interval, mapped through
        the empirical cost quantiles of the release), ``noise_imputed`` and ``cost_imputed``.
        An imputed value is the median of the measured items of the same family among the
        view's items (of all of them when the family has none); its draws resample the
        family's measured items (:func:`measured_draws`).
    """
    _check_view(view, welfare)
    base = release.welfare.copy()
    noise, cost = release.noise, release.cost
    if view == "items":
        keep = base.index.isin(noise.index) & base.index.isin(cost.index)
        base = base[keep]
        if base.empty:
            raise ValueError(f"{release.directory}: no item has noise, cost and welfare (they "
                             "join on task, doc_id); check that the files describe the same "
                             "items")
    out = pd.DataFrame(index=base.index)
    out["item"] = [f"{t}:{d}" for t, d in base.index]
    out["family"] = base["dataset_family"].astype(str)
    out["w"] = base[WELFARE_COLUMNS[welfare]].astype(float)
    out["sigma2"] = noise["noise_sigma2"].reindex(base.index).astype(float)
    out["noise_dof"] = (noise["noise_n_obs"].reindex(base.index).astype(float) - CHECKPOINTS)
    out["cost"] = cost["cost_min_usd"].reindex(base.index).astype(float)
    sorted_cost = _rank_quantiles(cost)
    for end in ("lo", "hi"):
        col = f"rank_{end}"
        if col not in cost.columns:
            raise ValueError(f"{release.directory / 'cost.csv'}: column {col!r} (the bootstrap "
                             "rank interval of the cost) is missing; the cost draws need it")
        out[f"cost_log_{end}"] = np.log(_cost_at_rank(
            sorted_cost, cost[col].reindex(base.index).to_numpy(np.float64)))
    out["noise_imputed"] = out["sigma2"].isna()
    out["cost_imputed"] = out["cost"].isna()
    _check_measured(out, cost, release.directory)
    bad = out.loc[~out["noise_imputed"] & (out["noise_dof"] <= 4)]
    if len(bad):
        raise ValueError(f"noise.csv: noise_n_obs must exceed {CHECKPOINTS + 4} (the noise is "
                         f"pooled over {CHECKPOINTS} checkpoints, and its draws need more than 4 "
                         f"degrees of freedom); item {bad.index[0]} has "
                         f"{bad['noise_dof'].iloc[0] + CHECKPOINTS:g}")
    for cols, flag in ((["sigma2", "noise_dof"], "noise_imputed"),
                       (["cost", "cost_log_lo", "cost_log_hi"], "cost_imputed")):
        measured = out.loc[~out[flag]]
        if measured.empty:
            raise ValueError(f"no item of the {view} view has a measured "
                             f"{flag.split('_')[0]}; nothing to impute from")
        family_median = measured.groupby("family")[cols].median()
        overall = measured[cols].median()
        for c in cols:
            fill = out["family"].map(family_median[c]).fillna(overall[c])
            out[c] = out[c].where(~out[flag], fill)
    return out


def gwa_loadings(rankings: pd.DataFrame, index: pd.Index, concepts, *, top_k: int = 5,
                 weighting: str = "reciprocal") -> pd.DataFrame:
    """Item loadings on GWAs ``ℓ`` (items × GWAs): rank weights of each item's top-k GWAs.

    ``rankings`` is the long frame of one judge and perspective (``task, doc_id, rank,
    concept_id``); the weights are :func:`platinum_jax.measured.rank_weights` (``1/k`` or
    uniform), every ranked GWA counts (also those without a worker-share score: an item still
    exercises them), and each row is scaled to unit Euclidean length so that ``M_ii = 1/c_i``.
    Raises ``ValueError`` when an item of ``index`` has no ranking.
    """
    lam = rank_weights(top_k, weighting)
    top = rankings[rankings["rank"] <= top_k]
    weight = lam[top["rank"].to_numpy(int) - 1]
    frame = pd.DataFrame({"task": top["task"].to_numpy(), "doc_id": top["doc_id"].to_numpy(),
                          "concept_id": top["concept_id"].to_numpy(), "weight": weight})
    table = frame.pivot_table(index=["task", "doc_id"], columns="concept_id", values="weight",
                              aggfunc="sum", fill_value=0.0)
    missing = index.difference(table.index)
    if len(missing):
        raise ValueError(f"{len(missing)} item(s) have no GWA ranking from this judge and "
                         f"perspective, e.g. {missing[0]}; the concept view needs one per item")
    table = table.reindex(index=index, columns=list(concepts), fill_value=0.0)
    norm = np.linalg.norm(table.to_numpy(), axis=1, keepdims=True)
    return table / norm


def primitives_from_measurements(items: pd.DataFrame, r: float, *,
                                 loadings: pd.DataFrame | None = None) -> Primitives:
    """The point primitives of :func:`measured_items`' table (float64 when x64 is on).

    Without ``loadings`` (item view): ``A = I``, ``C = diag(c)``, ``Σ = diag(σ²)``, ``w``.
    With ``loadings`` ``ℓ`` (items × GWAs, :func:`gwa_loadings`; concept view):
    ``A = diag(c)^{-1/2} ℓ``, ``C = I``.  Raises ``ValueError`` on a cost or noise that is not a
    positive finite number, or a negative welfare.
    """
    for col in ("cost", "sigma2"):
        x = items[col].to_numpy(np.float64)
        if not np.all(np.isfinite(x) & (x > 0)):
            i = int(np.argmin(np.isfinite(x) & (x > 0)))
            raise ValueError(f"{col} must be a positive number for every item; item "
                             f"{items.index[i]} has {x[i]!r} (the model needs a positive "
                             f"{'improvement cost' if col == 'cost' else 'noise variance'})")
    w = items["w"].to_numpy(np.float64)
    if not np.all(np.isfinite(w) & (w >= 0)):
        i = int(np.argmin(np.isfinite(w) & (w >= 0)))
        raise ValueError(f"welfare must be a number >= 0 for every item; item "
                         f"{items.index[i]} has {w[i]!r}")
    c = items["cost"].to_numpy(np.float64)
    Sigma = np.diag(items["sigma2"].to_numpy(np.float64))
    if loadings is None:
        m = len(items)
        return Primitives(np.eye(m), np.diag(c), Sigma, w, r)
    L = loadings.reindex(items.index).to_numpy(np.float64)
    return Primitives(L / np.sqrt(c)[:, None], np.eye(L.shape[1]), Sigma, w, r)
