"""Primitives per bootstrap replicate that resamples subjects (AI models), refitting everything.

Laplace draws around one weighted fit (:func:`fit_heteroscedastic`) hold each item's noise
variance and the correlated residual part fixed at their point estimates, up to the scaled
inverse chi-square and factor-loading draws of :func:`primitives_from_fit`.  With ~35 scores per
benchmark, those estimates are uncertain in ways the parametric draws miss (a subject's shared
shock moves several residuals at once, and the weights of the fit depend on the noise
estimates), and the 90% intervals of ``v*`` under-cover.

:func:`bootstrap_subjects` resamples the subjects with replacement instead: replicate ``b``
gives subject ``s`` a multinomial count ``c_s`` (``Σ_s c_s = S``), used as a row weight, so the
shapes stay fixed and all replicates are fitted by one vmapped solver.  Within each replicate
the whole estimator is re-run on the resampled subjects:

1. the fit with per-item noise weights ``ω_sb ∝ 1/σ̂_b²`` (``reweights`` rounds of fit, noise
   estimate, refit), the noise of each item on residual degrees of freedom that count each
   copy of a subject as its own subject;
2. the residual factor (rank held at what BIC chose on the full data) on the residuals with
   the resampled subjects expanded into copies;
3. the loadings ``A`` (average over the resampled subjects of ``∂μ_b/∂θ``) and
   ``Σ = diag(d) + FFᵀ`` from them.

Subjects are the unit resampled because a subject's scores share its ability and its shock;
resampling rows would break that dependence.  The resulting draws go through
:func:`posterior_decisions` as any other.  The same vmapped solver also runs the full-data
estimator (all counts 1) and a grouped jackknife (each group of subjects given count 0), which
the draws carry as ``estimate`` and ``jackknife``: :func:`posterior_decisions` then reads BCa
intervals (:func:`bca_interval`) instead of percentile ones, correcting the median bias of the
re-estimated weights that percentile intervals keep.
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ._from_fit import _COUNT_FAMILIES, _cost_matrix, _residual_factor
from ._posterior import PrimitiveDraws

__all__ = ["bootstrap_subjects"]


def _dof(problem, counts, omega):
    """Residual dof per item and replicate, (R, m), each copy of a subject its own subject.

    ``counts`` (R, n) are the rows' subject counts, ``omega`` (R, n) their noise weights: an
    item's ``Σ_s c_s`` responses, less its own parameters, less ``Σ_s c_s p_s ω_sb/Σ_b' ω_sb'``
    (the share of each copy's subject parameters its row carries; as ``_residual_dof``)."""
    t = problem.table
    m, S = t.n_items, t.n_subjects
    p_s = problem.free_S.sum(axis=1)[t.subject_index]
    p_i = problem.free_I.sum(axis=1)
    out = np.empty((counts.shape[0], m))
    for r in range(counts.shape[0]):
        per_subject = np.bincount(t.subject_index, omega[r], minlength=S)
        share = omega[r] / np.maximum(per_subject[t.subject_index], np.finfo(float).tiny)
        out[r] = (np.bincount(t.item_index, counts[r], minlength=m) - p_i
                  - np.bincount(t.item_index, counts[r] * p_s * share, minlength=m))
    return out


def bootstrap_subjects(
    model,
    table,
    w: np.ndarray | None = None,
    *,
    replicates: int = 200,
    reweights: int = 3,
    residual_rank: int | str = "auto",
    cost=None,
    seed: int = 0,
    batch_size: int = 50,
    jackknife_groups: int | None = 20,
    **options,
) -> PrimitiveDraws:
    """Primitives per replicate of a bootstrap over subjects that re-estimates everything.

    Args:
        model: a measurement model with a Gaussian likelihood whose noise is free (as for
            :func:`fit_heteroscedastic`, which gives the full-data fit).
        table: a :class:`platinum_jax.data.ResponseTable` without row weights.
        w: welfare weights (m,) (default uniform).
        replicates: bootstrap replicates (each one set of primitives).
        reweights: rounds of (noise estimate, weighted refit) inside each replicate, after a
            first refit with the full-data noise weights.
        residual_rank: rank of the correlated residual factor; ``"auto"`` takes the rank BIC
            chooses on the full data's residuals and holds it in every replicate.
        cost: as :func:`primitives_from_fit` (default identity).
        jackknife_groups: subjects are split at random into this many groups and the
            estimator re-run with each group left out, for the acceleration of the BCa
            intervals (``min(groups, S)`` extra fits); ``None`` or ``0`` skips it (BC intervals,
            acceleration 0).
        options: passed to :func:`fit_heteroscedastic` (and its MAP fits).

    Returns:
        :class:`PrimitiveDraws` with one draw per replicate whose refit converged (its notes
        say how many did), carrying the full-data ``estimate`` and the ``jackknife`` draws.  Run in float64 (``jax.config.update("jax_enable_x64", True)``).
    """
    from platinum_jax.inference import Theta, map_solver

    from ._heteroscedastic import fit_heteroscedastic

    if not (isinstance(replicates, int) and replicates >= 2):
        raise ValueError(f"replicates must be an integer >= 2, got {replicates!r}")
    if not (isinstance(reweights, int) and reweights >= 0):
        raise ValueError(f"reweights must be an integer >= 0, got {reweights!r}")
    if model.likelihood.name in _COUNT_FAMILIES:
        raise ValueError(f"bootstrap_subjects needs a Gaussian likelihood with a free noise; "
                         f"model {model.name!r} has {model.likelihood.name}: use "
                         "primitives_from_fit on its Laplace or bootstrap fit")
    base = fit_heteroscedastic(model, table, method="map", seed=seed, **options)
    problem = base.problem
    t = problem.table
    m, S, n = t.n_items, t.n_subjects, t.n_responses
    s_idx, i_idx = t.subject_index, t.item_index
    items = tuple(map(str, t.items))
    abilities = tuple(label for _, label in problem.subject.columns())
    C = _cost_matrix(cost, abilities)
    w_note = "uniform over items (no target given)" if w is None else "given"
    w = np.full(m, 1.0 / m) if w is None else np.asarray(w, np.float64)
    if w.shape != (m,):
        raise ValueError(f"w must have one weight per item ({m}), got shape {w.shape}")

    jdata = problem.data()
    y = np.asarray(t.response)
    predict = jax.jit(jax.vmap(lambda S_, I_, G_: problem.predict(
        Theta(S_, I_, G_), jnp.asarray(s_idx), jnp.asarray(i_idx))))

    def grad_mean(s_row, i_row, g):
        return jax.grad(lambda s: problem.mean(s, i_row, g))(s_row)

    # Average loading over the resampled subjects: (m, S, K) per replicate, weighted by counts.
    loadings = jax.jit(jax.vmap(lambda S_, I_, G_, c: jnp.einsum(
        "bsk,s->bk", jax.vmap(lambda i_row: jax.vmap(
            lambda s_row: grad_mean(s_row, i_row, G_))(S_))(I_), c) / jnp.sum(c)))
    solve = map_solver(problem, batched="data")
    start = Theta(*(jnp.asarray(x, problem.dtype) for x in base.theta))

    # Full-data rank of the residual factor (BIC), then held fixed.
    resid0 = y - np.asarray(predict(*(jnp.asarray(x)[None] for x in base.theta)))[0]
    _, _, rank = _residual_factor(resid0, t, residual_rank)

    if jackknife_groups is None:
        jackknife_groups = 0
    if not (isinstance(jackknife_groups, int) and (jackknife_groups == 0
                                                   or jackknife_groups >= 2)):
        raise ValueError(f"jackknife_groups must be None, 0 or an integer >= 2, got "
                         f"{jackknife_groups!r}")
    rng = np.random.default_rng(seed)
    sub_counts = rng.multinomial(S, np.full(S, 1.0 / S), size=replicates).astype(np.float64)
    # Extra rows through the same solver: the full-data estimator, then the jackknife.
    G = min(jackknife_groups, S)
    extra = [np.ones((1, S))]
    if G:
        group = rng.permutation(np.arange(S) % G)
        extra.append((group[None, :] != np.arange(G)[:, None]).astype(np.float64))
    sub_counts = np.concatenate([sub_counts, *extra])
    n_rows = sub_counts.shape[0]
    counts = sub_counts[:, s_idx]  # (R, n)
    omega0 = np.asarray(t.weight)  # the full-data fit's noise weights, 1/σ̂_b² (mean 1)
    omega = np.broadcast_to(omega0, (n_rows, n)).copy()

    def fit_all(omega):
        out = []
        for k in range(0, n_rows, batch_size):
            wts = jnp.asarray(counts[k:k + batch_size] * omega[k:k + batch_size])
            out.append(solve(start, dataclasses.replace(jdata, weight=wts)))
        return jax.tree_util.tree_map(lambda *a: np.concatenate(a), *out)

    def noise(res, omega):
        resid = y[None] - np.asarray(predict(*(jnp.asarray(x) for x in res.theta)))
        ss = np.stack([np.bincount(i_idx, counts[r] * resid[r] ** 2, minlength=m)
                       for r in range(n_rows)])
        return ss / _dof(problem, counts, omega), resid

    res = fit_all(omega)
    # A replicate (or jackknife group) that leaves an item with no residual dof has no noise
    # estimate for it: it counts as failed, like a refit that did not converge.
    failed = np.zeros(n_rows, bool)
    for _ in range(reweights):
        var, _ = noise(res, omega)
        failed |= ~np.all(var > 0, axis=1)
        var = np.where(failed[:, None], 1.0, var)
        inv = 1.0 / var
        omega = inv[:, i_idx] / (np.sum(counts * inv[:, i_idx], axis=1, keepdims=True)
                                 / counts.sum(axis=1, keepdims=True))
        res = fit_all(omega)
    var, resid = noise(res, omega)
    ok = np.asarray(res.converged) & np.all(var > 0, axis=1) & ~failed
    estimate_converged = bool(ok[replicates])
    if not np.all(var[replicates] > 0) or failed[replicates]:
        raise ValueError("the refit of the full data (all subject counts 1) left an item "
                         "without residual noise; drop items with very few scores")
    if not estimate_converged:
        # It starts at the converged full-data fit, so it is close; it is used and reported.
        warnings.warn("the refit of the full data (the centre of the BCa intervals) did not "
                      "meet the solver's convergence test; it is used as it stands (see "
                      "notes['estimate_converged'])", stacklevel=2)
    # Jackknife groups whose refit did not converge are left out of the acceleration (as
    # failed replicates are left out of the bootstrap); the notes count them.
    jack_ok = replicates + 1 + np.flatnonzero(ok[replicates + 1:])
    if G and len(jack_ok) < 2:
        raise ValueError("fewer than 2 jackknife refits converged; pass jackknife_groups=0 "
                         "for bias-corrected intervals without the acceleration")
    ok = ok[:replicates]
    if ok.sum() < 2:
        raise ValueError("fewer than 2 bootstrap replicates converged; check the full-data fit")
    if ok.sum() < 0.9 * replicates:
        counts_per_item = np.bincount(i_idx, minlength=m)
        fewest = int(np.argmin(counts_per_item))
        warnings.warn(
            f"only {int(ok.sum())} of {replicates} bootstrap replicates converged; the intervals "
            "are read from those, which are not a random sample of the replicates. Items with "
            f"few scores are the usual cause (fewest: {items[fewest]!r} with "
            f"{int(counts_per_item[fewest])}): resampling the subjects leaves them with too few "
            "distinct ones to estimate their noise. Prefer the fit's Laplace draws here, or drop "
            "such items", RuntimeWarning, stacklevel=2)

    A = np.asarray(loadings(*(jnp.asarray(x) for x in res.theta), jnp.asarray(sub_counts)))
    d = np.empty((n_rows, m))
    F = np.zeros((n_rows, m, rank))
    for r in [*np.flatnonzero(ok), replicates, *jack_ok]:
        if rank:
            # Expand each resampled subject into its copies: the factor analysis sees the
            # bootstrap sample as it would see a data set of those subjects.
            rows = np.repeat(np.arange(n), sub_counts[r, s_idx].astype(int))
            copy_id = np.repeat(np.arange(S), sub_counts[r].astype(int))
            first = np.concatenate([[0], np.cumsum(sub_counts[r].astype(int))[:-1]])
            occ = np.concatenate([np.arange(c) for c in sub_counts[r, s_idx].astype(int)])
            new_s = first[s_idx[rows]] + occ
            sub_table = _Rows(new_s, i_idx[rows], len(copy_id), m)
            F_unit, unique, _ = _residual_factor(resid[r, rows], sub_table, rank)
        else:
            F_unit, unique = np.zeros((m, 0)), np.ones(m)
        d[r] = var[r] * unique
        F[r] = np.sqrt(var[r])[:, None] * F_unit
    keep = np.flatnonzero(ok)
    notes = {
        "loadings": "A_ik = d mu_i / d theta_k averaged over each replicate's resampled subjects",
        "cost": "identity in the fitted ability scale" if cost is None else "given",
        "noise": "diag(unique residual variance)"
        + (f" + rank-{rank} residual correlation across items" if rank
           else "; diagonal because residual_rank=0 was asked" if residual_rank == 0
           else "; diagonal because BIC found no correlated residual across items"),
        "residual_rank": rank,
        "uncertainty": f"bootstrap over subjects ({replicates} replicates, multinomial counts "
                       f"as row weights), refitting per replicate with per-item noise weights "
                       f"({reweights} reweighting rounds), the noise variances and the residual "
                       "factor (rank fixed at the full-data BIC choice)",
        "replicates_converged": int(ok.sum()),
        "draws": int(ok.sum()),
        "fit_method": "bootstrap over subjects",
        "welfare_weights": w_note,
        "estimate_converged": estimate_converged,
        "jackknife_groups": G,
        "jackknife_groups_converged": len(jack_ok) if G else 0,
    }

    def draws(idx, note):
        return PrimitiveDraws(A[idx], C, d[idx], F[idx], np.broadcast_to(w, (len(idx), m)).copy(),
                              items, abilities, {"draws": note})

    estimate = draws(np.array([replicates]), "full-data estimator")
    jack = (draws(jack_ok, f"jackknife, {len(jack_ok)} of {G} groups of subjects converged")
            if G else None)
    return PrimitiveDraws(A[keep], C, d[keep], F[keep],
                          np.broadcast_to(w, (len(keep), m)).copy(), items, abilities, notes,
                          estimate=estimate, jackknife=jack)


@dataclasses.dataclass(frozen=True)
class _Rows:
    """The index fields :func:`_residual_factor` reads from a table."""

    subject_index: np.ndarray
    item_index: np.ndarray
    n_subjects: int
    n_items: int
