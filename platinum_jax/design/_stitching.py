"""Primitives from the posterior of the Bayesian stitching model (``platinum-jax stitch-bayes``).

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

from pathlib import Path

import numpy as np

from ._from_fit import _cost_matrix
from ._posterior import PrimitiveDraws

__all__ = ["primitives_from_stitching", "POSTERIOR_FILE"]

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
