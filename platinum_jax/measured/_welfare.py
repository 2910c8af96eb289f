"""Per-item welfare from an LLM judge's ranking of work activities (Haupt et al.).

A judge ranks the O*NET generalized work activities (GWAs) an item exercises; each GWA carries a
worker-share score (WORKBank's share of workers wanting automation or augmentation, rescaled to
[1, 5]). An item's welfare is the rank-weighted sum of the scores of its top-k GWAs:

    w(i) = Σ_{k=1..K} λ_k · s(g_ik),   λ_k = 1/k (reciprocal) or 1/K (uniform),

where g_ik is the k-th ranked GWA. A GWA dropped from the scores (fewer than 5 WORKBank tasks,
marked ``dropped`` or with a NaN score) keeps its rank slot and adds 0; an item none of whose
top-K GWAs is kept has no welfare (NaN), as in the authors' release.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from platinum_jax._welfare_ranks import SCORE_RANGE, rank_weights, welfare_bounds

__all__ = ["rank_weights", "rescale_welfare", "welfare_bounds", "welfare_from_rankings",
           "welfare_table"]


def rescale_welfare(w, *, top_k: int = 5, weighting: str = "reciprocal",
                    score_range: tuple[float, float] = SCORE_RANGE):
    """Map raw welfare linearly from its theoretical range :func:`welfare_bounds` onto
    ``score_range`` (``[1, 5]``): ``1 + 4 (w − lo) / (hi − lo)``.

    The bounds are fixed by the formula, not by the data, so rescaled values are comparable
    across item sets. Works on a number, an array, a Series or a DataFrame (every column).
    """
    lo, hi = welfare_bounds(top_k, weighting, score_range)
    a, b = map(float, score_range)
    return a + (b - a) * (w - lo) / (hi - lo)


def _scores_by_concept(concept_scores: pd.DataFrame, column: str) -> pd.Series:
    if not isinstance(concept_scores, pd.DataFrame):
        raise TypeError(f"concept_scores must be a DataFrame, got {type(concept_scores).__name__}")
    frame = concept_scores
    if "concept_id" in frame.columns:
        frame = frame.set_index("concept_id")
    elif frame.index.name != "concept_id":
        raise ValueError("concept_scores needs a 'concept_id' column or index")
    if column not in frame.columns:
        raise ValueError(f"concept_scores has no column {column!r} (columns: "
                         f"{', '.join(map(str, frame.columns))})")
    if frame.index.duplicated().any():
        dup = frame.index[frame.index.duplicated()][0]
        raise ValueError(f"concept_scores lists concept_id {dup!r} twice")
    score = pd.to_numeric(frame[column], errors="coerce").astype(float)
    if "dropped" in frame.columns:
        score = score.where(~frame["dropped"].astype(bool))
    return score


def welfare_from_rankings(rankings: pd.DataFrame, concept_scores: pd.DataFrame, *,
                          column: str | Mapping[str, str] = "p_auto_15", top_k: int = 5,
                          weighting: str = "reciprocal") -> pd.Series:
    """Per-item welfare ``w = Σ_{k≤K} λ_k s(g_k)`` in raw units (see the module docstring).

    Args:
        rankings: long frame, one row per ranked GWA: ``rank`` (1-based), ``concept_id`` and any
            id columns (e.g. ``task, doc_id, judge, perspective``); every other column names the
            ranking the row belongs to. Ranks below ``top_k`` only are used.
        concept_scores: one row per GWA, ``concept_id`` (column or index), the score ``column``
            and optionally ``dropped``; dropped GWAs and NaN scores add 0 and keep their slot.
        column: the score column, or a mapping ``perspective -> column`` (then ``rankings``
            needs a ``perspective`` column), e.g. ``{"automation": "p_auto_15",
            "augmentation": "p_aug_15"}``.
        top_k, weighting: ``K`` and ``λ`` (:func:`rank_weights`).

    Returns:
        Series ``welfare`` indexed by the id columns; NaN where no top-K GWA is kept.
    """
    lam = rank_weights(top_k, weighting)
    if not isinstance(rankings, pd.DataFrame) or not {"rank", "concept_id"} <= set(rankings):
        have = list(rankings.columns) if isinstance(rankings, pd.DataFrame) else type(rankings)
        raise ValueError(f"rankings must be a frame with columns rank, concept_id (got {have})")
    ids = [c for c in rankings.columns if c not in ("rank", "concept_id")]
    if not ids:
        raise ValueError("rankings needs at least one id column (e.g. task, doc_id) besides "
                         "rank and concept_id")
    rank = pd.to_numeric(rankings["rank"], errors="coerce")
    if rank.isna().any() or (rank < 1).any() or (rank % 1 != 0).any():
        raise ValueError("rankings: rank must be a 1-based integer in every row")
    if rankings.duplicated([*ids, "rank"]).any():
        row = rankings[rankings.duplicated([*ids, "rank"])].iloc[0]
        raise ValueError(f"rankings: rank {row['rank']} appears twice for "
                         f"{dict(row[ids])}")
    if isinstance(column, Mapping):
        if "perspective" not in rankings.columns:
            raise ValueError("column is a mapping by perspective, but rankings has no "
                             "'perspective' column")
        unknown = sorted(set(rankings["perspective"]) - set(column))
        if unknown:
            raise ValueError(f"rankings has perspectives {unknown} that column does not map "
                             f"to a score column (mapped: {sorted(column)})")
        scores = {p: _scores_by_concept(concept_scores, c) for p, c in column.items()}
        known = scores[next(iter(scores))].index
    else:
        scores = {None: _scores_by_concept(concept_scores, column)}
        known = scores[None].index
    missing = sorted(set(rankings["concept_id"]) - set(known))
    if missing:
        raise ValueError(f"rankings name GWAs that concept_scores does not list: {missing[:5]} "
                         "(add them to the scores, marked dropped if they have no score)")
    frame = rankings[ids].copy()
    if None in scores:
        s = scores[None].reindex(rankings["concept_id"]).to_numpy()
    else:
        s = np.full(len(rankings), np.nan)
        for p, sc in scores.items():
            at = (rankings["perspective"] == p).to_numpy()
            s[at] = sc.reindex(rankings["concept_id"][at]).to_numpy()
    r = rank.to_numpy().astype(int)
    used = (r <= top_k) & np.isfinite(s)
    frame["_part"] = np.where(used, lam[np.minimum(r, top_k) - 1] * np.where(used, s, 0.0), 0.0)
    frame["_used"] = used
    grouped = frame.groupby(ids, sort=False, dropna=False)
    out = grouped["_part"].sum().where(grouped["_used"].any())
    return out.rename("welfare")


PERSPECTIVE_COLUMNS = {"automation": "p_auto_15", "augmentation": "p_aug_15"}


def welfare_table(loadings: pd.DataFrame, concept_scores: pd.DataFrame, *,
                  judge: str | None = "claude", top_k: int = 5,
                  weighting: str = "reciprocal") -> pd.DataFrame:
    """``w_auto`` and ``w_aug`` per item from one judge's rankings of both perspectives.

    ``loadings`` is long as the ``loadings`` of a
    :class:`~platinum_jax.importers.PrincipalAgentRelease` (``perspective`` in ``automation`` /
    ``augmentation``); ``judge`` selects the rows of one judge when there is a ``judge`` column
    (None: there is none). Scores: ``p_auto_15`` for automation, ``p_aug_15`` for augmentation.
    Returns raw welfare indexed by the remaining id columns (``task, doc_id``), as the
    release's ``welfare.csv``; :func:`rescale_welfare` maps it onto [1, 5].
    """
    frame = loadings
    if judge is not None:
        if "judge" not in frame.columns:
            raise ValueError("loadings has no 'judge' column; pass judge=None")
        if judge not in set(frame["judge"]):
            raise ValueError(f"loadings has no rankings by judge {judge!r} (judges: "
                             f"{sorted(set(frame['judge']))})")
        frame = frame[frame["judge"] == judge].drop(columns="judge")
    w = welfare_from_rankings(frame, concept_scores, column=PERSPECTIVE_COLUMNS, top_k=top_k,
                              weighting=weighting)
    out = w.unstack("perspective").reindex(columns=list(PERSPECTIVE_COLUMNS))
    out.columns = ["w_auto", "w_aug"]
    return out
