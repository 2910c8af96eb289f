"""Synthetic worlds drawn from any measurement model: known truth for tests and benchmarks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.models import Hierarchical, MeasurementModel

from ._problem import Problem, Theta

__all__ = ["simulate"]


def simulate(
    model: MeasurementModel,
    n_subjects: int,
    n_items: int,
    *,
    seed: int = 0,
    density: float = 1.0,
    trials: int | None = None,
) -> tuple[ResponseTable, Theta]:
    """Draw parameters from the model's priors and responses from its likelihood.

    Subjects are named ``s0, s1, ...`` and items ``i0, i1, ...``, zero-padded to a common
    width (with 10 to 99 items, a Rosetta anchor on ``"i00"``). ``density`` is the share of (subject, item) cells observed, drawn at random
    while every subject and item keeps at least one response. Fixed entries of the model's
    identification take their fixed values; point-fit-only parameters keep their start.
    Returns the table and the true raw parameter blocks.
    """
    if not 0 < density <= 1:
        raise ValueError(f"density must lie in (0, 1] (got {density})")
    rng = np.random.default_rng(seed)
    cells = np.argwhere(np.ones((n_subjects, n_items), bool))
    keep = rng.random(len(cells)) < density
    keep[np.arange(n_subjects) * n_items + rng.integers(0, n_items, n_subjects)] = True
    keep[rng.integers(0, n_subjects, n_items) * n_items + np.arange(n_items)] = True
    s_idx, i_idx = cells[keep, 0], cells[keep, 1]
    n_trials = None if trials is None else np.full(len(s_idx), float(trials))
    # A placeholder table gives the problem its sizes and identification.
    placeholder = ResponseTable.from_arrays(s_idx, i_idx, np.full(len(s_idx), 0.5),
                                            trials=n_trials)
    problem = Problem(model, placeholder, validate=False)
    n = None if n_trials is None else jnp.asarray(n_trials, problem.dtype)
    # One compiled program draws the parameters and the responses (op by op, each operation
    # would compile a program of its own).
    truth, y = jax.jit(lambda key, data, n: _draw(problem, key, data, n))(
        jax.random.PRNGKey(seed), problem.data(), n)
    y = np.asarray(y, dtype=np.float64)
    table = ResponseTable.from_arrays(s_idx, i_idx, y, trials=n_trials, name="a simulated world")
    return table, Theta(*(np.asarray(b) for b in truth))


def _draw(problem: Problem, key, data, n):
    """Parameters from the priors (free entries only), then responses from the likelihood;
    the keys are split in the order of the blocks (subjects, items, globals), their parameters,
    hierarchical parameters after the globals they read, and the responses last."""
    d = problem.dtype
    blocks, later = [], []
    for k, (block, init, free, lead) in enumerate((
            (problem.subject, problem.init_S, problem.free_S, problem.table.n_subjects),
            (problem.item, problem.init_I, problem.free_I, problem.table.n_items),
            (problem.glob, problem.init_G, problem.free_G, None))):
        out = jnp.asarray(init, d)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            if p.prior is None or p.map_only:
                continue
            size = (b - a,) if lead is None else (lead, b - a)
            if isinstance(p.prior, Hierarchical):  # needs the globals: drawn after them
                later.append((k, a, b, size, free, p.prior))
                continue
            key, sub = jax.random.split(key)
            draw = jnp.asarray(p.prior.sample(sub, size), d)
            out = out.at[..., a:b].set(jnp.where(free[..., a:b], draw, out[..., a:b]))
        blocks.append(out)
    if later:
        glob = problem.glob.natural(problem.glob.unflatten(blocks[2]))
        for k, a, b, size, free, prior in later:
            key, sub = jax.random.split(key)
            draw = glob[prior.loc] + glob[prior.scale] * jax.random.normal(sub, size, d)
            blocks[k] = blocks[k].at[..., a:b].set(
                jnp.where(free[..., a:b], draw, blocks[k][..., a:b]))
    truth = Theta(*blocks)
    mu = problem.predict(truth, data.subject_index, data.item_index)
    if problem.lik_item_names:  # per-item likelihood parameters (a noise per benchmark)
        lik = problem.likelihood_rows(truth, data)
    else:
        _, lik = problem.split_globals(truth.globals)
    _, sub = jax.random.split(key)
    return truth, problem.model.likelihood.sample(sub, mu, n, lik)
