"""The one check of responses against a model, shared by every reader of responses: ``fit``
(through :class:`~platinum_jax.inference.Problem`), ``score``, ``subset`` and comparisons, so
the same file gets the same answer everywhere."""

from __future__ import annotations

import numpy as np

from ._likelihoods import unit_hint

__all__ = ["check_responses", "response_notes"]



def check_responses(model, table, *, source: str | None = None) -> None:
    """Raise a ``ValueError`` naming the file and column when ``table``'s responses cannot come
    from ``model`` (its likelihood's support; for the Rosetta model, scores that are fractions:
    noisy ones a little outside [0, 1] pass, percentages and counts do not), with
    what to do: divide percentages by 100 when there is no trials column, divide counts of
    successes by their trials when there is one."""
    where = source or f"{table.source}, column response"
    y = np.asarray(table.response, np.float64)
    if y.size and getattr(model, "unit_scores", False):
        lo, hi = float(y.min()), float(y.max())
        if lo < -0.5 or hi > 1.5:  # noise may push a fraction past 0 or 1, never this far
            raise ValueError(f"{where}: the {model.name} model reads scores in [0, 1] (min "
                             f"{lo:g}, max {hi:g}){unit_hint(y, table.trials)}")
    model.likelihood.check(y, table.trials, where)


def response_notes(model, table) -> list[str]:
    """What a user should know before trusting a fit of ``model`` to ``table``, although
    nothing is wrong enough to refuse: fractions read by a Bernoulli likelihood as shares of
    successes, and degenerate data (one subject, one item, every response the same) whose
    estimates come from the priors more than from the responses."""
    notes = []
    y = np.asarray(table.response, np.float64)
    if getattr(model.likelihood, "name", None) == "bernoulli":
        frac = int(np.sum((y > 0) & (y < 1)))
        if frac:
            notes.append(f"{table.source}: {frac} of {y.size} responses are fractions; the "
                         "Bernoulli likelihood reads them as shares of successes (a "
                         "quasi-likelihood): add a trials column for the binomial likelihood, "
                         "or use --likelihood binomial / beta_binomial")
    degenerate = []
    if table.n_subjects == 1:
        degenerate.append("one subject")
    if table.n_items == 1:
        degenerate.append("one item")
    if y.size and np.all(y == y[0]):
        degenerate.append(f"every response is {y[0]:g}")
    if degenerate:
        notes.append(f"{table.source}: degenerate data ({', '.join(degenerate)}): the "
                     "estimates come from the priors, not the responses, whatever the "
                     "convergence flag says")
    return notes
