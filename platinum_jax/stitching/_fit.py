"""The stitching fit: the Rosetta model fitted by the measurement engine, as a labelled view.

:func:`fit_stitching` builds the paper's preset (:class:`~platinum_jax.models.Rosetta` with the
L2 strength, anchor and link) and hands it to :func:`platinum_jax.inference.fit_map`, the same
bipartite Levenberg-Marquardt that fits every other model. :class:`StitchingFit` keeps the
engine's :class:`~platinum_jax.inference.Fit` and presents it in the paper's vocabulary
(capabilities, benchmarks, residuals, the parameter vector of a :class:`ParameterLayout`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from jaxtyping import ArrayLike

from ._model import (
    Anchor,
    BenchmarkAnchor,
    ModelAnchor,
    ParameterLayout,
    StitchingParams,
    link_function,
)
from ._table import ScoreTable, UnknownNameError, close_matches_message

__all__ = ["StitchingFit", "fit_stitching"]

# ---------------------------------------------------------------------- the labelled fit
@dataclass(frozen=True, eq=False)
class StitchingFit:
    """A fitted stitching model with labelled results (immutable).

    Attributes: ``table``, ``anchor``, ``l2``, ``layout``, ``theta`` (free parameters),
    ``params`` (:class:`StitchingParams`), ``cost`` (``0.5 sum r^2``), ``iterations``,
    ``converged``, ``gradient_norm``, ``link``, ``engine`` (the
    :class:`platinum_jax.inference.Fit` of the Rosetta model this view presents). Frames:
    :attr:`capabilities`, :attr:`benchmarks`,
    :attr:`residuals`.
    """

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
    engine: Any = None  # the engine's Fit (platinum_jax.inference.Fit) behind this view

    @property
    def capabilities(self) -> pd.DataFrame:
        """Index ``model``; columns ``capability`` (C_m), ``release_date``, ``n_scores``."""
        counts = np.bincount(self.table.model_index, minlength=self.table.n_models)
        frame = pd.DataFrame(
            {
                "capability": np.asarray(self.params.capability, dtype=np.float64),
                "release_date": self.table.model_release_dates().to_numpy(),
                "n_scores": counts,
            },
            index=pd.Index(self.table.models, name="model"),
        )
        return frame

    @property
    def benchmarks(self) -> pd.DataFrame:
        """Index ``benchmark``; columns ``difficulty`` (D_b), ``slope`` (alpha_b), ``release_date``."""
        counts = np.bincount(self.table.benchmark_index, minlength=self.table.n_benchmarks)
        return pd.DataFrame(
            {
                "difficulty": np.asarray(self.params.difficulty, dtype=np.float64),
                "slope": np.asarray(self.params.slope, dtype=np.float64),
                "release_date": self.table.benchmark_release_dates().to_numpy(),
                "n_scores": counts,
            },
            index=pd.Index(self.table.benchmarks, name="benchmark"),
        )

    @property
    def predicted(self) -> np.ndarray:
        """Fitted ``f(alpha_b (C_m - D_b))`` per table row, ``f`` the fit's own link."""
        # the same values as predict_scores; gathered in NumPy so that reading a result runs
        # one array operation, not one per gather (each eager JAX call costs milliseconds)
        c = np.asarray(self.params.capability)[self.table.model_index]
        d = np.asarray(self.params.difficulty)[self.table.benchmark_index]
        a = np.asarray(self.params.slope)[self.table.benchmark_index]
        return np.asarray(link_function(self.link)(a * (c - d)))

    @property
    def residuals(self) -> pd.DataFrame:
        """Per score: ``model, benchmark, score, predicted, residual`` (predicted - score)."""
        pred = self.predicted
        return pd.DataFrame(
            {
                "model": self.table.data["model"].to_numpy(),
                "benchmark": self.table.data["benchmark"].to_numpy(),
                "score": self.table.scores,
                "predicted": pred,
                "residual": pred - self.table.scores,
            }
        )

    def summary(self) -> dict:
        """Plain-Python summary (what the CLI writes to ``fit.json``)."""
        return {
            "cost": self.cost,
            "iterations": self.iterations,
            "converged": self.converged,
            "gradient_norm": self.gradient_norm,
            "anchor": _anchor_dict(self.anchor),
            "l2": self.l2,
            "n_models": self.table.n_models,
            "n_benchmarks": self.table.n_benchmarks,
            "n_scores": self.table.n_scores,
            "n_free_parameters": self.layout.n_free,
        }

    def rescaled(self, first: tuple[str, float], second: tuple[str, float]) -> pd.DataFrame:
        """Report the fit on a linear scale where two models take given values.

        With ``first = (model X, s_X)`` and ``second = (model Y, s_Y)``, ``s = a C + c`` where
        ``a = (s_Y - s_X) / (C_Y - C_X)`` and ``c = s_X - a C_X``. Difficulties map the same way
        and slopes become ``alpha_b / a`` so every prediction ``sigmoid(alpha_b (C_m - D_b))`` is
        unchanged. Returns a frame indexed by ``(kind, name)`` with ``kind`` in
        {"model", "benchmark"} and columns ``value`` (rescaled C or D), ``slope`` (NaN for
        models), ``release_date``; ``attrs`` holds ``scale`` (a) and ``offset`` (c).
        """
        (mx, sx), (my, sy) = first, second
        cx = self.capability_of(mx)
        cy = self.capability_of(my)
        if cx == cy:
            raise ValueError(
                f"models {mx!r} and {my!r} have the same capability ({cx:g}); pick two models "
                "with different capabilities to fix a linear scale"
            )
        a = (float(sy) - float(sx)) / (cy - cx)
        c = float(sx) - a * cx
        caps, bench = self.capabilities, self.benchmarks
        models = pd.DataFrame(
            {
                "value": a * caps["capability"].to_numpy() + c,
                "slope": np.nan,
                "release_date": caps["release_date"].to_numpy(),
            },
            index=pd.MultiIndex.from_product([["model"], caps.index], names=["kind", "name"]),
        )
        benches = pd.DataFrame(
            {
                "value": a * bench["difficulty"].to_numpy() + c,
                "slope": bench["slope"].to_numpy() / a,
                "release_date": bench["release_date"].to_numpy(),
            },
            index=pd.MultiIndex.from_product([["benchmark"], bench.index], names=["kind", "name"]),
        )
        out = pd.concat([models, benches])
        out.attrs["scale"] = a
        out.attrs["offset"] = c
        return out

    def capability_of(self, model: str) -> float:
        """``C_m`` of one model (unknown names raise with close matches)."""
        return float(self.params.capability[self.table.model_position(model)])


def _anchor_dict(anchor: Anchor) -> dict:
    if isinstance(anchor, BenchmarkAnchor):
        return {
            "kind": "benchmark",
            "benchmark": anchor.benchmark,
            "difficulty": anchor.difficulty,
            "slope": anchor.slope,
        }
    return {"kind": "models", "models": list(anchor.models), "capabilities": list(anchor.capabilities)}


def _component_message(comps) -> str:
    parts = []
    for k, (models, benches) in enumerate(comps[:6]):
        names = sorted(benches)
        shown = ", ".join(repr(n) for n in names[:4]) + (" ..." if len(names) > 4 else "")
        parts.append(f"component {k + 1}: {len(models)} models, {len(benches)} benchmarks ({shown})")
    more = f"; ... and {len(comps) - 6} more" if len(comps) > 6 else ""
    return "; ".join(parts) + more


def anchor_for_table(anchor: Anchor, table: ScoreTable) -> Anchor:
    """The given anchor where it lies in ``table`` (e.g. a sub-table); otherwise the table's
    most-scored benchmark, with the anchor's D and alpha when it was a benchmark anchor."""
    if isinstance(anchor, BenchmarkAnchor) and anchor.benchmark in table.benchmarks:
        return anchor
    if isinstance(anchor, ModelAnchor) and all(m in table.models for m in anchor.models):
        return anchor
    counts = np.bincount(table.benchmark_index, minlength=table.n_benchmarks)
    name = table.benchmarks[int(np.argmax(counts))]
    if isinstance(anchor, BenchmarkAnchor):
        return BenchmarkAnchor(name, anchor.difficulty, anchor.slope)
    return BenchmarkAnchor(name)


def _check_anchor(table: ScoreTable, anchor: Anchor) -> None:
    names = [anchor.benchmark] if isinstance(anchor, BenchmarkAnchor) else list(anchor.models)
    known = table.benchmarks if isinstance(anchor, BenchmarkAnchor) else table.models
    kind = "benchmark" if isinstance(anchor, BenchmarkAnchor) else "model"
    for n in names:
        if n not in known:
            raise UnknownNameError("anchor: " + close_matches_message(kind, n, known))


def _warn_unidentified(table: ScoreTable, anchor) -> None:
    """Warn about benchmarks whose slope the data cannot determine (scored by one model).

    With a single score, any slope α_b fits it exactly after D_b moves; only the L2 penalty
    picks one, so the reported slope (often ~0) and difficulty say nothing about the benchmark.
    """
    counts = table.data.groupby("benchmark", observed=True)["model"].nunique()
    fixed = {getattr(anchor, "benchmark", None)}
    lonely = [str(b) for b, n in counts.items() if n < 2 and b not in fixed]
    if lonely:
        warnings.warn(
            f"{len(lonely)} benchmark(s) scored by only one model: {', '.join(map(repr, lonely[:5]))}"
            f"{', ...' if len(lonely) > 5 else ''}. One score cannot determine a slope and a "
            "difficulty: the L2 penalty alone sets them, so their values are meaningless. Add "
            "scores from other models, or drop them (ScoreTable.drop_benchmarks)",
            UserWarning, stacklevel=3,
        )


def fit_stitching(
    table: ScoreTable,
    anchor: Anchor | None = None,
    l2: float = 0.1,
    *,
    components: Literal["error", "separate"] = "error",
    theta0: ArrayLike | None = None,
    restarts: int = 0,
    seed: int = 0,
    link: str = "sigmoid",
    model: Any = None,
    **solver_options,
) -> StitchingFit | list[StitchingFit]:
    """MAP fit of ``score(m, b) = sigmoid(alpha_b (C_m - D_b))`` to ``table``.

    Minimises ``0.5 * sum(r^2)`` over the residuals of
    :func:`~platinum_jax.stitching.stitching_residuals` (the paper's L2-regularised least squares,
    strength ``l2``) from the paper's start (C = D = 0, alpha = 1): the Rosetta model
    (:class:`~platinum_jax.models.Rosetta`) fitted by the engine's Levenberg-Marquardt
    (:func:`platinum_jax.inference.fit_map`).
    Enable float64 (``jax.config.update("jax_enable_x64", True)``) for fits to full precision.

    Args:
        table: the scores.
        anchor: :class:`BenchmarkAnchor` (default Winogrande, D = 0, alpha = 1) or
            :class:`ModelAnchor`.
        l2: regularisation strength ``lambda`` (paper: 0.1).
        components: a disconnected model-benchmark graph has no common scale; ``"error"``
            (default) raises naming the components, ``"separate"`` fits each component on its
            own and returns a list of fits, largest component first (components without the
            anchor are anchored on their most-scored benchmark with the anchor's D and alpha).
            ``restarts``, ``seed`` and the solver options apply to every component.
        theta0: optional start (P,) instead of the paper's. It is laid out for the whole table,
            so it cannot be combined with ``components="separate"`` (``ValueError``).
        restarts: extra random starts (the objective has several local minima): the paper's
            start plus ``restarts`` jittered copies (C, D + N(0, 0.5^2), alpha * exp(N(0, 0.3^2)))
            are solved in one vmapped call and the lowest cost wins.
        seed: seed of the jitter.
        link: ``"sigmoid"`` (the paper) or ``"clipped_linear"``; kept on the fit, so its
            predictions and residuals use the same link.
        model: a model of the Rosetta family to fit in place of the preset (e.g. a subclass of
            :class:`~platinum_jax.models.Rosetta` with another penalty), built with the same
            ``anchor``, ``l2`` and ``link``; None fits the paper's model.
        **solver_options: ``max_steps``, ``gtol``, ``xtol``, ``ftol``.
    """
    anchor = BenchmarkAnchor() if anchor is None else anchor
    if not np.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite number >= 0 (got {l2})")
    if components not in ("error", "separate"):
        raise ValueError(f"components must be 'error' or 'separate' (got {components!r})")
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0 (got {restarts})")
    if components == "separate" and theta0 is not None:
        raise ValueError(
            "theta0 cannot be combined with components='separate': a start vector is laid out "
            "for the whole table, and each component is fitted on a sub-table with its own "
            "parameters. Fit the components one by one (table.select_models) to give starts"
        )
    _check_anchor(table, anchor)
    if model is not None:
        if components == "separate":
            raise ValueError("model cannot be combined with components='separate': the model is "
                             "built for one anchor; fit the components one by one")
        if getattr(model, "l2", l2) != l2 or getattr(model, "link", link) != link:
            raise ValueError(f"model was built with l2={getattr(model, 'l2', None)}, "
                             f"link={getattr(model, 'link', None)!r}; pass the same l2 and link "
                             f"to fit_stitching (got l2={l2}, link={link!r})")
    comps = table.components()
    if len(comps) > 1:
        if components == "error":
            raise ValueError(
                f"the model-benchmark graph has {len(comps)} disconnected components, so their "
                f"scales are not comparable: {_component_message(comps)}. Add scores that link "
                "them, drop the small components, or pass components='separate' to fit each alone"
            )
        fits = []
        for models, _ in comps:
            sub = table.select_models(sorted(models))
            fits.append(
                fit_stitching(
                    sub, anchor_for_table(anchor, sub), l2, restarts=restarts, seed=seed,
                    link=link, **solver_options,
                )
            )
        return fits
    _warn_unidentified(table, anchor)
    return _fit_connected(table, anchor, float(l2), theta0, restarts, seed, link, solver_options, model)


def _fit_connected(table, anchor, l2, theta0, restarts, seed, link, solver_options,
                   model=None) -> StitchingFit:
    """One connected table: the Rosetta preset through :func:`platinum_jax.inference.fit_map`."""
    from platinum_jax.inference import fit_map

    from ._engine import (
        from_engine_theta,
        params_of,
        rosetta_model,
        to_engine_theta,
    )

    layout = ParameterLayout.from_table(table, anchor)
    start = None
    if theta0 is not None:
        start = np.asarray(theta0, dtype=np.float64)
        if start.shape != (layout.n_free,):
            raise ValueError(f"theta0 has shape {start.shape}; expected ({layout.n_free},)")
        start = to_engine_theta(layout, start)
    options = {"max_steps": 500, **solver_options}
    if not restarts:
        # One fit of the paper's data runs in milliseconds but compiles in about a second:
        # LLVM's optimisation turned down halves the compile time and doubles the tiny run time.
        options.setdefault("compiler_options", {"xla_backend_optimization_level": 0})
    model = rosetta_model(anchor, l2, link) if model is None else model
    engine = fit_map(model, table.responses, restarts=restarts,
                     seed=seed, theta0=start, **options)
    theta = from_engine_theta(layout, engine.theta)
    return StitchingFit(
        table=table,
        anchor=anchor,
        l2=l2,
        layout=layout,
        theta=theta,
        params=params_of(engine.theta),
        cost=float(engine.objective),
        iterations=int(engine.diagnostics["iterations"]),
        converged=bool(engine.converged),
        gradient_norm=float(engine.diagnostics["gradient_norm"]),
        link=link,
        engine=engine,
    )
