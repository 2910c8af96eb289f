"""Primitives and optimal weights from the posterior of the Bayesian stitching model
(``platinum-jax stitch-bayes``).

The Bayesian stitching model of :mod:`platinum_jax.stitching.bayes` (Ho et al., "A Rosetta
Stone for AI Benchmarks", ``score = sigmoid(α_b (C_m − D_b))``) has a noise scale per benchmark,
and its posterior draws are what the weights need: per draw, the loading of benchmark ``b`` on
capability is ``A_b = mean_m α_b σ'(α_b (C_m − D_b))`` (the same rule as
:func:`primitives_from_fit`: the average over the evaluated models of the derivative of the
expected score), and ``Σ_bb`` is the draw's ``noise_variance`` (the mean over the benchmark's
scores of Var[score | parameters], known standard errors included).  The model treats the noise
of different scores as independent, so ``Σ`` is diagonal by that assumption; the notes say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, ArrayLike, Float

from platinum_jax._names import UnknownNameError, close_matches_message

from ._from_fit import _cost_matrix
from ._posterior import PrimitiveDraws

__all__ = ["primitives_from_stitching", "POSTERIOR_FILE", "optimal_weight_draws",
           "posterior_optimal_weights", "load_weights_config"]

POSTERIOR_FILE = "posterior.nc"
_SITES = ("capability", "difficulty", "slope", "noise_variance")


def _posterior_group(source):
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            path = path / POSTERIOR_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: it is written by `platinum-jax "
                                    "stitch-bayes ... --out DIR`")
        import arviz as az

        try:
            return az.from_netcdf(str(path)).posterior, str(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path} is not an ArviZ posterior file: {exc}") from exc
    idata = getattr(source, "idata", source)  # a BayesStitchingFit or its InferenceData
    if not hasattr(idata, "posterior"):
        raise TypeError("give a stitch-bayes output directory, its posterior.nc, a "
                        "BayesStitchingFit or its InferenceData")
    return idata.posterior, "the posterior"


def primitives_from_stitching(source, w=None, *, cost=None,
                              operating_point: str = "average") -> PrimitiveDraws:
    """Draws of ``A``, ``C``, ``Σ`` (and ``w``) from a Bayesian stitching posterior.

    Args:
        source: the output directory of ``platinum-jax stitch-bayes``, its ``posterior.nc``, a
            :class:`platinum_jax.stitching.bayes.BayesStitchingFit` or its ``idata``.
        w: welfare weights over the benchmarks, (m,) or (draws, m); default uniform.
        cost: the effort cost of one unit of capability (one number; default 1).
        operating_point: ``"average"`` (over the fitted models) or a model's name.

    Every posterior draw (all chains) gives one set of primitives.  Runs in float64.
    """
    post, where = _posterior_group(source)
    missing = [s for s in _SITES if s not in post]
    if missing:
        raise ValueError(f"{where} has no {missing}: it is not the posterior of the Bayesian "
                         "stitching model")
    stacked = {s: np.asarray(post[s].stack(sample=("chain", "draw")).transpose("sample", ...),
                             np.float64) for s in _SITES}
    models = [str(x) for x in post["capability"].coords["model"].values]
    items = tuple(str(x) for x in post["difficulty"].coords["benchmark"].values)
    cap = stacked["capability"]  # (D, n_models)
    if operating_point != "average":
        if operating_point not in models:
            raise ValueError(f"operating_point must be 'average' or a model of the posterior; "
                             f"{operating_point!r} is not one (e.g. {models[:3]})")
        cap = cap[:, [models.index(operating_point)]]
    slope, diff = stacked["slope"], stacked["difficulty"]
    p = 1.0 / (1.0 + np.exp(-slope[:, None, :] * (cap[:, :, None] - diff[:, None, :])))
    A = (p * (1.0 - p)).mean(axis=1) * slope
    d = stacked["noise_variance"]
    D, m = d.shape
    C = _cost_matrix(cost, ("capability",))
    if w is None:
        w, w_note = np.full(m, 1.0 / m), "uniform over benchmarks (no target given)"
    else:
        w_note = "given"
    notes = {
        "loadings": "A_b = slope_b * sigmoid'(slope_b (C_m - D_b)) at "
                    + ("the average over models" if operating_point == "average"
                       else f"model {operating_point!r}") + ", per posterior draw",
        "cost": "identity in the fitted capability scale" if cost is None else "given",
        "noise": "diag(posterior noise_variance per benchmark of the Bayesian stitching "
                 "model); diagonal because that model treats the noise of different scores as "
                 "independent",
        "residual_rank": 0,
        "draws": D,
        "fit_method": "stitch-bayes posterior",
        "welfare_weights": w_note,
    }
    return PrimitiveDraws(A[:, :, None], C, d, np.zeros((D, m, 0)),
                          np.broadcast_to(np.asarray(w, np.float64), (D, m)).copy(), items,
                          ("capability",), notes)


# Optimal weights with posterior uncertainty, directly from the stitching posterior: each
# benchmark is a task of the principal-agent model with the user's output cost M and welfare
# weights w, and Sigma = diag(Sigma_bb), Sigma_bb the posterior noise variance of benchmark b
# (the mean over its scores of Var[score | theta]); every draw is pushed through
# v* = (M + r Sigma)^-1 M w in one vmap.


@jax.jit
def _weights_per_draw(
    M: Float[Array, "m m"], noise: Float[Array, "S m"], w: Float[Array, " m"], r: Float[Array, ""]
) -> Float[Array, "S m"]:
    from platinum_jax import optimal_weights

    # Inputs were validated once on the posterior mean; no per-draw checks inside the vmap.
    return jax.vmap(lambda s: optimal_weights(M, jnp.diag(s), w, r, check="none"))(noise)


def _noise_draws(idata_or_fit):
    idata = getattr(idata_or_fit, "idata", idata_or_fit)
    post = getattr(idata, "posterior", None)
    if post is None or "noise_variance" not in post:
        raise ValueError(
            "expected a BayesStitchingFit or an InferenceData whose posterior has "
            "'noise_variance' (benchmark,), as made by fit_stitching_bayes"
        )
    return post["noise_variance"]


def optimal_weight_draws(
    idata_or_fit,
    M: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: float,
    *,
    benchmarks: Sequence[str] | None = None,
):
    """Posterior draws of the optimal weights v*, an ``xarray.DataArray`` (chain, draw, benchmark).

    ``benchmarks`` names the rows of M and w (default: every benchmark of the fit, in order);
    Sigma is restricted to them.  M must be symmetric positive semi-definite with M + r Sigma
    positive definite, w finite, r >= 0 (checked once, on the posterior-mean Sigma).
    """
    import xarray as xr

    from platinum_jax import validate_primitives

    noise = _noise_draws(idata_or_fit)
    known = [str(b) for b in noise["benchmark"].values]
    names = list(known) if benchmarks is None else [str(b) for b in benchmarks]
    for name in names:
        if name not in known:
            raise UnknownNameError(close_matches_message("benchmark", name, known))
    if len(set(names)) != len(names):
        raise ValueError(f"benchmarks lists a name twice: {names}")
    m = len(names)
    M = np.asarray(M, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if M.shape != (m, m):
        raise ValueError(
            f"M has shape {M.shape} but there are {m} benchmarks: it must be {m} x {m}"
        )
    if w.shape != (m,):
        raise ValueError(
            f"w has shape {w.shape} but there are {m} benchmarks: it must have {m} entries"
        )
    if not np.isfinite(r) or r < 0:
        raise ValueError(f"r (risk aversion) must be a finite number >= 0, got {r!r}")
    sub = noise.sel(benchmark=names)
    draws = sub.values.reshape(-1, m)
    validate_primitives(M=M, Sigma=np.diag(draws.mean(0)), w=w, r=r)
    v = np.asarray(
        _weights_per_draw(jnp.asarray(M), jnp.asarray(draws), jnp.asarray(w), jnp.asarray(float(r)))
    )
    if not np.all(np.isfinite(v)):
        raise ValueError(
            "M + r Sigma is singular for some posterior draws (M singular and r Sigma too small?); "
            "use r > 0 or a full-rank M"
        )
    return xr.DataArray(
        v.reshape(sub.shape),
        dims=("chain", "draw", "benchmark"),
        coords={"chain": sub["chain"].values, "draw": sub["draw"].values, "benchmark": names},
        name="optimal_weight",
        attrs={"r": float(r), "formula": "v* = (M + r Sigma)^-1 M w, Sigma = diag(noise_variance)"},
    )


def posterior_optimal_weights(
    idata_or_fit,
    M: Float[ArrayLike, "m m"],
    w: Float[ArrayLike, " m"],
    r: float,
    *,
    threshold: float | None = None,
    benchmarks: Sequence[str] | None = None,
    hdi_prob: float = 0.94,
) -> pd.DataFrame:
    """Posterior of each benchmark's optimal weight and of its clearing a platinum threshold.

    Returns a frame indexed by ``benchmark`` with columns ``w`` (welfare weight), ``mean``,
    ``sd``, ``hdi_3%``, ``hdi_97%`` (HDI of ``hdi_prob``; the names follow ArviZ's 94% default),
    ``plugin`` (v* at the posterior-mean Sigma), ``noise_sd`` (posterior mean of sqrt(Sigma_bb)) and
    ``p_platinum`` = P(v*_b >= threshold | scores).  ``threshold`` defaults to an equal share,
    sum(w) / m.  ``frame.attrs`` records ``r`` and ``threshold``.
    """
    import arviz as az

    v = optimal_weight_draws(idata_or_fit, M, w, r, benchmarks=benchmarks)
    names = [str(b) for b in v["benchmark"].values]
    w = np.asarray(w, dtype=np.float64)
    if threshold is None:
        threshold = float(w.sum() / len(w))
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    noise = _noise_draws(idata_or_fit).sel(benchmark=names)
    mean_sigma = noise.mean(("chain", "draw")).values
    plugin = np.asarray(
        _weights_per_draw(
            jnp.asarray(np.asarray(M, dtype=np.float64)),
            jnp.asarray(mean_sigma[None]),
            jnp.asarray(w),
            jnp.asarray(float(r)),
        )
    )[0]
    flat = v.values.reshape(-1, len(names))
    hdi = az.hdi(v.values.reshape(v.shape[0], v.shape[1], -1), hdi_prob=hdi_prob)
    frame = pd.DataFrame(
        {
            "w": w,
            "mean": flat.mean(0),
            "sd": flat.std(0, ddof=1) if flat.shape[0] > 1 else np.zeros(len(names)),
            "hdi_3%": hdi[:, 0],
            "hdi_97%": hdi[:, 1],
            "plugin": plugin,
            "noise_sd": np.sqrt(noise).mean(("chain", "draw")).values,
            "p_platinum": (flat >= threshold).mean(0),
        },
        index=pd.Index(names, name="benchmark"),
    )
    frame.attrs.update({"r": float(r), "threshold": float(threshold), "hdi_prob": hdi_prob})
    return frame


_CONFIG_KEYS = ("r", "w", "M", "threshold", "benchmarks")


def _config_number(value, where: str, *, minimum: float | None = None) -> float:
    """A finite real number from a config value; bools, None, lists and text are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{where} must be >= {minimum:g}, got {value!r}")
    return float(value)


def load_weights_config(path: str | Path, *, known_benchmarks: Sequence[str] | None = None) -> dict:
    """Read M, w, r (and optional ``benchmarks``, ``threshold``) from a YAML or JSON file.

    Format::

        r: 1.0                       # risk aversion, >= 0
        w: {MMLU: 1.0, GSM8K: 0.5}   # welfare weights by benchmark (or a list with `benchmarks`)
        M: identity                  # or a list (the diagonal) or a list of lists (full matrix)
        threshold: 0.3               # optional platinum threshold on v*

    The file is checked against this schema before anything is fitted: an unknown key (say a
    misspelt ``treshold``), a weight or matrix entry that is not a number, a matrix of the wrong
    shape or a list where a number belongs is a ``ValueError`` naming the key.  With
    ``known_benchmarks`` (the benchmarks of the score table) every named benchmark must be one
    of them.  Returns a dict with ``M`` (ndarray), ``w`` (ndarray), ``r``, ``benchmarks``,
    ``threshold``.
    """
    import yaml

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"weights config {path} does not exist")
    text = path.read_text()
    try:
        cfg = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"weights config {path} is not valid YAML/JSON: {exc}") from exc
    if not isinstance(cfg, Mapping):
        raise ValueError(f"weights config {path} must be a mapping with keys r, w, M")
    unknown = [str(k) for k in cfg if k not in _CONFIG_KEYS]
    if unknown:
        import difflib

        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, _CONFIG_KEYS, n=1, cutoff=0.6)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ValueError(
            f"weights config {path}: unknown key(s) {', '.join(hints)}; the keys are "
            f"{', '.join(_CONFIG_KEYS)}"
        )
    missing = [k for k in ("r", "w", "M") if k not in cfg]
    if missing:
        raise ValueError(f"weights config {path} lacks key(s) {missing}; it needs r, w and M")
    where = f"weights config {path}:"
    w_raw, listed = cfg["w"], cfg.get("benchmarks")
    if listed is not None and (
        not isinstance(listed, list) or not all(isinstance(b, (str, int, float)) for b in listed)
    ):
        raise ValueError(f"{where} 'benchmarks' must be a list of benchmark names, got {listed!r}")
    if isinstance(w_raw, Mapping):
        benchmarks = [str(k) for k in w_raw]
        w = np.asarray([_config_number(x, f"{where} w[{k!r}]") for k, x in w_raw.items()])
        if listed is not None and [str(b) for b in listed] != benchmarks:
            raise ValueError(f"{where} 'benchmarks' disagrees with the keys of 'w'")
    elif isinstance(w_raw, list):
        # Without 'benchmarks' a list of weights is in the order of the table's benchmarks.
        w = np.asarray([_config_number(x, f"{where} w[{i}]") for i, x in enumerate(w_raw)])
        benchmarks = None if listed is None else [str(b) for b in listed]
        expected = len(benchmarks) if benchmarks is not None else (
            None if known_benchmarks is None else len(known_benchmarks)
        )
        if expected is not None and len(w) != expected:
            whose = "'benchmarks' names" if benchmarks is not None else "the table has"
            raise ValueError(
                f"{where} 'w' has {len(w)} entries but {whose} {expected} benchmarks; give one "
                "weight per benchmark, or write w as a mapping {benchmark: weight}"
            )
    else:
        raise ValueError(
            f"{where} 'w' must be a mapping {{benchmark: weight}} or a list, got {w_raw!r}"
        )
    m = len(w)
    if m == 0:
        raise ValueError(f"{where} 'w' is empty; give at least one benchmark weight")
    if benchmarks is not None and len(set(benchmarks)) != m:
        raise ValueError(f"{where} 'w' names a benchmark twice: {benchmarks}")
    if known_benchmarks is not None and benchmarks is not None:
        known = [str(b) for b in known_benchmarks]
        for name in benchmarks:
            if name not in known:
                raise ValueError(f"{where} 'w': " + close_matches_message("benchmark", name, known))
    M_raw = cfg["M"]
    if isinstance(M_raw, str):
        if M_raw != "identity":
            raise ValueError(f"{where} M must be 'identity', a list or a matrix, got {M_raw!r}")
        M = np.eye(m)
    elif isinstance(M_raw, list) and all(not isinstance(x, list) for x in M_raw):
        diag = [_config_number(x, f"{where} M[{i}]") for i, x in enumerate(M_raw)]
        if len(diag) != m:
            raise ValueError(
                f"{where} M as a list is the diagonal and needs {m} entries (one per weight), "
                f"got {len(diag)}"
            )
        M = np.diag(diag)
    elif isinstance(M_raw, list):
        if len(M_raw) != m or not all(isinstance(row, list) and len(row) == m for row in M_raw):
            raise ValueError(
                f"{where} M as a matrix must be {m} x {m} (a list of {m} rows of {m} numbers, in "
                "the order of w)"
            )
        M = np.asarray(
            [
                [_config_number(x, f"{where} M[{i}][{j}]") for j, x in enumerate(row)]
                for i, row in enumerate(M_raw)
            ]
        )
    else:
        raise ValueError(
            f"{where} M must be 'identity', a list (the diagonal) or a list of lists (the "
            f"matrix), got {M_raw!r}"
        )
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12):
        raise ValueError(f"{where} M must be symmetric (the lab's output cost matrix)")
    if np.linalg.eigvalsh(M).min() < -1e-10 * max(1.0, np.abs(M).max()):
        raise ValueError(f"{where} M must be positive semi-definite; it has a negative eigenvalue")
    r = _config_number(cfg["r"], f"{where} r", minimum=0.0)
    threshold = cfg.get("threshold")
    if threshold is not None:
        threshold = _config_number(threshold, f"{where} threshold")
    return {"M": M, "w": w, "r": r, "benchmarks": benchmarks, "threshold": threshold}
