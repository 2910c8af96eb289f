"""Analyses on the stitched capability scale (Ho et al., "A Rosetta Stone for AI Benchmarks", s3).

Each analysis is a function returning an immutable result with tidy pandas frames, a
``summary()`` that puts our figure beside the paper's (``paper_reference`` column), and a
matching ``plot_*`` function:

* trends and forecasts -- :func:`fit_frontier_trend`, :func:`forecast_capability`;
* algorithmic progress -- :func:`fit_algorithmic_progress` (C = k ln F + b; k from the paper's
  single-release families, :data:`PAPER_FAMILIES`);
* acceleration -- :func:`detect_acceleration` and the synthetic-world study
  :func:`simulate_detection`;
* time horizons -- :func:`fit_time_horizons` (log METR horizon against capability);
* robustness -- :func:`anchor_robustness`, :func:`leave_benchmarks_out`;
* the Epoch Capabilities Index -- :func:`eci_scale` (two anchor models, bootstrap intervals),
  :func:`elo_scale`, :func:`frontier_lag` (months behind the frontier),
  :func:`slope_ratio_sweep` (acceleration factor against the breakpoint), :func:`penalty_sweep`
  (regularisation sensitivity), :func:`domain_index` (domain baskets),
  :func:`compare_shapes` (trajectory shapes of the frontier by PSIS-LOO).

Turn on float64 first: ``jax.config.update("jax_enable_x64", True)``.

    >>> from platinum_jax.stitching import ScoreTable, fit_stitching
    >>> from platinum_jax.analysis import fit_frontier_trend, forecast_capability
    >>> fit = fit_stitching(ScoreTable.from_csv("scores_long.csv"))     # doctest: +SKIP
    >>> trend = fit_frontier_trend(fit)                                 # doctest: +SKIP
    >>> trend.summary()                                                 # doctest: +SKIP
    >>> forecast_capability(trend, until="2028-10-01").tail(1)          # doctest: +SKIP

Names are imported lazily (on first use), so the command line's ``--help`` stays fast.
"""

from __future__ import annotations

from platinum_jax._lazy import module_hooks

# public name -> private module that defines it
_EXPORTS = {
    "PAPER_TREND_REFERENCE": "_trends",
    "TrendFit": "_trends",
    "as_capabilities": "_trends",
    "bootstrap_capabilities": "_trends",
    "decimal_year": "_trends",
    "fit_frontier_trend": "_trends",
    "forecast_capability": "_trends",
    "frontier_mask": "_trends",
    "frontier_models": "_trends",
    "year_to_timestamp": "_trends",
    "PAPER_FAMILIES": "_progress",
    "AlgorithmicProgress": "_progress",
    "fit_algorithmic_progress": "_progress",
    "within_family_slope": "_progress",
    "BreakpointFit": "_acceleration",
    "breakpoint_grid": "_acceleration",
    "detect_acceleration": "_acceleration",
    "fit_breakpoint": "_acceleration",
    "piecewise_sse": "_acceleration",
    "DetectionStudy": "_study",
    "PaperWorldConfig": "_detection",
    "scan_breakpoints": "_detection",
    "WorldConfig": "_hinge",
    "generate_world": "_hinge",
    "refit_world": "_hinge",
    "simulate_detection": "_simulate",
    "PAPER_HORIZON_REFERENCE": "_horizons",
    "HorizonFit": "_horizons",
    "fit_time_horizons": "_horizons",
    "paper_split": "_horizons",
    "RobustnessResult": "_robustness",
    "anchor_robustness": "_robustness",
    "compare_capabilities": "_robustness",
    "leave_benchmarks_out": "_robustness",
    "DEFAULT_ECI_ANCHORS": "_eci",
    "EciResult": "_eci",
    "eci_scale": "_eci",
    "elo_scale": "_eci",
    "frontier_lag": "_frontier_lag",
    "lag_months": "_frontier_lag",
    "organization_lag": "_frontier_lag",
    "slope_ratio_sweep": "_frontier_lag",
    "PenaltySweep": "_penalty",
    "penalty_sweep": "_penalty",
    "DomainIndex": "_baskets",
    "basket_benchmarks": "_baskets",
    "domain_index": "_baskets",
    "project_capabilities": "_baskets",
    "SHAPES": "_shapes",
    "ShapeComparison": "_shapes",
    "compare_shapes": "_shapes",
    "shape_models": "_shapes",
    "plot_domain_index": "_eci_plots",
    "plot_shapes": "_eci_plots",
    "plot_eci": "_eci_plots",
    "plot_frontier_lag": "_eci_plots",
    "plot_penalty_sweep": "_eci_plots",
    "plot_slope_ratio": "_eci_plots",
    "plot_acceleration": "_plots",
    "plot_detection_study": "_plots",
    "plot_horizons": "_plots",
    "plot_progress": "_plots",
    "plot_robustness": "_plots",
    "plot_trend": "_plots",
}

__all__ = sorted(_EXPORTS)


# PEP 562: each analysis loads on first use
__getattr__, __dir__ = module_hooks(
    __name__, globals(), exports={k: f"{__name__}.{v}" for k, v in _EXPORTS.items()})
