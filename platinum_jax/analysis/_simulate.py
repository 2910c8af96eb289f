"""Synthetic worlds for acceleration detection (Ho et al., section 3.3.1).

:func:`simulate_detection` runs the paper's protocol by default (``protocol="paper"``,
implemented in :mod:`._detection`: release-by-release checks after the known acceleration date,
the running maximum of all models as the frontier, two segment fits with ``R^2 >= 0.6``, the
paper's worlds and noise, and false positives measured on worlds without acceleration).
``protocol="monthly_hinge"`` keeps an earlier, cruder variant, in :mod:`._hinge`.

This module holds the dispatch between the two protocols; the :class:`DetectionStudy` result
both return, and its comparison with the paper's figures, live in :mod:`._study`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax._distributed import spread

from ._study import PAPER_SIMULATION_REFERENCE, DetectionStudy

__all__ = ["PAPER_SIMULATION_REFERENCE", "DetectionStudy", "simulate_detection"]

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
    fp_cells = [(j, n) for j, n in enumerate(fp_noises)] if flat else []
    acc_cells = [(n, f) for n in noises for f in accel]
    t_a = config.acceleration_start
    bar = tqdm(total=len(fp_cells) + len(acc_cells), desc="detection study (paper protocol)",
               disable=not progress)
    done = [0, 0]

    def tick(kind):  # spread's progress: cells finished of one kind, every process's counted
        def update(n_done, _n):
            done[kind] = n_done
            bar.update(sum(done) - bar.n)
        return update

    # Each cell is one compiled call over its worlds; in a multi-process run (jax.distributed)
    # every process runs its share of the cells and all of them get every result.
    fp_out = spread(lambda k: fp_all(fp_keys(fp_cells[k][0]), config, windows,
                                     jnp.asarray(fp_cells[k][1], dtype),
                                     jnp.asarray(threshold, dtype), cap_f, max_steps),
                    len(fp_cells), progress=tick(0)) if fp_cells else []
    acc_out = spread(lambda k: detect(keys, jnp.asarray(acc_cells[k][1], dtype),
                                      jnp.asarray(acc_cells[k][0], dtype),
                                      jnp.asarray(threshold, dtype)),
                     len(acc_cells), progress=tick(1)) if acc_cells else []
    bar.close()
    for (_, noise), out in zip(fp_cells, fp_out, strict=True):
        flagged, bp, ratio, r2, conv = (np.asarray(a) for a in out)
        win, rep = np.meshgrid(np.asarray(config.fp_windows),
                               np.arange(config.fp_replicates), indexing="ij")
        fp_rows.append(pd.DataFrame({
            "noise": noise, "window_years": win.ravel(), "replicate": rep.ravel(),
            "flagged": flagged.ravel(), "breakpoint_year": bp.ravel(),
            "ratio": ratio.ravel(), "r2": r2.ravel(), "converged": conv.ravel(),
        }))
    for (noise, factor), out in zip(acc_cells, acc_out, strict=True):
        found, when, bp, ratio, r2, n_chk, conv = (np.asarray(a) for a in out)
        rows.append(pd.DataFrame({
            "noise": noise, "factor": factor, "replicate": np.arange(n_replicates),
            "detected": found, "latency_months": (when - t_a) * 12.0,
            "detection_year": when, "breakpoint_year": bp, "ratio": ratio, "r2": r2,
            "n_checkpoints": n_chk, "converged": conv,
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
