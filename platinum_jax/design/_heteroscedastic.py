"""A Gaussian fit with one noise level per item, for posterior draws of the primitives.

A Gaussian measurement model with a single noise ``σ`` weighs every score alike.  When items
differ in noise (benchmarks measured with 0.02 and with 0.08 of score noise), that fit is the
wrong likelihood, and it goes wrong in two ways that matter for ``v* = (M + rΣ)⁻¹Mw``:

* its Laplace draws give the slopes and difficulties of noisy items too little spread, and
  those of precise items too much, because the curvature uses the pooled ``σ``;
* a subject's ability is pulled by its noisy scores, and that error lands in the residuals of
  its precise items: their residual variance, hence their ``Σ_ii``, is over-estimated, and their
  optimal weight under-estimated (the bias grows with how few scores each subject has).

:func:`fit_heteroscedastic` fits ``y_si ~ N(μ_si, σ²c_i)`` instead, with a relative noise
variance ``c_i`` per item, by feasible weighted least squares: fit, estimate each item's noise
variance from its residuals (as :func:`item_noise_variance` does, on degrees of freedom that
account for the weights), refit with row weights ``ω_si ∝ 1/Σ_ii`` (normalised to mean 1, so
that the global noise of the Gaussian likelihood is the scale ``σ`` and the weighted loss is the
heteroscedastic likelihood), until the weights settle.  The Laplace draws of the last fit then
have each item's own noise in their curvature.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ._from_fit import _residual_dof

__all__ = ["fit_heteroscedastic"]


def fit_heteroscedastic(model, table, *, method: str = "laplace", draws: int = 2000,
                        seed: int = 0, max_refits: int = 30, tol: float = 0.01,
                        **options):
    """Fit ``model`` with one noise variance per item (weighted least squares, iterated).

    Args:
        model: a measurement model with a Gaussian likelihood whose noise is free
            (``likelihood=Gaussian()``); the noise per item is ``σ²c_i`` with ``c_i`` estimated.
        table: a :class:`platinum_jax.data.ResponseTable` without row weights (the weights are
            what this function sets).
        method: ``"laplace"`` (default; ``draws`` Laplace draws of the last fit) or ``"map"``.
        max_refits: weighted refits at most (each one MAP fit); ``tol``: stop when no item's
            weight would change by more than this share.
        options: passed to :func:`platinum_jax.inference.fit_map` (``restarts``, ...).

    Returns:
        a :class:`platinum_jax.inference.Fit` of the weighted table (its rows carry
        ``ω_si = (1/Σ_ii) / mean(1/Σ)``); its ``diagnostics`` add ``noise_per_item_refits``,
        ``noise_per_item_settled`` (whether the weights settled within ``tol``) and
        ``noise_variance_per_item`` (in the order of the table's items).

    Run in float64 (``jax.config.update("jax_enable_x64", True)``), as for every fit.
    """
    from platinum_jax.inference import Theta, fit_map, laplace

    lik = model.likelihood
    if lik.name != "gaussian" or getattr(lik, "noise", None) is not None:
        raise ValueError(f"fit_heteroscedastic needs a Gaussian likelihood with a free noise "
                         f"(likelihood=Gaussian()); model {model.name!r} has {lik.name} "
                         + ("with its noise held at " + str(lik.noise)
                            if getattr(lik, "noise", None) is not None else ""))
    if table.weight is not None:
        raise ValueError(f"{table.source} already has row weights; fit_heteroscedastic sets "
                         "them (1 / noise variance of the row's item): drop the weight column")
    if method not in ("laplace", "map"):
        raise ValueError(f"method must be 'laplace' or 'map', got {method!r}")
    if not (isinstance(max_refits, int) and max_refits >= 1):
        raise ValueError(f"max_refits must be an integer >= 1, got {max_refits!r}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    current = fit_map(model, table, seed=seed, **options)
    problem = current.problem
    s_idx, i_idx = jnp.asarray(table.subject_index), jnp.asarray(table.item_index)
    # One compiled prediction for every refit (the weights change the fit, not the model).
    predict = jax.jit(lambda S, I, G: problem.predict(Theta(S, I, G), s_idx, i_idx))  # noqa: E741

    def noise_of(fit, omega):
        """Gaussian residual variance per item on its (weighted) residual dof."""
        resid = table.response - np.asarray(predict(*fit.theta))
        dof = _residual_dof(problem, omega)
        return np.bincount(table.item_index, resid**2, minlength=table.n_items) / dof

    weights = np.ones(table.n_items)
    settled, refits = False, 0
    while True:
        noise = noise_of(current, weights[table.item_index])
        tiny = noise <= 1e-12 * np.max(noise)
        if np.any(tiny):
            bad = list(table.items[tiny][:5])
            raise ValueError(f"items {bad} have no residual noise left at the fit (the model "
                             "fits their scores exactly), so their weight 1/noise is unbounded; "
                             "drop them from the data")
        new = 1.0 / noise / np.mean(1.0 / noise[table.item_index])  # rows: mean weight 1
        if np.max(np.abs(new / weights - 1.0)) < tol:
            settled = True  # the current fit's weights are the ones its residuals ask for
            break
        if refits == max_refits:
            break
        weights = new
        current = fit_map(model, dataclasses.replace(table, weight=weights[table.item_index]),
                          seed=seed, theta0=current.theta, **options)
        refits += 1
    info = {"noise_per_item_refits": refits, "noise_per_item_settled": settled,
            # in the order of the table's items
            "noise_variance_per_item": np.round(noise, 12).tolist()}
    current = dataclasses.replace(current, diagnostics={**current.diagnostics, **info})
    if method == "laplace":
        current = laplace(current, draws=draws, seed=seed)
    return current
