"""Posterior over the designer's decisions: labelled results from draws of the primitives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._decisions import decisions_per_draw
from ._intervals import bca_interval

__all__ = ["PrimitiveDraws", "WeightsPosterior", "posterior_decisions", "weight_draws"]

DEFAULT_R_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class PrimitiveDraws:
    """Draws of the primitives of Haupt et al.'s model, labelled.

    Attributes:
        A: loadings (D, m, K): ``A_ik`` is how much item ``i``'s expected score rises per unit
            of effort on activity (ability) ``k``.
        C: effort cost (K, K), positive definite, shared by all draws.
        d: diagonal part of the noise covariance (D, m), ``Σ = diag(d) + FFᵀ``, all ``> 0``.
        F: low-rank part of the noise covariance (D, m, k); ``k = 0`` means no correlated part.
        w: welfare weights (D, m).
        items: item names (m); abilities: ability names (K).
        notes: how each primitive was obtained (written to ``summary.json``).
        estimate: for bootstrap draws, the primitives of the full-data fit (one draw); with it
            :func:`posterior_decisions` gives bias-corrected (BC) intervals by default.
        jackknife: for bootstrap draws, the primitives with one group of resampled units
            left out per draw; with ``estimate``, the intervals are BCa.
    """

    A: np.ndarray
    C: np.ndarray
    d: np.ndarray
    F: np.ndarray
    w: np.ndarray
    items: tuple[str, ...]
    abilities: tuple[str, ...]
    notes: dict = field(default_factory=dict)
    estimate: PrimitiveDraws | None = None
    jackknife: PrimitiveDraws | None = None

    def __post_init__(self):
        A, C, d, F, w = (np.asarray(x, dtype=np.float64) for x in
                         (self.A, self.C, self.d, self.F, self.w))
        if A.ndim != 3:
            raise ValueError(f"A must have shape (draws, items, abilities), got {A.shape}")
        D, m, K = A.shape
        for name, x, shape in (("C", C, (K, K)), ("d", d, (D, m)), ("w", w, (D, m))):
            if x.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (from A {A.shape}), got "
                                 f"{x.shape}")
        if F.ndim != 3 or F.shape[:2] != (D, m):
            raise ValueError(f"F must have shape ({D}, {m}, k), got {F.shape}")
        if len(self.items) != m or len(self.abilities) != K:
            raise ValueError(f"need {m} item names and {K} ability names, got "
                             f"{len(self.items)} and {len(self.abilities)}")
        for name, x in (("A", A), ("C", C), ("d", d), ("F", F), ("w", w)):
            if not np.all(np.isfinite(x)):
                raise ValueError(f"{name} has non-finite entries; check the fit it came from")
        if not np.all(d > 0):
            bad = [self.items[i] for i in np.flatnonzero((d <= 0).any(axis=0))[:5]]
            raise ValueError(f"the noise diagonal d must be > 0 for every item and draw; items "
                             f"{bad} have d <= 0 (an item with no measurement noise at all "
                             "cannot be weighed: drop it or give it a noise floor)")
        if not np.allclose(C, C.T, rtol=1e-10, atol=1e-12) or np.linalg.eigvalsh(C).min() <= 0:
            raise ValueError("C (the effort cost per ability) must be symmetric positive "
                             "definite")
        for name, x in (("A", A), ("C", C), ("d", d), ("F", F), ("w", w)):
            object.__setattr__(self, name, x)  # keep the validated float64 arrays
        if np.any(np.linalg.norm(w, axis=1) == 0):
            raise ValueError("w (the welfare weights) is zero for some draw: state what you "
                             "value (a target, ability weights or a regression target)")

    @property
    def n_draws(self) -> int:
        return int(np.shape(self.A)[0])


@dataclass(frozen=True)
class WeightsPosterior:
    """Result of :func:`posterior_decisions`.

    ``items``: one row per item with ``w`` (posterior mean welfare weight), ``mean``, ``sd``,
    ``lo``, ``hi`` (equal-tailed interval of ``v*``), ``share_mean`` (mean of ``v*_i / Σ_j v*_j``)
    and ``p_platinum``.  ``sensitivity``: one row per ``r`` of the grid with the welfare gains and
    the expected number of platinum items; ``p_platinum_by_r`` (items × r); ``draws`` (D, m):
    ``v*`` per draw at the chosen ``r``; ``summary``: plain Python for ``summary.json``;
    ``gain_draws``: the welfare gain of ``v*`` per draw at the chosen ``r`` (columns
    ``over_uniform``, ``over_current``), whose quantiles are the summary's intervals.
    """

    items: pd.DataFrame
    sensitivity: pd.DataFrame
    p_platinum_by_r: pd.DataFrame
    weights_by_r: pd.DataFrame
    draws: np.ndarray
    summary: dict
    gain_draws: pd.DataFrame | None = None


def weight_draws(prims: PrimitiveDraws, r: float) -> np.ndarray:
    """``v* = (M + rΣ)⁻¹Mw`` per draw of ``prims`` at one risk aversion ``r >= 0``, shape
    (D, m): the one computation of optimal weights from draws in the package
    (:func:`~platinum_jax.design._decisions.decisions_per_draw`, which
    :func:`posterior_decisions` runs over its grid of ``r``). ``r = 0`` needs ``M`` of full
    rank. A ``ValueError`` when some draw gives no finite weights. Runs in float64."""
    r = float(r)
    if not np.isfinite(r) or r < 0:
        raise ValueError(f"r (risk aversion) must be a finite number >= 0, got {r!r}")
    if r == 0 and prims.A.shape[2] < prims.A.shape[1]:
        raise ValueError("M + r Sigma is singular at r = 0 with M of rank "
                         f"{prims.A.shape[2]} < {prims.A.shape[1]}; use r > 0 or a full-rank M")
    f64 = [jnp.asarray(x, jnp.float64) for x in (prims.A, prims.C, prims.d, prims.F, prims.w)]
    m = prims.A.shape[1]
    one = jnp.asarray(1.0, jnp.float64)  # thresholds of the flags, unused here
    out = decisions_per_draw(*f64, jnp.full((m,), 1.0 / m, jnp.float64),
                             jnp.asarray([r], jnp.float64), 0.5 * one, 0.5 * one, one)
    v = np.asarray(out.weights)[:, 0, :]
    if not np.all(np.isfinite(v)):
        raise ValueError("M + r Sigma is singular for some draws (M singular and r Sigma too "
                         "small?); use r > 0 or a full-rank M")
    return v


def _quantiles(x, interval):
    lo_q, hi_q = (1 - interval) / 2, 1 - (1 - interval) / 2
    return np.quantile(x, lo_q, axis=0), np.quantile(x, hi_q, axis=0)


def posterior_decisions(
    prims: PrimitiveDraws,
    r: float = 1.0,
    *,
    r_factors: Sequence[float] = DEFAULT_R_FACTORS,
    tau_w: float = 0.3,
    tau_m: float = 0.3,
    tau_e: float = 1.0,
    current: Mapping[str, float] | Sequence[float] | None = None,
    interval: float = 0.9,
    interval_method: str = "auto",
) -> WeightsPosterior:
    """Posterior of ``v*``, of Definition-1 platinum flags and of welfare gains (Haupt et al.).

    Args:
        prims: draws of the primitives (:func:`primitives_from_fit` makes them from a fit).
        r: the lab's risk aversion (CARA coefficient) ``r > 0``.  Only ``rΣ`` relative to ``M``
            matters, so ``r`` is in the units of ``M/Σ`` (ability² per score² when ``C = I``).
        r_factors: multiples of ``r`` for the sensitivity grid (``1`` is added if absent).
        tau_w, tau_m, tau_e: Definition 1 thresholds on welfare alignment, item loading and
            signal-to-noise-cost ratio (the scale-invariant versions of
            :func:`platinum_jax.agency.platinum_items`).
        current: the benchmark's current weights (default: uniform).  Welfare is compared at
            the best scale of each weight vector, so only their shape matters.
        interval: probability of the intervals of ``v*`` (default 0.9).
        interval_method: how the intervals of ``v*`` are read from the draws:
            ``"percentile"`` (equal-tailed quantiles of the draws: posterior intervals for
            Laplace or MCMC draws, percentile intervals for bootstrap draws); ``"bca"``
            (bias-corrected and accelerated bootstrap intervals, :func:`bca_interval`; needs
            ``prims.estimate``, and ``prims.jackknife`` for the acceleration, else ``a = 0``);
            ``"auto"`` (default): ``"percentile"`` for every kind of draws.  On the benchmark
            worlds of ``benchmarks/bench_weights_from_data.py`` the percentile intervals of the
            subject bootstrap covered better than BCa from the same replicates (mean 0.879 and
            0.926 against 0.884 and 0.847, BCa falling to 0.47 in one world), so BCa is asked
            for by name.  The welfare-gain intervals are always percentile intervals.

    The welfare gain of ``v*`` over weights ``u`` is ``(W(v*) − W_u) / W(v*)``, the share of the
    attainable welfare that ``u`` leaves behind (``W_u`` at ``u``'s best scale).
    """
    r = float(r)
    if not np.isfinite(r) or r <= 0:
        raise ValueError(f"r (risk aversion) must be a finite number > 0, got {r!r}")
    factors = sorted({float(f) for f in r_factors} | {1.0})
    if any(not np.isfinite(f) or f <= 0 for f in factors):
        raise ValueError(f"r_factors must be finite numbers > 0, got {list(r_factors)}")
    if not 0 < interval < 1:
        raise ValueError(f"interval must lie strictly between 0 and 1, got {interval}")
    for name, value in (("tau_w", tau_w), ("tau_m", tau_m)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must lie in (0, 1) (Definition 1), got {value}")
    if not tau_e > 0:
        raise ValueError(f"tau_e (signal-to-noise-cost threshold) must be > 0, got {tau_e}")
    if interval_method not in ("auto", "percentile", "bca"):
        raise ValueError(f"interval_method must be 'auto', 'percentile' or 'bca', got "
                         f"{interval_method!r}")
    if interval_method == "bca" and prims.estimate is None:
        raise ValueError("interval_method='bca' needs bootstrap draws with their full-data "
                         "estimate (prims.estimate), as bootstrap_subjects gives; use "
                         "'percentile' for Laplace or MCMC draws")
    method = interval_method
    if method == "auto":
        method = "percentile"
    items = list(prims.items)
    m = len(items)
    cur = _current_weights(current, items)
    r_grid = np.asarray([r * f for f in factors])

    def run(p):
        return decisions_per_draw(
            jnp.asarray(p.A, jnp.float64), jnp.asarray(p.C, jnp.float64),
            jnp.asarray(p.d, jnp.float64), jnp.asarray(p.F, jnp.float64),
            jnp.asarray(p.w, jnp.float64), jnp.asarray(cur, jnp.float64),
            jnp.asarray(r_grid, jnp.float64), jnp.asarray(tau_w, jnp.float64),
            jnp.asarray(tau_m, jnp.float64), jnp.asarray(tau_e, jnp.float64),
        )

    out = run(prims)
    v = np.asarray(out.weights)
    if not np.all(np.isfinite(v)):
        raise ValueError("the optimal weights are not finite for some draw: the noise "
                         "covariance or the loadings are degenerate (check the fit)")
    flags = np.asarray(out.platinum)
    k = factors.index(1.0)
    vr = v[:, k, :]
    if method == "bca":
        if tuple(prims.estimate.items) != tuple(items):
            raise ValueError("prims.estimate must have the same items as prims")
        est = np.asarray(run(prims.estimate).weights)[0, k, :]
        jack = (None if prims.jackknife is None
                else np.asarray(run(prims.jackknife).weights)[:, k, :])
        lo, hi = bca_interval(vr, est, jack, interval)
    else:
        lo, hi = _quantiles(vr, interval)
    total = vr.sum(axis=1, keepdims=True)
    share = np.where(np.abs(total) > 0, vr / np.where(total == 0, 1.0, total), np.nan)
    frame = pd.DataFrame({
        "w": prims.w.mean(axis=0),
        "mean": vr.mean(axis=0),
        "sd": vr.std(axis=0, ddof=1) if vr.shape[0] > 1 else np.zeros(m),
        "lo": lo,
        "hi": hi,
        "share_mean": np.nanmean(share, axis=0),
        "p_platinum": flags[:, k, :].mean(axis=0),
    }, index=pd.Index(items, name="item"))
    W_opt = np.asarray(out.welfare_optimal)
    gain_u = (W_opt - np.asarray(out.welfare_uniform)) / W_opt
    gain_c = (W_opt - np.asarray(out.welfare_current)) / W_opt
    rows = []
    for j, f in enumerate(factors):
        glo, ghi = _quantiles(gain_u[:, j], interval)
        clo, chi = _quantiles(gain_c[:, j], interval)
        rows.append({"r": r * f, "factor": f,
                     "gain_over_uniform_mean": gain_u[:, j].mean(),
                     "gain_over_uniform_lo": glo, "gain_over_uniform_hi": ghi,
                     "gain_over_current_mean": gain_c[:, j].mean(),
                     "gain_over_current_lo": clo, "gain_over_current_hi": chi,
                     "expected_platinum_items": flags[:, j, :].sum(axis=1).mean()})
    sens = pd.DataFrame(rows).set_index("r")
    cols = pd.Index([r * f for f in factors], name="r")
    p_by_r = pd.DataFrame(flags.mean(axis=0).T, index=frame.index, columns=cols)
    v_by_r = pd.DataFrame(v.mean(axis=0).T, index=frame.index, columns=cols)
    main = sens.loc[r]
    summary = {
        "r": r, "interval": interval,
        "interval_method": ("bca" if prims.jackknife is not None else "bc (bca with a = 0)")
        if method == "bca" else "percentile",
        "n_draws": prims.n_draws, "n_items": m,
        "abilities": list(prims.abilities), "C": np.asarray(prims.C).tolist(),
        "thresholds": {"tau_w": tau_w, "tau_m": tau_m, "tau_e": tau_e},
        "current_weights": "uniform" if current is None else "given",
        "welfare_gain_over_uniform": {"mean": float(main["gain_over_uniform_mean"]),
                                      "lo": float(main["gain_over_uniform_lo"]),
                                      "hi": float(main["gain_over_uniform_hi"])},
        "welfare_gain_over_current": {"mean": float(main["gain_over_current_mean"]),
                                      "lo": float(main["gain_over_current_lo"]),
                                      "hi": float(main["gain_over_current_hi"])},
        "expected_platinum_items": float(main["expected_platinum_items"]),
        "sensitivity_to_r": [{k2: float(v2) for k2, v2 in row.items()} | {"r": float(rr)}
                             for rr, row in sens.iterrows()],
        "primitives": dict(prims.notes),
        "welfare_gain_definition": "(W(v*) - W(u)) / W(v*), each u at its best scale",
    }
    gains = pd.DataFrame({"over_uniform": gain_u[:, k], "over_current": gain_c[:, k]},
                         index=pd.RangeIndex(len(vr), name="draw"))
    return WeightsPosterior(frame, sens, p_by_r, v_by_r, vr, summary, gains)


def _current_weights(current, items: list[str]) -> np.ndarray:
    m = len(items)
    if current is None:
        return np.full(m, 1.0 / m)
    if isinstance(current, Mapping):
        unknown = [k for k in current if k not in items]
        if unknown:
            raise ValueError(f"current weights name unknown items {unknown[:5]}; the items are "
                             f"{items[:5]}...")
        cur = np.array([float(current.get(name, 0.0)) for name in items])
        missing = [name for name in items if name not in current]
        if missing:
            raise ValueError(f"current weights must give every item a weight (write 0 for an "
                             f"unweighted item); missing {missing[:5]}")
    else:
        cur = np.asarray(current, dtype=np.float64)
        if cur.shape != (m,):
            raise ValueError(f"current weights must have {m} entries (one per item), got "
                             f"shape {cur.shape}")
    if not np.all(np.isfinite(cur)) or not np.any(cur != 0):
        raise ValueError("current weights must be finite and not all zero")
    return cur
