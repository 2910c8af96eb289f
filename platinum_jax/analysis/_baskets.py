"""Domain baskets: an index computed on a subset of benchmarks (coding, math, knowledge, ...).

Two modes, as Epoch offers them:

* ``"project"``: the benchmark parameters (D_b, alpha_b) stay as the full fit estimated them and
  only each model's capability is refitted on the basket's scores,

      C_m^basket = argmin_C  0.5 sum_{b in basket} (sigmoid(alpha_b (C - D_b)) - y_mb)^2
                             + 0.5 rho (C - t)^2,

  with ``rho = lambda / n`` and ``t`` the full fit's penalty weight and centre (``n = n_models +
  2 n_benchmarks - 1``; the paper's term for one capability). The result is on the full fit's
  scale, so the full fit's ECI map applies. Every model is solved at once (one vectorised
  Levenberg-Marquardt, per-model sums by ``segment_sum``, jitted); with a bootstrap of the full
  fit the projection is repeated under ``vmap`` for every replicate's benchmark parameters and
  ECI map (the scores are not resampled in this mode).
* ``"refit"``: the whole stitching model is refitted on the basket's scores (anchored on the full
  fit's anchor benchmark when it is in the basket, else on the basket's most-scored benchmark)
  and put on its own ECI scale; a bootstrap gives intervals as for the full index.

Float64 throughout (turn on ``jax_enable_x64``).
"""

from __future__ import annotations

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


def _project(c0, d, a, mi, bi, y, rho, centre, n_models, steps):
    """Vectorised LM over models: every capability solved on its own scores, D and alpha fixed."""

    def parts(c):
        z = a[bi] * (c[mi] - d[bi])
        s = jax.nn.sigmoid(z)
        r = s - y
        j = a[bi] * s * (1.0 - s)
        f = 0.5 * jax.ops.segment_sum(r**2, mi, n_models) + 0.5 * rho * (c - centre) ** 2
        g = jax.ops.segment_sum(r * j, mi, n_models) + rho * (c - centre)
        h = jax.ops.segment_sum(j**2, mi, n_models) + rho
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


_project_jit = jax.jit(_project, static_argnums=(8, 9))
_project_draws = jax.jit(
    jax.vmap(_project, in_axes=(0, 0, 0, None, None, None, None, 0, None, None)), static_argnums=(8, 9)
)


def project_capabilities(
    fit: Any, benchmarks: Sequence[str], *, ridge: float | None = None, steps: int = 200
) -> pd.DataFrame:
    """Capabilities refitted on ``benchmarks`` only, with the fit's D_b and alpha_b frozen.

    ``ridge``: the weight rho of ``0.5 rho (C - t)^2`` (default the fit's own, ``lambda / n``;
    0 turns it off, and then a model that aces every basket benchmark has no finite optimum).
    Returns a frame indexed by the models with at least one basket score: ``capability``,
    ``full_capability``, ``n_benchmarks``, ``gradient`` (at the solution, ~0 when converged).
    """
    names, mi, bi, y, keep = _basket_rows(fit, benchmarks)
    rho, centre = _ridge(fit, ridge)
    c_full = np.asarray(fit.params.capability, dtype=np.float64)
    c, g = _project_jit(
        jnp.asarray(c_full), jnp.asarray(fit.params.difficulty), jnp.asarray(fit.params.slope),
        jnp.asarray(mi), jnp.asarray(bi), jnp.asarray(y), rho, centre, fit.table.n_models, int(steps),
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


def _basket_rows(fit, benchmarks):
    if isinstance(benchmarks, str):
        benchmarks = [benchmarks]
    names = list(dict.fromkeys(" ".join(str(b).split()) for b in benchmarks))
    if not names:
        raise ValueError("the basket is empty; name at least one benchmark")
    for b in names:
        fit.table.benchmark_position(b)  # unknown names raise with the closest names
    keep = fit.table.data["benchmark"].isin(names).to_numpy()
    mi = np.asarray(fit.table.model_index)[keep]
    bi = np.asarray(fit.table.benchmark_index)[keep]
    return names, mi, bi, np.asarray(fit.table.scores, dtype=np.float64)[keep], keep


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
    interval; NaN without a bootstrap), ``difference`` (basket - full), ``n_benchmarks`` (basket
    benchmarks scored). ``name``, ``mode``, ``benchmarks``, ``units`` ("ECI" or "capability").
    """

    models: pd.DataFrame
    name: str
    mode: str
    benchmarks: list
    units: str


def domain_index(
    fit: Any,
    benchmarks: Sequence[str],
    *,
    mode: str = "project",
    name: str = "basket",
    eci_anchors: Any = DEFAULT_ECI_ANCHORS,
    bootstrap: Any = None,
    level: float = 0.90,
    ridge: float | None = None,
) -> DomainIndex:
    """A domain index on ``benchmarks`` in ``mode`` ``"project"`` or ``"refit"`` (module docstring).

    ``eci_anchors=None`` reports raw capabilities instead of the ECI. ``bootstrap``: a bootstrap
    result of ``fit``; in refit mode its number of replicates is rerun on the basket's fit.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES} (got {mode!r})")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    names, mi, bi, y, _ = _basket_rows(fit, benchmarks)
    if eci_anchors is None:
        full_map, units = (0.0, 1.0), "capability"
    else:
        full = eci_scale(fit, anchors=eci_anchors, replicates=0)
        full_map, units = (full.offset, full.scale), "ECI"
    if mode == "project":
        proj = project_capabilities(fit, names, ridge=ridge)
        basket = full_map[0] + full_map[1] * proj["capability"]
        lower = upper = pd.Series(np.nan, index=proj.index)
        if bootstrap is not None:
            lower, upper = _project_interval(fit, bootstrap, eci_anchors, mi, bi, y, ridge, level,
                                             proj.index)
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
    models = pd.DataFrame(
        {"full": full_value, "basket": basket, "lower": lower.reindex(idx), "upper": upper.reindex(idx),
         "difference": basket - full_value, "n_benchmarks": counts.reindex(idx).astype(int)},
        index=idx,
    )
    return DomainIndex(models, str(name), mode, names, units)


def _project_interval(fit, bootstrap, eci_anchors, mi, bi, y, ridge, level, index):
    if getattr(bootstrap, "fit", None) is not fit:
        raise ValueError("bootstrap was run on another fit; pass the bootstrap of this fit")
    c, d, a = parameter_draws(bootstrap)
    rho, _ = _ridge(fit, ridge)
    centre = np.mean(np.concatenate([c, d], axis=1), axis=1)  # each replicate's penalty centre
    cb, _ = _project_draws(jnp.asarray(c), jnp.asarray(d), jnp.asarray(a), jnp.asarray(mi),
                           jnp.asarray(bi), jnp.asarray(y), rho, jnp.asarray(centre),
                           fit.table.n_models, 200)
    cb = np.asarray(cb)
    if eci_anchors is not None:
        (m_lo, v_lo), (m_hi, v_hi) = eci_anchors
        i_lo, i_hi = fit.table.model_position(m_lo), fit.table.model_position(m_hi)
        # each replicate on its own ECI map, from that replicate's full-fit anchor capabilities
        off, sc = affine_from_anchors(c[:, i_lo], c[:, i_hi], v_lo, v_hi)
        cb = off[:, None] + sc[:, None] * cb
    pos = [fit.table.model_position(m) for m in index]
    lo, hi = np.quantile(cb[:, pos], [(1 - level) / 2, (1 + level) / 2], axis=0)
    return pd.Series(lo, index=index), pd.Series(hi, index=index)
