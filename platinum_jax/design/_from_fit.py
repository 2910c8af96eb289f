"""From a fitted measurement model to draws of the principal-agent primitives (A, C, Σ).

Haupt et al.'s model has task performance ``y = A a + ε``, ``ε ~ N(0, Σ)``, effort ``a`` on
``K`` activities at cost ½aᵀCa.  A measurement model fitted to evaluation data supplies each of
these once the **abilities are read as the activities**: a lab that raises its model's ability
``θ_k`` by one unit is an effort of one unit on activity ``k``.

* **Loadings A** (m, K).  An item's expected score ``μ_i(θ) = f(...)`` is non-linear in ability,
  so it is linearised: ``A_ik = ∂μ_i/∂θ_k`` at an operating point.  For the Rosetta model this is
  ``f'(α_b(C − D_b)) α_b`` (the slope α_b times the link's derivative, K = 1); for the 1PL-4PL
  the discrimination ``a_i`` times the derivative of the (guessing-bounded) logistic; for the
  multidimensional 2PL the loading vector ``a_i`` times ``σ'(a_i·θ − d_i)``.  The derivative is
  taken by automatic differentiation of the model's own mean function, so every model of the
  protocol is served.  Operating point ``"average"`` (default): the average over the evaluated
  subjects of the derivative (the average marginal effect of ability on the item's score);
  or a subject's name: the derivative at that subject's ability (the lab improving that model).
* **Cost C** (K, K): identity in the fitted ability scale unless given.  For a multidimensional
  model with ``C = I`` the weights do not depend on how the abilities are rotated.
* **Noise Σ** (m, m) = ``diag(d) + FFᵀ``: the model-implied sampling variance
  ``p(1 − p)/trials`` at the operating point (Bernoulli and binomial likelihoods; other families
  have none), plus the residual variance the model leaves unexplained, whose correlation across
  items is estimated from the residuals of the subjects (a rank-``k`` factor ``F`` from a factor
  analysis over the observed entries, ``k`` by BIC).  ``residual_rank=0`` asks for no
  correlated part, and the notes then say that ``Σ`` is diagonal.  Given repeated runs of the
  same subjects, ``Σ`` is instead their run-to-run covariance (:func:`noise_from_runs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._factor import factor_em
from ._posterior import PrimitiveDraws
from ._runs import noise_from_runs

__all__ = ["item_noise_variance", "primitives_from_fit", "welfare_from_items",
           "welfare_from_abilities", "welfare_from_regression"]

_COUNT_FAMILIES = ("bernoulli", "binomial")
_UNIQUE_FLOOR = 0.05  # smallest share of an item's residual variance left to its own noise


def _raw_draws(fit):
    if fit.draws is None:
        t = fit.theta
        return (np.asarray(t.subjects)[None], np.asarray(t.items)[None],
                np.asarray(t.globals)[None])
    return tuple(np.asarray(x) for x in fit.draws)


def _per_draw_fn(problem, data, op_index, trials_item, counts, dof):
    n_items = problem.table.n_items

    def grad_mean(s_row, i_row, g):
        return jax.grad(lambda s: problem.mean(s, i_row, g))(s_row)

    def one(args):
        S, I, G = args  # noqa: E741
        if op_index is None:
            jac = jax.vmap(lambda i_row: jax.vmap(lambda s_row: grad_mean(s_row, i_row, G))(S)
                           .mean(0))(I)
            mu = jax.vmap(lambda i_row: jax.vmap(lambda s_row: problem.mean(s_row, i_row, G))(S))(I)
            sampling = jnp.mean(mu * (1 - mu), axis=1) / trials_item
        else:
            s_row = S[op_index]
            jac = jax.vmap(lambda i_row: grad_mean(s_row, i_row, G))(I)
            mu = jax.vmap(lambda i_row: problem.mean(s_row, i_row, G))(I)
            sampling = mu * (1 - mu) / trials_item
        pred = jax.vmap(lambda s, i: problem.mean(s, i, G))(S[data.subject_index],
                                                            I[data.item_index])
        resid = data.response - pred
        # Residual variance per item on its residual degrees of freedom (dof: responses minus
        # the leverage of the fitted parameters), less the sampling noise it already holds.
        excess = jax.ops.segment_sum(resid**2, data.item_index, n_items) / dof
        if counts:
            n = jax.ops.segment_sum(jnp.ones_like(resid), data.item_index, n_items)
            excess = excess - jax.ops.segment_sum(pred * (1 - pred) / data.trials,
                                                  data.item_index, n_items) / n
        else:
            sampling = jnp.zeros_like(sampling)
        return jac, sampling, excess, resid

    return jax.jit(lambda S, I, G: jax.lax.map(one, (S, I, G)))  # noqa: E741


def primitives_from_fit(
    fit,
    w: np.ndarray | None = None,
    *,
    cost: Sequence[float] | np.ndarray | None = None,
    operating_point: str = "average",
    residual_rank: int | str = "auto",
    runs: pd.DataFrame | None = None,
    seed: int = 0,
) -> PrimitiveDraws:
    """Draws of ``A``, ``C``, ``Σ`` (and ``w`` if given) from a fitted measurement model.

    Args:
        fit: a :class:`platinum_jax.inference.Fit`; its ``draws`` (Laplace draws, bootstrap
            replicates or posterior draws) give one set of primitives each; a plain MAP fit
            gives one.
        w: welfare weights, (m,) or (draws, m) (see :func:`welfare_from_items`,
            :func:`welfare_from_abilities`, :func:`welfare_from_regression`); default uniform.
        cost: ``C`` as a (K, K) matrix or the K diagonal costs per ability (default identity in
            the fitted ability scale).
        operating_point: ``"average"`` or a subject's name (see the module docstring).
        residual_rank: columns of the correlated residual factor ``F``; ``"auto"`` (default)
            chooses 0 to 3 by BIC (each loading charged its own item's sample size), ``0``
            asks for a diagonal ``Σ``.
        runs: repeated runs (columns ``subject, item, run, response``): when given, ``Σ`` is
            their run-to-run covariance (:func:`noise_from_runs`, rank chosen as
            ``residual_rank``), which measures the noise of one evaluation directly, instead
            of the model-implied and residual terms.
        seed: for the draws of each item's residual variance from its posterior, a scaled
            inverse chi-square on the item's residual degrees of freedom.

    Runs in float64 when ``jax_enable_x64`` is on (recommended; the package does not force it).
    """
    problem, table = fit.problem, fit.table
    S, I, G = _raw_draws(fit)  # noqa: E741
    D = S.shape[0]
    m = table.n_items
    ability_names = tuple(label for _, label in problem.subject.columns())
    K = len(ability_names)
    if K == 0:
        raise ValueError(f"model {fit.model.name!r} has no subject parameters to act as "
                         "abilities")
    C = _cost_matrix(cost, ability_names)
    op_index = None
    if operating_point != "average":
        if operating_point not in table.subjects:
            raise ValueError(f"operating_point must be 'average' or a subject of the fit; "
                             f"{operating_point!r} is not one (e.g. {list(table.subjects[:3])})")
        op_index = int(table.subjects.get_loc(operating_point))
    counts = fit.model.likelihood.name in _COUNT_FAMILIES
    fn, dof = _noise_fn(fit, op_index)
    jac, sampling, _, _ = (np.asarray(x) for x in fn(jnp.asarray(S), jnp.asarray(I),
                                                     jnp.asarray(G)))
    # Residuals at the point estimate: a draw's residuals would add its parameter error to the
    # noise.  The residual variance's own uncertainty enters through its posterior below.
    point = tuple(jnp.asarray(x)[None] for x in fit.theta)
    _, _, excess, resid = (np.asarray(x)[0] for x in fn(*point))
    rng = np.random.default_rng(seed)
    unique = None
    if runs is not None:
        d_runs, F_runs, dof_runs, runs_note = noise_from_runs(runs, table.items,
                                                             rank=residual_rank)
        scale = dof_runs / rng.chisquare(dof_runs, size=(D, m))  # posterior of each variance
        d = d_runs[None] * scale
        F = np.sqrt(scale)[:, :, None] * F_runs[None]
        chosen = F_runs.shape[1]
    else:
        # Posterior of each item's residual variance: scaled inverse chi-square on its dof.
        excess_draw = np.maximum(excess, 0.0)[None] * dof / rng.chisquare(dof, size=(D, m))
        # The factor's loadings are drawn too (one set per draw), so that the uncertainty of
        # the correlation reaches v*: with ~35 scores per item it is far from negligible.
        F_unit, unique, chosen = _residual_factor(resid, table, residual_rank, draws=D, rng=rng)
        # Σ_res = s (diag(unique) + F_unit F_unitᵀ) s with s the item's residual sd per draw.
        F = np.sqrt(excess_draw)[:, :, None] * F_unit
        d = sampling + excess_draw * unique
    # An item every subject fails (or passes) has p(1 - p) and residuals of about 0: no noise,
    # and no loading either, so its weight is 0/0.  Relative to the typical item's noise:
    silent = (d <= 1e-10 * np.median(d)).any(axis=0)
    if np.any(silent):
        bad = list(table.items[silent][:5])
        raise ValueError(f"{int(silent.sum())} item(s), e.g. {bad}, have no measurement noise "
                         "left: the model fits them exactly (typically items that every subject "
                         "fails or every subject passes, which carry no information); drop them "
                         "from the data before fitting")
    if w is None:
        w = np.full(m, 1.0 / m)
        w_note = "uniform over items (no target given)"
    else:
        w_note = "given"
    w = np.broadcast_to(np.asarray(w, np.float64), (D, m)).copy()
    # Items whose unique share sits at its floor in most draws.
    floored = (int(np.sum(np.mean(unique <= _UNIQUE_FLOOR + 1e-12, axis=0) > 0.5))
               if chosen and unique is not None else 0)
    notes = {
        "loadings": "A_ik = d mu_i / d theta_k of the model's mean at "
                    + ("the average over subjects" if op_index is None
                       else f"subject {operating_point!r}"),
        "cost": "identity in the fitted ability scale" if cost is None else "given",
        "noise": ("diag(sampling p(1-p)/trials at the operating point + unique residual "
                  "variance)" if counts else "diag(unique residual variance)")
        + (f" + rank-{chosen} residual correlation across items (loadings drawn from "
           "their posterior given the factor scores)" if chosen
           else "; diagonal because residual_rank=0 was asked" if residual_rank == 0
           else "; diagonal because BIC found no correlated residual across items"),
        "residual_rank": chosen,
        "noise_sampling_part": "measured by the repeated runs" if runs is not None
        else "model-implied p(1-p)/trials" if counts
        else f"none (likelihood {fit.model.likelihood.name}: residual variance only)",
        "noise_unique_share_floored": floored,
        "residual_variance_posterior": "scaled inverse chi-square on each item's residual "
                                       "degrees of freedom (responses minus leverage)",
        "draws": D,
        "fit_method": fit.method,
        "fit_row_weights": "none" if table.weight is None
        else "given (e.g. 1/noise variance of the row's item from fit_heteroscedastic); the "
             "residual dof follow them",
        "welfare_weights": w_note,
    }
    if runs is not None:
        notes["noise"] = runs_note
        notes["residual_variance_posterior"] = ("scaled inverse chi-square on each item's "
                                                "run-to-run degrees of freedom")
    return PrimitiveDraws(jac, C, d, F, w, tuple(map(str, table.items)), ability_names, notes)


def _require_one_score(fit) -> None:
    """The loadings differentiate the model's mean, which must be one expected score per
    response; a likelihood whose mean is a vector (the categorical's category
    log-probabilities, as in the graded model) is refused by name."""
    from platinum_jax.models import LIKELIHOODS

    t = fit.theta
    shape = np.shape(fit.problem.mean(jnp.asarray(t.subjects)[0], jnp.asarray(t.items)[0],
                                      jnp.asarray(t.globals)))
    if shape != ():
        lik = fit.model.likelihood.name
        raise ValueError(
            f"the fit's model {fit.model.name!r} has likelihood {lik!r}, whose mean is "
            f"{int(np.prod(shape))} numbers per response (for ordered categories, their "
            "log-probabilities), not one expected score; the optimal weights linearise each "
            "item's expected score in the abilities, so they need a fit whose likelihood is "
            f"one of {', '.join(sorted(LIKELIHOODS))}. Refit the same responses that way, "
            "e.g. category k of K as the fraction k / (K - 1) with a trials column of K - 1 "
            "(`platinum-jax fit DATA --model 2pl`, binomial), or the category numbers with "
            "--likelihood gaussian")


def _noise_fn(fit, op_index):
    """The compiled per-draw function of loadings and noise, and each item's residual dof."""
    _require_one_score(fit)
    problem, table = fit.problem, fit.table
    m = table.n_items
    counts = fit.model.likelihood.name in _COUNT_FAMILIES
    trials = np.ones(table.n_responses) if table.trials is None else table.trials
    trials_item = pd.Series(trials).groupby(table.item_index).median().reindex(range(m)).to_numpy()
    n_resp = np.bincount(table.item_index, minlength=m)
    if np.any(n_resp < 2):
        few = list(table.items[n_resp < 2][:5])
        raise ValueError(f"items {few} have fewer than 2 responses: their residual noise cannot "
                         "be estimated; drop them from the data before fitting")
    dof = _residual_dof(problem)
    if np.any(dof < 1):
        few = list(table.items[dof < 1][:5])
        raise ValueError(f"items {few} have too few responses for their residual noise to be "
                         "estimated (fewer responses than fitted parameters touch them); drop "
                         "them from the data before fitting")
    fn = _per_draw_fn(problem, problem.data(), op_index, jnp.asarray(trials_item), counts,
                      jnp.asarray(dof))
    return fn, dof


def item_noise_variance(fit) -> pd.Series:
    """Each item's noise variance ``Σ_ii`` at the point estimate of ``fit`` (the diagonal of
    :func:`primitives_from_fit`'s ``Σ`` before its posterior draws): the sampling variance
    ``p(1 − p)/trials`` averaged over the subjects (Bernoulli and binomial fits) plus the
    residual variance beyond it on the item's residual degrees of freedom, floored at 0."""
    fn, _ = _noise_fn(fit, None)
    point = tuple(jnp.asarray(x)[None] for x in fit.theta)
    _, sampling, excess, _ = (np.asarray(x)[0] for x in fn(*point))
    counts = fit.model.likelihood.name in _COUNT_FAMILIES
    total = (sampling if counts else 0.0) + np.maximum(excess, 0.0)
    return pd.Series(total, index=pd.Index(map(str, fit.table.items), name="item"),
                     name="noise_variance")


def _residual_dof(problem, weight=None) -> np.ndarray:
    """Residual degrees of freedom per item: its responses minus their approximate leverage.

    In the subject-item design a response's leverage is about ``p_s ω_sb/Σ_b' ω_sb' + p_i/n_i``:
    the free parameters of its subject spread over that subject's responses in proportion to
    their row weights ``ω`` (``p_s/n_s`` when the table has none), and the item's over its own
    responses; summed over an item's responses that is ``p_i + Σ_s p_s ω_sb/Σ_b' ω_sb'``.  With
    weights ``1/σ_b²`` (:func:`fit_heteroscedastic`) a precise item's response pins its subject's
    ability more, and so keeps less of its own noise in its residual.  ``weight`` replaces the
    table's row weights.
    """
    t = problem.table
    n_i = np.bincount(t.item_index, minlength=t.n_items)
    omega = t.weight if weight is None else weight
    omega = np.ones(t.n_responses) if omega is None else np.asarray(omega, np.float64)
    per_subject = np.bincount(t.subject_index, omega, minlength=t.n_subjects)
    share = omega / np.maximum(per_subject[t.subject_index], np.finfo(float).tiny)
    lev = np.bincount(t.item_index, problem.free_S.sum(axis=1)[t.subject_index] * share,
                      minlength=t.n_items)
    return n_i - problem.free_I.sum(axis=1) - lev


def _cost_matrix(cost, names):
    K = len(names)
    if cost is None:
        return np.eye(K)
    c = np.asarray(cost, dtype=np.float64)
    if c.shape == (K,):
        if not np.all(np.isfinite(c)) or np.any(c <= 0):
            raise ValueError(f"cost per ability must be finite and > 0, got {c.tolist()}")
        return np.diag(c)
    if c.shape != (K, K):
        raise ValueError(f"cost must be {K} numbers (one per ability {list(names)}) or a "
                         f"{K} x {K} matrix, got shape {c.shape}")
    return c


def _residual_factor(resid, table, rank, iterations: int = 200, max_auto: int = 3, *,
                     draws: int = 0, rng=None):
    """Correlation factor (m, k), unique shares (m,) and the rank k of the items' residuals.

    A factor analysis of the residuals standardised per item, ``z_sb = g_sᵀf_b + e_sb`` with
    ``g_s ~ N(0, I)`` and ``e_sb ~ N(0, ψ_b)``, fitted by EM over the observed entries only (the
    missing ones are missing, not zero).  ``rank="auto"`` picks ``k`` in ``0..max_auto`` by BIC
    with each loading charged the log of its own item's response count ``n_b`` (``k Σ_b log n_b``
    less ``k(k−1)/2`` rotations at the mean ``log n_b``): an item's loading is estimated from
    that item's residuals only, so the usual ``log N`` per parameter over-penalises it, and in
    synthetic worlds at the Epoch table's size it misses a planted shared shock.  Returned as
    shares of each item's residual variance: ``F_b = f_b / √(‖f_b‖² + ψ_b)`` and
    ``unique_b = ψ_b / (‖f_b‖² + ψ_b)``.

    With ``draws > 0`` the factor's own uncertainty is carried too: ``draws`` loadings are
    drawn per item from their posterior given the factor scores, ``f_b ~ N(f̂_b, ψ_b (Σ_s
    E[g_s g_sᵀ])⁻¹)`` (the item's regression of its residuals on its subjects' factor scores), and
    each is turned into shares as above; ``F`` is then (draws, m, k) and ``unique`` (draws, m).
    """
    m, S = table.n_items, table.n_subjects
    s_idx, i_idx = table.subject_index, table.item_index
    n = np.bincount(i_idx, minlength=m)
    scale = np.sqrt(np.bincount(i_idx, resid**2, minlength=m) / n)
    z = resid / np.where(scale > 0, scale, 1.0)[i_idx]
    if rank == "auto":
        ranks = range(0, min(max_auto, S - 1, m - 1) + 1)
    else:
        if not isinstance(rank, (int, np.integer)) or rank < 0:
            raise ValueError(f"residual_rank must be 'auto' or an integer >= 0, got {rank!r}")
        if rank and rank >= min(S, m):
            raise ValueError(f"residual_rank={rank} must be below both the number of subjects "
                             f"({S}) and of items ({m})")
        ranks = [rank]
    best = None
    for k in ranks:
        f, psi, loglik, Egg = factor_em(z, s_idx, i_idx, S, m, k, iterations, moments=True)
        # BIC with each loading's own sample size: f_b is informed by item b's n_b residuals
        # only, not by all of them (log N would ask a 35-score item for 7 nats a loading).
        bic = -2 * loglik + k * np.sum(np.log(n)) - k * (k - 1) / 2 * np.mean(np.log(n))
        if best is None or bic < best[0]:
            best = (bic, k, f, psi, Egg)
    _, k, f, psi, Egg = best
    if k == 0:
        shape = (draws, m) if draws else (m,)
        return np.zeros(shape + (0,)), np.ones(shape), 0
    if draws:
        # Cholesky of each item's loading covariance ψ_b Egg_b⁻¹ from that of its precision.
        L = np.linalg.cholesky(Egg / psi[:, None, None])
        eps = rng.standard_normal((draws, m, k))
        f = f[None] + np.linalg.solve(np.swapaxes(L, -1, -2)[None], eps[..., None])[..., 0]
    total = (f**2).sum(axis=-1) + psi
    unique = np.maximum(psi / total, _UNIQUE_FLOOR)
    F = f * (np.sqrt((1.0 - unique) / np.maximum(1.0 - psi / total, 1e-12)) / np.sqrt(total))[
        ..., None]
    return F, unique, k


def welfare_from_items(items: Sequence[str], target: Sequence[str] | Mapping[str, float]):
    """``w`` valuing performance on a target set of items (or benchmarks).

    A list gives the equal-weight average of those items (``w_i = 1/|T|`` on the set, 0 off
    it); a mapping gives explicit weights.  In Haupt et al.'s terms society's value of the
    lab's output is ``wᵀy``: what is valued is the score on the target, and ``v*`` may still put
    weight on other items that measure the same abilities more precisely.
    """
    items = [str(i) for i in items]
    pos = {name: k for k, name in enumerate(items)}
    pairs = (list(target.items()) if isinstance(target, Mapping)
             else [(t, 1.0 / len(target)) for t in target] if len(target) else [])
    if not pairs:
        raise ValueError("the target names no item: give at least one item or benchmark")
    w = np.zeros(len(items))
    for name, value in pairs:
        if str(name) not in pos:
            import difflib

            close = difflib.get_close_matches(str(name), items, n=3)
            raise ValueError(f"target item {name!r} is not in the fit"
                             + (f"; did you mean {close}?" if close else ""))
        if not np.isfinite(value):
            raise ValueError(f"target weight of {name!r} must be finite, got {value}")
        w[pos[str(name)]] = float(value)
    return w


def welfare_from_abilities(A: np.ndarray, beta: Sequence[float]) -> np.ndarray:
    """``w`` valuing the abilities themselves by ``β`` (K,), per draw of ``A`` (D, m, K).

    Welfare enters the model only through ``Aᵀw`` (the value of one unit of each activity), so
    any ``w`` with ``Aᵀw = β`` gives the same ``v*`` and welfare; the minimum-norm one,
    ``w = A(AᵀA)⁻¹β``, is returned (D, m).  ``β`` is in the fitted orientation of the abilities.
    """
    A = np.asarray(A, np.float64)
    beta = np.asarray(beta, np.float64)
    if beta.shape != (A.shape[-1],) or not np.all(np.isfinite(beta)):
        raise ValueError(f"ability weights must be {A.shape[-1]} finite numbers (one per "
                         f"ability), got {beta.tolist()}")
    gram = np.einsum("dmk,dml->dkl", A, A)
    coef = np.linalg.solve(gram, np.broadcast_to(beta, (A.shape[0], A.shape[2]))[..., None])
    return np.einsum("dmk,dk->dm", A, coef[..., 0])


def welfare_from_regression(fit, target: Mapping[str, float] | pd.Series, *,
                            ridge: float = 0.1) -> np.ndarray:
    """``w`` from a ridge regression of an external target (e.g. real-world usage) on item scores.

    The target is one number per subject; the regressors are the subjects' item scores
    (observed where available, the fit's predictions elsewhere), centred.  ``w`` solves
    ``min ‖y − Xw‖² + λ‖w‖²`` with ``λ = ridge · tr(XᵀX)/m`` (relative ridge, default 0.1).
    In Haupt et al.'s terms it is the direction in score space that society's value ``wᵀy``
    follows across the evaluated models.
    """
    table = fit.table
    y = pd.Series(target, dtype=float)
    unknown = [s for s in y.index if s not in table.subjects]
    if unknown:
        raise ValueError(f"regression target names subjects not in the fit: {unknown[:5]}")
    if len(y) < 3 or not np.all(np.isfinite(y.to_numpy())):
        raise ValueError("the regression target needs finite values for at least 3 subjects")
    if not ridge > 0:
        raise ValueError(f"ridge must be > 0, got {ridge}")
    s_all = np.arange(table.n_subjects)
    si, ii = np.meshgrid(s_all, np.arange(table.n_items), indexing="ij")
    X = np.array(fit.predict(si.ravel(), ii.ravel())).reshape(table.n_subjects, table.n_items)
    X[table.subject_index, table.item_index] = table.response
    rows = [table.subjects.get_loc(s) for s in y.index]
    X = X[rows] - X[rows].mean(axis=0)
    yc = y.to_numpy() - y.mean()
    lam = ridge * np.trace(X.T @ X) / table.n_items
    # Dual form (subjects are usually fewer than items): w = Xᵀ(XXᵀ + λI)⁻¹y.
    return X.T @ np.linalg.solve(X @ X.T + lam * np.eye(len(yc)), yc)
