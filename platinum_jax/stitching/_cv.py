"""K-fold cross-validation over held-out scores: the sigmoid link against a clipped-linear one.

The paper's Table 9 asks whether the sigmoid's floor and ceiling matter; here the engine's
:func:`platinum_jax.inference.cross_validate` refits the Rosetta preset of each link on the
paper's folds (held-out scores at weight 0, all folds in one vmapped solve) and the held-out
squared errors are averaged per link.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._fit import fit_stitching
from ._model import Anchor, BenchmarkAnchor, ParameterLayout
from ._table import ScoreTable

__all__ = ["cross_validate", "kfold_assignments"]


def kfold_assignments(n_scores: int, k: int, seed: int = 0) -> np.ndarray:
    """Fold label in ``0..k-1`` per score: a seeded random permutation cut into k near-equal parts."""
    if not 2 <= k <= n_scores:
        raise ValueError(f"k must lie between 2 and the number of scores ({n_scores}); got {k}")
    perm = np.random.default_rng(seed).permutation(n_scores)
    folds = np.empty(n_scores, dtype=np.int32)
    folds[perm] = np.arange(n_scores) % k
    return folds


def cross_validate(
    table: ScoreTable,
    anchor: Anchor | None = None,
    l2: float = 0.1,
    *,
    k: int = 5,
    seed: int = 0,
    links: tuple[str, ...] = ("sigmoid", "clipped_linear"),
) -> pd.DataFrame:
    """K-fold CV of held-out scores for each link; one row per (link, fold) plus the mean.

    Link ``"clipped_linear"`` is ``clip(1/2 + alpha_b (C_m - D_b) / 4, 0, 1)`` (same value and
    slope as the sigmoid at the middle, so both start from the same point). Every fold is fitted
    from the paper's start with its held-out scores at weight 0 (static shapes: all folds in one
    vmapped LM solve). Returns columns ``link, fold, mse, n_test, converged``; the rows with
    ``fold == "mean"`` give the score-weighted mean MSE per link.
    """
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if len(table.components()) > 1:
        fit_stitching(table, anchor, l2)  # raises the connected-components error
    ParameterLayout.from_table(table, anchor)  # unknown anchor names raise here
    from platinum_jax.inference import cross_validate as engine_cross_validate

    from ._engine import rosetta_model

    folds = kfold_assignments(table.n_scores, k, seed)
    rows = []
    for link in links:
        per_fold = engine_cross_validate(rosetta_model(anchor, float(l2), link), table.responses,
                                         folds=folds, max_steps=1000)
        for f, row in per_fold.iterrows():
            rows.append({"link": link, "fold": str(f), "mse": row["mse"],
                         "n_test": int(row["n_test"]), "converged": bool(row["converged"])})
        n_total = int(per_fold["n_test"].sum())
        rows.append({"link": link, "fold": "mean",
                     "mse": float((per_fold["mse"] * per_fold["n_test"]).sum() / n_total),
                     "n_test": n_total, "converged": bool(per_fold["converged"].all())})
    return pd.DataFrame(rows)
