"""The stitching fit: the Rosetta model fitted by the engine, in the paper's vocabulary.

:func:`fit_stitching` hands the paper's preset (:class:`~platinum_jax.models.Rosetta` with the
L2 strength, anchor and link) to :func:`platinum_jax.inference.fit_map`, which fits every model;
:class:`StitchingFit` labels the result (capabilities, benchmarks, residuals, the rescaled
report) and keeps the engine's :class:`~platinum_jax.inference.Fit` as ``engine``.
:func:`cross_validate` is the paper's Table 9 check: K-fold CV of held-out scores, the sigmoid
link against a clipped linear one, by the engine's :func:`platinum_jax.inference.cross_validate`
on the paper's folds (:func:`platinum_jax.inference.kfold_assignments`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from jaxtyping import ArrayLike

from platinum_jax.data import ScoreTable
from platinum_jax.inference import kfold_assignments
from platinum_jax.models import Rosetta
from platinum_jax.models.rosetta import (
    Anchor,
    BenchmarkAnchor,
    ParameterLayout,
    StitchingParams,
    anchor_for_table,
    predict_scores,
)

__all__ = ["StitchingFit", "cross_validate", "fit_stitching"]


@dataclass(frozen=True, eq=False)
class StitchingFit:
    """A fitted stitching model (immutable): ``table``, ``anchor``, ``l2``, ``layout``, ``theta``
    (free parameters), ``params`` (C_m, D_b, alpha_b), ``cost`` (``0.5 sum r^2``),
    ``iterations``, ``converged``, ``gradient_norm``, ``link`` and ``engine`` (the engine's
    :class:`~platinum_jax.inference.Fit` behind this view). Frames: :attr:`capabilities`,
    :attr:`benchmarks`, :attr:`residuals`."""

    table: ScoreTable
    anchor: Anchor
    l2: float
    layout: ParameterLayout
    theta: np.ndarray
    params: StitchingParams
    cost: float
    iterations: int
    converged: bool
    gradient_norm: float = float("nan")
    link: str = "sigmoid"
    engine: Any = None

    @property
    def capabilities(self) -> pd.DataFrame:
        """Index ``model``; columns ``capability`` (C_m), ``release_date``, ``n_scores``."""
        return self.table.per_model({"capability": self.params.capability})

    @property
    def benchmarks(self) -> pd.DataFrame:
        """Index ``benchmark``; columns ``difficulty`` (D_b), ``slope`` (alpha_b),
        ``release_date``, ``n_scores``."""
        p = self.params
        return self.table.per_benchmark({"difficulty": p.difficulty, "slope": p.slope})

    @property
    def predicted(self) -> np.ndarray:
        """Fitted ``f(alpha_b (C_m - D_b))`` per table row (in NumPy), ``f`` the fit's link."""
        t = self.table
        return np.asarray(predict_scores(self.params, t.model_index, t.benchmark_index, self.link))

    @property
    def residuals(self) -> pd.DataFrame:
        """Per score: ``model, benchmark, score, predicted, residual`` (predicted - score)."""
        pred, t = self.predicted, self.table
        return pd.DataFrame({"model": t.data["model"].to_numpy(),
                             "benchmark": t.data["benchmark"].to_numpy(), "score": t.scores,
                             "predicted": pred, "residual": pred - t.scores})

    def summary(self) -> dict:
        """Plain-Python summary (what the CLI writes to ``fit.json``)."""
        return {"cost": self.cost, "iterations": self.iterations, "converged": self.converged,
                "gradient_norm": self.gradient_norm, "anchor": self.anchor.to_dict(), "l2": self.l2,
                "n_models": self.table.n_models, "n_benchmarks": self.table.n_benchmarks,
                "n_scores": self.table.n_scores, "n_free_parameters": self.layout.n_free}

    def rescaled(self, first: tuple[str, float], second: tuple[str, float]) -> pd.DataFrame:
        """The fit on the linear scale ``s = a C + c`` where two models take given values.

        With ``first = (X, s_X)`` and ``second = (Y, s_Y)``: ``a = (s_Y - s_X) / (C_Y - C_X)``
        and ``c = s_X - a C_X``. Difficulties map the same way and slopes become ``alpha_b / a``,
        so every prediction is unchanged. Returns a frame indexed by ``(kind, name)`` (kind
        "model" or "benchmark") with ``value``, ``slope`` (NaN for models), ``release_date``;
        ``attrs`` holds ``scale`` (a) and ``offset`` (c).
        """
        (mx, sx), (my, sy) = first, second
        cx, cy = self.capability_of(mx), self.capability_of(my)
        if cx == cy:
            raise ValueError(f"models {mx!r} and {my!r} have the same capability ({cx:g}); pick "
                             "two models with different capabilities to fix a linear scale")
        a = (float(sy) - float(sx)) / (cy - cx)
        c = float(sx) - a * cx
        caps, bench = self.capabilities, self.benchmarks

        def block(kind, frame, value, slope):
            return pd.DataFrame(
                {"value": a * frame[value].to_numpy() + c, "slope": slope,
                 "release_date": frame["release_date"].to_numpy()},
                index=pd.MultiIndex.from_product([[kind], frame.index], names=["kind", "name"]))

        out = pd.concat([block("model", caps, "capability", np.nan),
                         block("benchmark", bench, "difficulty", bench["slope"].to_numpy() / a)])
        out.attrs.update(scale=a, offset=c)
        return out

    def capability_of(self, model: str) -> float:
        """``C_m`` of one model (unknown names raise with close matches)."""
        return float(self.params.capability[self.table.model_position(model)])


def fit_stitching(table: ScoreTable, anchor: Anchor | None = None, l2: float = 0.1, *,
                  components: Literal["error", "separate"] = "error",
                  theta0: ArrayLike | None = None, restarts: int = 0, seed: int = 0,
                  link: str = "sigmoid", model: Any = None,
                  **solver_options) -> StitchingFit | list[StitchingFit]:
    """MAP fit of ``score(m, b) = sigmoid(alpha_b (C_m - D_b))`` to ``table``.

    Minimises the paper's L2-regularised least squares (:func:`platinum_jax.models.rosetta.stitching_cost`,
    strength ``l2``) from the paper's start (C = D = 0, alpha = 1) with the engine's
    Levenberg-Marquardt (:func:`platinum_jax.inference.fit_map` on
    :class:`~platinum_jax.models.Rosetta`). Enable float64 first
    (:func:`platinum_jax.enable_float64`) for fits to full precision.

    Args:
        table: the scores.
        anchor: :class:`BenchmarkAnchor` (default Winogrande, D = 0, alpha = 1) or
            :class:`ModelAnchor`.
        l2: regularisation strength ``lambda`` (paper: 0.1).
        components: a disconnected model-benchmark graph has no common scale; ``"error"``
            (default) raises naming the components, ``"separate"`` fits each on its own and
            returns a list of fits, largest first (a component without the anchor is anchored
            on its most-scored benchmark, see :func:`platinum_jax.models.rosetta.anchor_for_table`).
        theta0: optional start (P,) in the layout of the whole table (not with ``"separate"``).
        restarts: extra jittered starts solved in one vmapped call; the lowest cost wins.
        seed: seed of the jitter.
        link: ``"sigmoid"`` (the paper) or ``"clipped_linear"``; kept on the fit.
        model: a model of the Rosetta family to fit in place of the preset, built with the
            same ``l2`` and ``link``; None fits the paper's model.
        **solver_options: ``max_steps``, ``gtol``, ``xtol``, ``ftol``.
    """
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if not np.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite number >= 0 (got {l2})")
    if components not in ("error", "separate"):
        raise ValueError(f"components must be 'error' or 'separate' (got {components!r})")
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0 (got {restarts})")
    if components == "separate" and (theta0 is not None or model is not None):
        raise ValueError(
            f"{'model' if theta0 is None else 'theta0'} cannot be combined with components="
            "'separate': it is laid out for the whole table and one anchor, and each component "
            "is fitted alone; fit the components one by one (table.select_models)")
    ParameterLayout.from_table(table, anchor)  # unknown anchor names raise here
    if model is not None and (getattr(model, "l2", l2) != l2
                              or getattr(model, "link", link) != link):
        raise ValueError(f"model was built with l2={getattr(model, 'l2', None)}, "
                         f"link={getattr(model, 'link', None)!r}; pass the same l2 and link "
                         f"to fit_stitching (got l2={l2}, link={link!r})")
    if components == "error":
        table.check_connected("pass components='separate' to fit each alone")
    elif len(comps := table.components()) > 1:
        subs = [table.select_models(sorted(models)) for models, _ in comps]
        return [fit_stitching(sub, anchor_for_table(anchor, sub), l2, restarts=restarts,
                              seed=seed, link=link, **solver_options) for sub in subs]
    # one score cannot set a benchmark's slope and difficulty: only the L2 penalty picks them
    table.warn_unidentified({getattr(anchor, "benchmark", None)}, stacklevel=2)
    return _fit_connected(table, anchor, float(l2), theta0, restarts, seed, link, solver_options,
                          model)


def _fit_connected(table, anchor, l2, theta0, restarts, seed, link, options, model):
    from platinum_jax.inference import fit_map

    from ._layout import from_engine_theta, to_engine_theta

    layout = ParameterLayout.from_table(table, anchor)
    start = None
    if theta0 is not None:
        start = np.asarray(theta0, dtype=np.float64)
        if start.shape != (layout.n_free,):
            raise ValueError(f"theta0 has shape {start.shape}; expected ({layout.n_free},)")
        start = to_engine_theta(layout, start)
    options = {"max_steps": 500, **options}
    if not restarts:
        # One fit of the paper's data runs in milliseconds but compiles in about a second:
        # LLVM's optimisation turned down halves the compile time and doubles the tiny run time.
        options.setdefault("compiler_options", {"xla_backend_optimization_level": 0})
    model = Rosetta(link=link, l2=l2, anchor=anchor) if model is None else model
    engine = fit_map(model, table.responses, restarts=restarts, seed=seed, theta0=start, **options)
    s, i = np.asarray(engine.theta.subjects), np.asarray(engine.theta.items)
    return StitchingFit(
        table=table, anchor=anchor, l2=l2, layout=layout,
        theta=from_engine_theta(layout, engine.theta),
        params=StitchingParams(capability=s[:, 0], difficulty=i[:, 0], slope=i[:, 1]),
        cost=float(engine.objective), iterations=int(engine.diagnostics["iterations"]),
        converged=bool(engine.converged), gradient_norm=float(engine.diagnostics["gradient_norm"]),
        link=link, engine=engine)


def cross_validate(table: ScoreTable, anchor: Anchor | None = None, l2: float = 0.1, *,
                   k: int = 5, seed: int = 0,
                   links: tuple[str, ...] = ("sigmoid", "clipped_linear")) -> pd.DataFrame:
    """K-fold CV of held-out scores per link: columns ``link, fold, mse, n_test, converged``,
    one row per (link, fold) plus ``fold == "mean"`` (the score-weighted mean MSE).

    ``"clipped_linear"`` is ``clip(1/2 + alpha_b (C_m - D_b) / 4, 0, 1)`` (the sigmoid's value
    and slope at the middle). Each fold is refitted from the paper's start with its held-out
    scores at weight 0, all folds in one vmapped solve.
    """
    anchor = BenchmarkAnchor() if anchor is None else anchor
    table.check_connected()
    ParameterLayout.from_table(table, anchor)  # unknown anchor names raise here
    from platinum_jax.inference import cross_validate as engine_cross_validate

    folds, rows = kfold_assignments(table.n_scores, k, seed), []
    for link in links:
        per_fold = engine_cross_validate(Rosetta(link=link, l2=float(l2), anchor=anchor),
                                         table.responses, folds=folds, max_steps=1000)
        n = per_fold["n_test"].astype(int)
        rows += [{"link": link, "fold": str(f), "mse": r["mse"], "n_test": int(r["n_test"]),
                  "converged": bool(r["converged"])} for f, r in per_fold.iterrows()]
        rows.append({"link": link, "fold": "mean", "mse": float((per_fold["mse"] * n).sum()
                                                                 / n.sum()),
                     "n_test": int(n.sum()), "converged": bool(per_fold["converged"].all())})
    return pd.DataFrame(rows)
