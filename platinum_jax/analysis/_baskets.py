"""Domain baskets: an index computed on a subset of benchmarks (coding, math, knowledge, ...).

Two modes, as Epoch offers them:

* ``"project"``: the benchmark parameters (D_b, alpha_b) stay as the full fit estimated them and
  only each model's capability is refitted on the basket's scores,

      C_m^basket = argmin_C  0.5 sum_{b in basket} w_mb (sigmoid(alpha_b (C - D_b)) - y_mb)^2
                             + 0.5 rho (C - t)^2,

  with ``rho = lambda / n`` and ``t`` the full fit's penalty weight and centre (``n = n_models +
  2 n_benchmarks - 1``; the paper's term for one capability) and ``w = 1``. The result is on the
  full fit's scale, so the full fit's ECI map applies. Every model is solved at once (one
  vectorised Levenberg-Marquardt, per-model sums by ``segment_sum``, jitted). The basket may be
  one set for every model or, with ``fresh=True``, each model's own: the basket's benchmarks
  released after the model (the subset it cannot have been tuned on).
* ``"refit"``: the whole stitching model is refitted on the basket's scores (anchored on the full
  fit's anchor benchmark when it is in the basket, else on the basket's most-scored benchmark)
  and put on its own ECI scale; a bootstrap gives intervals as for the full index.

**Subset minus general.** ``difference = basket - full`` per model, with an interval and a
p-value from a parametric (wild) bootstrap of the fit (``difference_draws`` > 0): each draw
simulates scores from the fitted model, ``y* = clip(yhat + k r v, 0, 1)`` with ``r`` the fit's
residuals, ``v`` independent signs (+-1, so each score keeps its own noise level) and
``k = sqrt(N / (N - P))`` (residuals are smaller than the noise by the degrees of freedom the fit
used), refits the stitching model and reprojects the basket, all vmapped in one compiled
program. The draws are scores in which the model holds, so their differences are what the
procedure gives with *no* subset effect: their sd ``s`` is the difference's standard error,
their mean ``d0`` its value under that null (the ridge's small pull, not zero). The interval is
``difference +- z s`` (``z`` the normal quantile of ``level``); the two-sided p-value is
``2 Phi(-|difference - d0| / s)``, adjusted across the models tested by Holm's step-down method
(family-wise error) or Benjamini-Hochberg's (false-discovery rate). A model with no score
outside the basket is fitted alike on both sides and gets no test (NaN). Measured on simulated
worlds with known truth in ``benchmarks/bench_subset_difference.py`` (the row bootstrap's
percentiles, paired across the two fits, covered 74-82% at 90% there and flagged 32% of null
models at 10%: with one to five scores per model, resampling rows is too coarse).

With a bootstrap of the full fit (``bootstrap``, project mode), each replicate's projection uses
that replicate's benchmark parameters, its ECI map and its resampling weights (the counts the
bootstrap drew, recomputed from its seed), so the basket index's interval carries the noise of
both; a replicate that drew none of a model's basket scores leaves that model's percentiles.

Float64 throughout (turn on ``jax_enable_x64``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._eci import DEFAULT_ECI_ANCHORS, affine_from_anchors, eci_scale, parameter_draws

__all__ = ["BASKET_TAGS", "DomainIndex", "basket_benchmarks", "domain_index", "project_capabilities"]

BASKET_TAGS = {"math": "is_math", "coding": "is_coding"}
MODES = ("project", "refit")
ADJUSTMENTS = ("holm", "bh", "none")


def basket_benchmarks(info: pd.DataFrame, tag: str, *, available: Sequence[str] | None = None) -> list[str]:
    """Benchmarks flagged with ``tag`` (``"math"`` or ``"coding"``) in a benchmark-info frame.

    ``info`` is :func:`platinum_jax.importers.read_benchmark_info` (columns ``is_math``,
    ``is_coding``); ``available`` keeps only names present in a fit.
    """
    if tag not in BASKET_TAGS:
        raise ValueError(f"unknown basket tag {tag!r}; choose one of {sorted(BASKET_TAGS)} or name benchmarks")
    column = BASKET_TAGS[tag]
    if column not in info.columns:
        raise ValueError(f"the benchmark info has no {column!r} column; pass read_benchmark_info(raw_dir)")
    names = [str(b) for b in info.index[info[column].astype(bool)]]
    if available is not None:
        names = [b for b in names if b in set(available)]
    if not names:
        raise ValueError(f"no benchmark of the fit carries the {tag!r} tag; name the benchmarks instead")
    return names


def _project(c0, d, a, mi, bi, y, w, rho, centre, n_models, steps):
    """Vectorised LM over models: every capability solved on its own (weighted) scores, D and
    alpha fixed."""

    def parts(c):
        z = a[bi] * (c[mi] - d[bi])
        s = jax.nn.sigmoid(z)
        r = s - y
        j = a[bi] * s * (1.0 - s)
        f = 0.5 * jax.ops.segment_sum(w * r**2, mi, n_models) + 0.5 * rho * (c - centre) ** 2
        g = jax.ops.segment_sum(w * r * j, mi, n_models) + rho * (c - centre)
        h = jax.ops.segment_sum(w * j**2, mi, n_models) + rho
        return f, g, h

    def body(_, state):
        c, mu = state
        f, g, h = parts(c)
        trial = c - g / (h + mu)
        better = parts(trial)[0] < f
        return jnp.where(better, trial, c), jnp.where(better, mu / 3.0, mu * 4.0)

    mu0 = jnp.full_like(c0, 1e-3)
    c, _ = jax.lax.fori_loop(0, steps, body, (c0, mu0))
    return c, parts(c)[1]


_project_jit = jax.jit(_project, static_argnums=(9, 10))
_project_draws = jax.jit(
    jax.vmap(_project, in_axes=(0, 0, 0, None, None, None, 0, None, 0, None, None)),
    static_argnums=(9, 10),
)


def project_capabilities(
    fit: Any, benchmarks: Sequence[str] | None = None, *, ridge: float | None = None,
    steps: int = 200, fresh: bool = False,
) -> pd.DataFrame:
    """Capabilities refitted on ``benchmarks`` only, with the fit's D_b and alpha_b frozen.

    ``benchmarks``: names (None: every benchmark of the fit); ``fresh=True`` keeps, for each
    model, only those released after the model (both release dates must be known).
    ``ridge``: the weight rho of ``0.5 rho (C - t)^2`` (default the fit's own, ``lambda / n``;
    0 turns it off, and then a model that aces every basket benchmark has no finite optimum).
    Returns a frame indexed by the models with at least one basket score: ``capability``,
    ``full_capability``, ``n_benchmarks``, ``gradient`` (at the solution, ~0 when converged).
    """
    names, mi, bi, y, keep = _basket_rows(fit, benchmarks, fresh)
    rho, centre = _ridge(fit, ridge)
    c_full = np.asarray(fit.params.capability, dtype=np.float64)
    c, g = _project_jit(
        jnp.asarray(c_full), jnp.asarray(fit.params.difficulty), jnp.asarray(fit.params.slope),
        jnp.asarray(mi), jnp.asarray(bi), jnp.asarray(y), jnp.ones_like(jnp.asarray(y)), rho,
        centre, fit.table.n_models, int(steps),
    )
    counts = np.bincount(mi, minlength=fit.table.n_models)
    out = pd.DataFrame(
        {"capability": np.asarray(c), "full_capability": c_full, "n_benchmarks": counts,
         "gradient": np.asarray(g)},
        index=pd.Index(fit.table.models, name="model"),
    )
    out = out[counts > 0]
    out.attrs["benchmarks"] = names
    return out


def _basket_rows(fit, benchmarks, fresh=False):
    if benchmarks is None:
        benchmarks = list(fit.table.benchmarks)
    if isinstance(benchmarks, str):
        benchmarks = [benchmarks]
    names = list(dict.fromkeys(" ".join(str(b).split()) for b in benchmarks))
    if not names:
        raise ValueError("the basket is empty; name at least one benchmark")
    for b in names:
        fit.table.benchmark_position(b)  # unknown names raise with the closest names
    keep = fit.table.data["benchmark"].isin(names).to_numpy().copy()
    mi = np.asarray(fit.table.model_index)
    bi = np.asarray(fit.table.benchmark_index)
    if fresh:
        keep[keep] = _released_after(fit.table, mi[keep], bi[keep])
        if not keep.any():
            raise ValueError(
                "no model has a score on a basket benchmark released after it; name other "
                "benchmarks, or drop fresh")
    return names, mi[keep], bi[keep], np.asarray(fit.table.scores, dtype=np.float64)[keep], keep


def _released_after(table, mi, bi):
    """Per row: is its benchmark released after its model? Unknown dates are refused, named."""
    models = pd.to_datetime(table.model_release_dates()).to_numpy()
    benches = pd.to_datetime(table.benchmark_release_dates()).to_numpy()
    remedies = {"benchmark": "name a basket without them (--basket on the command line)",
                "model": "drop those models first (ScoreTable.drop_models)"}
    for kind, dates, pos, labels in (("benchmark", benches, bi, table.benchmarks),
                                     ("model", models, mi, table.models)):
        unknown = [labels[k] for k in np.unique(pos) if pd.isna(dates[k])]
        if unknown:
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise ValueError(
                f"fresh baskets need the release date of every {kind} they compare; "
                f"{len(unknown)} {kind}(s) have none: {', '.join(map(str, unknown[:5]))}{more}. "
                f"Add a {kind}_release_date column, or {remedies[kind]}")
    return benches[bi] > models[mi]


def _ridge(fit, ridge):
    c = np.asarray(fit.params.capability, dtype=np.float64)
    d = np.asarray(fit.params.difficulty, dtype=np.float64)
    if ridge is None:
        n = fit.table.n_models + 2 * fit.table.n_benchmarks - 1
        return float(fit.l2) / n, float(np.mean(np.concatenate([c, d])))
    if not (np.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be a finite number >= 0 or None (got {ridge})")
    return float(ridge), float(np.mean(np.concatenate([c, d])))


@dataclass(frozen=True, eq=False)
class DomainIndex:
    """A basket's index beside the full one (immutable).

    ``models``: index model (models with at least one basket score): ``full`` and ``basket``
    (the index on the full and on the basket fit), ``lower``, ``upper`` (the basket index's
    interval; NaN without a bootstrap), ``difference`` (basket - full), ``difference_sd``,
    ``difference_lower``, ``difference_upper`` (its standard error and interval),
    ``null_difference`` (the procedure's difference when the model holds), ``p_value``
    (two-sided, "no subset effect"), ``p_adjusted`` (across the models, by ``adjust``),
    ``n_benchmarks`` (basket benchmarks scored). The difference's columns are NaN without
    ``difference_draws``, in refit mode, and for a model with no score outside the basket.
    ``name``, ``mode``, ``benchmarks``, ``units`` ("ECI" or "capability"), ``fresh``,
    ``adjust``, ``level``, ``difference_draws``.
    """

    models: pd.DataFrame
    name: str
    mode: str
    benchmarks: list
    units: str
    fresh: bool = False
    adjust: str = "holm"
    level: float = 0.90
    difference_draws: int = 0


def domain_index(
    fit: Any,
    benchmarks: Sequence[str] | None = None,
    *,
    mode: str = "project",
    name: str = "basket",
    eci_anchors: Any = DEFAULT_ECI_ANCHORS,
    bootstrap: Any = None,
    level: float = 0.90,
    ridge: float | None = None,
    fresh: bool = False,
    difference_draws: int = 0,
    adjust: str = "holm",
    seed: int = 0,
) -> DomainIndex:
    """A domain index on ``benchmarks`` in ``mode`` ``"project"`` or ``"refit"`` (module
    docstring), and its difference from the full index per model.

    ``benchmarks``: names (None: every benchmark); ``fresh=True`` (project mode) keeps for each
    model only those released after it. ``eci_anchors=None`` reports raw capabilities instead of
    the ECI. ``bootstrap``: a bootstrap result of ``fit``
    (:func:`platinum_jax.stitching.bootstrap`) for the basket index's interval; in refit mode
    its number of replicates is rerun on the basket's fit. ``difference_draws`` (project mode):
    simulated refits for the difference's standard error, interval and p-value (0: none; 200 is
    a good start), drawn from ``seed``. ``adjust``: ``"holm"`` (family-wise error, default),
    ``"bh"`` (false-discovery rate) or ``"none"``.

    Example (``fit`` a stitching fit)::

        res = domain_index(fit, ["GPQA diamond", "FrontierMath-2025-02-28-Private"],
                           difference_draws=200)
        res.models.sort_values("p_adjusted").head(10)   # the clearest subset effects
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES} (got {mode!r})")
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS} (got {adjust!r})")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    draws = int(difference_draws)
    if draws != difference_draws or draws < 0 or draws == 1:
        raise ValueError(f"difference_draws must be 0 or an integer >= 2 (got {difference_draws!r})")
    if mode != "project" and (fresh or draws):
        raise ValueError("a fresh basket and the difference's test (difference_draws) need "
                         "mode='project': the refit's parameters are not the full fit's")
    names, mi, bi, y, keep = _basket_rows(fit, benchmarks, fresh)
    if eci_anchors is None:
        full_map, units = (0.0, 1.0), "capability"
    else:
        full = eci_scale(fit, anchors=eci_anchors, replicates=0)
        full_map, units = (full.offset, full.scale), "ECI"
    if mode == "project":
        proj = project_capabilities(fit, names, ridge=ridge, fresh=fresh)
        basket = full_map[0] + full_map[1] * proj["capability"]
        lower = upper = pd.Series(np.nan, index=proj.index)
        if bootstrap is not None:
            lower, upper = _project_interval(fit, bootstrap, eci_anchors, mi, bi, y, keep, ridge,
                                             level, proj.index)
        counts = proj["n_benchmarks"]
    else:
        from platinum_jax.models.rosetta import anchor_for_table
        from platinum_jax.stitching import fit_stitching

        sub_table = fit.table.select_benchmarks(names)
        sub = fit_stitching(sub_table, anchor_for_table(fit.anchor, sub_table), fit.l2)
        if eci_anchors is not None:
            missing = [m for m, _ in eci_anchors if m not in sub_table.models]
            if missing:
                raise ValueError(
                    f"ECI anchor model(s) {missing} have no score on the {name!r} basket, so its "
                    "refit has no ECI scale; pass other anchors (eci_anchors) or eci_anchors=None"
                )
            boot = None
            if bootstrap is not None:
                from platinum_jax.stitching import bootstrap as run_bootstrap

                boot = run_bootstrap(sub, int(np.asarray(bootstrap.thetas).shape[0]), level=level)
            res = eci_scale(sub, anchors=eci_anchors, bootstrap=boot, replicates=0, level=level)
            basket, lower, upper = res.models["eci"], res.models["lower"], res.models["upper"]
        else:
            basket = sub.capabilities["capability"]
            lower = upper = pd.Series(np.nan, index=basket.index)
        counts = sub_table.data.groupby("model", observed=True)["benchmark"].nunique()
    idx = basket.index
    full_value = full_map[0] + full_map[1] * fit.capabilities["capability"].reindex(idx)
    difference = basket - full_value
    sd = null = pd.Series(np.nan, index=idx)
    if draws:
        sd, null = _difference_test(fit, keep, ridge, idx, draws, seed, abs(full_map[1]))
        null = null * np.sign(full_map[1])
    from scipy.stats import norm

    from platinum_jax.compare import adjust_bh, adjust_holm

    z = norm.ppf((1 + level) / 2)
    p = pd.Series(2 * norm.sf(np.abs(difference - null) / sd), index=idx)
    adjusted = {"holm": adjust_holm, "bh": adjust_bh, "none": np.asarray}[adjust](p.to_numpy())
    models = pd.DataFrame(
        {"full": full_value, "basket": basket, "lower": lower.reindex(idx), "upper": upper.reindex(idx),
         "difference": difference, "difference_sd": sd, "difference_lower": difference - z * sd,
         "difference_upper": difference + z * sd, "null_difference": null.where(sd.notna()),
         "p_value": p, "p_adjusted": pd.Series(adjusted, index=idx),
         "n_benchmarks": counts.reindex(idx).astype(int)},
        index=idx,
    )
    return DomainIndex(models, str(name), mode, names, units, bool(fresh), adjust, float(level),
                       draws)


def _project_interval(fit, bootstrap, eci_anchors, mi, bi, y, keep, ridge, level, index):
    """The basket index's percentile interval from the bootstrap's replicates, each projected
    with its own parameters, ECI map and resampling weights."""
    if getattr(bootstrap, "fit", None) is not fit:
        raise ValueError("bootstrap was run on another fit; pass the bootstrap of this fit")
    seed = getattr(bootstrap, "seed", None)
    if seed is None:
        raise ValueError(
            "this bootstrap does not record the seed of its resampling weights, so the basket "
            "cannot be projected on the same resamples; run platinum_jax.stitching.bootstrap(fit)")
    from platinum_jax.inference import resample_counts

    ok = np.asarray(bootstrap.converged, dtype=bool)
    weights = resample_counts(seed, ok.size, fit.table.n_scores)[ok][:, keep]
    c, d, a = parameter_draws(bootstrap)
    rho, _ = _ridge(fit, ridge)
    centre = np.mean(np.concatenate([c, d], axis=1), axis=1)  # each replicate's penalty centre
    cb, _ = _project_draws(jnp.asarray(c), jnp.asarray(d), jnp.asarray(a), jnp.asarray(mi),
                           jnp.asarray(bi), jnp.asarray(y), jnp.asarray(weights), rho,
                           jnp.asarray(centre), fit.table.n_models, 200)
    drawn = np.stack([np.bincount(mi, weights=w, minlength=fit.table.n_models) for w in weights])
    cb = np.where(drawn > 0, np.asarray(cb), np.nan)  # no basket score drawn: no basket value
    if eci_anchors is not None:
        (m_lo, v_lo), (m_hi, v_hi) = eci_anchors
        i_lo, i_hi = fit.table.model_position(m_lo), fit.table.model_position(m_hi)
        # each replicate on its own ECI map, from that replicate's full-fit anchor capabilities
        off, sc = affine_from_anchors(c[:, i_lo], c[:, i_hi], v_lo, v_hi)
        cb = off[:, None] + sc[:, None] * cb
    pos = [fit.table.model_position(m) for m in index]
    with warnings.catch_warnings():  # a model never drawn gets NaN, as documented
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(cb[:, pos], [(1 - level) / 2, (1 + level) / 2], axis=0)
    return pd.Series(lo, index=index), pd.Series(hi, index=index)


PAD_ROWS = 512  # the simulated refits' rows are padded to a multiple of this (one program)


@functools.partial(jax.jit, static_argnames=("layout", "draws", "batch"))
def _null_draws(key, theta, mi, bi, yhat, resid, weight, inflate, basket, l2, rho, *, layout,
                draws, batch):
    """``draws`` wild-bootstrap score tables refitted and reprojected: per draw, every model's
    basket capability minus its full capability, and whether the refit converged. Rows of
    ``weight`` 0 (padding) take no part."""
    from platinum_jax.stitching import solve_layout

    signs = jax.random.rademacher(key, (draws, yhat.shape[0]), dtype=yhat.dtype)
    scores = jnp.clip(yhat + inflate * resid * signs, 0.0, 1.0)

    def one(ys):
        res = solve_layout(theta, layout, mi, bi, ys, weight, l2)
        p = layout.unpack(res.theta)
        centre = jnp.mean(jnp.concatenate([p.capability, p.difficulty]))
        cb, _ = _project(p.capability, p.difficulty, p.slope, mi, bi, ys, basket * weight, rho,
                         centre, layout.n_models, 200)
        return cb - p.capability, res.converged

    return jax.lax.map(one, scores, batch_size=batch)


def _difference_test(fit, keep, ridge, index, draws, seed, scale):
    """``difference_sd`` and ``null_difference`` per model of ``index`` from ``draws``
    wild-bootstrap refits (module docstring); ``scale`` the units' factor."""
    if getattr(fit, "link", "sigmoid") != "sigmoid":
        raise ValueError(f"the difference's test projects with the sigmoid link; this fit uses "
                         f"{fit.link!r}")
    t = fit.table
    n, k = t.n_scores, int(np.asarray(fit.theta).size)
    if n <= k:
        raise ValueError(f"the fit has {n} scores for {k} free parameters: no residual degrees of "
                         "freedom to simulate from")
    rho, _ = _ridge(fit, ridge)
    # padded to a multiple of PAD_ROWS with rows of weight 0, so tables of similar size share
    # one compiled program
    pad = -n % PAD_ROWS

    def padded(x, dtype=np.float64):
        return jnp.asarray(np.concatenate([np.asarray(x, dtype), np.zeros(pad, dtype)]))

    yhat = np.asarray(fit.predicted, np.float64)
    out, ok = _null_draws(
        jax.random.PRNGKey(int(seed)), jnp.asarray(fit.theta, jnp.float64),
        padded(t.model_index, np.int32), padded(t.benchmark_index, np.int32), padded(yhat),
        padded(np.asarray(t.scores) - yhat), padded(np.ones(n)), float(np.sqrt(n / (n - k))),
        padded(keep), float(fit.l2), rho, layout=fit.layout, draws=int(draws), batch=8)
    out, ok = np.asarray(out)[np.asarray(ok)], np.asarray(ok)
    if ok.sum() < 2:
        raise ValueError(f"only {int(ok.sum())} of {draws} simulated refits converged; the "
                         "difference needs at least 2 (raise the fit's l2)")
    if not ok.all():
        warnings.warn(f"{int((~ok).sum())} of {draws} simulated refits did not converge and are "
                      "left out of the difference's sd", RuntimeWarning, stacklevel=3)
    pos = [t.model_position(m) for m in index]
    sd = scale * out[:, pos].std(axis=0, ddof=1)
    null = scale * out[:, pos].mean(axis=0)
    outside = np.bincount(np.asarray(t.model_index)[~keep], minlength=t.n_models)[pos]
    sd = np.where(outside > 0, sd, np.nan)  # fitted alike on both sides: not a test
    return pd.Series(sd, index=index), pd.Series(null, index=index)
