"""Synthetic benchmark worlds with known ground truth (the package's embedded default data).

:func:`demo_world` builds a principal-agent instance (Haupt et al.'s model) whose items fall into named
concept groups with chosen welfare relevance, improvement cost and measurement noise, so that
which items are platinum is known by construction rather than computed.

:func:`synthetic_score_table` draws benchmark scores from the Rosetta Stone model of Ho et al.
(``sigmoid(alpha_b (C_m - D_b))`` plus noise) with known capabilities, difficulties and slopes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from platinum_jax.agency import Primitives

if TYPE_CHECKING:
    from platinum_jax.data import ScoreTable

__all__ = ["ConceptSpec", "DEMO_CONCEPTS", "DemoWorld", "SyntheticTruth", "demo_world",
           "synthetic_score_table"]


@dataclass(frozen=True)
class ConceptSpec:
    """One latent concept of a synthetic world and the items that measure it.

    ``welfare`` is the concept's share of the welfare vector (before normalisation), ``lam`` its
    ease of improvement λ (large = cheap) and ``sigma`` its measurement noise σ.
    """

    name: str
    n_items: int
    welfare: float
    lam: float
    sigma: float


# Each group isolates one reason an item is (not) platinum at r = 1, tau = (0.3, 0.4, 2).
DEMO_CONCEPTS: tuple[ConceptSpec, ...] = (
    ConceptSpec("math reasoning", 5, welfare=0.60, lam=4.0, sigma=0.5),  # aligned, cheap, precise
    ConceptSpec("code repair", 4, welfare=0.55, lam=3.0, sigma=0.6),  # aligned, cheap, precise
    ConceptSpec("agentic planning", 3, welfare=0.50, lam=0.3, sigma=0.6),  # too costly to improve
    ConceptSpec("open-ended writing", 4, welfare=0.45, lam=3.0, sigma=6.0),  # too noisy
    ConceptSpec("trivia recall", 4, welfare=0.05, lam=5.0, sigma=0.3),  # not welfare-relevant
)
# Directions inside a group (one item against another) are expensive, noisy, welfare-neutral.
CONTRAST_LAMBDA = 0.2
CONTRAST_SIGMA = 2.0


@dataclass(frozen=True)
class DemoWorld:
    """A synthetic instance with its labels and the truth it was built from."""

    primitives: Primitives
    items: pd.DataFrame  # index item; columns concept, platinum (truth)
    concepts: pd.DataFrame  # index concept; welfare_alignment, lam, sigma, ratio, platinum (truth)
    tau_w: float
    tau_m: float
    tau_e: float

    @property
    def item_names(self) -> list[str]:
        return list(self.items.index)


def _group_basis(size: int) -> np.ndarray:
    # Orthonormal basis whose first column is the uniform direction of the group.
    X = np.eye(size)
    X[:, 0] = 1.0
    Q, _ = np.linalg.qr(X)
    return Q * np.sign(Q[0, 0])


def demo_world(
    seed: int = 0,
    *,
    concepts: tuple[ConceptSpec, ...] = DEMO_CONCEPTS,
    n_activities: int | None = None,
    r: float = 1.0,
    tau_w: float = 0.3,
    tau_m: float = 0.4,
    tau_e: float = 2.0,
) -> DemoWorld:
    """A benchmark world with ``m = Σ n_items`` tasks whose ``M`` and ``Σ`` share a concept basis.

    Construction: each concept is the uniform direction over its items (loading
    ``1/√n_items``); within-group contrasts complete an orthonormal basis ``Q``.
    ``M = Q diag(λ) Qᵀ`` and ``Σ = Q diag(σ) Qᵀ``; ``w ∝ Σ_g welfare_g u_g`` with ``‖w‖ = 1``.
    The activity side is random but exact: ``C = LLᵀ`` (seeded, well conditioned) and
    ``A = Q [diag(√λ) 0] R Lᵀ`` with ``R`` a random rotation, so ``AC⁻¹Aᵀ = M``.  The truth
    (which concepts and items are platinum) follows from the specs and thresholds directly.
    """
    if r <= 0:
        raise ValueError(f"r must be > 0 for the demo world, got {r}")
    rng = np.random.default_rng(seed)
    sizes = [c.n_items for c in concepts]
    m = int(sum(sizes))
    n = m if n_activities is None else int(n_activities)
    if n < m:
        raise ValueError(f"n_activities must be >= the number of items ({m}), got {n}")

    Q = np.zeros((m, m))
    lam = np.zeros(m)
    sig = np.zeros(m)
    w = np.zeros(m)
    item_concept: list[str] = []
    col, row = 0, 0
    for spec in concepts:
        if spec.n_items < 1 or spec.lam <= 0 or spec.sigma <= 0:
            raise ValueError(f"concept {spec.name!r} needs n_items >= 1, lam > 0 and sigma > 0")
        B = _group_basis(spec.n_items)
        Q[row:row + spec.n_items, col:col + spec.n_items] = B
        lam[col], sig[col] = spec.lam, spec.sigma
        lam[col + 1:col + spec.n_items] = CONTRAST_LAMBDA
        sig[col + 1:col + spec.n_items] = CONTRAST_SIGMA
        w[row:row + spec.n_items] = spec.welfare * B[:, 0]
        item_concept += [spec.name] * spec.n_items
        col += spec.n_items
        row += spec.n_items
    w /= np.linalg.norm(w)
    Sigma = (Q * sig) @ Q.T

    G = rng.normal(size=(n, n))
    C = G @ G.T / n + np.eye(n)
    L = np.linalg.cholesky(C)
    R, _ = np.linalg.qr(rng.normal(size=(n, n)))
    root = np.zeros((m, n))
    root[:, :m] = np.diag(np.sqrt(lam))
    A = Q @ root @ R @ L.T

    names = []
    for spec in concepts:
        stem = spec.name.split()[0]
        names += [f"{stem}-{k + 1:02d}" for k in range(spec.n_items)]
    welfare_norm = float(np.sqrt(sum(c.welfare**2 for c in concepts)))
    concept_rows = []
    for spec in concepts:
        alignment = spec.welfare / welfare_norm
        ratio = spec.lam / (r * spec.sigma)
        loading = 1.0 / np.sqrt(spec.n_items)
        concept_rows.append(
            dict(concept=spec.name, welfare_alignment=alignment, lam=spec.lam, sigma=spec.sigma,
                 ratio=ratio, item_loading=loading,
                 platinum=bool(alignment >= tau_w and ratio >= tau_e and loading >= tau_m))
        )
    concept_df = pd.DataFrame(concept_rows).set_index("concept")
    items = pd.DataFrame(
        {"concept": item_concept,
         "platinum": [bool(concept_df.loc[c, "platinum"]) for c in item_concept]},
        index=pd.Index(names, name="item"),
    )
    return DemoWorld(Primitives(A, C, Sigma, w, r), items, concept_df, tau_w, tau_m, tau_e)


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

    Returns ``(table, truth)``: a :class:`platinum_jax.data.ScoreTable` and the truth.
    """
    from platinum_jax.data import ScoreTable

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
