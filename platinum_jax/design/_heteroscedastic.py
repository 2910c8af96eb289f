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
variance from its residuals (:func:`item_noise_variance`, on degrees of freedom that account for
the weights), refit with row weights ``ω_si ∝ 1/Σ_ii`` (normalised to mean 1, so that the global
``σ`` of the Gaussian likelihood is the scale ``σ²`` and the weighted loss is the
heteroscedastic likelihood), until the weights settle.  The Laplace draws of the last fit then
have each item's own noise in their curvature.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._from_fit import item_noise_variance

__all__ = ["fit_heteroscedastic"]


def fit_heteroscedastic(model, table, *, method: str = "laplace", draws: int = 1000,
                        seed: int = 0, max_iterations: int = 10, tol: float = 0.01,
                        **options):
    """Fit ``model`` with one noise variance per item (weighted least squares, iterated).

    Args:
        model: a measurement model with a Gaussian likelihood whose noise is free
            (``likelihood=Gaussian()``); the noise per item is ``σ²c_i`` with ``c_i`` estimated.
        table: a :class:`platinum_jax.data.ResponseTable` without row weights (the weights are
            what this function sets).
        method: ``"laplace"`` (default; ``draws`` Laplace draws of the last fit) or ``"map"``.
        max_iterations: refits at most (each one MAP fit); ``tol``: stop when no item's weight
            changes by more than this share between two fits.
        options: passed to :func:`platinum_jax.inference.fit_map` (``restarts``, ...).

    Returns:
        a :class:`platinum_jax.inference.Fit` of the weighted table (its rows carry
        ``ω_si = (1/Σ_ii) / mean(1/Σ)``); ``diagnostics["noise_per_item"]`` holds the iterations,
        whether the weights settled, and each item's noise variance.

    Run in float64 (``jax.config.update("jax_enable_x64", True)``), as for every fit.
    """
    from platinum_jax.inference import fit_map, laplace

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
    if not (isinstance(max_iterations, int) and max_iterations >= 1):
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    current = fit_map(model, table, seed=seed, **options)
    weights = np.ones(table.n_items)
    settled = False
    iterations = 0
    for step in range(1, max_iterations + 1):
        iterations = step
        noise = item_noise_variance(current).to_numpy()
        tiny = noise <= 1e-12 * np.max(noise)
        if np.any(tiny):
            bad = list(table.items[tiny][:5])
            raise ValueError(f"items {bad} have no residual noise left at the fit (the model "
                             "fits their scores exactly), so their weight 1/noise is unbounded; "
                             "drop them from the data")
        row = 1.0 / noise[table.item_index]
        new = 1.0 / noise / np.mean(row)  # per item, rows normalised to mean 1
        if np.max(np.abs(new / weights - 1.0)) < tol:
            settled = True  # the current fit's weights are the ones its residuals ask for
            break
        weights = new
        current = fit_map(model, dataclasses.replace(table, weight=weights[table.item_index]),
                          seed=seed, theta0=current.theta, **options)
    noise = item_noise_variance(current)
    info = {"iterations": iterations, "settled": settled, "tol": tol,
            "noise_variance": {k: float(v) for k, v in noise.items()}}
    current = dataclasses.replace(current, diagnostics={**current.diagnostics,
                                                        "noise_per_item": info})
    if method == "laplace":
        current = laplace(current, draws=draws, seed=seed)
    return current
