"""Item diagnostics a benchmark designer reads, for any fitted measurement model.

* **fit of each item**: infit and outfit mean squares. With ``E_si`` and ``V_si`` the model's
  mean and variance of response ``y_si`` (:meth:`Likelihood.moments`) and
  ``z_si = (y_si - E_si) / sqrt(V_si)``::

      outfit_i = mean_s z_si^2                          (unweighted: sensitive to outliers)
      infit_i  = sum_s (y_si - E_si)^2 / sum_s V_si     (information-weighted)

  Both are near 1 for an item that behaves as the model says; well above 1 (say > 1.3) the
  item is noisier than its curve (ambiguous, mislabelled, or measuring something else); well
  below 1 it is more predictable than the model expects (redundant with the rest).
* **saturated items**: ``solved_by_all`` (every response at the top of the scale) and
  ``solved_by_none`` (every response at the bottom). They carry no information about the
  subjects who answered them, and their parameters rest on the prior.
* **information**: the Fisher information of one response about the ability,
  ``I_i(theta) = E[(d/dtheta log p(y | theta))^2]``: ``mu'(theta)^2 / Var`` for a scalar mean
  (exact for Bernoulli and Gaussian responses, per attempt for binomial ones, the
  quasi-likelihood value for Beta) and ``sum_k p_k'(theta)^2 / p_k`` for categories. The
  test information is the sum over items; ``1 / sqrt(test information)`` is the standard
  error of an ability estimate at ``theta``.
* **item characteristic curves**: the expected response against ability
  (:func:`item_curves`, :func:`plot_item_curves`).

Information and curves need one scalar ability per subject (every built-in model but the
multidimensional one); infit, outfit and saturation work for every model.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax._programs import kept_program

from ._likelihoods import Bernoulli, Beta, BetaBinomial, Binomial, Categorical, Gaussian

__all__ = ["item_diagnostics", "item_curves", "item_information", "plot_item_curves"]

DEFAULT_GRID = np.linspace(-4.0, 4.0, 81)

# Compiled programs kept by model structure (the model, the data sizes, the float type): the
# fitted parameters are their arguments, not constants baked into them, so the diagnostics of a
# refit, a bootstrap replicate or a second table of the same sizes reuse the program (and a
# persistent compilation cache finds it across processes). The oldest goes past the limit.
_PROGRAMS: dict = {}
_MAX_PROGRAMS = 32


def _program(tag: str, prob, build):
    """``build(bare)`` compiled once per ``(tag, model structure)`` (the model, the data sizes,
    the float type and which entries are free); ``bare`` is ``prob`` without its table, so a
    kept program holds no table alive. A model that cannot be hashed (array fields) gets a
    fresh program each time."""
    try:
        fixed = tuple(np.asarray(m).tobytes() for m in (prob.free_S, prob.free_I, prob.free_G))
        key = (tag, type(prob.model), prob.model, prob.info, str(prob.dtype), fixed)
        hash(key)
    except TypeError:
        key = None
    return kept_program(_PROGRAMS, key, prob, build, limit=_MAX_PROGRAMS)


def _problem_theta(fit):
    prob = fit.problem
    theta = type(fit.theta)(*(jnp.asarray(t, prob.dtype) for t in fit.theta))
    return prob, theta


def _scale(likelihood):
    """(bottom, top) of the response scale, or None where the family has no edges."""
    if isinstance(likelihood, Categorical):
        return 0.0, float(likelihood.categories - 1)
    if isinstance(likelihood, (Bernoulli, Binomial, Beta, BetaBinomial)):
        return 0.0, 1.0
    return None


def item_diagnostics(fit, grid=None) -> pd.DataFrame:
    """One row per item: ``n_responses``, ``mean_response``, ``expected_response``,
    ``infit``, ``outfit``, ``solved_by_all``, ``solved_by_none`` and, for models with one
    ability per subject, ``max_information`` and ``ability_at_max_information`` over ``grid``
    (default -4..4).

    Args:
        fit: a :class:`~platinum_jax.inference.Fit` (its point estimate is used).
    """
    prob, theta = _problem_theta(fit)
    t = fit.table
    trials = None if t.trials is None else jnp.asarray(t.trials, prob.dtype)
    moments = _program("moments", prob, lambda bare: jax.jit(bare.moments))
    mean, var = moments(theta, jnp.asarray(t.subject_index), jnp.asarray(t.item_index), trials)
    mean, var = np.asarray(mean), np.asarray(var)
    y = np.asarray(t.response)
    n_i = t.n_items
    count = np.bincount(t.item_index, minlength=n_i).astype(float)
    sq = (y - mean) ** 2
    out = pd.DataFrame(index=t.items)
    out["n_responses"] = count.astype(int)
    out["mean_response"] = np.bincount(t.item_index, y, minlength=n_i) / count
    out["expected_response"] = np.bincount(t.item_index, mean, minlength=n_i) / count
    out["infit"] = (np.bincount(t.item_index, sq, minlength=n_i)
                    / np.bincount(t.item_index, var, minlength=n_i))
    out["outfit"] = np.bincount(t.item_index, sq / var, minlength=n_i) / count
    edges = _scale(fit.model.likelihood)
    if edges is None:
        out["solved_by_all"] = pd.array([pd.NA] * n_i, dtype="boolean")
        out["solved_by_none"] = pd.array([pd.NA] * n_i, dtype="boolean")
    else:
        lo, hi = edges
        out["solved_by_all"] = np.bincount(t.item_index, y == hi, minlength=n_i) == count
        out["solved_by_none"] = np.bincount(t.item_index, y == lo, minlength=n_i) == count
    if t.groups is not None:
        out.insert(0, "group", np.asarray(t.groups)[t.item_group])
    if _scalar_ability(prob) is None:
        info = item_information(fit, grid)
        best = info.drop(columns="test").to_numpy()
        out["max_information"] = best.max(axis=0)
        out["ability_at_max_information"] = info.index.to_numpy()[best.argmax(axis=0)]
    return out


def _scalar_ability(prob) -> str | None:
    """None when the model has one untransformed scalar ability per subject, else why not."""
    decl = prob.subject.decl
    if len(decl) != 1 or decl[0][1].shape != () or decl[0][1].transform is not None:
        return (f"model {prob.model.name!r} does not have one scalar ability per subject; item "
                "curves and information need one (fit a one-dimensional model)")
    return None


def _mean_at(prob, ability, items, glob):
    """The mean output of every item ``(n_items, ...)`` at one ``ability``."""
    s_row = jnp.reshape(ability, (1,))
    return jax.vmap(lambda i_row: prob.mean(s_row, i_row, glob))(items)


def _grid(grid):
    g = DEFAULT_GRID if grid is None else np.asarray(grid, dtype=np.float64)
    if g.ndim != 1 or g.size < 2 or not np.isfinite(g).all():
        raise ValueError("grid must be a 1-D array of at least two finite abilities")
    return g


def _build_curves(prob):
    """``(grid, items, globals) -> expected response (n_grid, n_items)``, compiled."""
    lik_model = prob.model.likelihood

    def expected(a, items, glob):
        _, lik = prob.split_globals(glob)
        return lik_model.moments(_mean_at(prob, a, items, glob), None, lik)[0]

    return jax.jit(jax.vmap(expected, in_axes=(0, None, None)))


def _on_grid(fit, grid, name, build):
    """``(grid, values (n_grid, n_items))``: the compiled per-item program ``name`` (built by
    ``build``) at every ability of ``grid``, at the fit's point estimate."""
    prob, theta = _problem_theta(fit)
    g = _grid(grid)
    why = _scalar_ability(prob)
    if why is not None:
        raise ValueError(why)
    program = _program(name, prob, build)
    return g, np.asarray(program(jnp.asarray(g, prob.dtype), theta.items, theta.globals))


def item_curves(fit, grid=None) -> pd.DataFrame:
    """Item characteristic curves: the expected response of every item (columns) at every
    ability of ``grid`` (rows, default -4..4), at the fit's point estimate."""
    g, expected = _on_grid(fit, grid, "curves", _build_curves)
    return pd.DataFrame(expected, index=pd.Index(g, name="ability"), columns=fit.table.items)


def _build_information(prob):
    """``(grid, items, globals) -> information (n_grid, n_items)``, compiled."""
    lik_model = prob.model.likelihood
    tiny = jnp.finfo(prob.dtype).tiny

    def at(a, items, glob):
        _, lik = prob.split_globals(glob)
        mu = _mean_at(prob, a, items, glob)
        d = jax.jacfwd(lambda x: _mean_at(prob, x, items, glob))(a)
        if isinstance(lik_model, Categorical):  # mu = log p: sum_k p_k'^2 / p_k = sum p (log p)'^2
            return jnp.sum(jnp.exp(mu) * d**2, axis=-1)
        if isinstance(lik_model, Gaussian) or mu.ndim == 1:
            _, var = lik_model.moments(mu, None, lik)
            return d**2 / jnp.maximum(var, tiny)
        raise ValueError(f"information is not defined for likelihood {lik_model.name!r}")

    return jax.jit(jax.vmap(at, in_axes=(0, None, None)))


def item_information(fit, grid=None) -> pd.DataFrame:
    """Fisher information of one response to every item (columns) about the ability, at every
    ability of ``grid`` (rows), plus the column ``test`` (their sum over items)."""
    g, info = _on_grid(fit, grid, "information", _build_information)
    out = pd.DataFrame(info, index=pd.Index(g, name="ability"), columns=fit.table.items)
    out["test"] = info.sum(axis=1)
    return out


def plot_item_curves(fit, path, *, items=None, grid=None, max_items: int = 12) -> Path:
    """Item characteristic curves (left) and test information (right) as a PNG at ``path``.

    ``items``: labels to draw (default: up to ``max_items`` spread over the range of expected
    difficulty, i.e. of the mean expected response). Written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from platinum_jax._outputs import atomic_write

    curves = item_curves(fit, grid)
    info = item_information(fit, grid)
    if items is None:
        order = curves.mean(axis=0).sort_values().index
        pick = np.unique(np.linspace(0, len(order) - 1, min(max_items, len(order))).round()
                         .astype(int))
        items = list(order[pick])
    else:
        unknown = [i for i in items if i not in curves.columns]
        if unknown:
            raise ValueError(f"unknown item(s) {unknown[:5]}; name items of the fit")
    fig, (ax_c, ax_i) = plt.subplots(1, 2, figsize=(11, 4.2))
    for item in items:
        ax_c.plot(curves.index, curves[item], label=str(item), lw=1.2)
    ax_c.set_xlabel("ability theta")
    ax_c.set_ylabel("expected response")
    ax_c.set_title(f"Item characteristic curves ({fit.model.name})")
    ax_c.legend(fontsize=6, ncol=2, loc="upper left")
    ax_i.plot(info.index, info["test"], color="black")
    ax_i.set_xlabel("ability theta")
    ax_i.set_ylabel("test information")
    ax_i.set_title(f"Test information ({len(curves.columns)} items)")
    fig.tight_layout()

    def save(p):
        fig.savefig(p, dpi=120, format="png")

    try:
        return atomic_write(path, save)
    finally:
        plt.close(fig)
