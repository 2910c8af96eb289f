"""The one check of responses against a model, shared by every reader of responses: ``fit``
(through :class:`~platinum_jax.inference.Problem`), ``score``, ``subset`` and comparisons, so
the same file gets the same answer everywhere."""

from __future__ import annotations

import numpy as np

from .likelihoods import unit_hint

__all__ = ["check_responses"]

# Models whose mean is a score in [0, 1] whatever the likelihood (least squares included).
# Their responses are fractions, which measurement noise may push a little past 0 or 1.
_SCORE_MODELS = ("rosetta",)


def check_responses(model, table, *, source: str | None = None) -> None:
    """Raise a ``ValueError`` naming the file and column when ``table``'s responses cannot come
    from ``model`` (its likelihood's support; for the Rosetta model, scores that are fractions:
    noisy ones a little outside [0, 1] pass, percentages and counts do not), with
    what to do: divide percentages by 100 when there is no trials column, divide counts of
    successes by their trials when there is one."""
    where = source or f"{table.source}, column response"
    y = np.asarray(table.response, np.float64)
    if y.size and getattr(model, "name", None) in _SCORE_MODELS:
        lo, hi = float(y.min()), float(y.max())
        if lo < -0.5 or hi > 1.5:  # noise may push a fraction past 0 or 1, never this far
            raise ValueError(f"{where}: the {model.name} model reads scores in [0, 1] (min "
                             f"{lo:g}, max {hi:g}){unit_hint(y, table.trials)}")
    model.likelihood.check(y, table.trials, where)
