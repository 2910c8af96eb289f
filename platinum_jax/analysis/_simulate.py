"""Synthetic worlds for acceleration detection (Ho et al., section 3.3.1).

:func:`simulate_detection` runs the paper's protocol by default (``protocol="paper"``,
implemented in :mod:`._detection`: release-by-release checks after the known acceleration date,
the running maximum of all models as the frontier, two segment fits with ``R^2 >= 0.6``, the
paper's worlds and noise, and false positives measured on worlds without acceleration).
``protocol="monthly_hinge"`` keeps an earlier, cruder variant, in :mod:`._hinge`.

This module holds what both share: the :class:`DetectionStudy` result, its comparison with the
paper's figures, and the dispatch between the two protocols.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

__all__ = ["PAPER_SIMULATION_REFERENCE", "DetectionStudy", "simulate_detection"]

PAPER_SIMULATION_REFERENCE: dict[str, float] = {
    "latency_months_2x_at_1x_noise_low": 2.0,
    "latency_months_2x_at_1x_noise_high": 3.0,
    "mean_false_positive_rate": 0.38,
}


@dataclass(frozen=True, eq=False)
class DetectionStudy:
    """Results of :func:`simulate_detection` (immutable).

    ``protocol="paper"``: ``runs`` has one row per accelerated world (noise, factor, replicate)
    with ``detected``, ``latency_months``, ``detection_year``, ``breakpoint_year``, ``ratio``,
    ``r2``, ``n_checkpoints`` and ``converged``; ``false_positive_runs`` one row per
    no-acceleration world (noise, window, replicate) with ``flagged`` and the same fit columns.
    ``summary``: per (noise, factor) the detection rate and median/mean latency in months
    (factor > 1) or the false-positive rate averaged over the observation windows (factor 1).

    ``protocol="monthly_hinge"``: ``runs`` has one row per (noise, factor, replicate,
    observation date) with ``flagged``, ``ratio``, ``breakpoint_year`` and ``converged``;
    ``summary`` the detection rate after t_a, latency and the false-positive rate (flags before
    t_a, or any flag in a world with factor 1).
    """

    config: object
    threshold: float
    runs: pd.DataFrame
    summary: pd.DataFrame
    protocol: str = "monthly_hinge"
    false_positive_runs: pd.DataFrame | None = None

    def table(self, value: str = "median_latency_months") -> pd.DataFrame:
        """Pivot of a summary column: rows noise level, columns acceleration factor."""
        return self.summary.pivot(index="noise", columns="factor", values=value)

    def paper_comparison(self, level: float = 0.95) -> pd.DataFrame:
        """Our headline figures beside the paper's (section 3.3.1), with their Monte Carlo error.

        Rows: the median latency of a 2x acceleration at 1x noise over the worlds where it was
        detected (NaN when that cell was not run; the paper gives 2-3 months, reported as
        low/high), with a distribution-free ``level`` interval for the median from the order
        statistics of the latencies; the detection rate of that cell; and the false-positive
        rate over every world *without* acceleration (the pooled fraction of flagged worlds;
        NaN when none was run; paper: about 38%), with its binomial standard error
        ``sqrt(p (1 - p) / n)`` and a normal-approximation interval. ``n_worlds`` is the number
        of simulated worlds behind each figure.
        """
        from scipy import stats

        if not 0 < level < 1:
            raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}")
        z = stats.norm.ppf(0.5 + level / 2)
        ref = PAPER_SIMULATION_REFERENCE
        nan = np.nan
        runs = self.runs
        cell = runs[(runs["noise"] == 1.0) & (runs["factor"] == 2.0)] if len(runs) else runs
        if self.protocol != "paper" or "latency_months" not in cell:
            # the monthly variant keeps per-date rows; take its summary's cell
            s = self.summary
            c = s[(s["noise"] == 1.0) & (s["factor"] == 2.0)]
            lat = np.array([float(c["median_latency_months"].iloc[0])]) if len(c) else np.array([])
            med, lo, hi, n_lat = (lat[0] if lat.size else nan), nan, nan, len(lat)
            det, det_se, n_det = nan, nan, 0
        else:
            found = cell["detected"].astype(bool).to_numpy()
            lat = np.sort(cell.loc[found, "latency_months"].to_numpy(np.float64))
            n_lat = lat.size
            med = float(np.median(lat)) if n_lat else nan
            lo, hi = _median_interval(lat, level)
            n_det = len(cell)
            det = float(found.mean()) if n_det else nan
            det_se = float(np.sqrt(det * (1 - det) / n_det)) if n_det else nan
        if self.false_positive_runs is not None and len(self.false_positive_runs):
            flags = self.false_positive_runs["flagged"].astype(bool).to_numpy()
        else:
            s = self.summary
            flat = s[s["factor"] <= 1.0]
            flags = (np.array([float(flat["false_positive_rate"].mean())])
                     if len(flat) else np.array([]))
        n_fp = flags.size
        fp = float(np.mean(flags)) if n_fp else nan
        fp_se = float(np.sqrt(fp * (1 - fp) / n_fp)) if n_fp > 1 else nan
        return pd.DataFrame(
            {
                "value": [med, det, fp],
                "se": [nan, det_se, fp_se],
                "low": [lo, det - z * det_se, fp - z * fp_se],
                "high": [hi, det + z * det_se, fp + z * fp_se],
                "n_worlds": [n_lat, n_det, n_fp],
                "paper_low": [ref["latency_months_2x_at_1x_noise_low"], nan, nan],
                "paper_high": [ref["latency_months_2x_at_1x_noise_high"], nan, nan],
                "paper_reference": [nan, nan, ref["mean_false_positive_rate"]],
            },
            index=pd.Index(
                ["median_latency_months_2x_at_1x_noise", "detection_rate_2x_at_1x_noise",
                 "mean_false_positive_rate"], name="quantity"
            ),
        )


def _median_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """Distribution-free interval for the median of sorted ``x``: order statistics
    ``x_(j) <= median <= x_(n+1-j)`` with ``P(Binomial(n, 1/2) < j) <= (1 - level) / 2``;
    NaN when no ``j >= 1`` qualifies (fewer than 6 values at level 0.95)."""
    from scipy import stats

    n = x.size
    if n == 0:
        return np.nan, np.nan
    j = int(stats.binom.ppf((1 - level) / 2, n, 0.5))  # largest j with the tail <= alpha / 2
    if j < 1 or stats.binom.cdf(j - 1, n, 0.5) > (1 - level) / 2:
        j = max(j - 1, 0)
    if j < 1:
        return np.nan, np.nan  # too few worlds: even the whole range falls short of the level
    return float(x[j - 1]), float(x[n - j])


DETECTION_PROTOCOLS = ("paper", "monthly_hinge")


def simulate_detection(config=None, *, protocol: str = "paper", **options) -> DetectionStudy:
    """Run the acceleration-detection study over acceleration factors and noise levels.

    ``protocol="paper"`` (default): the protocol of Ho et al. (see :mod:`._detection` for the
    worlds, the release-by-release search and the breakpoint scan); ``config`` is a
    :class:`PaperWorldConfig`. Options: ``factors`` (default 1, 2, 4; each factor > 1 is a cell of
    accelerated worlds, factor 1 runs the false-positive worlds: ``config.fp_replicates`` worlds
    per noise level of ``config.fp_noise_levels`` and window of ``config.fp_windows``, the
    paper's sweep), ``noise_levels`` of the accelerated worlds (0.5, 1, 2, 4), ``n_replicates``
    accelerated worlds per cell (20), ``threshold`` (2), ``seed``,
    ``chunk`` (worlds searched side by side; 1 lets each world stop at its own detection),
    ``max_steps`` and ``progress``. False positives are counted on the worlds without
    acceleration only.

    ``protocol="monthly_hinge"``: an earlier variant (monthly checks over the whole range, the
    frontier at release, one continuous hinge, no R^2 filter, its own worlds); ``config`` is a
    :class:`WorldConfig` and the options are those of ``_simulate_monthly_hinge``.
    """
    if protocol not in DETECTION_PROTOCOLS:
        raise ValueError(f"protocol must be one of {DETECTION_PROTOCOLS}, got {protocol!r}")
    if protocol == "monthly_hinge":
        from ._hinge import WorldConfig, _simulate_monthly_hinge

        if config is not None and not isinstance(config, WorldConfig):
            raise ValueError("protocol='monthly_hinge' takes a WorldConfig")
        return _simulate_monthly_hinge(WorldConfig() if config is None else config, **options)
    from ._detection import PaperWorldConfig

    if config is None:
        config = PaperWorldConfig()
    if not isinstance(config, PaperWorldConfig):
        raise ValueError(
            f"protocol='paper' takes a PaperWorldConfig, got {type(config).__name__}; pass "
            "protocol='monthly_hinge' to run the monthly hinge variant with a WorldConfig"
        )
    allowed = {"factors", "noise_levels", "n_replicates", "threshold", "seed", "chunk",
               "max_steps", "progress"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(
            f"simulate_detection(protocol='paper') got unexpected option(s) {unknown}; it takes "
            f"{sorted(allowed)}"
        )
    return _simulate_paper(config, **options)


def _capacity(counts) -> int:
    # padded length of the observed-score arrays: the largest world, rounded up to 64
    return int(max(64, -(-int(np.max(counts)) // 64) * 64))


def _simulate_paper(
    config,
    *,
    factors: Sequence[float] = (1.0, 2.0, 4.0),
    noise_levels: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    n_replicates: int = 20,
    threshold: float = 2.0,
    seed: int = 0,
    chunk: int = 1,
    max_steps: int = 200,
    progress: bool = True,
) -> DetectionStudy:
    from tqdm import tqdm

    from ._detection import false_positive_flags, first_detection, observed_counts

    if n_replicates < 1 or chunk < 1:
        raise ValueError(f"n_replicates and chunk must be >= 1, got {n_replicates} and {chunk}")
    for name, vals in (("factors", factors), ("noise_levels", noise_levels)):
        v = np.asarray(vals, dtype=np.float64)
        if v.size == 0 or not (np.isfinite(v) & (v >= 0)).all():
            raise ValueError(f"{name} must be non-empty, finite and >= 0, got {list(vals)}")
    if not (np.isfinite(threshold) and threshold > 0):
        raise ValueError(f"threshold must be a positive slope ratio, got {threshold!r}")
    dtype = jnp.result_type(float)
    keys = jax.random.split(jax.random.PRNGKey(seed), n_replicates)
    # Every false-positive world is a fresh draw (as in the paper's sweep), from a stream apart
    # from the accelerated worlds': keys (noise level, window, replicate), so that the pooled
    # rate's binomial standard error counts independent worlds.
    fp_base = jax.random.fold_in(jax.random.PRNGKey(seed), 1)

    def fp_keys(j):
        cell = jax.random.fold_in(fp_base, j)
        return jnp.stack([jax.random.split(jax.random.fold_in(cell, w), config.fp_replicates)
                          for w in range(len(config.fp_windows))])
    noises = [float(n) for n in noise_levels]
    fp_noises = [float(n) for n in config.fp_noise_levels]
    accel = [float(f) for f in factors if f > 1.0]
    flat = any(f <= 1.0 for f in factors)
    windows = jnp.asarray(config.fp_windows, dtype)
    cap_d = _capacity([observed_counts(keys, config, f, n, False) for n in noises for f in accel]
                      or [64])
    cap_f = _capacity([observed_counts(fp_keys(j)[i], config, 1.0, n, True, w)
                       for j, n in enumerate(fp_noises)
                       for i, w in enumerate(config.fp_windows)] if flat else [64])
    chunk = min(int(chunk), n_replicates)

    @jax.jit
    def detect(keys, factor, noise, thr):
        return jax.lax.map(lambda k: first_detection(k, config, factor, noise, thr, cap_d,
                                                     max_steps), keys, batch_size=chunk)

    fp_one = jax.vmap(false_positive_flags, in_axes=(0, None, None, None, None, None, None))
    fp_all = jax.jit(jax.vmap(fp_one, in_axes=(0, None, 0, None, None, None, None)),
                     static_argnums=(1, 5, 6))

    rows, fp_rows = [], []
    cells = ([("fp", n, j) for j, n in enumerate(fp_noises) if flat]
             + [("acc", n, f) for n in noises for f in accel])
    t_a = config.acceleration_start
    for kind, noise, factor in tqdm(cells, desc="detection study (paper protocol)",
                                    disable=not progress):
        if kind == "acc":
            found, when, bp, ratio, r2, n_chk, conv = (
                np.asarray(a) for a in detect(keys, jnp.asarray(factor, dtype),
                                              jnp.asarray(noise, dtype),
                                              jnp.asarray(threshold, dtype)))
            rows.append(pd.DataFrame({
                "noise": noise, "factor": factor, "replicate": np.arange(n_replicates),
                "detected": found, "latency_months": (when - t_a) * 12.0,
                "detection_year": when, "breakpoint_year": bp, "ratio": ratio, "r2": r2,
                "n_checkpoints": n_chk, "converged": conv,
            }))
        else:  # a false-positive cell; its third entry is the noise level's index
            flagged, bp, ratio, r2, conv = (
                np.asarray(a) for a in fp_all(fp_keys(int(factor)), config, windows,
                                              jnp.asarray(noise, dtype),
                                              jnp.asarray(threshold, dtype), cap_f, max_steps))
            win, rep = np.meshgrid(np.asarray(config.fp_windows),
                                   np.arange(config.fp_replicates), indexing="ij")
            fp_rows.append(pd.DataFrame({
                "noise": noise, "window_years": win.ravel(), "replicate": rep.ravel(),
                "flagged": flagged.ravel(), "breakpoint_year": bp.ravel(),
                "ratio": ratio.ravel(), "r2": r2.ravel(), "converged": conv.ravel(),
            }))
    runs = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["noise", "factor", "replicate", "detected", "latency_months"])
    fp_runs = pd.concat(fp_rows, ignore_index=True) if fp_rows else None
    summary = []
    if fp_runs is not None:
        for noise, grp in fp_runs.groupby("noise", sort=True):
            p = float(grp["flagged"].mean())
            summary.append({
                "noise": noise, "factor": 1.0, "n_replicates": len(grp),
                "detection_rate": np.nan, "median_latency_months": np.nan,
                "mean_latency_months": np.nan,
                "false_positive_rate": p,
                "false_positive_se": float(np.sqrt(p * (1 - p) / len(grp))),
                "converged_fraction": float(grp["converged"].mean()),
            })
    for (noise, factor), grp in runs.groupby(["noise", "factor"], sort=True):
        lat = grp.loc[grp["detected"].astype(bool), "latency_months"].to_numpy(np.float64)
        summary.append({
            "noise": noise, "factor": factor, "n_replicates": len(grp),
            "detection_rate": float(grp["detected"].mean()),
            "median_latency_months": float(np.median(lat)) if lat.size else np.nan,
            "mean_latency_months": float(np.mean(lat)) if lat.size else np.nan,
            "false_positive_rate": np.nan,
            "converged_fraction": float(grp["converged"].mean()),
        })
    summary = pd.DataFrame(summary).sort_values(["noise", "factor"]).reset_index(drop=True)
    return DetectionStudy(config=config, threshold=float(threshold), runs=runs, summary=summary,
                          protocol="paper", false_positive_runs=fp_runs)
