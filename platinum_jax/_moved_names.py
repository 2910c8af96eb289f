"""Every name that moved out of a public module, by that module: the old import still works, with
a ``DeprecationWarning`` naming the new home (each module passes its table to
:func:`platinum_jax._deprecation.module_hooks`). An entry goes when its deprecation period ends."""

from __future__ import annotations

from platinum_jax._deprecation import Moved

__all__ = ["MOVED"]

_INFERENCE = "platinum_jax.inference"
# The old array-level stitching solvers: the engine's, warning on every call; fit_theta returned
# (theta, cost, converged) and both took a damping the engine no longer exposes.
_SOLVER = {"note": " (the engine's platinum_jax.inference.solve_map on a stitching layout)",
           "per_call": True, "dropped": {"damping": (1e-3, "the engine's solver starts at "
                                                     "1e-3 * max diag(J^T J)")}}


def _homes(*groups: tuple[tuple[str, ...], str]) -> dict[str, Moved]:
    """Names that kept their name in their new home."""
    return {name: Moved(home, name) for names, home in groups for name in names}


MOVED: dict[str, dict[str, Moved]] = {
    "platinum_jax.stitching": {
        "LMResult": Moved(_INFERENCE, "MAPResult", _SOLVER["note"]),
        "bootstrap_weights": Moved(_INFERENCE, "resample_counts"),
        "fit_theta": Moved(_INFERENCE, "solve_layout", **_SOLVER, prefix=3),
        "gauss_newton_system": Moved(_INFERENCE, "layout_system", **_SOLVER),
        "solve_stitching": Moved(_INFERENCE, "solve_layout", **_SOLVER),
        **_homes((("read_benchmark_info", "read_distilled_models", "read_epoch_raw",
                   "read_metr_horizons", "read_model_compute"), "platinum_jax.importers"),
                 (("plot_capabilities", "plot_residuals"), "platinum_jax.plots"),
                 (("SyntheticTruth", "synthetic_score_table"), "platinum_jax.datasets"),
                 (("layout_problem", "to_engine_theta"), _INFERENCE)),
    },
    "platinum_jax.stitching.bayes": {
        **_homes((("Priors",), "platinum_jax.models.rosetta_bayes"),
                 (("SamplingWarning", "check_diagnostics", "posterior_summary",
                   "choose_chain_method", "use_cpu_devices_for_chains"), _INFERENCE),
                 (("load_weights_config", "optimal_weight_draws", "posterior_optimal_weights"),
                  "platinum_jax.design"),
                 (("plot_ppc",), "platinum_jax.plots")),
        "plot_capabilities": Moved("platinum_jax.plots", "plot_posterior_capabilities"),
    },
}
