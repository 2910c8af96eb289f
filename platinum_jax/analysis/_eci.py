"""The Epoch Capabilities Index (ECI) and an Elo-style scale, both affine maps of a stitching fit.

The stitching fit (Ho et al., "A Rosetta Stone for AI Benchmarks") fixes its scale with an anchor
*benchmark*. The index that people quote fixes it instead with two anchor *models*: with
capabilities ``C_lo`` and ``C_hi`` mapped to ``v_lo`` and ``v_hi`` (by default Claude 3.5 Sonnet,
``claude-3-5-sonnet-20240620`` = 130, and GPT-5, ``gpt-5-2025-08-07_medium`` = 150),

    ECI_m = a + b C_m,   b = (v_hi - v_lo) / (C_hi - C_lo),   a = v_lo - b C_lo.

Difficulties map the same way (EDI_b = a + b D_b) and slopes become alpha_b / b, so every predicted
score is unchanged. Intervals come from a bootstrap over scores (each replicate refitted by the
engine in vmapped batches, :func:`platinum_jax.stitching.bootstrap`); each replicate lands on its
own raw scale, so the map is recomputed per replicate from that replicate's anchor capabilities
before the percentiles are taken. The two anchor models therefore sit exactly at ``v_lo`` and
``v_hi`` in every replicate: their intervals have zero width by definition.

The Elo-style scale (:func:`elo_scale`) is the same kind of map with a different slope: ``points``
points are an odds ratio of ``odds`` on a benchmark of average slope alpha-bar, so
``Elo_m = base + (points / ln(odds)) alpha-bar (C_m - C_ref)``.

Arithmetic is NumPy float64 on the fit's (float64) parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

__all__ = [
    "DEFAULT_ECI_ANCHORS",
    "EciResult",
    "affine_from_anchors",
    "eci_scale",
    "elo_scale",
    "parameter_draws",
]

DEFAULT_ECI_ANCHORS: tuple[tuple[str, float], tuple[str, float]] = (
    ("claude-3-5-sonnet-20240620", 130.0),
    ("gpt-5-2025-08-07_medium", 150.0),
)


def affine_from_anchors(c_lo: Any, c_hi: Any, v_lo: float, v_hi: float) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` of ``v = a + b C`` sending ``c_lo -> v_lo`` and ``c_hi -> v_hi`` (vectorised).

    Raises ``ValueError`` where the two capabilities coincide (no scale is defined) and names the
    offending entries (replicates when the inputs are arrays).
    """
    c_lo, c_hi = np.asarray(c_lo, dtype=np.float64), np.asarray(c_hi, dtype=np.float64)
    spread = c_hi - c_lo
    bad = ~(np.abs(spread) > 1e-12)
    if np.any(bad):
        where = f"replicate(s) {np.flatnonzero(bad)[:10].tolist()}" if spread.ndim else "the fit"
        raise ValueError(
            f"the two anchor models have the same capability in {where}, so they fix no scale; "
            "choose two anchor models whose capabilities differ"
        )
    b = (float(v_hi) - float(v_lo)) / spread
    return float(v_lo) - b * c_lo, b


def _check_anchors(fit, anchors) -> tuple[tuple[str, float], tuple[str, float]]:
    try:
        (m_lo, v_lo), (m_hi, v_hi) = anchors
    except (TypeError, ValueError):
        raise ValueError(
            f"anchors must be two (model, value) pairs, e.g. {DEFAULT_ECI_ANCHORS}; got {anchors!r}"
        ) from None
    m_lo, m_hi = " ".join(str(m_lo).split()), " ".join(str(m_hi).split())  # the loaders' spelling
    if m_lo == m_hi:
        raise ValueError(f"the two anchor models are the same ({m_lo!r}); name two different models")
    if not (np.isfinite(float(v_lo)) and np.isfinite(float(v_hi))) or float(v_lo) == float(v_hi):
        raise ValueError(f"anchor values must be two different finite numbers (got {v_lo}, {v_hi})")
    for m in (m_lo, m_hi):
        fit.table.model_position(m)  # unknown names raise, with the closest names in the table
    return (m_lo, float(v_lo)), (m_hi, float(v_hi))


def parameter_draws(boot: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(C, D, alpha)`` per converged bootstrap replicate: arrays (R, M), (R, B), (R, B).

    ``boot`` is a :class:`platinum_jax.stitching.BootstrapResult`; each replicate's free vector is
    unpacked with its fit's layout (anchored entries inserted) under ``vmap``.
    """
    fit, thetas = getattr(boot, "fit", None), getattr(boot, "thetas", None)
    if fit is None or thetas is None:
        raise ValueError(
            "bootstrap must be a stitching bootstrap result (platinum_jax.stitching.bootstrap), "
            f"got {type(boot).__name__}"
        )
    ok = np.asarray(boot.converged, dtype=bool)
    if ok.sum() < 2:
        raise ValueError(
            f"only {int(ok.sum())} bootstrap replicate(s) converged; intervals need at least 2. "
            "Rerun the bootstrap with a larger max_steps"
        )
    def unpack_one(t):
        p = fit.layout.unpack(t)
        return p.capability, p.difficulty, p.slope

    unpack = jax.vmap(unpack_one)
    c, d, a = unpack(jnp.asarray(np.asarray(thetas)[ok]))
    return np.asarray(c), np.asarray(d), np.asarray(a)


def _resolve_bootstrap(fit, bootstrap, replicates, level, seed):
    if bootstrap is not None:
        if getattr(bootstrap, "fit", None) is not fit:
            raise ValueError("bootstrap was run on another fit; pass the bootstrap of this fit")
        return bootstrap
    if replicates == 0:
        return None
    if int(replicates) < 2:
        raise ValueError(f"replicates must be 0 (no intervals) or at least 2 (got {replicates})")
    from platinum_jax.stitching import bootstrap as run_bootstrap

    return run_bootstrap(fit, int(replicates), seed=seed, level=level)


@dataclass(frozen=True, eq=False)
class EciResult:
    """A fit on the ECI scale (immutable).

    ``models``: index ``model``; columns ``capability`` (C_m), ``eci``, ``lower``, ``upper``
    (percentile interval at ``level``; NaN without a bootstrap), ``n_benchmarks``,
    ``release_date``, ``anchor`` (bool) and ``shown`` (False for models with fewer than
    ``min_benchmarks`` benchmarks). ``benchmarks``: index ``benchmark``; ``difficulty``, ``edi``,
    ``lower``, ``upper``, ``slope`` (alpha_b), ``slope_eci`` (alpha_b / b). ``offset`` a and
    ``scale`` b of the central map; ``draws``: ECI per replicate (replicates x models) or None.
    """

    models: pd.DataFrame
    benchmarks: pd.DataFrame
    offset: float
    scale: float
    anchors: tuple
    level: float
    min_benchmarks: int | None
    draws: pd.DataFrame | None

    @property
    def shown(self) -> pd.DataFrame:
        """The models that pass the minimum-benchmarks rule, highest index first."""
        return self.models[self.models["shown"]].sort_values("eci", ascending=False)

    def to_eci(self, capability: Any) -> np.ndarray:
        """The central map ``a + b C`` applied to raw capabilities."""
        return self.offset + self.scale * np.asarray(capability, dtype=np.float64)

    def summary(self) -> pd.DataFrame:
        """One row per quantity: the map, the anchors' values, counts and interval widths."""
        (m_lo, v_lo), (m_hi, v_hi) = self.anchors
        width = (self.models["upper"] - self.models["lower"])[~self.models["anchor"]]
        rows = {
            "offset_a": self.offset,
            "scale_b": self.scale,
            f"eci[{m_lo}]": float(self.models.loc[m_lo, "eci"]),
            f"eci[{m_hi}]": float(self.models.loc[m_hi, "eci"]),
            "n_models": float(len(self.models)),
            "n_shown": float(self.models["shown"].sum()),
            "replicates": float(0 if self.draws is None else len(self.draws)),
            "level": self.level,
            # a percentile interval of refits need not contain the estimate (bias, few refits)
            "outside_interval": float(((self.models["eci"] < self.models["lower"])
                                       | (self.models["eci"] > self.models["upper"])).sum()),
            "median_interval_width": float(width.median()) if self.draws is not None else np.nan,
        }
        return pd.Series(rows, name="value").rename_axis("quantity").to_frame()


def eci_scale(
    fit: Any,
    *,
    anchors: Any = DEFAULT_ECI_ANCHORS,
    bootstrap: Any = None,
    replicates: int | None = None,
    level: float = 0.90,
    min_benchmarks: int | None = None,
    seed: int | None = None,
) -> EciResult:
    """Put a stitching fit on the ECI scale, with bootstrap intervals; or a Bayesian stitching
    fit, with posterior intervals.

    Args:
        fit: a :class:`~platinum_jax.stitching.StitchingFit` (any anchor, any penalty), or a
            :class:`~platinum_jax.stitching.BayesStitchingFit`: then every posterior draw is
            mapped by its own anchors' capabilities, ``eci``/``edi``/``slope_eci`` are the
            posterior medians of the mapped draws, ``lower``/``upper`` their equal-tailed
            ``level`` interval, ``capability``/``difficulty``/``slope`` the posterior means,
            ``offset``/``scale`` the medians of the per-draw map, and ``draws`` the ECI per
            draw (``bootstrap``, ``replicates`` and ``seed`` do not apply and are refused).
        anchors: two ``(model, value)`` pairs (default Claude 3.5 Sonnet = 130, GPT-5 medium =
            150); names are matched after the loaders' whitespace normalisation.
        bootstrap: a bootstrap result of ``fit`` to reuse; when None, ``replicates`` refits are
            run (None: Epoch's default, 100); ``replicates=0`` gives no intervals (NaN).
        level: interval level (Epoch: 0.90).
        min_benchmarks: models scored on fewer benchmarks get ``shown = False`` (they stay in
            ``models`` and in the fit); None shows every model.
        seed: random seed of the bootstrap (None: 0).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r}); Epoch uses 0.90")
    if min_benchmarks is not None and int(min_benchmarks) < 1:
        raise ValueError(f"min_benchmarks must be a positive integer or None (got {min_benchmarks})")
    (m_lo, v_lo), (m_hi, v_hi) = anchors = _check_anchors(fit, anchors)
    if getattr(fit, "idata", None) is not None:
        if bootstrap is not None or replicates is not None or seed is not None:
            raise ValueError("a Bayesian fit's intervals come from its posterior draws; drop "
                             "bootstrap, replicates and seed")
        return _posterior_eci(fit, anchors, level, min_benchmarks)
    caps, bench = fit.capabilities, fit.benchmarks
    a, b = affine_from_anchors(caps.loc[m_lo, "capability"], caps.loc[m_hi, "capability"], v_lo, v_hi)
    a, b = float(a), float(b)
    if b <= 0:
        raise ValueError(
            f"anchors {m_lo!r} = {v_lo:g} and {m_hi!r} = {v_hi:g} are in the opposite order of "
            f"the fit's capabilities ({float(caps.loc[m_lo, 'capability']):.3f} and "
            f"{float(caps.loc[m_hi, 'capability']):.3f}): the map would turn the scale upside "
            "down. Give the higher value to the more capable model")
    n_bench = fit.table.data.groupby("model", observed=True)["benchmark"].nunique()
    models = pd.DataFrame(
        {
            "capability": caps["capability"],
            "eci": a + b * caps["capability"],
            "lower": np.nan,
            "upper": np.nan,
            "n_benchmarks": n_bench.reindex(caps.index).fillna(0).astype(int),
            "release_date": caps["release_date"],
            "anchor": caps.index.isin([m_lo, m_hi]),
        },
        index=caps.index,
    )
    models["shown"] = True if min_benchmarks is None else models["n_benchmarks"] >= int(min_benchmarks)
    benches = pd.DataFrame(
        {
            "difficulty": bench["difficulty"],
            "edi": a + b * bench["difficulty"],
            "lower": np.nan,
            "upper": np.nan,
            "slope": bench["slope"],
            "slope_eci": bench["slope"] / b,
        },
        index=bench.index,
    )
    boot = _resolve_bootstrap(fit, bootstrap, 100 if replicates is None else replicates, level,
                              0 if seed is None else seed)
    draws = None
    if boot is not None:
        c, d, _ = parameter_draws(boot)
        i_lo, i_hi = fit.table.model_position(m_lo), fit.table.model_position(m_hi)
        a_r, b_r = affine_from_anchors(c[:, i_lo], c[:, i_hi], v_lo, v_hi)
        eci = a_r[:, None] + b_r[:, None] * c
        edi = a_r[:, None] + b_r[:, None] * d
        q = [(1 - level) / 2, (1 + level) / 2]
        models[["lower", "upper"]] = np.quantile(eci, q, axis=0).T
        benches[["lower", "upper"]] = np.quantile(edi, q, axis=0).T
        draws = pd.DataFrame(eci, columns=pd.Index(fit.table.models, name="model"))
        draws.index.name = "replicate"
    return EciResult(models, benches, a, b, anchors, float(level),
                     None if min_benchmarks is None else int(min_benchmarks), draws)


def _posterior_eci(fit, anchors, level, min_benchmarks) -> EciResult:
    """:func:`eci_scale` of a Bayesian stitching fit: each posterior draw on its own map."""
    (m_lo, v_lo), (m_hi, v_hi) = anchors
    post = fit.idata.posterior
    models, benchmarks = list(fit.table.models), list(fit.table.benchmarks)

    def draws(var, dim, names):
        x = post[var].sel({dim: names}).stack(sample=("chain", "draw")).transpose("sample", dim)
        return np.asarray(x.values, dtype=np.float64)

    c = draws("capability", "model", models)
    d, alpha = draws("difficulty", "benchmark", benchmarks), draws("slope", "benchmark", benchmarks)
    i_lo, i_hi = models.index(m_lo), models.index(m_hi)
    a_r, b_r = affine_from_anchors(c[:, i_lo], c[:, i_hi], v_lo, v_hi)
    if np.any(b_r <= 0):
        raise ValueError(
            f"in {int(np.sum(b_r <= 0))} of {len(b_r)} posterior draws {m_lo!r} is more capable "
            f"than {m_hi!r}, so the map would turn those draws upside down; choose anchor "
            "models whose order the posterior settles")
    eci, edi = a_r[:, None] + b_r[:, None] * c, a_r[:, None] + b_r[:, None] * d
    q = [(1 - level) / 2, 0.5, (1 + level) / 2]
    (lo, mid, hi), (dlo, dmid, dhi) = np.quantile(eci, q, axis=0), np.quantile(edi, q, axis=0)
    n_bench = fit.table.data.groupby("model", observed=True)["benchmark"].nunique()
    idx = pd.Index(models, name="model")
    frame = pd.DataFrame(
        {"capability": c.mean(axis=0), "eci": mid, "lower": lo, "upper": hi,
         "n_benchmarks": n_bench.reindex(idx).fillna(0).astype(int).to_numpy(),
         "release_date": fit.table.model_release_dates().reindex(idx).to_numpy(),
         "anchor": idx.isin([m_lo, m_hi])}, index=idx)
    frame["shown"] = True if min_benchmarks is None else frame["n_benchmarks"] >= int(min_benchmarks)
    benches = pd.DataFrame(
        {"difficulty": d.mean(axis=0), "edi": dmid, "lower": dlo, "upper": dhi,
         "slope": alpha.mean(axis=0), "slope_eci": np.median(alpha / b_r[:, None], axis=0)},
        index=pd.Index(benchmarks, name="benchmark"))
    per_draw = pd.DataFrame(eci, columns=idx)
    per_draw.index.name = "draw"
    return EciResult(frame, benches, float(np.median(a_r)), float(np.median(b_r)), anchors,
                     float(level), None if min_benchmarks is None else int(min_benchmarks),
                     per_draw)


def elo_scale(
    fit: Any,
    *,
    points: float = 200.0,
    odds: float = 3.0,
    reference: tuple[str, float] = (DEFAULT_ECI_ANCHORS[0][0], 1000.0),
    average_slope: str | float = "mean",
    bootstrap: Any = None,
    level: float = 0.90,
) -> pd.DataFrame:
    """An Elo-style scale: ``points`` more points = ``odds`` times the odds on an average benchmark.

    On a benchmark of slope alpha the odds of success are ``exp(alpha (C - D))``, so a capability
    gap ``Delta C`` multiplies them by ``exp(alpha Delta C)``. With alpha-bar the average slope
    (``"mean"`` or ``"median"`` of the fitted alpha_b, or a number), the scale

        Elo_m = base + k (C_m - C_ref),   k = points alpha-bar / ln(odds),

    gives ``exp(alpha-bar Delta C) = odds`` for ``Delta Elo = points``; ``reference = (model,
    base)`` fixes the origin. With ``bootstrap`` (a bootstrap result of ``fit``) the map is
    recomputed per replicate (its own alpha-bar and C_ref) and ``lower``/``upper`` are the
    percentiles at ``level``. Returns a frame indexed by model: ``capability``, ``elo``,
    ``lower``, ``upper``, ``release_date``; ``attrs`` holds ``points_per_unit`` (k) and
    ``average_slope``.
    """
    if not (np.isfinite(points) and points > 0 and np.isfinite(odds) and odds > 1):
        raise ValueError(f"points must be > 0 and odds > 1 (got points={points}, odds={odds})")
    ref_model, base = reference
    ref_model = " ".join(str(ref_model).split())
    i_ref = fit.table.model_position(ref_model)

    def average(slopes: np.ndarray) -> np.ndarray:
        if isinstance(average_slope, str):
            if average_slope not in ("mean", "median"):
                raise ValueError(f"average_slope must be 'mean', 'median' or a number (got {average_slope!r})")
            return getattr(np, average_slope)(slopes, axis=-1)
        value = float(average_slope)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"average_slope must be a positive number (got {average_slope})")
        return np.full(slopes.shape[:-1], value)

    c = np.asarray(fit.params.capability, dtype=np.float64)
    alpha_bar = float(average(np.asarray(fit.params.slope, dtype=np.float64)))
    k = points * alpha_bar / np.log(odds)
    caps = fit.capabilities
    out = pd.DataFrame(
        {"capability": c, "elo": float(base) + k * (c - c[i_ref]), "lower": np.nan, "upper": np.nan,
         "release_date": caps["release_date"].to_numpy()},
        index=caps.index,
    )
    if bootstrap is not None:
        if getattr(bootstrap, "fit", None) is not fit:
            raise ValueError("bootstrap was run on another fit; pass the bootstrap of this fit")
        cd, _, ad = parameter_draws(bootstrap)
        kd = points * average(ad) / np.log(odds)
        elo = float(base) + kd[:, None] * (cd - cd[:, [i_ref]])
        out[["lower", "upper"]] = np.quantile(elo, [(1 - level) / 2, (1 + level) / 2], axis=0).T
    out.attrs["points_per_unit"] = float(k)
    out.attrs["average_slope"] = alpha_bar
    return out
