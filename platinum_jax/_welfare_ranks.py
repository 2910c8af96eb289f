"""The rank weights of Haupt et al.'s per-item welfare and the range they give it: shared by the
release reader (which checks the published welfare against the range) and
:mod:`platinum_jax.measured` (which computes welfare), without either importing the other."""

from __future__ import annotations

import numpy as np

__all__ = ["SCORE_RANGE", "WEIGHTINGS", "rank_weights", "welfare_bounds"]

WEIGHTINGS = ("reciprocal", "uniform")
# The range of the per-GWA worker-share scores the release's ``*_15`` columns are rescaled to.
SCORE_RANGE = (1.0, 5.0)


def rank_weights(top_k: int = 5, weighting: str = "reciprocal") -> np.ndarray:
    """``λ_1..λ_K``: ``1/k`` (``"reciprocal"``) or ``1/K`` each (``"uniform"``, the authors'
    equal weights, so that the uniform sum is the mean of the top-K scores)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    if weighting == "reciprocal":
        return 1.0 / np.arange(1, top_k + 1)
    if weighting == "uniform":
        return np.full(top_k, 1.0 / top_k)
    raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")


def welfare_bounds(top_k: int = 5, weighting: str = "reciprocal",
                   score_range: tuple[float, float] = SCORE_RANGE) -> tuple[float, float]:
    """``(lo, hi) = (s_min · Σλ, s_max · Σλ)``: the welfare of an item whose top-K GWAs all
    score ``s_min`` (resp. ``s_max``); for reciprocal top-5, ``[H_5, 5·H_5]``. Dropped GWAs can
    put an item below ``lo`` (down to 0), never above ``hi``."""
    total = float(rank_weights(top_k, weighting).sum())
    lo, hi = map(float, score_range)
    if not lo < hi:
        raise ValueError(f"score_range must be (low, high) with low < high, got {score_range!r}")
    return lo * total, hi * total
