"""Audit judge labels against expert labels on a subset of items.

Expert labels come as a long CSV with columns ``field, concept, item_id, value``: ``field`` is
``W``, ``K`` or ``N`` (concept-level, ``item_id`` empty) or ``S`` (per item and concept).  For each
judge (and the pooled consensus of all judges) and each field we report the number of labelled
cells, the exact agreement and the quadratic-weighted Cohen's kappa

    kappa_w = 1 - sum_ab w_ab O_ab / sum_ab w_ab E_ab,   w_ab = (a - b)^2 / (k - 1)^2,

with O the k x k confusion matrix of (judge, expert) levels and E = outer(row sums, column sums) / n
the table expected by chance.  The review list puts failed cells first, then the largest
judge-expert gaps, then the cells where the judge's own samples agree least.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax._names import unknown_name_message
from platinum_jax.rubric import COST_LEVELS, NOISE_LEVELS, STRENGTH_LEVELS, WELFARE_LEVELS

from ._runner import Judgments

__all__ = ["FIELD_LEVELS", "load_expert_labels", "quadratic_weighted_kappa", "AuditReport", "audit"]

FIELD_LEVELS = {"W": WELFARE_LEVELS, "K": COST_LEVELS, "N": NOISE_LEVELS, "S": STRENGTH_LEVELS}
_ALIASES = {"welfare_alignment": "W", "marginal_improvement_cost": "K", "improvement_cost": "K",
            "measurement_noise": "N", "measurement_strength": "S"}


def _level_index(field: str, value) -> int:
    levels = FIELD_LEVELS[field]
    if field in ("W", "S"):
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = np.nan
        if not (np.isfinite(v) and v.is_integer() and int(v) in levels):
            raise ValueError(f"{field} must be an integer in {list(levels)}, got {value!r}")
        return levels.index(int(v))
    if not isinstance(value, str) or value.strip() not in levels:
        raise ValueError(f"{field} must be one of {list(levels)}, got {value!r}")
    return levels.index(value.strip())


def load_expert_labels(path: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and validate expert labels (long format: field, concept, item_id, value).

    Returns columns field, concept, item_id (None for W/K/N) and ``level`` (0-based position on
    the field's scale).  Unknown fields, off-scale values and duplicate cells raise ``ValueError``
    naming the CSV row.
    """
    df = path if isinstance(path, pd.DataFrame) else pd.read_csv(path, dtype=str, keep_default_na=False)
    need = {"field", "concept", "item_id", "value"}
    if not need <= set(df.columns):
        raise ValueError(f"expert labels need columns {sorted(need)}, got {list(df.columns)}")
    rows, seen = [], set()
    for k, rec in enumerate(df.to_dict("records"), start=2):  # row 1 is the CSV header
        where = f"expert labels row {k}"
        field = str(rec["field"]).strip()
        field = _ALIASES.get(field, field)
        if field not in FIELD_LEVELS:
            raise ValueError(f"{where}: {unknown_name_message('field', field, list(FIELD_LEVELS))}")
        raw_item = rec["item_id"]
        item = "" if raw_item is None or (isinstance(raw_item, float) and np.isnan(raw_item)) else str(raw_item).strip()
        if field == "S" and not item:
            raise ValueError(f"{where}: field S needs an item_id")
        if field != "S" and item:
            raise ValueError(f"{where}: field {field} is per concept; leave item_id empty")
        try:
            level = _level_index(field, rec["value"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        cell = (field, str(rec["concept"]).strip(), item or None)
        if cell in seen:
            raise ValueError(f"{where}: duplicate label for {cell}")
        seen.add(cell)
        rows.append({"field": cell[0], "concept": cell[1], "item_id": cell[2], "level": level})
    if not rows:
        raise ValueError("expert labels are empty")
    return pd.DataFrame(rows)


def quadratic_weighted_kappa(a, b, k: int) -> float:
    """Cohen's kappa with quadratic weights for two raters' level indices in 0..k-1.

    NaN when the chance disagreement is zero (both raters use one and the same level).
    """
    a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("kappa needs two equally long, non-empty 1-d label vectors")
    if k < 2 or a.min() < 0 or b.min() < 0 or a.max() >= k or b.max() >= k:
        raise ValueError(f"labels must be level indices in 0..{k - 1}")
    obs = np.zeros((k, k))
    np.add.at(obs, (a, b), 1.0)
    E = np.outer(obs.sum(axis=1), obs.sum(axis=0)) / a.size
    idx = np.arange(k)
    Wt = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    denom = float((Wt * E).sum())
    return float("nan") if denom == 0 else 1.0 - float((Wt * obs).sum()) / denom


def _judged_cells(j: Judgments) -> pd.DataFrame:
    rows = []
    cs = j.concept_scores
    for c, rec in cs.iterrows():
        for f in ("W", "K", "N"):
            v = rec[f]
            ok = v is not None and v is not pd.NA
            rows.append({"field": f, "concept": c, "item_id": None,
                         "level": _level_index(f, v) if ok else np.nan,
                         "judged": v if ok else None, "agreement": rec[f"{f}_agreement"]})
    S, A = j.strengths, j.strength_agreement
    for i in S.index:
        for c in S.columns:
            v = S.loc[i, c]
            rows.append({"field": "S", "concept": c, "item_id": i,
                         "level": float(v) if np.isfinite(v) else np.nan,
                         "judged": int(v) if np.isfinite(v) else None, "agreement": A.loc[i, c]})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class AuditReport:
    """``agreement``: per (judge, field) n, exact agreement, quadratic-weighted kappa.
    ``review``: judged cells ordered by what a curator should look at first."""

    agreement: pd.DataFrame
    review: pd.DataFrame


def audit(judgments: Judgments, expert: pd.DataFrame | str | Path) -> AuditReport:
    """Compare each judge and the pooled consensus with expert labels (see module docstring)."""
    labels = expert if isinstance(expert, pd.DataFrame) and "level" in expert.columns else load_expert_labels(expert)
    concepts = list(judgments.concept_scores.index)
    items = set(judgments.strengths.index)
    for rec in labels.itertuples():
        if rec.concept not in concepts:
            raise KeyError(unknown_name_message("concept in expert labels", rec.concept, concepts))
        if isinstance(rec.item_id, str) and rec.item_id and rec.item_id not in items:
            raise KeyError(unknown_name_message("item in expert labels", rec.item_id, sorted(items)))
    key = ["field", "concept", "item_id"]
    lab = labels.assign(item_id=labels["item_id"].fillna("")).rename(columns={"level": "expert_level"})
    judges = sorted(set(judgments.records["judge"]))
    views = [("consensus", judgments)] + ([(name, judgments.for_judge(name)) for name in judges] if len(judges) > 1 else [])
    rows = []
    consensus_cells = None
    for name, view in views:
        cells = _judged_cells(view)
        cells = cells.assign(item_id=cells["item_id"].fillna(""))
        merged = cells.merge(lab, on=key, how="inner")
        if name == "consensus":
            consensus_cells = cells.merge(lab, on=key, how="left")
        for f in FIELD_LEVELS:
            sub = merged[(merged["field"] == f)]
            judged = sub.dropna(subset=["level"])
            n = len(judged)
            rows.append({
                "judge": name if len(judges) > 1 else judges[0], "field": f, "n_labelled": len(sub),
                "n_failed": len(sub) - n,
                "exact_agreement": float(np.mean(judged["level"] == judged["expert_level"])) if n else np.nan,
                "qw_kappa": quadratic_weighted_kappa(judged["level"].astype(int), judged["expert_level"].astype(int),
                                                     len(FIELD_LEVELS[f])) if n else np.nan,
            })
    agreement = pd.DataFrame(rows).set_index(["judge", "field"])
    rv = consensus_cells.copy()
    scale = rv["field"].map({f: len(v) - 1 for f, v in FIELD_LEVELS.items()}).astype(float)
    rv["expert"] = [None if np.isnan(e) else FIELD_LEVELS[f][int(e)] for f, e in zip(rv["field"], rv["expert_level"], strict=True)]
    rv["gap"] = (rv["level"] - rv["expert_level"]).abs() / scale
    rv["failed"] = rv["level"].isna()
    rv["item_id"] = rv["item_id"].replace("", None)
    rv = rv.sort_values(["failed", "gap", "agreement"], ascending=[False, False, True], na_position="last")
    review = rv[["field", "concept", "item_id", "judged", "expert", "gap", "agreement", "failed"]].reset_index(drop=True)
    return AuditReport(agreement=agreement, review=review)
