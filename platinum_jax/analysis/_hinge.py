"""The monthly-hinge variant of the acceleration-detection study (not the paper's protocol).

``simulate_detection(protocol="monthly_hinge")`` runs it; the paper's protocol is in
:mod:`._detection`.

A world has ``n_models`` models released uniformly at random over [start, end] and
``n_benchmarks`` benchmarks.  The frontier capability follows a known path

    g(t) = c_0 + s (t - start)                          for t < t_a,
    g(t) = c_0 + s (t_a - start) + f s (t - t_a)        for t >= t_a,

with acceleration factor f from t_a on.  Each model sits below the frontier by an exponential
gap (mean ``gap``), C_m = g(t_m) - gap_m.  Benchmark 0 is the anchor (D = 0, alpha = 1, scored
by every model, as Winogrande in the paper); the others have difficulties D_b spread evenly over
the capability range and slopes alpha_b ~ U(slope_low, slope_high).  A model is scored on a
non-anchor benchmark with probability ``p_obs`` when |C_m - D_b| < ``window`` (benchmarks far
from a model's level are rarely run), and the score is

    y_mb = clip(sigmoid(alpha_b (C_m - D_b)) + noise * base_noise * eps,  0, 1),  eps ~ N(0, 1),

so ``noise`` multiplies a baseline measurement noise (the paper varies it over 0.5x-4x).

At each observation date T only models released by T count: the stitching model is refitted
by the measurement engine (:func:`platinum_jax.inference.solve_map` on the Rosetta model;
weights 0 mask unreleased models' scores, so every replicate and date has the same static shapes and runs under ``vmap``), the frontier at
release is taken from the refitted capabilities, and the one-breakpoint fit flags an
acceleration when the slope ratio passes ``threshold``.

Summaries: *detection latency* = first observation date on or after t_a whose flag puts the
breakpoint near or after t_a, minus t_a (months; NaN when never detected); *false positive* = a
replicate flagged while nothing had accelerated: before t_a, or at any date in a world with
factor 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float, PRNGKeyArray

from ._acceleration import fit_breakpoint
from ._study import DetectionStudy
from ._trends import frontier_mask

__all__ = ["WorldConfig", "generate_world", "refit_world"]


@dataclass(frozen=True)
class WorldConfig:
    """Static description of a synthetic world (sizes, dates and the generative constants).

    Dates are decimal years.  ``base_noise`` is the score noise sd at noise level 1x.  The
    default 120 models over four years (30 a year) is sparser than the Epoch data (about 66 a
    year in ``scores_long.csv``) to keep the study cheap; denser worlds detect sooner.
    """

    n_models: int = 120
    n_benchmarks: int = 12
    start: float = 2023.0
    end: float = 2027.0
    acceleration_start: float = 2026.0
    base_slope: float = 0.5
    initial_capability: float = 0.5
    gap: float = 0.3
    base_noise: float = 0.04
    p_obs: float = 0.7
    window: float = 2.0
    slope_low: float = 1.5
    slope_high: float = 5.0
    l2: float = 0.1

    def __post_init__(self):
        if self.n_models < 10 or self.n_benchmarks < 3:
            raise ValueError(
                f"a world needs >= 10 models and >= 3 benchmarks, got {self.n_models} and "
                f"{self.n_benchmarks}"
            )
        if not self.start < self.acceleration_start < self.end:
            raise ValueError(
                f"acceleration_start ({self.acceleration_start}) must lie strictly between start "
                f"({self.start}) and end ({self.end})"
            )
        if not 0 < self.p_obs <= 1:
            raise ValueError(f"p_obs must be in (0, 1], got {self.p_obs}")
        if self.base_noise < 0 or self.gap < 0:
            raise ValueError("base_noise and gap must be >= 0")

    def frontier_path(self, year, factor):
        """True frontier capability g(t) (works on NumPy and JAX arrays)."""
        xp = jnp if isinstance(year, jax.Array) else np
        pre = self.base_slope * (xp.minimum(year, self.acceleration_start) - self.start)
        post = factor * self.base_slope * xp.maximum(year - self.acceleration_start, 0.0)
        return self.initial_capability + pre + post


def generate_world(
    key: PRNGKeyArray, config: WorldConfig, factor: Float[Array, ""], noise: Float[Array, ""]
) -> dict[str, Array]:
    """One synthetic world on the full (model x benchmark) grid (pure; vmappable over keys).

    Returns arrays: ``year`` (M,), ``capability`` (M,), ``difficulty`` (B,), ``slope`` (B,),
    ``model_index``/``benchmark_index``/``scores``/``observed`` (M*B,).  Models are sorted by
    release date; benchmark 0 is the anchor.
    """
    M, B = config.n_models, config.n_benchmarks
    k_year, k_gap, k_slope, k_jit, k_obs, k_eps = jax.random.split(key, 6)
    year = jnp.sort(jax.random.uniform(k_year, (M,), minval=config.start, maxval=config.end))
    cap = config.frontier_path(year, factor) - config.gap * jax.random.exponential(k_gap, (M,))
    top = config.frontier_path(jnp.asarray(config.end), factor)
    lo = config.initial_capability - 1.0
    spacing = (top - lo) / (B - 1)
    diff_rest = jnp.linspace(lo, top, B - 1) + spacing * jax.random.uniform(
        k_jit, (B - 1,), minval=-0.3, maxval=0.3
    )
    difficulty = jnp.concatenate([jnp.zeros(1), diff_rest])
    slope = jnp.concatenate(
        [
            jnp.ones(1),
            jax.random.uniform(k_slope, (B - 1,), minval=config.slope_low, maxval=config.slope_high),
        ]
    )
    mi = jnp.repeat(jnp.arange(M, dtype=jnp.int32), B)
    bi = jnp.tile(jnp.arange(B, dtype=jnp.int32), M)
    c, d, a = cap[mi], difficulty[bi], slope[bi]
    eligible = jnp.abs(c - d) < config.window
    observed = (bi == 0) | (eligible & (jax.random.uniform(k_obs, mi.shape) < config.p_obs))
    clean = jax.nn.sigmoid(a * (c - d))
    # scores are bounded like real accuracies, so noisy draws are clipped to [0, 1]
    scores = jnp.clip(clean + noise * config.base_noise * jax.random.normal(k_eps, mi.shape), 0.0, 1.0)
    return {
        "year": year,
        "capability": cap,
        "difficulty": difficulty,
        "slope": slope,
        "model_index": mi,
        "benchmark_index": bi,
        "scores": scores,
        "observed": observed,
    }


def _layout(config: WorldConfig):
    from platinum_jax.models.rosetta import ParameterLayout

    return ParameterLayout(
        config.n_models,
        config.n_benchmarks,
        fixed_difficulty=(0,),
        fixed_difficulty_values=(0.0,),
        fixed_slope=(0,),
        fixed_slope_values=(1.0,),
    )


def _problem(config: WorldConfig):
    # The Rosetta model of a world for the measurement engine (benchmark 0 fixed, plain L2).
    from platinum_jax.stitching import layout_problem

    return layout_problem(_layout(config), config.l2)


def refit_world(
    world: dict[str, Array], config: WorldConfig, obs_year: Float[Array, ""], max_steps: int = 200
) -> tuple[Float[Array, " M"], Float[Array, ""]]:
    """Stitching refit of a world with the scores known at ``obs_year`` (pure; vmappable).

    Scores of models released after ``obs_year`` get weight 0, so shapes never change; the
    refit is the measurement engine's MAP solver
    (:func:`platinum_jax.inference.solve_map`) on the Rosetta model.
    Returns (capabilities (M,), converged); unreleased models' entries are meaningless.
    """
    from platinum_jax.inference import Data, solve_map

    problem = _problem(config)
    released = world["year"] <= obs_year
    y = world["scores"]
    w = (world["observed"] & released[world["model_index"]]).astype(y.dtype)
    data = Data(world["model_index"], world["benchmark_index"], y, jnp.ones_like(y), w)
    start = jax.tree_util.tree_map(lambda a: jnp.asarray(a, y.dtype), problem.start())
    res = solve_map(problem, start, data, max_steps=max_steps)
    return res.theta.subjects[:, 0], res.converged


def _detect_at(world, obs_year, taus, threshold, config, min_side, top_n, max_steps):
    released = world["year"] <= obs_year
    cap, converged = refit_world(world, config, obs_year, max_steps)
    front = frontier_mask(cap, world["year"], released, top_n)
    tau, s1, s2, _ = fit_breakpoint(taus, world["year"], cap, front.astype(cap.dtype), min_side)
    ratio = jnp.where(s1 > 0, s2 / s1, jnp.nan)
    flagged = (s1 > 0) & (s2 >= threshold * s1)
    return flagged, ratio, tau, converged


def _study_fn(config: WorldConfig, min_side: int, top_n: int, max_steps: int):
    def one_world(key, factor, noise, obs_years, taus, threshold):
        world = generate_world(key, config, factor, noise)
        return jax.vmap(
            lambda t: _detect_at(world, t, taus, threshold, config, min_side, top_n, max_steps)
        )(obs_years)

    return jax.jit(jax.vmap(one_world, in_axes=(0, None, None, None, None, None)))


def _summarise(runs: pd.DataFrame, t_a: float, breakpoint_tolerance: float = 0.5) -> pd.DataFrame:
    """Per (noise, factor) cell: detection rate, latency and false-positive rate.

    A flag is a *false alarm* when nothing has accelerated: at any date before t_a, and at every
    date in a world without acceleration (factor <= 1).  A replicate is a false positive when it
    raises at least one false alarm.  In an accelerated world (factor > 1) the *detection* is the
    first date on or after t_a whose flag places the breakpoint at or after
    t_a - ``breakpoint_tolerance`` years (a flag that blames an older kink detects noise, not this
    acceleration); the latency is that date minus t_a, in months.  Detection rate and latency are
    NaN in worlds without acceleration.
    """
    rows = []
    for (noise, factor), grp in runs.groupby(["noise", "factor"], sort=True):
        accelerated = factor > 1.0
        lat, fp = [], []
        for _, rep in grp.groupby("replicate"):
            flagged = rep["flagged"].to_numpy(dtype=bool)
            years = rep["obs_year"].to_numpy(dtype=np.float64)
            false_alarm = flagged & ((years < t_a) | (not accelerated))
            fp.append(bool(false_alarm.any()))
            if not accelerated:
                continue
            hit = flagged & (years >= t_a)
            if "breakpoint_year" in rep:
                hit &= rep["breakpoint_year"].to_numpy(dtype=np.float64) >= t_a - breakpoint_tolerance
            lat.append((years[hit].min() - t_a) * 12.0 if hit.any() else np.nan)
        lat = np.asarray(lat, dtype=np.float64)
        found = np.isfinite(lat)
        rows.append(
            {
                "noise": noise,
                "factor": factor,
                "n_replicates": len(fp),
                "detection_rate": float(found.mean()) if accelerated else np.nan,
                "median_latency_months": float(np.median(lat[found])) if found.any() else np.nan,
                "mean_latency_months": float(np.mean(lat[found])) if found.any() else np.nan,
                "false_positive_rate": float(np.mean(fp)),
                "converged_fraction": float(grp["converged"].mean()),
            }
        )
    return pd.DataFrame(rows)


def _simulate_monthly_hinge(
    config: WorldConfig = WorldConfig(),
    *,
    factors: Sequence[float] = (1.0, 2.0, 4.0),
    noise_levels: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    n_replicates: int = 20,
    observation_years: Sequence[float] | None = None,
    threshold: float = 2.0,
    breakpoint_tolerance: float = 0.5,
    n_grid: int = 48,
    min_side: int = 3,
    top_n: int = 1,
    max_steps: int = 200,
    seed: int = 0,
    progress: bool = True,
) -> DetectionStudy:
    """The ``"monthly_hinge"`` variant of :func:`simulate_detection` (not the paper's protocol).

    For every (noise, factor) cell, ``n_replicates`` worlds are generated and, at each of
    ``observation_years`` (default: monthly from one year before to one year after
    ``config.acceleration_start``), refitted and tested -- all replicates and dates of a cell in
    one ``vmap``-ed, jitted call (compiled once, reused for every cell).  A flag after t_a
    counts as a detection only when its breakpoint lies at or after t_a minus
    ``breakpoint_tolerance`` years; see :func:`_summarise` for the false-positive rule.
    """
    from tqdm import tqdm

    if n_replicates < 1:
        raise ValueError(f"n_replicates must be >= 1, got {n_replicates}")
    if not (np.isfinite(breakpoint_tolerance) and breakpoint_tolerance >= 0):
        raise ValueError(
            f"breakpoint_tolerance must be a finite number of years >= 0, got {breakpoint_tolerance!r}"
        )
    if observation_years is None:
        observation_years = config.acceleration_start + np.arange(-12, 13) / 12.0
    obs = np.asarray(observation_years, dtype=np.float64)
    if obs.ndim != 1 or obs.size == 0 or not np.isfinite(obs).all():
        raise ValueError("observation_years must be a non-empty 1-d list of finite decimal years")
    if (obs <= config.start).any() or (obs > config.end).any():
        raise ValueError(
            f"observation_years must lie in ({config.start}, {config.end}]; got {obs.min()}..{obs.max()}"
        )
    for name, vals in (("factors", factors), ("noise_levels", noise_levels)):
        v = np.asarray(vals, dtype=np.float64)
        if v.size == 0 or not (np.isfinite(v) & (v >= 0)).all():
            raise ValueError(f"{name} must be non-empty, finite and >= 0, got {list(vals)}")
    dtype = jnp.result_type(float)
    taus = jnp.linspace(config.start, config.end, n_grid, dtype=dtype)
    fn = _study_fn(config, int(min_side), int(top_n), int(max_steps))
    keys = jax.random.split(jax.random.PRNGKey(seed), n_replicates)
    frames = []
    cells = [(float(n), float(f)) for n in noise_levels for f in factors]
    for noise, factor in tqdm(cells, desc="detection study", disable=not progress):
        flagged, ratio, tau, conv = (
            np.asarray(a)
            for a in fn(keys, jnp.asarray(factor, dtype), jnp.asarray(noise, dtype),
                        jnp.asarray(obs, dtype), taus, jnp.asarray(threshold, dtype))
        )
        rep, t = np.meshgrid(np.arange(n_replicates), obs, indexing="ij")
        frames.append(
            pd.DataFrame(
                {
                    "noise": noise,
                    "factor": factor,
                    "replicate": rep.ravel(),
                    "obs_year": t.ravel(),
                    "flagged": flagged.ravel(),
                    "ratio": ratio.ravel(),
                    "breakpoint_year": tau.ravel(),
                    "converged": conv.ravel(),
                }
            )
        )
    runs = pd.concat(frames, ignore_index=True)
    return DetectionStudy(
        config=config,
        threshold=float(threshold),
        runs=runs,
        summary=_summarise(runs, config.acceleration_start, float(breakpoint_tolerance)),
        protocol="monthly_hinge",
    )
