"""Computerised adaptive testing that an evaluation harness drives item by item.

An :class:`AdaptiveTest` holds a fitted bank and the testing rules; a test-taker's progress is
an immutable :class:`CatState` (a pytree). A harness loop reads::

    cat = AdaptiveTest(bank, budget=40, target_se=0.25, randomesque=3)
    state = cat.start(key=0)
    while not cat.finished(state):
        item, state = cat.next_item(state)      # the item label to ask next
        state = cat.update(state, item, run_model_on(item))
        print(cat.summary(state))               # ability, its sd, the full-benchmark score

Rules, applied at every step to the items not yet given (and, in simulation, answered):

* information: the expected Fisher information under the current grid posterior,
  ``sum_g p(theta_g | y) I_i(theta_g)``, ranks the items;
* content balancing (``groups``): the next item comes from the group furthest below its
  target share, ``argmax_c (share_c (t + 1) - n_c)`` over groups with items left (Kingsbury
  and Zara's constrained CAT);
* randomesque exposure control: the ``randomesque`` best items are put first in random order;
* Sympson-Hetter exposure control: walking down that order, item ``i`` is given with
  probability ``K_i`` and otherwise barred for the rest of this test; the ``K_i`` come from
  :func:`sympson_hetter`, which simulates tests and sets ``K_i = min(1, cap / P(selected_i))``.
  This spreads the exposure in expectation only: on a finite population the realised shares
  scatter around the cap and the busiest items exceed it;
* the hard exposure cap (``max_exposure``, set by :func:`sympson_hetter`):
  :func:`simulate_adaptive` tests its ``S`` test-takers one after another in a seeded order
  (a ``lax.scan`` carrying per-item counts) and closes an item once ``L = floor(max_exposure
  S)`` of them got it, so on the simulated population no exposure exceeds ``L / S <=
  max_exposure``, by counting. With ``m`` tests left and room ``r_i = L - count_i``, a test
  takes only items with ``r_i >= m`` once it has used its allowance ``sum_i min(r_i, m) -
  (m - 1) budget - #{r_i >= m}`` of the others: with complete responses every test then
  reaches its budget (a Gale-Ryser count); ``L N < S budget`` is refused. Test-takers met
  item by item keep no count: for them the cap is the target the ``K_i`` aim at;
* stopping: once the posterior sd is at most ``target_se`` or ``budget`` items were given.

The posterior is exact on the bank's grid: ``log p(theta | y) = log p(theta) +
sum log p(y_i | mu_i(theta)) / phi``, one jitted update per response, so after every item of
the bank it equals the full-data posterior. The score after each item is the observed target
responses plus the posterior-mean prediction of the rest, over the target's size.
:func:`simulate_adaptive` runs the same step under ``lax.scan`` and ``vmap`` over test-takers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable

from ._bank import ItemBank
from ._estimate import dense_responses

# Compiled simulations, keyed by (likelihood, budget): every array of the bank and every rule
# but the test length is an argument, so banks of one likelihood share a program (e.g. the
# folds of interval_scale) and jit only retraces for new shapes.
_RUNS: dict = {}

__all__ = ["AdaptiveTest", "CatState", "AdaptiveRun", "simulate_adaptive", "sympson_hetter"]


class CatState(NamedTuple):
    """One test-taker's progress (every field an array; a pytree)."""

    log_post: jax.Array  # (G,) unnormalised log posterior of the ability
    given: jax.Array  # (N,) bool
    barred: jax.Array  # (N,) bool: refused by the Sympson-Hetter lottery
    reached: jax.Array  # (N,) bool: put to the lottery at some step (selected)
    n_group: jax.Array  # (C,) items given per content group
    observed: jax.Array  # sum of the responses given on target items
    n_given: jax.Array  # int
    done: jax.Array  # bool
    key: jax.Array


@dataclass(frozen=True, eq=False)
class AdaptiveTest:
    """Testing rules on a fitted bank (module docstring).

    Args:
        bank: the fitted items (:func:`~platinum_jax.efficient.item_bank`).
        budget: the most items one test-taker is given.
        target_se: stop once the ability's posterior sd is at most this (0: budget only).
        randomesque: choose at random among this many best items (1: always the best).
        exposure: Sympson-Hetter parameters ``K_i`` in (0, 1], a Series indexed by item
            (missing items get 1), usually from :func:`sympson_hetter`; None: no lottery.
        groups: content group of each item (a Series indexed by item covering every item).
        group_share: target share of each group (a Series indexed by group, summing to 1);
            default the groups' shares of the bank.
        target: items whose mean response is the score (default every item).
        max_exposure: the hard cap on the share of simulated test-takers given any one item
            (module docstring), in (0, 1]; None: no cap. It binds in
            :func:`simulate_adaptive` only, on the population simulated there.
    """

    bank: ItemBank
    budget: int
    target_se: float = 0.0
    randomesque: int = 1
    exposure: pd.Series | None = None
    groups: pd.Series | None = None
    group_share: pd.Series | None = None
    target: pd.Index | None = None
    max_exposure: float | None = None
    _arrays: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        bank, n = self.bank, self.bank.n_items
        if not isinstance(self.budget, (int, np.integer)) or not 1 <= self.budget <= n:
            raise ValueError(f"budget must be a whole number of items in [1, {n}] "
                             f"(got {self.budget!r})")
        if not (np.isfinite(self.target_se) and self.target_se >= 0):
            raise ValueError(f"target_se must be a number >= 0 (got {self.target_se})")
        if not isinstance(self.randomesque, (int, np.integer)) or not 1 <= self.randomesque <= n:
            raise ValueError(f"randomesque must be a whole number in [1, {n}] "
                             f"(got {self.randomesque!r})")
        if self.max_exposure is not None and not 0 < self.max_exposure <= 1:
            raise ValueError(f"max_exposure must lie in (0, 1] (got {self.max_exposure})")
        k = np.ones(n)
        if self.exposure is not None:
            k[bank.position(self.exposure.index)] = self.exposure.to_numpy(np.float64)
            if not np.all((k > 0) & (k <= 1)):
                raise ValueError("exposure (Sympson-Hetter K_i) must lie in (0, 1]")
        if self.groups is None:
            if self.group_share is not None:
                raise ValueError("group_share needs groups (the content group of each item)")
            gid, share = np.zeros(n, int), np.ones(1)
        else:
            missing = bank.items.difference(self.groups.index)
            if len(missing):
                raise ValueError(f"groups lacks {len(missing)} item(s) of the bank, e.g. "
                                 f"{list(missing[:5])}; give every item its content group")
            labels = self.groups.reindex(bank.items)
            codes, uniq = pd.factorize(labels, sort=True)
            gid = codes
            if self.group_share is None:
                share = np.bincount(gid) / n
            else:
                gs = self.group_share.reindex(uniq)
                if gs.isna().any() or not np.isclose(gs.sum(), 1) or (gs < 0).any():
                    raise ValueError(f"group_share must give every group {list(uniq)} a share "
                                     ">= 0, summing to 1")
                share = gs.to_numpy(np.float64)
        tmask = np.ones(n, bool)
        if self.target is not None:
            tmask = np.zeros(n, bool)
            tmask[bank.position(self.target)] = True
        dtype = bank.mean.dtype
        arrays = dict(info=bank.information(), k=jnp.asarray(k, dtype),
                      onehot=jax.nn.one_hot(gid, len(share), dtype=dtype),
                      share=jnp.asarray(share, dtype), tmask=jnp.asarray(tmask),
                      grid=bank.grid, mean=bank.mean, log_prior=bank.log_prior,
                      lik_g=bank.likelihood_globals,
                      phi=jnp.asarray(bank.dispersion, dtype),
                      target_se=jnp.asarray(self.target_se, dtype),
                      randomesque=jnp.asarray(int(self.randomesque), jnp.int32),
                      n_target=jnp.asarray(float(tmask.sum()), dtype))
        object.__setattr__(self, "_arrays", arrays)
        # The item-by-item steps also take the arrays as arguments: one program per shape.
        object.__setattr__(self, "_jit_choose", jax.jit(self._choose))
        object.__setattr__(self, "_jit_update", jax.jit(self._update))
        object.__setattr__(self, "_jit_summary", jax.jit(self._summary))
        # One compiled simulation per likelihood and test length (the scan's length): the
        # bank's arrays and the other rules (K, groups, target_se, randomesque) are arguments.
        likelihood = bank.fit.problem.model.likelihood
        try:
            hash(likelihood)
            static = (likelihood, self.budget)
        except TypeError:  # a likelihood holding arrays: one program per bank, as before
            static = (id(bank), self.budget)
        # The capped run (one test-taker after another, counts carried) is a second program.
        for name, kind, make in (
                ("_jit_run", "vmap", lambda: jax.vmap(partial(_one_test, self),
                                                      (None, None, 0, 0, 0, 0))),
                ("_jit_capped", "scan", lambda: partial(_capped_run, self))):
            if (static, kind) not in _RUNS:
                if len(_RUNS) >= 8:  # keep a few compiled simulations, not every rule set
                    _RUNS.pop(next(iter(_RUNS)))
                _RUNS[static, kind] = jax.jit(make())
            object.__setattr__(self, name, _RUNS[static, kind])

    # -- pure steps (jnp only) ------------------------------------------------------------
    def _choose(self, state: CatState, available, k=None, a=None):
        """``(item, state)``: the item to give and the state with the items put to the
        Sympson-Hetter lottery marked reached and those that lost it barred. ``k`` overrides
        the lottery's parameters (for their calibration without recompiling)."""
        a = self._arrays if a is None else a
        k = a["k"] if k is None else k
        post = jax.nn.softmax(state.log_post)
        score = post @ a["info"]
        elig = available & ~state.given & ~state.barred
        deficit = a["share"] * (state.n_given + 1) - state.n_group
        has = (a["onehot"] * elig[:, None]).max(0) > 0
        g = jnp.argmax(jnp.where(has, deficit, -jnp.inf))
        elig = elig & (a["onehot"][:, g] > 0)
        key, k_order, k_lottery = jax.random.split(state.key, 3)
        s = jnp.where(elig, score, -jnp.inf)
        cut = jnp.sort(s)[s.shape[0] - a["randomesque"]]  # the randomesque-th largest
        top = elig & (s >= cut)
        prio = jnp.where(top, jnp.max(s) + 1.0 + jax.random.uniform(k_order, s.shape), s)
        passes = jax.random.uniform(k_lottery, s.shape) < k
        # The first item in priority that wins its lottery; if none does, the last in line.
        item = jnp.where(jnp.any(passes & elig), jnp.argmax(jnp.where(passes, prio, -jnp.inf)),
                         jnp.argmin(jnp.where(elig, prio, jnp.inf)))
        barred = state.barred | (elig & ~passes & (prio > prio[item]))
        reached = state.reached | (elig & (prio >= prio[item]))
        return item, state._replace(barred=barred, reached=reached, key=key)

    def _update(self, state: CatState, item, y, trials, a=None):
        a = self._arrays if a is None else a
        dtype = a["mean"].dtype
        # the bank's arrays from ``a``: arguments of the program, not constants in it
        lp = self.bank.log_lik(jnp.reshape(jnp.asarray(y, dtype), (1,)),
                               jnp.reshape(jnp.asarray(trials, dtype), (1,)),
                               jnp.reshape(item, (1,)), mean=a["mean"], lik_g=a["lik_g"],
                               dispersion=a["phi"])[:, 0]
        state = state._replace(
            log_post=state.log_post + lp, given=state.given.at[item].set(True),
            n_group=state.n_group + a["onehot"][item],
            observed=state.observed + jnp.where(a["tmask"][item], y, 0.0),
            n_given=state.n_given + 1)
        _, sd, _ = self._summary(state, a)
        done = (sd <= a["target_se"]) | (state.n_given >= self.budget)
        return state._replace(done=done)

    def _summary(self, state: CatState, a=None):
        a = self._arrays if a is None else a
        grid = a["grid"]
        post = jax.nn.softmax(state.log_post)
        m = post @ grid
        sd = jnp.sqrt(jnp.maximum(post @ grid ** 2 - m ** 2, 0.0))
        rest = jnp.where(a["tmask"] & ~state.given, post @ a["mean"], 0.0).sum()
        return m, sd, (state.observed + rest) / a["n_target"]

    # -- the harness API ------------------------------------------------------------------
    def start(self, key=0, a=None) -> CatState:
        """A fresh test at the ability prior; ``key``: an int or a JAX key (the randomness of
        the exposure control)."""
        key = jax.random.PRNGKey(key) if isinstance(key, (int, np.integer)) else key
        a = self._arrays if a is None else a
        dtype = a["mean"].dtype
        n, c = a["mean"].shape[1], a["share"].shape[0]
        return CatState(a["log_prior"], jnp.zeros(n, bool), jnp.zeros(n, bool),
                        jnp.zeros(n, bool), jnp.zeros(c, dtype), jnp.zeros((), dtype), jnp.zeros((), jnp.int32),
                        jnp.asarray(False), key)

    def finished(self, state: CatState) -> bool:
        """Whether the stopping rule was met (or no item is left)."""
        left = bool(np.any(~np.asarray(state.given) & ~np.asarray(state.barred)))
        return bool(state.done) or not left

    def next_item(self, state: CatState, available=None) -> tuple[str, CatState]:
        """The label of the next item to give and the state (exposure-control draws made).
        ``available``: item labels this test-taker may get (default all)."""
        if self.finished(state):
            raise ValueError("this test has finished (its stopping rule was met); call "
                             "summary(state) for the result")
        mask = np.ones(self.bank.n_items, bool)
        if available is not None:
            mask = np.zeros(self.bank.n_items, bool)
            mask[self.bank.position(available)] = True
        if not np.any(mask & ~np.asarray(state.given) & ~np.asarray(state.barred)):
            raise ValueError("no item is left to give: every available item was given or "
                             "barred by exposure control; widen available or stop the test")
        item, state = self._jit_choose(state, jnp.asarray(mask), None, self._arrays)
        return str(self.bank.items[int(item)]), state

    def update(self, state: CatState, item, response, trials=None) -> CatState:
        """The state after ``response`` (a fraction of ``trials``, default the bank's trials
        for that item) to the item labelled ``item``."""
        i = int(self.bank.position([item])[0])
        if bool(state.given[i]):
            raise ValueError(f"item {item!r} was already given in this test")
        if not np.isfinite(response):
            raise ValueError(f"response to {item!r} must be a finite number (got {response})")
        n = float(self.bank.trials[i]) if trials is None else float(trials)
        return self._jit_update(state, jnp.asarray(i), response, n, self._arrays)

    def summary(self, state: CatState) -> dict:
        """``ability`` (posterior mean), ``ability_sd``, ``score`` (predicted full-benchmark
        score) and ``n_items`` so far."""
        m, sd, score = self._jit_summary(state, self._arrays)
        return {"ability": float(m), "ability_sd": float(sd), "score": float(score),
                "n_items": int(state.n_given)}

    def posterior(self, state: CatState) -> pd.Series:
        """The normalised ability posterior on the bank's grid."""
        return pd.Series(np.asarray(jax.nn.softmax(state.log_post)),
                         index=pd.Index(np.asarray(self.bank.grid), name="ability"))


@dataclass(frozen=True)
class AdaptiveRun:
    """Outcome of :func:`simulate_adaptive`.

    Attributes:
        trace: one row per (subject, step): ``item``, ``response``, ``ability``,
            ``ability_sd`` and ``score`` after it.
        subjects: per subject the final ``ability``, ``ability_sd``, ``score``, ``n_items``
            and ``stopped`` (met ``target_se`` before the budget).
        items: per item ``exposure`` (share of test-takers given it), ``selected`` (share for
            whom it was put to the Sympson-Hetter lottery at some step: the item chosen had it
            won), ``k`` (its Sympson-Hetter parameter) and ``closed`` (given to as many
            test-takers as the hard cap ``max_exposure`` allows; False without it).
        overlap: mean over pairs of test-takers of the items both were given, divided by the
            mean test length of the two (0: disjoint tests, 1: identical).
    """

    trace: pd.DataFrame
    subjects: pd.DataFrame
    items: pd.DataFrame
    overlap: float


def _one_test(self: AdaptiveTest, a, k, y_s, n_s, a_s, key, plenty=None, allowance=None):
    """One simulated test (responses ``y_s`` with ``n_s`` trials, items ``a_s`` allowed):
    per step the item given (-1 once stopped) and the summary; the items reached and given.
    Under the hard cap, once ``allowance`` items outside ``plenty`` were given, only items of
    ``plenty`` are, while this test-taker has any left (lottery bars lifted if need be)."""

    def step(carry, _):
        state, scarce = carry
        avail, st = a_s, state
        if plenty is not None:
            only = a_s & plenty & ~state.given
            force = (scarce >= allowance) & jnp.any(only)
            avail = jnp.where(force, a_s & plenty, a_s)
            lift = force & ~jnp.any(only & ~state.barred)  # the lottery barred all of them
            st = state._replace(barred=state.barred & ~(lift & plenty))
        item, chosen = self._choose(st, avail, k, a)
        can = ~state.done & jnp.any(avail & ~st.given & ~st.barred)
        new = self._update(chosen, item, y_s[item], n_s[item], a)
        state = jax.tree_util.tree_map(lambda u, v: jnp.where(can, u, v), new, state)
        if plenty is not None:
            scarce = scarce + (can & ~plenty[item])
        m, sd, score = self._summary(state, a)
        return (state, scarce), (jnp.where(can, item, -1), m, sd, score)

    (state, _), out = jax.lax.scan(step, (self.start(key, a), jnp.zeros((), jnp.int32)), None,
                                   length=self.budget)
    return out, state.reached, state.given


def _capped_run(self: AdaptiveTest, a, k, y, n, seen, keys, order, limit):
    """The tests of every test-taker in ``order``, each item closed once ``limit`` of them
    were given it (module docstring); the outputs in the test-takers' own order."""
    budget = self.budget

    def one(carry, s):
        counts, m = carry  # items given so far; tests left to run, this one included
        room = limit - counts
        plenty = room >= m
        allowance = (jnp.minimum(room, m).sum() - m * budget + budget
                     - plenty.sum(dtype=jnp.int32))
        out, reached, given = _one_test(self, a, k, y[s], n[s], seen[s] & (room > 0), keys[s],
                                        plenty, allowance)
        return (counts + given, m - 1), (out, reached)

    start = (jnp.zeros(seen.shape[1], jnp.int32), jnp.asarray(seen.shape[0], jnp.int32))
    _, (out, reached) = jax.lax.scan(one, start, order)
    back = jnp.argsort(order)
    return [o[back] for o in out], reached[back]


def _exposure_limit(cap: float, seen: np.ndarray, budget: int) -> int:
    """``L``, the most test-takers of ``seen`` (S, N) one item may go to under ``cap``:
    ``floor(cap S)``, refused when the items' room, ``sum_i min(L, seen by i)``, is short of
    the administrations the tests need, ``sum_s min(budget, seen by s)``."""
    s = seen.shape[0]
    limit = int(np.floor(cap * s))
    while limit > 0 and limit / s > cap:  # guard the float product against rounding up
        limit -= 1
    per_item = np.sort(seen.sum(0))
    need = int(np.minimum(seen.sum(1), budget).sum())
    # room(L) for every L = 1..S: the items seen by fewer than L whole, the rest L each
    ls = np.arange(1, s + 1)
    below = np.searchsorted(per_item, ls)
    room = np.concatenate([[0], np.cumsum(per_item)])[below] + ls * (len(per_item) - below)
    if limit < 1 or room[limit - 1] < need:
        least = np.ceil(ls[np.argmax(room >= need)] / s * 1e4) / 1e4  # rounded up: enough
        have = int(room[limit - 1]) if limit else 0
        raise ValueError(
            f"cap={cap} cannot be met on {s} test-takers: each item may go to at most "
            f"floor(cap x {s}) = {limit} of them, room for {have} item administrations, but "
            f"their tests of up to {budget} items need {need}; raise the cap to at least "
            f"{least:g}, lower the budget, or simulate more test-takers")
    return limit


def _simulate(cat: AdaptiveTest, responses: ResponseTable, seed: int, k=None, capped=False):
    """Every test of ``responses`` and the cap's ``L`` (None: ``vmap``, no cap); ``capped``:
    one after another under ``cat.max_exposure`` (if set)."""
    y, tr, seen = dense_responses(cat.bank, responses)
    limit = None
    if capped and cat.max_exposure is not None:
        limit = _exposure_limit(cat.max_exposure, seen, cat.budget)
    dtype = cat.bank.mean.dtype
    keys = jax.random.split(jax.random.PRNGKey(seed), len(y))
    k = cat._arrays["k"] if k is None else jnp.asarray(k, dtype)
    args = (cat._arrays, k, jnp.asarray(y, dtype), jnp.asarray(tr, dtype), jnp.asarray(seen),
            keys)
    if limit is None:
        out, reached, _ = cat._jit_run(*args)
    else:
        order = np.random.default_rng(seed).permutation(len(y))
        out, reached = cat._jit_capped(*args, jnp.asarray(order, jnp.int32),
                                       jnp.asarray(limit, jnp.int32))
    return y, [np.asarray(a) for a in out], np.asarray(reached), limit


def simulate_adaptive(cat: AdaptiveTest, responses: ResponseTable, *, seed: int = 0
                      ) -> AdaptiveRun:
    """Run ``cat`` for every subject of ``responses`` at once (``vmap``), reading each item's
    response from the table; a subject is only given items it has a response for. With
    ``cat.max_exposure`` the subjects are tested one after another in a seeded order and an
    item given to ``floor(max_exposure S)`` of the ``S`` subjects is closed for the rest, so
    every item's ``exposure`` here is at most ``max_exposure`` (module docstring); a cap the
    subjects' tests cannot fit under is refused (``ValueError``)."""
    y, (items, m, sd, score), reached, limit = _simulate(cat, responses, seed, capped=True)
    names = np.asarray(responses.subjects)
    s_idx, step = np.nonzero(items >= 0)
    it = items[s_idx, step]
    trace = pd.DataFrame({"subject": names[s_idx], "step": step, "item": cat.bank.items[it],
                          "response": y[s_idx, it], "ability": m[s_idx, step],
                          "ability_sd": sd[s_idx, step], "score": score[s_idx, step]})
    n_given = (items >= 0).sum(1)
    last = np.maximum(n_given - 1, 0)
    rows = np.arange(len(y))
    subjects = pd.DataFrame({"ability": m[rows, last], "ability_sd": sd[rows, last],
                             "score": score[rows, last], "n_items": n_given,
                             "stopped": (n_given < cat.budget)
                             & (sd[rows, last] <= cat.target_se)},
                            index=pd.Index(names, name="subject"))
    n = cat.bank.n_items
    given = np.zeros((len(y), n), bool)
    given[s_idx, it] = True
    items_frame = pd.DataFrame({"exposure": given.mean(0), "selected": reached.mean(0),
                                "k": np.asarray(cat._arrays["k"]),
                                "closed": given.sum(0) >= (limit or len(y) + 1)},
                               index=pd.Index(cat.bank.items, name="item"))
    both = given.astype(float) @ given.T.astype(float)
    length = n_given.astype(float)
    pair_len = (length[:, None] + length[None]) / 2
    iu = np.triu_indices(len(y), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        overlap = float(np.mean(both[iu] / pair_len[iu])) if len(iu[0]) else float("nan")
    return AdaptiveRun(trace=trace, subjects=subjects, items=items_frame, overlap=overlap)


def sympson_hetter(cat: AdaptiveTest, responses: ResponseTable, *, cap: float = 0.1,
                   iterations: int = 10, seed: int = 0) -> AdaptiveTest:
    """``cat`` with exposure control at ``cap``: Sympson-Hetter parameters calibrated on the
    test-takers of ``responses`` (simulation examinees: the fit's own subjects, or draws from
    the model) and the hard cap ``max_exposure=cap``.

    Each round simulates the tests with the current ``K`` and sets ``K_i = min(1, cap /
    P(selected_i))``, ``P(selected_i)`` the share of test-takers for whom item ``i`` was put
    to the lottery at some step. That holds exposure near ``cap`` in expectation only, which
    on a finite population still leaves the busiest items above it; the ``K_i`` spread the
    items, and the hard cap makes the guarantee: :func:`simulate_adaptive` of the result on
    any population (``responses`` included) gives no item to more than ``cap`` of it, by
    counting. For new test-takers tested item by item, ``cap`` is the target the ``K_i`` aim
    at, not a bound. ``cap`` must be at least ``budget / n_items`` (the mean exposure), and
    ``floor(cap S)`` tests per item must make room for the ``S`` tests of ``responses``
    (``ValueError`` naming the least cap otherwise)."""
    if not 0 < cap <= 1:
        raise ValueError(f"cap must lie in (0, 1] (got {cap})")
    if cap < cat.budget / cat.bank.n_items:
        raise ValueError(f"cap={cap} is below budget / items = {cat.budget}/{cat.bank.n_items}, "
                         "the mean exposure every test implies; raise the cap to at least "
                         f"{cat.budget / cat.bank.n_items:.4g} or lower the budget")
    if not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be a positive whole number (got {iterations!r})")
    _exposure_limit(cap, dense_responses(cat.bank, responses)[2], cat.budget)
    k = np.ones(cat.bank.n_items)
    for it in range(iterations):
        _, _, reached, _ = _simulate(cat, responses, seed + it, k)
        sel = reached.mean(0)
        k = np.where(sel > cap, cap / np.maximum(sel, 1e-12), 1.0)
    return _with(cat, exposure=pd.Series(k, index=cat.bank.items), max_exposure=cap)


def _with(cat: AdaptiveTest, **changes) -> AdaptiveTest:
    keep = {f: getattr(cat, f) for f in ("bank", "budget", "target_se", "randomesque",
                                         "exposure", "groups", "group_share", "target",
                                         "max_exposure")}
    return AdaptiveTest(**{**keep, **changes})
