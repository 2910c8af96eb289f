"""Synthetic worlds with known primitives, for checking the weights pipeline against truth.

Benchmarks as items, one ability (the Rosetta model of Ho et al. 2025, "A Rosetta Stone for AI
Benchmarks"): ``score_sb = sigmoid(α_b (C_s − D_b)) + e_sb`` with ``e_s ~ N(0, Σ)``,
``Σ = diag(σ_b²) + ffᵀ`` (a shock shared by a subject across benchmarks, orthogonal to the
loadings: non-diagonal, and not commuting with ``M``).  The true loadings follow the same rule as :func:`primitives_from_fit`
(the average over subjects of ``∂μ_b/∂C``), so the estimated and true primitives are the same
quantity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["WeightsWorld", "weights_world"]


@dataclass(frozen=True)
class WeightsWorld:
    """A synthetic score table and the true primitives behind it (items sorted by name)."""

    scores: pd.DataFrame  # long: subject, item, response
    items: list[str]
    A: np.ndarray  # (m, 1)
    Sigma: np.ndarray  # (m, m)
    capability: np.ndarray
    difficulty: np.ndarray
    slope: np.ndarray


def weights_world(n_subjects: int = 179, n_items: int = 38, observed: float = 0.195, *,
                  noise: tuple[float, float] = (0.02, 0.08), shared: float = 0.02,
                  min_per_subject: int = 4, seed: int = 0) -> WeightsWorld:
    """A world at the Epoch table's size by default (179 models, 38 benchmarks, ~1,324 scores).

    The first item is the anchor (difficulty 0, slope 1), as the Rosetta model's identification
    requires; ``observed`` is the share of the subject × item grid that is scored (each subject
    gets at least ``min_per_subject`` benchmarks).
    """
    rng = np.random.default_rng(seed)
    items = [f"b{j:03d}" for j in range(n_items)]
    subjects = [f"m{s:03d}" for s in range(n_subjects)]
    cap = rng.normal(0.0, 1.5, n_subjects)
    diff = rng.normal(0.0, 1.2, n_items)
    slope = np.exp(rng.normal(0.0, 0.35, n_items))
    diff[0], slope[0] = 0.0, 1.0
    sd = rng.uniform(noise[0], noise[1], n_items)
    z = slope * (cap[:, None] - diff)
    mu = 1.0 / (1.0 + np.exp(-z))
    A = (mu * (1 - mu) * slope).mean(axis=0)[:, None]
    # A subject-level shock shared across benchmarks, with no component along the loadings: a
    # shock along them moves every score as a change of capability would, so a table with one
    # score per (subject, benchmark) cannot tell it from capability.
    f = rng.normal(size=n_items)
    f -= A[:, 0] * (A[:, 0] @ f) / (A[:, 0] @ A[:, 0])
    f *= shared / np.sqrt(np.mean(f**2))
    Sigma = np.diag(sd**2) + np.outer(f, f)
    mask = rng.random((n_subjects, n_items)) < observed
    for s in range(n_subjects):  # every subject scored on a few benchmarks at least
        if mask[s].sum() < min_per_subject:
            mask[s, rng.choice(n_items, min_per_subject, replace=False)] = True
    for j in range(n_items):
        if mask[:, j].sum() < 3:
            mask[rng.choice(n_subjects, 3, replace=False), j] = True
    e = rng.normal(size=(n_subjects, n_items)) * sd + rng.normal(size=(n_subjects, 1)) * f
    y = mu + e
    s_idx, i_idx = np.nonzero(mask)
    scores = pd.DataFrame({"subject": np.asarray(subjects)[s_idx],
                           "item": np.asarray(items)[i_idx], "response": y[s_idx, i_idx]})
    return WeightsWorld(scores, items, A, Sigma, cap, diff, slope)
