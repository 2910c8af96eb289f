"""Fixed item subsets of size ``k`` chosen from a fitted model.

Methods (``select_items(bank, k, method=...)``):

* ``"fisher"``: Bayesian D-optimal design for the ability. Items are added greedily to
  maximise ``E_pop[log(1/sigma0^2 + sum_{i in S} I_i(theta))]``, the expected log posterior
  precision over the population's ability distribution (a normal with the mean and spread of
  the fitted abilities). The first item is the one of maximum Fisher information at the
  population; later items go where the precision gathered so far is lowest, so the subset
  spreads over the ability range instead of piling up at its centre.
* ``"anchor"``: anchor points (as tinyBenchmarks): items are clustered by their response
  pattern over the fitted subjects (missing cells filled with the model's prediction) with
  k-means; the item closest to each centroid represents its cluster, weighted by the cluster's
  share of items.
* ``"stratified"``: stratified random: items binned into ``strata`` quantile bins of their
  mean response in the fit, ``k`` allocated to the bins in proportion to their size.
* ``"random"``: uniform without replacement (the baseline).

``exclude`` (item labels, e.g. those flagged by :func:`~platinum_jax.efficient.screen_items`)
removes items from the population before any method runs: the subset is drawn from the other
items, and its weights describe them (the "full benchmark" of the estimate is then the kept
items; pass them as ``target`` to the estimators).

Each returns a frame indexed by item with ``weight`` (the share of the benchmark each item
stands for; the weights sum to 1, so ``sum w_i y_i`` is the method's own plain estimate of
the full-benchmark score) and ``group`` (stratum or cluster, -1 where there is none).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._bank import ItemBank

__all__ = ["select_items", "SELECTION_METHODS", "kmeans", "item_patterns"]

SELECTION_METHODS = ("fisher", "anchor", "stratified", "random")


def _check_k(bank: ItemBank, k: int, n_kept: int) -> None:
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive whole number of items (got {k!r})")
    if k > n_kept:
        raise ValueError(f"k={k} exceeds the {n_kept} items of the fitted model left after "
                         f"excluding {bank.n_items - n_kept}")


def population_weights(bank: ItemBank) -> jax.Array:
    """Normal density of the fitted abilities' mean and sd on the grid, normalised ``(G,)``."""
    ability = np.asarray(bank.fit.theta.subjects, np.float64).ravel()
    mu, sd = ability.mean(), max(ability.std(), 1e-3)
    logw = -0.5 * ((bank.grid - mu) / sd) ** 2
    return jax.nn.softmax(logw)


@jax.jit
def _greedy_information(info, weight, prior_precision, order_k, used0):
    """Greedy maximisation of ``sum_g weight_g log(prior + sum_S info[g])`` for ``len(order_k)``
    steps; returns the chosen item per step."""

    def step(carry, _):
        total, used = carry
        gain = weight @ jnp.log(prior_precision + total[:, None] + info)  # (N,)
        gain = jnp.where(used, -jnp.inf, gain)
        i = jnp.argmax(gain)
        return (total + info[:, i], used.at[i].set(True)), i

    init = (jnp.zeros(info.shape[0], info.dtype), used0)
    _, chosen = jax.lax.scan(step, init, order_k)
    return chosen


def item_patterns(bank: ItemBank) -> np.ndarray:
    """Response pattern of each item over the fit's subjects ``(N, S)``; cells without a
    response hold the model's prediction."""
    fit = bank.fit
    t = fit.table
    s_all, i_all = np.meshgrid(np.arange(t.n_subjects), np.arange(t.n_items), indexing="ij")
    pred = np.array(fit.predict(s_all.ravel(), i_all.ravel())).reshape(t.n_subjects, t.n_items)
    pred[t.subject_index, t.item_index] = t.response
    return pred.T


def kmeans(x, k: int, *, seed: int = 0, iterations: int = 100):
    """k-means (k-means++ start, then Lloyd's iterations under ``jit``) of the rows of ``x``
    ``(n, d)``. Returns ``(centroids (k, d), assignment (n,))``; a cluster left empty keeps its
    previous centroid."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"k-means needs 1 <= k <= {n} (got k={k})")
    rng = np.random.default_rng(seed)
    centres = [int(rng.integers(n))]
    d2 = np.sum((x - x[centres[0]]) ** 2, 1)
    for _ in range(1, k):
        total = d2.sum()
        # All remaining points coincide with chosen centres: take any unchosen point.
        p = d2 / total if total > 0 else np.where(np.isin(np.arange(n), centres), 0, 1.0)
        nxt = int(rng.choice(n, p=p / p.sum()))
        centres.append(nxt)
        d2 = np.minimum(d2, np.sum((x - x[nxt]) ** 2, 1))
    c, a = _lloyd(jnp.asarray(x), jnp.asarray(x[centres]), iterations)
    return np.asarray(c), np.asarray(a)


def _lloyd(x, c0, iterations: int):
    def assign(c):
        d = jnp.sum(x ** 2, 1)[:, None] - 2 * x @ c.T + jnp.sum(c ** 2, 1)[None]
        return jnp.argmin(d, 1)

    def step(c, _):
        a = assign(c)
        one_hot = jax.nn.one_hot(a, c.shape[0], dtype=x.dtype)
        count = one_hot.sum(0)
        new = (one_hot.T @ x) / jnp.maximum(count, 1)[:, None]
        return jnp.where(count[:, None] > 0, new, c), None

    c, _ = jax.jit(lambda c: jax.lax.scan(step, c, None, length=iterations))(c0)
    return c, assign(c)


def _anchor(bank: ItemBank, k: int, seed: int, kept: np.ndarray):
    x = item_patterns(bank)[kept]
    centres, assign = kmeans(x, k, seed=seed)
    chosen, groups, weights = [], [], []
    taken = np.zeros(len(x), bool)
    for j in range(k):
        members = np.flatnonzero((assign == j) & ~taken)
        if len(members) == 0:
            continue  # an empty cluster stands for no items
        d = np.sum((x[members] - centres[j]) ** 2, 1)
        i = int(members[np.argmin(d)])
        taken[i] = True
        chosen.append(i)
        groups.append(j)
        weights.append(np.sum(assign == j) / len(x))
    return kept[np.array(chosen)], np.array(groups), np.array(weights)


def _stratified(bank: ItemBank, k: int, strata: int, rng, kept: np.ndarray):
    t = bank.fit.table
    rate = np.bincount(t.item_index, weights=t.response, minlength=t.n_items) / np.bincount(
        t.item_index, minlength=t.n_items)
    rate = rate[kept]
    n_bins = min(strata, k)
    # Bins by rank (ties broken at random) so that every bin has items.
    order = np.lexsort((rng.random(len(rate)), rate))
    bins = np.empty(len(rate), int)
    bins[order] = np.arange(len(rate)) * n_bins // len(rate)
    size = np.bincount(bins, minlength=n_bins)
    quota = k * size / size.sum()
    take = np.floor(quota).astype(int)
    rest = k - take.sum()
    take[np.argsort(-(quota - take), kind="stable")[:rest]] += 1
    chosen, groups, weights = [], [], []
    for b in range(n_bins):
        if take[b] == 0:
            continue
        pick = rng.choice(np.flatnonzero(bins == b), take[b], replace=False)
        chosen.extend(pick)
        groups.extend([b] * take[b])
        weights.extend([size[b] / size.sum() / take[b]] * take[b])
    return kept[np.array(chosen)], np.array(groups), np.array(weights)


def select_items(bank: ItemBank, k: int, method: str = "fisher", *, seed: int = 0,
                 strata: int = 10, exclude=None) -> pd.DataFrame:
    """Choose ``k`` items of ``bank`` by ``method`` (one of :data:`SELECTION_METHODS`; see the
    module docstring). ``seed`` drives the random methods and the k-means start; ``strata`` is
    the number of bins of ``"stratified"``; ``exclude`` lists items never to choose (unknown
    labels raise). Returns a frame indexed by item (in the order chosen) with ``weight`` and
    ``group``."""
    keep = np.ones(bank.n_items, bool)
    if exclude is not None:
        keep[bank.position(pd.Index(exclude))] = False
    kept = np.flatnonzero(keep)
    _check_k(bank, k, len(kept))
    rng = np.random.default_rng(seed)
    if method == "fisher":
        info = bank.information()
        prior_precision = 1.0 / float(np.var(np.asarray(bank.fit.theta.subjects)) or 1.0)
        chosen = np.asarray(_greedy_information(info, population_weights(bank),
                                                prior_precision, jnp.zeros(k),
                                                jnp.asarray(~keep)))
        groups, weights = np.full(k, -1), np.full(k, 1.0 / k)
    elif method == "anchor":
        chosen, groups, weights = _anchor(bank, k, seed, kept)
    elif method == "stratified":
        if strata < 1:
            raise ValueError(f"strata must be >= 1 (got {strata})")
        chosen, groups, weights = _stratified(bank, k, strata, rng, kept)
    elif method == "random":
        chosen = rng.choice(kept, k, replace=False)
        groups, weights = np.full(k, -1), np.full(k, 1.0 / k)
    else:
        raise ValueError(f"unknown selection method {method!r}; choose one of "
                         f"{SELECTION_METHODS}")
    return pd.DataFrame({"weight": weights, "group": groups, "method": method},
                        index=pd.Index(bank.items[chosen], name="item"))
