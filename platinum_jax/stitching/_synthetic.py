"""Seeded synthetic score tables with known capabilities, difficulties and slopes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._table import ScoreTable

__all__ = ["SyntheticTruth", "synthetic_score_table"]


@dataclass(frozen=True)
class SyntheticTruth:
    """The parameters a synthetic table was drawn from (on the anchored scale).

    ``capabilities`` is indexed by model, ``benchmarks`` by benchmark with columns
    ``difficulty`` and ``slope``; ``anchor_benchmark`` has difficulty 0 and slope 1.
    """

    capabilities: pd.Series
    benchmarks: pd.DataFrame
    anchor_benchmark: str
    noise: float


def synthetic_score_table(
    seed: int = 0,
    n_models: int = 40,
    n_benchmarks: int = 8,
    density: float = 1.0,
    noise: float = 0.02,
) -> tuple[ScoreTable, SyntheticTruth]:
    """Draw ``y = clip(sigmoid(alpha_b (C_m - D_b)) + noise * eps, 0, 1)`` for a random subset.

    ``C_m ~ N(0, 1.2^2)``, ``D_b ~ N(0, 1)``, ``alpha_b ~ U(0.7, 2.5)``; benchmark ``"bench_00"``
    is the anchor (``D = 0``, ``alpha = 1``). Each (m, b) pair is kept with probability
    ``density``; every model keeps at least two benchmarks and the anchor is scored by every model,
    so the graph is connected. Release dates are spread over 2023-2025 in capability order.

    Returns ``(table, truth)``.
    """
    if not 0 < density <= 1:
        raise ValueError(f"density must lie in (0, 1] (got {density})")
    if n_models < 2 or n_benchmarks < 2:
        raise ValueError("a synthetic table needs at least 2 models and 2 benchmarks")
    if noise < 0:
        raise ValueError(f"noise must be >= 0 (got {noise})")
    rng = np.random.default_rng(seed)
    cap = rng.normal(0.0, 1.2, n_models)
    diff = rng.normal(0.0, 1.0, n_benchmarks)
    slope = rng.uniform(0.7, 2.5, n_benchmarks)
    diff[0], slope[0] = 0.0, 1.0
    models = [f"model_{i:03d}" for i in range(n_models)]
    benches = [f"bench_{j:02d}" for j in range(n_benchmarks)]

    keep = rng.random((n_models, n_benchmarks)) < density
    keep[:, 0] = True  # the anchor links every model, so the scale is identified
    for i in range(n_models):  # and each model has at least one other benchmark
        if keep[i, 1:].sum() == 0:
            keep[i, 1 + rng.integers(n_benchmarks - 1)] = True
    for j in range(1, n_benchmarks):  # every benchmark appears
        if keep[:, j].sum() < 2:
            keep[rng.choice(n_models, 2, replace=False), j] = True

    mi, bi = np.nonzero(keep)
    clean = 1.0 / (1.0 + np.exp(-slope[bi] * (cap[mi] - diff[bi])))
    y = np.clip(clean + noise * rng.standard_normal(mi.size), 0.0, 1.0)
    order = np.argsort(np.argsort(cap))
    dates = pd.Timestamp("2023-01-01") + pd.to_timedelta(
        (order / max(n_models - 1, 1) * 1000).astype(int), unit="D"
    )
    frame = pd.DataFrame(
        {
            "model": np.asarray(models)[mi],
            "benchmark": np.asarray(benches)[bi],
            "score": y,
            "model_release_date": np.asarray(dates)[mi],
            "source": "synthetic",
        }
    )
    table = ScoreTable.from_frame(frame, name="synthetic table")
    truth = SyntheticTruth(
        capabilities=pd.Series(cap, index=pd.Index(models, name="model"), name="capability"),
        benchmarks=pd.DataFrame(
            {"difficulty": diff, "slope": slope}, index=pd.Index(benches, name="benchmark")
        ),
        anchor_benchmark=benches[0],
        noise=noise,
    )
    return table, truth
