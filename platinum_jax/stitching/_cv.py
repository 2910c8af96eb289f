"""The paper's Table 9 check: K-fold CV of held-out scores, the sigmoid link against a clipped
linear one, by the engine's :func:`platinum_jax.inference.cross_validate` on the paper's folds
(:func:`platinum_jax.inference.kfold_assignments`)."""

from __future__ import annotations

import pandas as pd

from platinum_jax.inference import kfold_assignments
from platinum_jax.models import Anchor, BenchmarkAnchor, ParameterLayout, Rosetta

from ._table import ScoreTable

__all__ = ["cross_validate"]


def cross_validate(table: ScoreTable, anchor: Anchor | None = None, l2: float = 0.1, *,
                   k: int = 5, seed: int = 0,
                   links: tuple[str, ...] = ("sigmoid", "clipped_linear")) -> pd.DataFrame:
    """K-fold CV of held-out scores per link: columns ``link, fold, mse, n_test, converged``,
    one row per (link, fold) plus ``fold == "mean"`` (the score-weighted mean MSE).

    ``"clipped_linear"`` is ``clip(1/2 + alpha_b (C_m - D_b) / 4, 0, 1)`` (the sigmoid's value
    and slope at the middle). Each fold is refitted from the paper's start with its held-out
    scores at weight 0, all folds in one vmapped solve.
    """
    anchor = BenchmarkAnchor() if anchor is None else anchor
    table.check_connected()
    ParameterLayout.from_table(table, anchor)  # unknown anchor names raise here
    from platinum_jax.inference import cross_validate as engine_cross_validate

    folds, rows = kfold_assignments(table.n_scores, k, seed), []
    for link in links:
        per_fold = engine_cross_validate(Rosetta(link=link, l2=float(l2), anchor=anchor),
                                         table.responses, folds=folds, max_steps=1000)
        n = per_fold["n_test"].astype(int)
        rows += [{"link": link, "fold": str(f), "mse": r["mse"], "n_test": int(r["n_test"]),
                  "converged": bool(r["converged"])} for f, r in per_fold.iterrows()]
        rows.append({"link": link, "fold": "mean", "mse": float((per_fold["mse"] * n).sum()
                                                                 / n.sum()),
                     "n_test": int(n.sum()), "converged": bool(per_fold["converged"].all())})
    return pd.DataFrame(rows)
