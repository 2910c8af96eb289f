"""The paper's acceleration-detection protocol on synthetic worlds, vmapped.

Ho et al. ("A Rosetta Stone for AI Benchmarks", section 3.3.1, and Epoch's public simulation
code) ask how soon a known speed-up of capability growth shows on the stitched scale, and how
often one is "found" where there is none. This module follows their protocol:

World (one draw per replicate). Models are released uniformly at random over
``[start, start + years]`` (``models_per_year``), benchmarks likewise (``benchmarks_per_year``).
With base rate ``s = capability_gain / years``, a model released at ``t`` has

    C = s (t - start)                                   (t < t_a, or not accelerated)
    C = s (t_a - start) + f s (t - t_a)                 (t >= t_a, accelerated)

plus ``N(0, (capability_noise * noise)^2)``; a fraction ``accelerated_fraction`` of the models
after ``t_a`` accelerate. Benchmark difficulties follow ``benchmark_offset + s (t_b - start)``
plus ``N(0, (difficulty_noise * noise)^2)``, slopes ``alpha_b ~ U(slope_low, slope_high)``. A
pair is evaluated with probability ``eval_fraction``, and only when its noiseless score lies in
``[saturation, 1 - saturation]``; the observed score is
``clip(sigmoid(alpha_b (C_m - D_b)) + N(0, (score_noise * noise)^2), 0, 1 - saturation)``.
``noise`` is the multiplier the study varies.

Detection (:func:`first_detection`). At every release of a model after ``t_a`` (to the end of
the world, as the paper does; ``max_wait`` years after ``t_a`` when set) only the scores of the
models released so far are used: the stitching model is refitted (no anchor: the L2 penalty,
summed over the models with scores and divided by their number plus 2B as in the paper's
simulation, fixes the scale; warm-started from the previous release), the
capabilities of models with at least one score are mapped onto the true scale by least squares
(the paper's alignment), and the frontier is their *running maximum* over release dates. Then
breakpoints ``tau`` are scanned, ``n_breakpoints`` evenly from ``t_a`` to the latest release; for
each, the points on either side get *separate* OLS lines (slopes ``s_1``, ``s_2``), joined at
``tau`` for the ``R^2`` over all points. A release is a detection when some ``tau`` has at least
``min_points_after`` points after it (and two on each side), ``s_1 > 0``, ``s_2 / s_1 >=
threshold`` and ``R^2 >= min_r2``. Latency is that release date minus ``t_a``.

False positives (:func:`false_positive_flags`). Worlds with no acceleration, ``fp_models``
models and ``fp_benchmarks`` benchmarks over ``[t_a - fp_lead, t_a + window]`` for each
observation ``window`` in ``fp_windows``; the model is fitted once to all scores and the same
scan from ``t_a`` is run. The false-positive rate is the fraction of these worlds flagged. The
paper's sweep (Epoch's simulation code) runs ``fp_replicates = 50`` worlds per noise level in
``fp_noise_levels = (1, 2, 4)`` and window, 750 worlds, and averages the 15 cells (equal sizes,
so the pooled fraction); its binomial standard error ``sqrt(p (1 - p) / 750)`` is about 0.018.

Shapes are static (scores outside the current data get weight 0), so replicates run under
``vmap`` and the release-by-release search is one ``lax.while_loop`` that stops once every world
of the batch has detected (or passed ``max_wait``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["PaperWorldConfig", "first_detection", "false_positive_flags", "scan_breakpoints"]


@dataclass(frozen=True)
class PaperWorldConfig:
    """Constants of the paper's detection study (defaults: Epoch's simulation code).

    Dates are decimal years. ``max_wait`` bounds the release-by-release search after the
    acceleration (years); ``None`` (the default, the paper's protocol) searches every release to
    the end of the world, ``start + years - acceleration_start`` = 3 years. ``fp_noise_levels``
    and ``fp_replicates`` are the paper's false-positive sweep (noise 1x, 2x, 4x; 50 worlds per
    noise level and observation window).
    """

    start: float = 2024.0
    years: float = 6.0
    acceleration_start: float = 2027.0
    models_per_year: int = 30
    benchmarks_per_year: int = 10
    capability_gain: float = 3.5
    eval_fraction: float = 0.25
    saturation: float = 0.05
    slope_low: float = 3.0
    slope_high: float = 10.0
    benchmark_offset: float = 0.5
    score_noise: float = 0.025
    capability_noise: float = 0.2
    difficulty_noise: float = 0.2
    accelerated_fraction: float = 1.0
    l2: float = 0.1
    min_r2: float = 0.6
    n_breakpoints: int = 50
    min_points_after: int = 3
    max_wait: float | None = None
    fp_noise_levels: tuple[float, ...] = (1.0, 2.0, 4.0)
    fp_replicates: int = 50
    fp_models: int = 100
    fp_benchmarks: int = 20
    fp_lead: float = 3.0
    fp_windows: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 6.0)

    def __post_init__(self):
        end = self.start + self.years
        if not self.start < self.acceleration_start < end:
            raise ValueError(
                f"acceleration_start ({self.acceleration_start}) must lie strictly inside "
                f"[start, start + years] = [{self.start}, {end}]"
            )
        if self.models_per_year * self.years < 10 or self.benchmarks_per_year * self.years < 3:
            raise ValueError("a world needs >= 10 models and >= 3 benchmarks; raise the rates")
        if not 0 < self.eval_fraction <= 1 or not 0 <= self.accelerated_fraction <= 1:
            raise ValueError("eval_fraction must be in (0, 1] and accelerated_fraction in [0, 1]")
        if not 0 <= self.saturation < 0.5:
            raise ValueError(f"saturation must be in [0, 0.5), got {self.saturation}")
        if not 0 < self.slope_low <= self.slope_high:
            raise ValueError("need 0 < slope_low <= slope_high")
        if (self.max_wait is not None and not self.max_wait > 0) or not self.fp_windows or min(
                self.fp_windows) <= 0:
            raise ValueError("max_wait (None: to the end of the world) and every fp_windows "
                             "entry must be positive years")
        noise = np.asarray(self.fp_noise_levels, dtype=np.float64)
        if noise.size == 0 or not (np.isfinite(noise) & (noise >= 0)).all():
            raise ValueError(f"fp_noise_levels must be non-empty, finite and >= 0, got "
                             f"{self.fp_noise_levels}")
        if self.fp_replicates < 1:
            raise ValueError(f"fp_replicates must be >= 1, got {self.fp_replicates}")
        if self.n_breakpoints < 2 or self.min_points_after < 2:
            raise ValueError("n_breakpoints and min_points_after must be at least 2")

    @property
    def search_years(self) -> float:
        """Years after the acceleration that the release-by-release search covers."""
        end = self.start + self.years - self.acceleration_start
        return end if self.max_wait is None else min(float(self.max_wait), end)

    @property
    def n_models(self) -> int:
        return int(round(self.models_per_year * self.years))

    @property
    def n_benchmarks(self) -> int:
        return int(round(self.benchmarks_per_year * self.years))


def _generate(key, cfg: PaperWorldConfig, n_models, n_benchmarks, start, end, factor, noise):
    """Full (M, B) grid of one world: release years, true capabilities, scores, observed mask."""
    k = jax.random.split(key, 8)
    t = jnp.sort(jax.random.uniform(k[0], (n_models,), minval=start, maxval=end))
    s = cfg.capability_gain / (end - start)
    t_a = cfg.acceleration_start
    fast = (t >= t_a) & (jax.random.uniform(k[1], (n_models,)) < cfg.accelerated_fraction)
    cap = jnp.where(fast, s * (t_a - start) + factor * s * (t - t_a), s * (t - start))
    cap = cap + cfg.capability_noise * noise * jax.random.normal(k[2], (n_models,))
    tb = jax.random.uniform(k[3], (n_benchmarks,), minval=start, maxval=end)
    diff = cfg.benchmark_offset + s * (tb - start)
    diff = diff + cfg.difficulty_noise * noise * jax.random.normal(k[4], (n_benchmarks,))
    slope = jax.random.uniform(k[5], (n_benchmarks,), minval=cfg.slope_low, maxval=cfg.slope_high)
    clean = jax.nn.sigmoid(slope[None, :] * (cap[:, None] - diff[None, :]))
    observed = (
        (clean >= cfg.saturation) & (clean <= 1 - cfg.saturation)
        & (jax.random.uniform(k[6], clean.shape) < cfg.eval_fraction)
    )
    noisy = clean + cfg.score_noise * noise * jax.random.normal(k[7], clean.shape)
    scores = jnp.clip(noisy, 0.0, 1.0 - cfg.saturation)
    return t, cap, scores, observed


def _compact(scores, observed, capacity):
    """The observed pairs as (model, benchmark, score, weight) rows, padded to ``capacity``."""
    n_b = scores.shape[1]
    flat = observed.ravel()
    (idx,) = jnp.nonzero(flat, size=capacity, fill_value=0)
    weight = (jnp.arange(capacity) < jnp.sum(flat)).astype(scores.dtype)
    return (idx // n_b).astype(jnp.int32), (idx % n_b).astype(jnp.int32), scores.ravel()[idx], weight


def _line(x, y, w):
    # weighted simple regression y ~ a + s x, closed form (masked sums keep shapes static)
    n, sx, sy = jnp.sum(w), jnp.sum(w * x), jnp.sum(w * y)
    sxx, sxy = jnp.sum(w * x * x), jnp.sum(w * x * y)
    den = n * sxx - sx * sx
    slope = jnp.where(den > 0, (n * sxy - sx * sy) / jnp.where(den > 0, den, 1.0), jnp.nan)
    return slope, (sy - slope * sx) / jnp.where(n > 0, n, 1.0)


def scan_breakpoints(x, y, valid, first, threshold, min_r2, n_breakpoints, min_points_after):
    """The paper's breakpoint scan on points ``(x, y)`` with mask ``valid`` (pure, vmappable).

    Breakpoints run evenly from ``first`` to the last valid ``x``; returns ``(detected,
    breakpoint, ratio, r2)`` for the first breakpoint that passes (NaN when none does).
    """
    w = valid.astype(y.dtype)
    # rows outside the mask may hold anything (a running maximum starts at -inf): zero them, as
    # 0 * inf would turn every masked sum into NaN
    y = jnp.where(valid, y, 0.0)
    x = jnp.where(valid, x, 0.0)
    last = jnp.max(jnp.where(valid, x, -jnp.inf))
    bps = first + (last - first) * jnp.linspace(0.0, 1.0, n_breakpoints, dtype=y.dtype)
    xc = x - first  # centred for a well-conditioned closed-form fit
    ybar = jnp.sum(w * y) / jnp.maximum(jnp.sum(w), 1.0)
    sst = jnp.sum(w * (y - ybar) ** 2)

    def one(bp):
        left, right = w * (x <= bp), w * (x > bp)
        s1, i1 = _line(xc, y, left)
        s2, _ = _line(xc, y, right)
        b = bp - first
        pred = jnp.where(x <= bp, s1 * xc + i1, s2 * xc + (s1 - s2) * b + i1)
        r2 = 1.0 - jnp.sum(w * (y - pred) ** 2) / jnp.where(sst > 0, sst, 1.0)
        n_left, n_right = jnp.sum(left), jnp.sum(right)
        usable = (n_right >= min_points_after) & (n_left >= 2) & (n_right >= 2) & (s1 > 0)
        ratio = jnp.where(usable, s2 / jnp.where(usable, s1, 1.0), jnp.nan)
        return usable & (ratio >= threshold) & (r2 >= min_r2), ratio, r2

    hit, ratio, r2 = jax.vmap(one)(bps)
    detected = jnp.any(hit) & (last > first)
    i = jnp.argmax(hit)
    nan = jnp.asarray(jnp.nan, y.dtype)
    return (detected, jnp.where(detected, bps[i], nan), jnp.where(detected, ratio[i], nan),
            jnp.where(detected, r2[i], nan))


def _aligned_frontier(caps, truth, mi, weight, n_models):
    """Capabilities of models with data, mapped onto the true scale (least squares), and their
    running maximum over release order; plus the has-data mask."""
    has = jax.ops.segment_sum(weight, mi, num_segments=n_models) > 0
    slope, icpt = _line(caps, truth, has.astype(caps.dtype))
    aligned = slope * caps + icpt
    return jax.lax.cummax(jnp.where(has, aligned, -jnp.inf)), has


def _solver(max_steps):
    # The alignment onto the true scale is affine, so the slow, flat gauge directions of an
    # unanchored fit (shift and stretch of C and D) need not converge to the last digit.
    return {"max_steps": max_steps, "gtol": 1e-7, "xtol": 1e-9, "ftol": 1e-10}


def _paper_penalty_scale(weight, mi, n_models, n_benchmarks):
    """Factor on the L2 strength that makes our penalty the paper's: it sums C^2 over the models
    with data only (models without scores sit at C = 0 and add nothing) and divides by their
    number plus 2B, where our objective divides by all M + 2B - 1."""
    n_data = jnp.sum(jax.ops.segment_sum(weight, mi, num_segments=n_models) > 0)
    return (n_models + 2 * n_benchmarks - 1) / (n_data + 2 * n_benchmarks)


def _problem(n_models, n_benchmarks, l2):
    """The Rosetta model of a world for the measurement engine, with no anchor: the L2 term
    fixes the scale (and its strength is scaled per fit, :func:`_paper_penalty_scale`)."""
    from platinum_jax.models.rosetta import ParameterLayout
    from platinum_jax.stitching import layout_problem

    return layout_problem(ParameterLayout(n_models, n_benchmarks), l2)


def _refit(problem, theta, mi, bi, y, w, max_steps):
    """One warm-started engine refit of the world's scores weighted by ``w``."""
    from platinum_jax.inference import Data, solve_map

    scale = _paper_penalty_scale(w, mi, problem.info.n_subjects, problem.info.n_items)
    res = solve_map(problem, theta, Data(mi, bi, y, jnp.ones_like(y), w), penalty_scale=scale,
                    **_solver(max_steps))
    return res.theta, res.converged


def _start(problem, dtype):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), problem.start())


def first_detection(key, cfg: PaperWorldConfig, factor, noise, threshold, capacity, max_steps=200):
    """Release-by-release detection in one accelerated world (pure; vmap over ``key``).

    Returns ``(detected, detection_year, breakpoint, ratio, r2, n_checkpoints, converged)``;
    ``detection_year`` is NaN when nothing is found within ``cfg.search_years`` of ``t_a``.
    """
    m, b = cfg.n_models, cfg.n_benchmarks
    t, cap, scores, observed = _generate(key, cfg, m, b, cfg.start, cfg.start + cfg.years,
                                         factor, noise)
    mi, bi, y, w_obs = _compact(scores, observed, capacity)
    problem = _problem(m, b, cfg.l2)
    t_a = jnp.asarray(cfg.acceleration_start, t.dtype)
    horizon = t_a + cfg.search_years
    k0 = jnp.searchsorted(t, t_a, side="right")
    nan = jnp.asarray(jnp.nan, t.dtype)

    def pending(state):
        k, found = state[0], state[1]
        return (~found) & (k < m) & (t[jnp.minimum(k, m - 1)] <= horizon)

    def step(state):
        k, _, _, _, _, _, theta, n_chk, conv = state
        released = t <= t[k]
        w = w_obs * released[mi]
        theta, ok = _refit(problem, theta, mi, bi, y, w, max_steps)
        front, has = _aligned_frontier(theta.subjects[:, 0], cap, mi, w, m)
        found, bp, ratio, r2 = scan_breakpoints(
            t, front, has, t_a, threshold, cfg.min_r2, cfg.n_breakpoints, cfg.min_points_after
        )
        return (k + 1, found, jnp.where(found, t[k], nan), bp, ratio, r2, theta, n_chk + 1,
                conv & ok)

    init = (k0, jnp.asarray(False), nan, nan, nan, nan, _start(problem, t.dtype),
            jnp.asarray(0, jnp.int32), jnp.asarray(True))
    _, found, when, bp, ratio, r2, _, n_chk, conv = jax.lax.while_loop(pending, step, init)
    return found, when, bp, ratio, r2, n_chk, conv


def false_positive_flags(key, cfg: PaperWorldConfig, window, noise, threshold, capacity,
                         max_steps=200):
    """One no-acceleration world over ``[t_a - fp_lead, t_a + window]``, fitted once to all its
    scores and scanned from ``t_a`` (pure; vmap over ``key`` and ``window``).

    Returns ``(flagged, breakpoint, ratio, r2, converged)``.
    """
    m, b = cfg.fp_models, cfg.fp_benchmarks
    t_a = cfg.acceleration_start
    t, cap, scores, observed = _generate(key, cfg, m, b, t_a - cfg.fp_lead, t_a + window, 1.0,
                                         noise)
    mi, bi, y, w = _compact(scores, observed, capacity)
    problem = _problem(m, b, cfg.l2)
    theta, conv = _refit(problem, _start(problem, t.dtype), mi, bi, y, w, max_steps)
    front, has = _aligned_frontier(theta.subjects[:, 0], cap, mi, w, m)
    flagged, bp, ratio, r2 = scan_breakpoints(
        t, front, has, jnp.asarray(t_a, t.dtype), threshold, cfg.min_r2, cfg.n_breakpoints,
        cfg.min_points_after,
    )
    return flagged, bp, ratio, r2, conv


def observed_counts(keys, cfg: PaperWorldConfig, factor, noise, fp: bool, window=None):
    """Number of observed pairs per world (to size the padded score arrays)."""
    window = 0.0 if window is None else window
    return np.asarray(_observed_counts(keys, cfg, factor, noise, window, fp))


@functools.partial(jax.jit, static_argnames=("cfg", "fp"))
def _observed_counts(keys, cfg: PaperWorldConfig, factor, noise, window, fp: bool):
    # factor, noise and window are traced: one program per (config, kind), not one per cell
    if fp:
        def count(key):
            t_a = cfg.acceleration_start
            return jnp.sum(_generate(key, cfg, cfg.fp_models, cfg.fp_benchmarks, t_a - cfg.fp_lead,
                                     t_a + window, 1.0, noise)[3])
    else:
        def count(key):
            return jnp.sum(_generate(key, cfg, cfg.n_models, cfg.n_benchmarks, cfg.start,
                                     cfg.start + cfg.years, factor, noise)[3])
    return jax.vmap(count)(keys)
