"""Checks that a point fit found what its model asked for, so that a wrong fit never reports
success in silence: parameters the data leave to their prior, and an extended model that fits
worse than the model it nests."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ._problem import Data, Problem, Theta

__all__ = ["nested_check", "prior_dominated_globals"]

#: a parameter is left to its prior when the prior's curvature is this many times the data's
PRIOR_DOMINANCE = 10.0


def prior_dominated_globals(problem: Problem, theta: Theta, data: Data,
                            ratio: float = PRIOR_DOMINANCE) -> list[str]:
    """The free global entries (labels, ``name[k]``) whose penalty (the model's, by default
    ``-log prior``) curves the objective ``ratio`` times or more as much as the data do at
    ``theta``: there the fit returns what the penalty prefers, whatever the data say (a flat
    profile of the data). Entries without a prior or penalty never count."""
    decl = dict(problem.glob.decl)
    free = np.asarray(problem.free_G).ravel()
    cols = problem.glob.columns()
    checked = [k for k, (name, _) in enumerate(cols) if free[k] and not decl[name].map_only]
    if not checked:
        return []
    S, I, G = (jnp.asarray(t) for t in theta)  # noqa: E741
    h_data, h_all = _curvature_program(problem)(S, I, G, data)
    h_data, h_pen = np.diag(np.asarray(h_data)), np.diag(np.asarray(h_all - h_data))
    return [cols[k][1] for k in checked
            if h_pen[k] > 0 and h_pen[k] > ratio * max(float(h_data[k]), 0.0)]


# The curvature programs by problem structure: every MAP fit runs the check, and a second fit
# of the same structure (a refit, the sampler's start, a bootstrap) reuses the compiled one.
_CURVATURE: dict = {}


def _curvature_program(problem: Problem):
    """``(S, I, G, data) -> (data Hessian, full Hessian)`` of the objective in the globals."""
    from ._map import per_structure

    def build(bare: Problem):
        def curvature(S, I, G, data, scale):  # noqa: E741
            return jax.hessian(lambda g: bare.objective(Theta(S, I, g), data, scale))(G)

        return jax.jit(lambda S, I, G, data: (curvature(S, I, G, data, 0.0),  # noqa: E741
                                              curvature(S, I, G, data, 1.0)))

    return per_structure(_CURVATURE, problem, "prior_curvature", build)


def warn_prior_dominated(problem: Problem, labels: list[str]) -> None:
    lik = problem.model.likelihood
    advice = ("the likelihood's noise is fixed by hand (least squares), so a default penalty "
              "-log prior weighs as if every response had that noise; give these parameters a "
              "penalty on the objective's own scale (override global_penalty; for the Rosetta "
              "model, model.penalty_scale(info) is the paper's weight of one squared "
              "parameter), or fit with a likelihood that estimates its noise"
              if lik.least_squares else
              "the data say little about them: their estimates and intervals are the prior's")
    warnings.warn(f"model {problem.model.name!r}: the global parameter(s) {labels} are fixed by "
                  f"their penalty (prior), not by the data (its curvature is over "
                  f"{PRIOR_DOMINANCE:g} times the data's at the fit); {advice}", UserWarning,
                  stacklevel=3)


def nested_check(fit, base_fit) -> dict:
    """Compare a fit of an extended model with a fit of the model it nests (``extends()``);
    warn when the extended objective is worse, which a nesting model's optimum never is."""
    worse = fit.objective > base_fit.objective + 1e-8 * (1.0 + abs(base_fit.objective))
    out = {"base": base_fit.model.name, "base_objective": float(base_fit.objective),
           "worse_than_base": bool(worse)}
    if worse:
        warnings.warn(
            f"model {fit.model.name!r} nests {base_fit.model.name!r}, so its best objective "
            f"cannot be worse, but it is: {fit.objective:.6g} against {base_fit.objective:.6g}. "
            "The fit stopped at a worse point (try restarts=...), or the penalty on the added "
            "parameters does not vanish where they remove themselves and outweighs the data "
            "(give them a penalty on the objective's own scale)", UserWarning, stacklevel=3)
    return out
