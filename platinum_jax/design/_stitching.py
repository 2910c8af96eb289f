"""Primitives and optimal weights from the posterior of the Bayesian stitching model
(``platinum-jax stitch-bayes``).

The Bayesian stitching model of :func:`platinum_jax.stitching.fit_stitching_bayes` (Ho et al., "A Rosetta
Stone for AI Benchmarks", ``score = sigmoid(α_b (C_m − D_b))``) has a noise scale per benchmark,
and its posterior draws are what the weights need: per draw, the loading of benchmark ``b`` on
capability is ``A_b = mean_m α_b σ'(α_b (C_m − D_b))`` (the same rule as
:func:`primitives_from_fit`: the average over the evaluated models of the derivative of the
expected score), and ``Σ_bb`` is the draw's ``noise_variance`` (the mean over the benchmark's
scores of Var[score | parameters], known standard errors included).  The model treats the noise
of different scores as independent, so ``Σ`` is diagonal by that assumption; the notes say so.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from jaxtyping import ArrayLike, Float

from platinum_jax._names import UnknownNameError, close_matches_message

from ._from_fit import _cost_matrix
from ._posterior import PrimitiveDraws, weight_draws

__all__ = ["primitives_from_stitching", "POSTERIOR_FILE", "optimal_weight_draws",
           "weights_table", "load_weights_config"]

POSTERIOR_FILE = "posterior.nc"
_SITES = ("capability", "difficulty", "slope", "noise_variance")


def _idata(source):
    """The InferenceData of a BayesStitchingFit, of an engine Fit of ``rosetta_bayes``, or
    ``source`` itself."""
    if hasattr(source, "idata"):
        return source.idata
    if hasattr(source, "inference_data"):
        return source.inference_data
    return source


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
    idata = _idata(source)
    if not hasattr(idata, "posterior"):
        raise TypeError("give a stitch-bayes output directory, its posterior.nc, a "
                        "BayesStitchingFit or its InferenceData")
    return idata.posterior, "the posterior"


def primitives_from_stitching(source, w=None, *, cost=None,
                              operating_point: str = "average", M=None,
                              benchmarks: Sequence[str] | None = None) -> PrimitiveDraws:
    """Draws of ``A``, ``C``, ``Σ`` (and ``w``) from a Bayesian stitching posterior.

    Args:
        source: the output directory of ``platinum-jax stitch-bayes``, its ``posterior.nc``, a
            :class:`platinum_jax.stitching.BayesStitchingFit` or its ``idata``.
        w: welfare weights over the benchmarks, (m,) or (draws, m); default uniform.
        cost: the effort cost of one unit of capability (one number; default 1).
        operating_point: ``"average"`` (over the fitted models) or a model's name.
        M: the user's own output cost matrix ``M`` (m, m), symmetric positive semi-definite,
            in place of the model's loadings and ``cost``: the loadings become a factor
            ``B`` of ``M = BBᵀ`` (one column per positive eigenvalue, ``C = I``), the same in
            every draw; only the noise ``Σ_bb`` then comes from the posterior.
        benchmarks: the benchmarks weighed, in the order of ``w`` and ``M`` (default: all).

    Every posterior draw (all chains) gives one set of primitives.  Runs in float64.
    """
    if M is not None:
        return _primitives_from_cost(source, M, w, benchmarks, cost, operating_point)
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
    if benchmarks is not None:
        cols = [items.index(b) for b in _benchmark_names(benchmarks, list(items))]
        A, d, items = A[:, cols], d[:, cols], tuple(items[i] for i in cols)
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


def _benchmark_names(benchmarks, known: list[str]) -> list[str]:
    names = list(known) if benchmarks is None else [str(b) for b in benchmarks]
    for name in names:
        if name not in known:
            raise UnknownNameError(close_matches_message("benchmark", name, known))
    if len(set(names)) != len(names):
        raise ValueError(f"benchmarks lists a name twice: {names}")
    return names


def _noise_draws(idata_or_fit):
    if isinstance(idata_or_fit, (str, Path)):
        post = _posterior_group(idata_or_fit)[0]
    else:
        post = getattr(_idata(idata_or_fit), "posterior", None)
    if post is None or "noise_variance" not in post:
        raise ValueError(
            "expected a BayesStitchingFit or an InferenceData whose posterior has "
            "'noise_variance' (benchmark,), as made by fit_stitching_bayes"
        )
    return post["noise_variance"]


def _primitives_from_cost(source, M, w, benchmarks, cost, operating_point) -> PrimitiveDraws:
    """Primitives with the user's ``M`` (factored as ``BBᵀ``) and the posterior noise."""
    from platinum_jax.agency import validate_primitives

    if cost is not None or operating_point != "average":
        raise ValueError("give either M (your output cost matrix) or cost/operating_point "
                         "(loadings from the model), not both")
    if w is None:
        raise ValueError("w (the welfare weights, one per benchmark) is needed with M")
    noise = _noise_draws(source)
    names = _benchmark_names(benchmarks, [str(b) for b in noise["benchmark"].values])
    m = len(names)
    M = np.asarray(M, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if M.shape != (m, m):
        raise ValueError(f"M has shape {M.shape} but there are {m} benchmarks: it must be "
                         f"{m} x {m}")
    if w.shape != (m,):
        raise ValueError(f"w has shape {w.shape} but there are {m} benchmarks: it must have "
                         f"{m} entries")
    d = np.asarray(noise.sel(benchmark=names).values, np.float64).reshape(-1, m)
    validate_primitives(M=M, Sigma=np.diag(d.mean(0)), w=w)
    lam, U = np.linalg.eigh(0.5 * (M + M.T))
    keep = lam > 1e-12 * max(float(np.abs(lam).max()), 1e-300)
    if not keep.any():
        raise ValueError("M is zero: no benchmark output has value; give a non-zero M")
    B = U[:, keep] * np.sqrt(lam[keep])
    K, D = int(keep.sum()), d.shape[0]
    notes = {"loadings": f"a factor B of the given M = BB^T (rank {K}), C = I",
             "cost": "the given output cost matrix M",
             "noise": "diag(posterior noise_variance per benchmark of the Bayesian stitching "
                      "model)", "residual_rank": 0, "draws": D,
             "fit_method": "stitch-bayes posterior", "welfare_weights": "given"}
    return PrimitiveDraws(np.broadcast_to(B, (D, m, K)).copy(), np.eye(K), d,
                          np.zeros((D, m, 0)), np.broadcast_to(w, (D, m)).copy(),
                          tuple(names), tuple(f"factor_{k + 1}" for k in range(K)), notes)


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
    positive definite, w finite, r >= 0.  The draws are :func:`weight_draws` of
    ``primitives_from_stitching(idata_or_fit, w, M=M, benchmarks=benchmarks)``.
    """
    import xarray as xr

    prims = primitives_from_stitching(idata_or_fit, w, M=M, benchmarks=benchmarks)
    v = weight_draws(prims, r)
    noise = _noise_draws(idata_or_fit)
    names = list(prims.items)
    return xr.DataArray(
        v.reshape(noise.sizes["chain"], noise.sizes["draw"], len(names)),
        dims=("chain", "draw", "benchmark"),
        coords={"chain": noise["chain"].values, "draw": noise["draw"].values, "benchmark": names},
        name="optimal_weight",
        attrs={"r": float(r), "formula": "v* = (M + r Sigma)^-1 M w, Sigma = diag(noise_variance)"},
    )


def weights_table(prims: PrimitiveDraws, r: float, *, threshold: float | None = None,
                  hdi_prob: float = 0.94, chains: int = 1) -> pd.DataFrame:
    """The posterior of each item's optimal weight v* at ``r`` and of its clearing
    ``threshold``, from draws of the primitives (:func:`weight_draws`).

    Returns a frame indexed by ``benchmark`` with columns ``w`` (welfare weight, mean over
    draws), ``mean``, ``sd``, ``hdi_3%``, ``hdi_97%`` (HDI of ``hdi_prob``, over ``chains``
    chains of equal length; the names follow ArviZ's 94% default), ``plugin`` (v* at the
    posterior-mean Σ), ``noise_sd`` (posterior mean of sqrt(Σ_bb)) and ``p_platinum`` =
    P(v*_b >= threshold) (default an equal share, sum(w) / m).  ``frame.attrs`` records ``r``,
    ``threshold`` and ``hdi_prob``.  :func:`posterior_decisions` gives Definition 1's flags and
    the welfare gains from the same draws.
    """
    import arviz as az

    w = prims.w.mean(axis=0)
    threshold = float(w.sum() / len(w)) if threshold is None else threshold
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    flat = weight_draws(prims, r)
    mean_prims = dataclasses.replace(prims, A=prims.A[:1], d=prims.d.mean(0, keepdims=True),
                                     F=prims.F[:1], w=prims.w[:1], estimate=None,
                                     jackknife=None)
    hdi = az.hdi(flat.reshape(int(chains), -1, flat.shape[1]), hdi_prob=hdi_prob)
    frame = pd.DataFrame(
        {
            "w": w,
            "mean": flat.mean(0),
            "sd": flat.std(0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat.shape[1]),
            "hdi_3%": hdi[:, 0],
            "hdi_97%": hdi[:, 1],
            "plugin": weight_draws(mean_prims, r)[0],
            "noise_sd": np.sqrt(prims.d).mean(0),
            "p_platinum": (flat >= threshold).mean(0),
        },
        index=pd.Index(list(prims.items), name="benchmark"),
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
