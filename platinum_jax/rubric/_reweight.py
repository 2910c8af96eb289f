"""From rubric scores to benchmark weights, and what reweighting does to model rankings.

Two routes:

* the rubric route: item weights proportional to the platinum score, v_i = P_i / sum_k P_k;
* the model route: read the rubric as primitives of the agency model (Haupt et al. §2) and use the
  optimal weights v* = (M + r Sigma)^-1 M w.  The mapping (constants in :class:`RubricModelMap`):

    loadings      L_ij = S_ij / 3                       (S approximates |cos theta_ij|)
    alignment     a_j  = alpha(W_j), default W_j / 5    (W approximates |cos phi_j|)
    cost          lambda_j = eta(K_j): 1, 1/2, 1/4      (high cost = small lambda_j)
    noise         sigma_j  = 1/4, 1/2, 1 for N_j = low, medium, high
    M     = L diag(lambda) L^T                          (PSD, built in the concept basis L)
    Sigma = L diag(sigma) L^T + sigma_perp I            (sigma_perp > 0 keeps Sigma positive definite)
    w     = L a / ||L a||_2                             (unit welfare vector, as in the paper)

  M and Sigma are built from the same loading matrix L, but the columns of L are in general
  neither orthonormal nor eigenvectors of M or Sigma (two concepts that share items have
  overlapping columns), so M and Sigma need not commute and the concepts are *not* in general a
  shared eigenbasis of M, Sigma and w. v* = (M + r Sigma)^-1 M w follows from
  :func:`platinum_jax.agency.optimal_weights` either way; for platinum flags,
  :func:`platinum_jax.agency.concept_basis` uses the shared eigenbasis only when M and Sigma do commute
  (e.g. orthonormal loadings) and otherwise the generalised basis M q = lambda Sigma q.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd
import scipy.stats

from platinum_jax._names import unknown_name_message

from ._scores import (
    COST_LEVELS,
    NOISE_LEVELS,
    WELFARE_LEVELS,
    validate_concept_scores,
    validate_strengths,
)

__all__ = [
    "item_weights",
    "RubricModelMap",
    "RubricPrimitives",
    "rubric_primitives",
    "model_weights",
    "RankingChange",
    "ranking_change",
]


def item_weights(platinum: pd.DataFrame | pd.Series) -> pd.Series:
    """Rubric-route weights v_i = P_i / sum_k P_k (sum to one).

    ``platinum`` is the output of :func:`platinum_scores`/:func:`certify` or a Series of P_i.
    Missing or negative scores raise: a weight cannot be made up for an item never scored.
    """
    P = platinum["platinum_score"] if isinstance(platinum, pd.DataFrame) else platinum
    p = P.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(p)):
        bad = P.index[~np.isfinite(p)].tolist()[:5]
        raise ValueError(
            f"platinum scores are missing for item(s) {bad}; finish or rerun their judgments "
            "before computing weights"
        )
    if np.any(p < 0):
        raise ValueError("platinum scores must be non-negative")
    total = p.sum()
    if total <= 0:
        raise ValueError("all platinum scores are zero: no item measures any concept, so there is nothing to weight")
    return pd.Series(p / total, index=P.index, name="rubric_weight")


@dataclass(frozen=True)
class RubricModelMap:
    """Constants that read rubric levels as agency-model primitives (see the module docstring)."""

    alignment: Mapping = field(default_factory=lambda: {w: w / 5.0 for w in WELFARE_LEVELS})
    lam: Mapping = field(default_factory=lambda: {"low": 1.0, "medium": 0.5, "high": 0.25})
    sigma: Mapping = field(default_factory=lambda: {"low": 0.25, "medium": 0.5, "high": 1.0})
    sigma_perp: float = 1.0
    r: float = 1.0

    def __post_init__(self) -> None:
        for name, levels in (("alignment", WELFARE_LEVELS), ("lam", COST_LEVELS), ("sigma", NOISE_LEVELS)):
            table = getattr(self, name)
            missing = [lv for lv in levels if lv not in table]
            if missing:
                raise ValueError(f"RubricModelMap.{name} lacks level(s) {missing}")
            vals = np.asarray([float(table[lv]) for lv in levels])
            if not np.all(np.isfinite(vals)) or np.any(vals < 0) or (name == "sigma" and np.any(vals <= 0)):
                raise ValueError(f"RubricModelMap.{name} must be finite and non-negative (sigma positive), got {dict(table)}")
            object.__setattr__(self, name, MappingProxyType({lv: float(table[lv]) for lv in levels}))
        if not (np.isfinite(self.sigma_perp) and self.sigma_perp > 0):
            raise ValueError(f"RubricModelMap.sigma_perp must be positive (it keeps Sigma invertible), got {self.sigma_perp}")
        if not (np.isfinite(self.r) and self.r > 0):
            raise ValueError(f"RubricModelMap.r (lab risk aversion) must be positive, got {self.r}")


@dataclass(frozen=True)
class RubricPrimitives:
    """Agency-model primitives read off a rubric: M (m, m), Sigma (m, m), w (m,), r, items."""

    M: np.ndarray
    Sigma: np.ndarray
    w: np.ndarray
    r: float
    items: pd.Index
    loadings: pd.DataFrame


def rubric_primitives(strengths: pd.DataFrame, concept_scores: pd.DataFrame,
                      model_map: RubricModelMap | None = None) -> RubricPrimitives:
    """Build (M, Sigma, w, r) from S, W, K, N as documented in the module docstring."""
    mm = model_map or RubricModelMap()
    S = validate_strengths(strengths)
    cs = validate_concept_scores(concept_scores)
    for c in S.columns:
        if c not in cs.index:
            raise KeyError(unknown_name_message("concept in strengths", c, list(cs.index)))
    cs = cs.reindex(S.columns)
    L = S.to_numpy() / 3.0
    lam = np.asarray([mm.lam[k] for k in cs["K"]])
    sig = np.asarray([mm.sigma[n] for n in cs["N"]])
    a = np.asarray([mm.alignment[int(x)] for x in cs["W"]])
    M = (L * lam) @ L.T
    Sigma = (L * sig) @ L.T + mm.sigma_perp * np.eye(L.shape[0])
    w = L @ a
    norm = np.linalg.norm(w)
    if norm == 0:
        raise ValueError("no item loads on a welfare-aligned concept (L a = 0), so the welfare vector w is zero")
    # Symmetrise to remove rounding asymmetry before the foundation's symmetry checks.
    return RubricPrimitives(
        M=(M + M.T) / 2, Sigma=(Sigma + Sigma.T) / 2, w=w / norm, r=mm.r, items=S.index,
        loadings=pd.DataFrame(L, index=S.index, columns=S.columns),
    )


def model_weights(strengths: pd.DataFrame, concept_scores: pd.DataFrame,
                  model_map: RubricModelMap | None = None) -> pd.Series:
    """Model-route weights v* = (M + r Sigma)^-1 M w for the rubric primitives (one per item)."""
    from platinum_jax.agency import optimal_weights

    prim = rubric_primitives(strengths, concept_scores, model_map)
    v = np.asarray(optimal_weights(prim.M, prim.Sigma, prim.w, prim.r), dtype=np.float64)
    return pd.Series(v, index=prim.items, name="model_weight")


def validate_results(results: pd.DataFrame) -> np.ndarray:
    """The models x items results table as a float array, after checking it: a DataFrame
    with unique labels and finite scores in [0, 1]; raises ``ValueError`` naming what is wrong."""
    if not isinstance(results, pd.DataFrame):
        raise ValueError(f"results must be a DataFrame (models x items), got {type(results).__name__}")
    if results.index.has_duplicates or results.columns.has_duplicates:
        raise ValueError("results have duplicate model (row) or item (column) labels")
    try:
        y = results.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("results must be numeric scores in [0, 1]") from None
    bad = ~np.isfinite(y)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"results contain {int(bad.sum())} missing/non-finite score(s), first for model "
            f"{results.index[i]!r}, item {results.columns[j]!r}; the ranking comparison needs a complete table"
        )
    if y.min() < 0 or y.max() > 1:
        hint = " (they look like percentages: divide by 100)" if y.max() <= 100 and y.min() >= 0 else ""
        raise ValueError(f"results must lie in [0, 1], got range [{y.min():g}, {y.max():g}]{hint}")
    return y


@dataclass(frozen=True)
class RankingChange:
    """Aggregate scores, ranks (1 = best) and Kendall tau of each scheme against uniform."""

    scores: pd.DataFrame
    ranks: pd.DataFrame
    kendall: pd.DataFrame


def ranking_change(results: pd.DataFrame, weights: Mapping[str, pd.Series] | pd.Series) -> RankingChange:
    """Compare model rankings under uniform averaging and under each weighting scheme.

    ``results``: models x items scores in [0, 1].  ``weights``: one Series (item -> weight) or a
    mapping name -> Series.  The aggregate score of model m is sum_i v_i y_mi / sum_i v_i; tau is
    scipy's Kendall tau-b between the uniform and the reweighted scores.
    """
    y = validate_results(results)
    schemes = {"reweighted": weights} if isinstance(weights, pd.Series) else dict(weights)
    items = list(results.columns)
    scores = {"uniform": y.mean(axis=1)}
    for name, v in schemes.items():
        for item in v.index:
            if item not in items:
                raise KeyError(unknown_name_message(f"item in weights {name!r}", item, items))
        missing = [i for i in items if i not in v.index]
        if missing:
            raise KeyError(f"weights {name!r} have no value for item(s) {missing[:5]}; give a weight for every result column")
        vv = v.reindex(items).to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(vv)):
            raise ValueError(f"weights {name!r} contain non-finite values")
        total = vv.sum()
        if total <= 0:
            raise ValueError(f"weights {name!r} sum to {total:g}; they need a positive total to normalise")
        scores[name] = y @ vv / total
    score_df = pd.DataFrame(scores, index=pd.Index(results.index, name="model"))
    ranks = score_df.rank(ascending=False, method="min").astype(int)
    rows = {}
    for name in schemes:
        res = scipy.stats.kendalltau(score_df["uniform"], score_df[name])
        rows[name] = {"kendall_tau": float(res.statistic), "p_value": float(res.pvalue),
                      "models_moved": int((ranks["uniform"] != ranks[name]).sum())}
    kendall = pd.DataFrame.from_dict(rows, orient="index")
    kendall.index.name = "scheme"
    return RankingChange(scores=score_df, ranks=ranks, kendall=kendall)
