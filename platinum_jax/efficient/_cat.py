"""Computerized adaptive testing on a fitted item bank, many test-takers at once.

Each test-taker starts at the model's ability prior. At every step the next item is the one,
among those not yet given and available to that test-taker, that

* ``criterion="information"``: maximises the expected Fisher information under the current
  posterior, ``sum_g p(theta_g | y) I_i(theta_g)``; or
* ``criterion="variance"``: minimises the expected posterior variance of the ability after
  its response (responses enumerated: 0/1 responses, i.e. one trial per item);

its response is read, the grid posterior is updated, and the test stops once the posterior
sd falls to ``target_se`` or ``budget`` items were given. One step is a pure function of one
test-taker's state; :func:`adaptive_test` runs it with ``lax.scan`` over steps and ``vmap``
over test-takers.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable

from ._bank import ItemBank
from ._estimate import dense_responses, estimate_scores

__all__ = ["adaptive_test", "AdaptiveResult", "CRITERIA"]

CRITERIA = ("information", "variance")


@dataclass(frozen=True)
class AdaptiveResult:
    """Outcome of :func:`adaptive_test`.

    Attributes:
        trace: one row per (subject, step) given: ``item``, ``response``, posterior
            ``ability`` mean and ``ability_sd`` after it.
        subjects: the final estimates of :func:`~platinum_jax.efficient.estimate_scores`
            from the items each subject was given, plus ``n_items`` and ``stopped``
            (reached ``target_se`` before the budget).
    """

    trace: pd.DataFrame
    subjects: pd.DataFrame


def _moments(grid, post):
    m = post @ grid
    return m, jnp.sqrt(jnp.maximum(post @ grid ** 2 - m ** 2, 0.0))


def _run(bank: ItemBank, y, trials, available, budget, target_se, criterion):
    grid = bank.grid
    info = bank.information()  # (G, N)
    mean = bank.mean
    n_items = bank.n_items

    def var_after(w):
        z = jnp.maximum(w.sum(0), 1e-300)
        m = (grid @ w) / z
        return (grid ** 2 @ w) / z - m ** 2

    def one(y_row, n_row, a_row):
        def step(state, _):
            logpost, given, done = state
            post = jax.nn.softmax(logpost)
            if criterion == "information":
                score = post @ info
            else:  # minus the expected posterior variance after a 0/1 response
                p1 = post @ mean
                score = -(p1 * var_after(post[:, None] * mean)
                          + (1 - p1) * var_after(post[:, None] * (1.0 - mean)))
            score = jnp.where(given | ~a_row, -jnp.inf, score)
            i = jnp.argmax(score)
            can = jnp.isfinite(score[i]) & ~done
            lp = bank.log_lik(y_row[i][None], n_row[i][None], jnp.reshape(i, (1,)))[:, 0]
            logpost = jnp.where(can, logpost + lp, logpost)
            given = given.at[i].set(given[i] | can)
            m, sd = _moments(grid, jax.nn.softmax(logpost))
            done = done | ~can | (sd <= target_se)
            return (logpost, given, done), (jnp.where(can, i, -1), m, sd)

        init = (bank.log_prior, jnp.zeros(n_items, bool), jnp.asarray(False))
        (_, given, _), out = jax.lax.scan(step, init, None, length=budget)
        return given, out

    return jax.jit(jax.vmap(one))(y, trials, available)


def adaptive_test(
    bank: ItemBank,
    responses: ResponseTable,
    *,
    budget: int,
    target_se: float = 0.0,
    criterion: str = "information",
    target=None,
    interval: float = 0.9,
    seed: int = 0,
    scale: float = 1.0,
) -> AdaptiveResult:
    """Run an adaptive test for every subject of ``responses`` (their answers to every item
    they may be given: a test-taker is only given items it has a response for).

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`).
        responses: the test-takers' responses (real, or simulated from the model).
        budget: the most items given to one test-taker.
        target_se: stop once the ability's posterior sd is at most this (0: use the budget).
        criterion: ``"information"`` or ``"variance"`` (module docstring); ``"variance"``
            treats each response as one 0/1 trial.
        target, interval, seed, scale: passed to
            :func:`~platinum_jax.efficient.estimate_scores` for the final estimates.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}; choose one of {CRITERIA}")
    if not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a positive whole number of items (got {budget!r})")
    if not (np.isfinite(target_se) and target_se >= 0):
        raise ValueError(f"target_se must be a number >= 0 (got {target_se})")
    y, tr, seen = dense_responses(bank, responses)
    if criterion == "variance" and np.any(tr[seen] != 1):
        raise ValueError("criterion='variance' enumerates 0/1 responses; these responses have "
                         "several trials, so use criterion='information'")
    dtype = bank.mean.dtype
    given, (items, m, sd) = _run(bank, jnp.asarray(y, dtype), jnp.asarray(tr, dtype),
                                 jnp.asarray(seen), int(budget), float(target_se), criterion)
    items, m, sd, given = (np.asarray(a) for a in (items, m, sd, given))
    names = responses.subjects
    rows = []
    for s in range(len(names)):
        for step, i in enumerate(items[s]):
            if i < 0:
                break
            rows.append((names[s], step, bank.items[i], y[s, i], m[s, step], sd[s, step]))
    trace = pd.DataFrame(rows, columns=["subject", "step", "item", "response", "ability",
                                        "ability_sd"])
    sub_idx, item_idx = np.nonzero(given)
    asked = ResponseTable.from_frame(pd.DataFrame({
        "subject": np.asarray(names)[sub_idx], "item": bank.items[item_idx],
        "response": y[sub_idx, item_idx], "trials": tr[sub_idx, item_idx]}),
        name="the adaptive test's responses")
    final = estimate_scores(bank, asked, target=target, interval=interval, seed=seed,
                            scale=scale)
    final = final.reindex(names)
    final["n_items"] = given.sum(1)
    final["stopped"] = (given.sum(1) < budget) & (sd[np.arange(len(names)),
                                                      np.maximum(given.sum(1) - 1, 0)]
                                                  <= target_se)
    return AdaptiveResult(trace=trace, subjects=final)
