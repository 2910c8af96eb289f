"""K-fold cross-validation of any measurement model: every fold refit by the bootstrap's
compiled program (the held-out rows at weight 0) and every fold predicted by one program."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable
from platinum_jax.models import MeasurementModel

from ._map import _SOLVER_OPTIONS, per_structure
from ._point import _problem
from ._problem import Problem
from ._resample import fold_refits

__all__ = ["kfold_assignments", "cross_validate"]

# The fold-prediction programs by problem structure (see per_structure).
_PROGRAMS: dict = {}


def kfold_assignments(n: int, k: int, seed: int = 0) -> np.ndarray:
    """Fold label in ``0..k-1`` per row (n,): a seeded random permutation of the rows cut
    into k near-equal parts (the ``folds`` argument of :func:`cross_validate`)."""
    if not 2 <= k <= n:
        raise ValueError(f"k must lie between 2 and the number of scores ({n}); got {k}")
    folds = np.empty(n, dtype=np.int32)
    folds[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    return folds


def cross_validate(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    folds: int | np.ndarray = 10,
    seed: int = 0,
    chunk: int | None = None,
    **solver_options,
) -> pd.DataFrame:
    """K-fold cross-validation over responses: each fold is refitted with its rows weighted 0
    (one vmapped solver) and predicted. Returns one row per fold with ``n_test``,
    ``mse`` (of mean responses), ``log_lik`` (mean held-out log-likelihood per response) and
    ``converged``; ``attrs["predictions"]`` holds the out-of-fold prediction per row.

    ``folds`` is the number of folds (rows assigned at random by ``seed``) or the fold label
    ``0..K-1`` of every row of ``table`` (a design of the caller's, e.g. a paper's split).
    ``chunk``: refits vmapped together (default: every fold at once); the folds are padded to
    whole chunks. The refits run in :func:`bootstrap`'s compiled program, so a bootstrap of
    ``R <= block`` replicates and a cross-validation with the same ``chunk`` whose padded folds
    number ``R`` compile it once between them.
    """
    unknown = sorted(set(solver_options) - _SOLVER_OPTIONS)
    if unknown:
        raise TypeError(f"unknown solver option(s) {unknown}; the cross-validation's refits "
                        f"take {sorted(_SOLVER_OPTIONS)} as keywords")
    n = table.n_responses
    if np.ndim(folds) == 0:
        if folds < 2:
            raise ValueError(f"folds must be >= 2 (got {folds})")
        if folds > n:
            raise ValueError(f"folds={folds} exceeds the {n} responses")
        assign = np.random.default_rng(seed).permutation(np.arange(n) % folds)
    else:
        assign = np.asarray(folds)
        if assign.shape != (n,) or not np.issubdtype(assign.dtype, np.integer):
            raise ValueError(f"folds: give one integer fold label per response ({n}); got "
                             f"shape {assign.shape} of {assign.dtype}")
        folds = int(assign.max()) + 1
        if assign.min() < 0 or folds < 2 or len(np.unique(assign)) != folds:
            raise ValueError(f"folds: labels must be 0..K-1 with every fold used and K >= 2 "
                             f"(got {sorted(set(assign.tolist()))[:10]})")
    chunk = folds if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"chunk must be positive (got {chunk})")
    problem = _problem(model, table)
    data = problem.data()
    res = fold_refits(problem, problem.start(), data, assign, folds, chunk, solver_options)
    pred, loglik = (np.asarray(a) for a in _fold_predictions(problem)(res.theta, data))
    rows, oof = [], np.empty(n)
    y = np.asarray(table.response)
    for k in range(folds):
        test = assign == k
        oof[test] = pred[k, test]
        rows.append({"fold": k, "n_test": int(test.sum()),
                     "mse": float(np.mean((pred[k, test] - y[test]) ** 2)),
                     "log_lik": float(np.mean(loglik[k, test])),
                     "converged": bool(np.asarray(res.converged)[k])})
    out = pd.DataFrame(rows).set_index("fold")
    out.attrs["predictions"] = oof
    return out


def _fold_predictions(problem: Problem):
    """One compiled program per problem structure: every fold's mean response and pointwise
    log-likelihood at every row, from the folds' stacked parameters."""
    def build(bare):
        def run(thetas, data):
            return jax.vmap(lambda th: (bare.expected(th, data.subject_index, data.item_index),
                                        bare.pointwise_log_lik(th, data)))(thetas)

        return jax.jit(run)

    return per_structure(_PROGRAMS, problem, "fold_predictions", build, limit=16)


# ---------------------------------------------------------------------- new subjects
