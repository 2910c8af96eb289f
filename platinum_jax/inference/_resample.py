"""The nonparametric bootstrap over responses, for any measurement model.

Replicate ``k`` reweights response ``i`` by ``w_i ~ Multinomial(N, 1/N)`` (a resample with
replacement; ``w_i = 0`` leaves the row out) and refits by the engine's MAP solver from the
full-data estimate. The counts come from JAX keys inside the compiled program, so no
``(R, N)`` array of weights is ever held: a block of replicates is one compiled call whose
``lax.map`` works through them ``chunk`` at a time, each chunk a ``vmap`` of solves. Memory
is bounded by ``chunk`` solves and ``block`` results, whatever ``R``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax._distributed import spread
from platinum_jax.models import MeasurementModel

from ._map import _SOLVER_OPTIONS, MAPResult, per_structure, solve_map
from ._point import fit_map
from ._problem import Problem, Theta
from ._results import Fit

__all__ = ["bootstrap", "bootstrap_replicates", "resample_counts"]

_REPLICATE_SOLVERS: dict = {}
_MAX_SOLVERS = 8


def _counts(key, n: int, dtype):
    # Multinomial(N, 1/N) counts as weights: a resample of the rows with static shapes.
    draws = jax.random.randint(key, (n,), 0, n)
    return jnp.zeros((n,), dtype).at[draws].add(1.0)


def _keys(seed: int, replicates: int):
    return jax.random.split(jax.random.PRNGKey(seed), replicates)


def resample_counts(seed: int, replicates: int, n: int) -> np.ndarray:
    """The ``(replicates, n)`` resampling counts that :func:`bootstrap` draws for ``seed``
    (row ``k`` is replicate ``k``'s weight per response; each row sums to ``n``)."""
    keys = _keys(seed, replicates)
    return np.asarray(jax.vmap(lambda k: _counts(k, n, jnp.float64))(keys))


def _replicate_solver(problem: Problem, chunk: int, options: dict):
    """Jitted ``(theta0, data, keys, labels, held) -> MAPResult`` (leading axis: one refit per
    key), kept by problem structure like :func:`~platinum_jax.inference.map_solver`'s solvers.

    Refit ``j`` weights the rows by a bootstrap resample drawn from ``keys[j]`` where
    ``held[j] < 0``, and otherwise leaves out the rows whose fold label (``labels``, one per
    row) is ``held[j]``: the bootstrap and cross-validation run one compiled program, so a
    session that does both with the same number of refits per call compiles it once."""
    def build(bare):
        solve = functools.partial(solve_map, bare, **options)

        def run(theta0, data, keys, labels, held):
            n = data.weight.shape[0]
            dtype = data.weight.dtype

            def one(k, h):
                w = jnp.where(h < 0, _counts(k, n, dtype), (labels != h).astype(dtype))
                return solve(theta0, dataclasses.replace(data, weight=w * data.weight))

            # lax.map over chunks of a vmap (refits padded to whole chunks, the padding
            # dropped); spelled out because lax.map's own batch_size cannot reshape a block of
            # size 0 (a model with no globals).
            m = keys.shape[0]
            n_chunks = -(-m // chunk)
            pad = n_chunks * chunk - m
            padded = (jnp.concatenate([keys, keys[:pad]]).reshape((n_chunks, chunk)
                                                                  + keys.shape[1:]),
                      jnp.concatenate([held, held[:pad]]).reshape((n_chunks, chunk)))
            out = jax.lax.map(lambda kh: jax.vmap(one)(*kh), padded)
            return jax.tree_util.tree_map(
                lambda a: a.reshape((n_chunks * chunk,) + a.shape[2:])[:m], out)

        return jax.jit(run)

    return per_structure(_REPLICATE_SOLVERS, problem, ("bootstrap", chunk), build,
                         options=options)


def fold_refits(problem: Problem, theta0: Theta, data, labels: np.ndarray, folds: int,
                chunk: int, options: dict) -> MAPResult:
    """Fold ``k``'s refit (rows labelled ``k`` at weight 0) for ``k < folds``, from
    ``theta0``, by the bootstrap's compiled program: the folds padded to whole ``chunk``s
    (repeats of the first, dropped), ``chunk`` vmapped refits at a time."""
    m = -(-folds // chunk) * chunk
    held = np.zeros(m, np.int32)
    held[:folds] = np.arange(folds)
    res = _replicate_solver(problem, chunk, options)(
        theta0, data, _keys(0, m), np.asarray(labels, np.int32), held)
    # host arrays: slicing device arrays would dispatch (and compile) one program per leaf
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[:folds], res)


def bootstrap_replicates(
    fit: Fit,
    replicates: int,
    *,
    seed: int = 0,
    chunk: int = 8,
    block: int = 256,
    progress: bool = False,
    **solver_options,
) -> MAPResult:
    """Every bootstrap refit of a MAP ``fit``, converged or not: a :class:`MAPResult` whose
    leaves have a leading axis of ``replicates`` (host arrays).

    A Python loop over blocks of ``block`` replicates (the last one padded with repeats, then
    dropped) calls one compiled function per block; inside it ``lax.map`` runs ``chunk``
    vmapped refits at a time. Every block has the same shapes, so it compiles once. A vmapped
    batch of iterative solves runs until its slowest member stops, so small chunks suit a CPU
    and larger ones a GPU. ``solver_options`` go to :func:`solve_map` (``max_steps``,
    tolerances, ``curvature``); ``progress`` shows a bar over blocks. After
    ``jax.distributed.initialize()`` each process refits its share of the blocks and every
    process returns all the replicates.
    """
    if replicates < 2:
        raise ValueError(f"replicates must be at least 2 (got {replicates})")
    if chunk < 1 or block < 1:
        raise ValueError(f"chunk and block must be positive (got chunk={chunk}, "
                         f"block={block})")
    unknown = sorted(set(solver_options) - _SOLVER_OPTIONS)
    if unknown:
        raise TypeError(f"unknown solver option(s) {unknown}; the bootstrap's refits take "
                        f"{sorted(_SOLVER_OPTIONS)} as keywords")
    problem = fit.problem
    block = min(block, replicates)
    chunk = min(chunk, block)
    from platinum_jax._memory import bootstrap_bytes, check_memory

    check_memory(bootstrap_bytes(problem, replicates=replicates, chunk=chunk),
                 f"the bootstrap ({replicates} refits, {chunk} at a time) of "
                 f"{problem.table.n_responses:,} responses",
                 "lower chunk (refits run at once) or the replicates, or use a machine with "
                 "more memory")
    solve = _replicate_solver(problem, chunk, solver_options)
    start = Theta(*(jnp.asarray(t, problem.dtype) for t in fit.theta))
    data = problem.data()
    keys = _keys(seed, replicates)
    n_blocks = -(-replicates // block)
    pad = n_blocks * block - replicates
    if pad:  # repeats, so every block has the compiled shape; dropped below
        keys = jnp.concatenate([keys, keys[:pad]])
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_blocks, desc=f"bootstrap ({replicates} refits)", unit="block")
    labels, held = np.zeros(data.weight.shape, np.int32), np.full((block,), -1, np.int32)
    # In a multi-process run (jax.distributed) each process refits its share of the blocks.
    outs = spread(lambda k: jax.tree_util.tree_map(
        np.asarray, solve(start, data, keys[k * block:(k + 1) * block], labels, held)),
        n_blocks, progress=None if bar is None else lambda done, n: bar.update(done - bar.n))
    if bar is not None:
        bar.close()
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:replicates], *outs)


def bootstrap(
    model: MeasurementModel | Fit,
    table=None,
    *,
    replicates: int = 200,
    seed: int = 0,
    chunk: int = 8,
    block: int = 256,
    progress: bool = False,
    **solver_options,
) -> Fit:
    """Nonparametric bootstrap over responses: each replicate refits with multinomial row
    weights from the full-data MAP (:func:`bootstrap_replicates`: compiled blocks of ``block``
    replicates, ``chunk`` vmapped refits at a time). Replicates that do not converge are left
    out of the draws and intervals, and their count is reported (``diagnostics``).

    ``model`` may be a MAP :class:`Fit` (its data are used) or a model with ``table``.
    """
    if "batch_size" in solver_options:
        raise TypeError("bootstrap: batch_size is now chunk (refits vmapped together); "
                        "block sets how many replicates one compiled call runs")
    base = model if isinstance(model, Fit) else fit_map(model, table, **solver_options)
    res = bootstrap_replicates(base, replicates, seed=seed, chunk=chunk, block=block,
                               progress=progress, **solver_options)
    ok = np.asarray(res.converged)
    if not ok.any():
        raise ValueError("no bootstrap replicate converged; check the full-data fit first, or "
                         "raise max_steps")
    draws = Theta(*(np.asarray(t)[ok] for t in res.theta))
    return dataclasses.replace(
        base, method="bootstrap", draws=draws, raw_sd=None,
        diagnostics={**base.diagnostics, "replicates": replicates,
                     "replicates_converged": int(ok.sum())},
    )
