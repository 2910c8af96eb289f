"""Marginal estimation over abilities: item parameters by EM over a quadrature grid, then
abilities by their posterior mean (EAP) with posterior SDs.

For a unidimensional model whose one subject parameter ``theta_s`` has a Normal prior
``N(m, s^2)`` and binary (or binomial) responses, the marginal likelihood of the item
parameters ``beta`` and globals ``g`` is

    L(beta, g) = prod_s  integral  prod_{i in s} p_si(theta)^{k_si} (1 - p_si(theta))^{n_si - k_si}
                 N(theta; m, s^2) dtheta,   p_si(theta) = mean(theta, beta_i, g),

and the integral becomes a sum over ``Q`` nodes ``theta_q = m + s x_q`` with weights ``w_q``
(normalised to one): by default ``x_q`` evenly spaced over +-6 and ``w_q`` proportional to the
normal density (the trapezoid rule, as mirt's default grid), or the Gauss-Hermite rule
(:func:`quadrature` says when which is accurate). The EM of Bock and Aitkin (1981)
alternates:

* E-step: per subject, the posterior over nodes ``pi_sq ~ w_q exp(l_sq)`` with
  ``l_sq = sum_{i in s} k_si logit p_iq + n_si log(1 - p_iq)`` (one matrix product when the
  subject x item matrix is small enough to hold densely, segment sums over rows otherwise);
* M-step: the expected counts ``r_iq = sum_s pi_sq k_si`` and ``n_iq = sum_s pi_sq n_si``
  give each item its own small problem ``min -sum_q [r_iq log p_iq + (n_iq - r_iq) log(1 - p_iq)]
  + penalty_i``, solved by a few vectorised Fisher-scoring steps with step halving (so the
  objective never rises); when the model has free globals (the 1PL's shared discrimination)
  items and globals take each step together, the items eliminated and the globals solved by
  their Schur complement.

Plain EM converges linearly, and slowly where the abilities' posteriors hold much of the
information (a few hundred iterations for a 1PL with 1,000 subjects and 500 items); the steps
are therefore extrapolated by SQUAREM (Varadhan and Roland 2008, "Simple and globally
convergent methods for accelerating the convergence of any EM algorithm"), which keeps an
extrapolated point only when the objective there is no worse; the complete-data 1PL and 2PL
fits of ``benchmarks/bench_irt.py`` (200 x 100 to 5,000 x 1,000) took 16 to 60 EM steps.

The mean function is the model's own, so any unidimensional binary model on the protocol
(1PL, 2PL, 3PL, 4PL, a user's) is served without naming it.

A model that declares its mean to be the logistic curve (the package's 1PL and 2PL do, through
:meth:`~platinum_jax.models.MeasurementModel.logistic_curve`) takes a closed-form path on a
dense matrix, chosen automatically (``diagnostics["e_step"]`` says ``"dense"`` or ``"scores"``; ``"rows"`` is the
generic row layout). It maximises the same objective (a test checks that both paths land on the
same estimates) and differs only in how the steps are computed:

* E-step: ``logit p_iq = a_i (theta_q - b_i)`` is linear in ``theta_q``, so
  ``sum_i K_si logit p_iq = theta_q (K a)_s - (K (a b))_s`` is one product of ``K`` with two
  columns, not ``Q``; the ``log(1 - p)`` part is a column sum with complete data and one
  product ``N @ log(1 - p)`` otherwise.
* Complete 1PL: the raw score is sufficient for the ability, so subjects with one score share
  one posterior; the EM runs on the ``I + 1`` possible scores instead of the subjects.
* M-step: the curve's gradient and Fisher information in ``(b, log a)`` in closed form, a 2 x 2
  step per item (2PL) or the items eliminated around the one shared slope (1PL), keeping the
  first step size at which the objective does not rise (usually the full step).
* Float32 for the products with the 0/1 matrices (which float32 holds exactly) when the
  stopping tolerance is at least ``1e-6``: their rounding (about ``1e-7`` relative) moves the
  estimates by about ``1e-6``, far below their standard errors and the default tolerance.
* The 2PL, and the 1PL on a complete matrix, start their difficulties at
  ``-logit(share) sqrt(1 + pi/8)`` (the share of successes of each item), which cut their EM
  steps by a third to a half in the benchmarks.
* The M-step reads the successes only through ``sum_q r_iq`` and ``sum_q theta_q r_iq``
  (the curve is linear in ``r``), one product of ``K`` with ``[1, E[theta | s]]``; only the
  attempts ``n_iq`` need a product with the ``Q`` node posteriors, and none when every cell
  is observed.

The item penalties (the models' priors on raw parameters: ``log a ~ N(0, 1)``,
``b ~ N(0, 3^2)``, ``logit c ~ N(-2, 0.75^2)``) are kept by default, which makes this Bayes modal
(marginal MAP) estimation: it keeps the 3PL's asymptotes and the discriminations of items
everyone solves finite.

Why marginal: joint MAP fits every ability as a parameter, and with few subjects per item the
abilities are shrunk by their prior, which inflates the discriminations; integrating the
abilities out removes that bias. Float64 (``jax_enable_x64``) is recommended, as for every fit.

The pieces, one idea a file: this driver (the quadrature, the checks on the model, the EM
loop and the abilities' posterior); the data layouts (:mod:`._marginal_layout`); the generic
E- and M-steps (:mod:`._marginal_steps`); the closed-form logistic path, a strategy a model
opts into (:mod:`._marginal_logistic`); the SQUAREM acceleration (:mod:`._marginal_squarem`).
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from platinum_jax.data import ResponseTable
from platinum_jax.models import Bernoulli, Binomial, MeasurementModel

from ._marginal_layout import SINGLE_TOL, Counts, log_choose
from ._marginal_logistic import logistic_columns, logistic_loglik, logistic_m_step, logistic_start
from ._marginal_squarem import squarem
from ._marginal_steps import m_step, penalty, probabilities
from ._problem import Problem, Theta
from ._results import Fit

__all__ = ["fit_marginal", "marginal_log_likelihood", "quadrature"]

QUADRATURE_RULES = ("even", "gauss-hermite")
# Half-width of the even rule's grid, in prior SDs (mirt's default grid is [-6, 6] too).
_EVEN_LIMIT = 6.0


def quadrature(nodes: int, loc: float = 0.0, scale: float = 1.0, rule: str = "even"):
    """Nodes and weights for ``E[f(theta)]``, ``theta ~ N(loc, scale^2)``: ``(theta_q, w_q)``
    with ``sum_q w_q = 1``.

    ``rule="even"`` (default): ``nodes`` points evenly spaced over ``loc +- 6 scale``, weighted
    by the prior density (the trapezoid rule; 61 nodes are 0.2 prior SD apart).
    ``rule="gauss-hermite"``: the Gauss-Hermite rule, exact for polynomials in ``theta`` but
    with its nodes spread far into the tails (31 nodes reach 9.9 SD and are 0.56 SD apart at
    the centre). A subject's likelihood over ``theta`` peaks with width ``1/sqrt(information)``
    (about 0.1 prior SD with 500 items), and the even rule resolves such a peak where
    Gauss-Hermite does not: with 31 Gauss-Hermite nodes a 2PL on 1,000 subjects x 500 items
    gave difficulties 0.77 times the scale, and 0.23 off the location, of the exact marginal
    estimates; 61 even nodes gave 1.004 and 0.035.
    """
    if nodes < 2:
        raise ValueError(f"nodes must be >= 2 (got {nodes})")
    if rule == "even":
        x = np.linspace(-_EVEN_LIMIT, _EVEN_LIMIT, nodes)
        w = np.exp(-0.5 * x**2)
    elif rule == "gauss-hermite":
        x, w = np.polynomial.hermite_e.hermegauss(nodes)
    else:
        raise ValueError(f"rule must be one of {QUADRATURE_RULES} (got {rule!r})")
    return loc + scale * x, w / w.sum()


def _ability_prior(problem: Problem) -> tuple[float, float]:
    """Check that the model has one scalar, free, untransformed subject parameter with a
    Normal prior; return the prior's location and scale."""
    model = problem.model
    decl = problem.subject.decl
    if len(decl) != 1 or decl[0][1].size != 1:
        raise ValueError(
            f"marginal estimation integrates one scalar ability per subject; model "
            f"{model.name!r} has subject parameters {[n for n, _ in decl]} "
            f"(sizes {[p.size for _, p in decl]}): use method='map' or 'nuts' for it"
        )
    name, param = decl[0]
    if param.transform is not None:
        raise ValueError(
            f"marginal estimation integrates the subject parameter {name!r} on its own scale; "
            f"model {model.name!r} transforms it, so use method='map' or 'nuts'"
        )
    prior = param.prior
    if not isinstance(prior, dist.Normal):
        raise ValueError(
            f"marginal estimation needs a Normal prior on {name!r} (the quadrature weights "
            f"are its density); model {model.name!r} declares {type(prior).__name__}"
        )
    if not np.all(problem.free_S):
        raise ValueError(
            "marginal estimation integrates every subject's ability; this model fixes some "
            "(an anchor subject): drop the anchor or use method='map'"
        )
    if not isinstance(model.likelihood, (Bernoulli, Binomial)):
        raise ValueError(
            f"marginal estimation is written for binary and binomial responses; model "
            f"{model.name!r} has a {model.likelihood.name} likelihood: use method='map' "
            "or 'nuts'"
        )
    return float(prior.loc), float(prior.scale)


class _Same:
    """A problem as a static argument of a jitted function, equal to any problem of the same
    model, sizes and fixed entries, so that a second fit of the same shape reuses the
    compiled code (a :class:`Problem` itself compares by identity)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.key = (problem.model, problem.info, problem.free_I.shape, problem.free_I.tobytes(),
                    problem.free_G.tobytes(), np.dtype(problem.dtype).str)

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, _Same) and self.key == other.key


def _subject_loglik(problem, counts, arrays, nodes, items, g):
    """``l_sq`` ``(n_subjects, Q)``: the structured product for a model on the logistic path
    with a dense matrix, the model's curve on every (item, node) pair otherwise."""
    cols = logistic_columns(problem)
    if cols is not None and counts.dense:
        return logistic_loglik(cols, counts, arrays, nodes, items, g)
    p = probabilities(problem, nodes, items, g)
    log_q = jnp.log1p(-p)
    return counts.subject_loglik(arrays, jnp.log(p) - log_q, log_q)


def _e_step(problem, counts, arrays, nodes, log_w, items, g):
    ll = _subject_loglik(problem, counts, arrays, nodes, items, g) + log_w
    norm = logsumexp(ll, axis=1, keepdims=True)
    return jnp.exp(ll - norm), counts.total(arrays, norm[:, 0])


@functools.partial(jax.jit, static_argnums=(0, 1))
def _posterior(same, counts, arrays, nodes, log_w, items, g):
    """Node posteriors of every subject and the marginal log-likelihood (compiled once per
    shape)."""
    return _e_step(same.problem, counts, arrays, nodes, log_w, items, g)


def _em_map(problem, counts, arrays, nodes, log_w, free_I, free_G, newton_steps, items, g):
    """One EM step ``(items, g) -> F(items, g)`` and the objective at its input:
    ``-log L(items, g) + penalty``."""
    post, ll = _e_step(problem, counts, arrays, nodes, log_w, items, g)
    cols = logistic_columns(problem) if counts.dense else None
    if cols is None:
        r, n = counts.expected(arrays, post)
        new_items, new_g = m_step(problem, nodes, r, n, items, g, free_I, free_G, newton_steps)
    else:
        r0, r1, n = counts.moments(arrays, post, nodes)
        new_items, new_g = logistic_m_step(problem, cols, nodes, r0, r1, n, items, g, free_I,
                                            free_G, newton_steps)
    return new_items, new_g, -ll + penalty(problem, items, free_I, g)


@functools.partial(jax.jit, static_argnums=(0, 1, 10))
def _em(same, counts, arrays, nodes, log_w, grid, log_prior, items0, g0, max_iter,
        newton_steps, tol):
    """EM accelerated by squared extrapolation (:func:`._marginal_squarem.squarem`), then the
    abilities' posterior on the fine grid, in one compiled program. Convergence: the plain EM
    step at ``x0`` moves no raw parameter more than ``tol``.
    """
    problem = same.problem
    free_I = jnp.asarray(problem.free_I, items0.dtype)
    free_G = jnp.asarray(problem.free_G, items0.dtype)
    em = functools.partial(_em_map, problem, counts, arrays, nodes, log_w, free_I, free_G,
                           newton_steps)

    cols = logistic_columns(problem) if counts.dense else None
    # The 2PL, and the 1PL on a complete matrix: in the benchmarks it cut their EM steps by a
    # third to a half; the 1PL with missing cells took as many or, in one world of five, three
    # times as many steps from it as from the declared start.
    if cols is not None and (cols[1] == "item" or counts.grouped):
        items0 = logistic_start(cols, counts, arrays, items0, g0, free_I)
    x_start = (items0, g0)
    (items, g), it, change = squarem(em, x_start, max_iter, tol)
    # The marginal log-likelihood (on the quadrature nodes) and the abilities' posterior (on
    # the fine grid) from one pass over the responses: the two node sets side by side.
    q = nodes.shape[0]
    both = jnp.concatenate([nodes, grid])
    l_all = _subject_loglik(problem, counts, arrays, both, items, g)
    ll = counts.total(arrays, logsumexp(l_all[:, :q] + log_w, axis=1))
    lg = l_all[:, q:] + log_prior
    post = jnp.exp(lg - logsumexp(lg, axis=1, keepdims=True))
    eap = post @ grid
    sd = jnp.sqrt(jnp.maximum(post @ grid**2 - eap**2, 0.0))
    return items, g, it, change, ll, penalty(problem, items, free_I, g), eap, sd


def marginal_log_likelihood(problem: Problem, items, globals_, *, nodes: int = 61,
                            rule: str = "even", dense: bool | None = None) -> float:
    """``log L(beta, g)`` of :mod:`this module <platinum_jax.inference._marginal>`'s docstring
    at raw item parameters ``items`` ``(n_items, p_i)`` and raw globals ``(p_g,)``, by
    quadrature with ``nodes`` nodes of ``rule`` (:func:`quadrature`; binomial constants
    included)."""
    loc, scale = _ability_prior(problem)
    x, w = quadrature(nodes, loc, scale, rule)
    counts = Counts(problem, dense)
    d = problem.dtype
    _, ll = _posterior(
        _Same(problem), counts, counts.arrays, jnp.asarray(x, d), jnp.asarray(np.log(w), d),
        jnp.asarray(items, d), jnp.asarray(globals_, d))
    return float(ll) + log_choose(problem)


def _check_layout_memory(problem, dense, nodes: int, eap_nodes: int) -> None:
    """Refuse, before the layout is built, a marginal fit whose layout does not fit in memory
    (:mod:`platinum_jax._memory`)."""
    from platinum_jax._memory import check_memory, dense_layout, marginal_bytes

    t = problem.table
    as_dense = dense_layout(t.n_subjects, t.n_items, dense)
    streams = problem.model.name == "2pl" and problem.model.likelihood.name == "bernoulli"
    check_memory(
        marginal_bytes(t.n_subjects, t.n_items, t.n_responses, nodes=nodes,
                       eap_nodes=eap_nodes, dense=as_dense),
        f"the marginal fit's {'dense' if as_dense else 'row'} layout ({t.n_subjects:,} "
        f"subjects x {t.n_items:,} items, {t.n_responses:,} responses, {nodes} + "
        f"{eap_nodes} nodes)",
        ("fit the binary 2PL streamed from a Parquet file, one byte a cell (`platinum-jax "
         "fit FILE.parquet --stream`, "
         "platinum_jax.inference.fit_streamed_2pl), or " if streams else "")
        + "lower nodes and eap_nodes, or use a machine with more memory")


def fit_marginal(
    model: MeasurementModel,
    table: ResponseTable,
    *,
    nodes: int = 61,
    rule: str = "even",
    max_iter: int = 2000,
    tol: float = 1e-4,
    newton_steps: int = 2,
    dense: bool | None = None,
    eap_nodes: int = 241,
) -> Fit:
    """Marginal (Bock-Aitkin EM) fit of a unidimensional binary model; abilities by EAP.

    Args:
        nodes: quadrature nodes over the ability prior (see ``rule``).
        rule: ``"even"`` (default: nodes evenly spaced over +-6 prior SDs, 0.2 SD apart at
            61 nodes) or ``"gauss-hermite"`` (:func:`quadrature`).
        max_iter: EM steps at most (extrapolated steps included); the fit reports
            ``converged=False`` when they run out.
        tol: stop when a plain EM step from the current point moves no raw item parameter or
            global more than this (far below the estimates' standard errors at the default).
            Below ``1e-6`` the dense products run in float64 throughout.
        newton_steps: Fisher-scoring steps per item in each M-step.
        dense: hold the responses as a dense subject x item matrix (default: when it has at
            most 50 million cells) or as rows (segment sums; any sparsity). The 1PL's and
            2PL's closed-form path (module docstring) needs the dense matrix; ``dense=False``
            runs them through the generic steps.
        eap_nodes: points of the even grid over +-6 prior SDs on which the abilities' posterior
            means and SDs are computed after the EM (spacing 0.05 SD by default, finer than
            the posterior of a subject with a few hundred items).

    The quadrature must resolve each subject's likelihood, which peaks with a width of about
    ``1/sqrt(information)``: 0.2 prior SD with 100 items, 0.1 with 500. A rule too coarse for
    it distorts the scale of the estimates, not only their precision (the difficulties of a
    2PL with 500 items per subject came out 0.77 times the exact marginal scale with 31
    Gauss-Hermite nodes, 1.004 times with 61 even nodes, and 0.9996 with 81 even nodes at 700
    items per subject, where 61 gave 0.991). The default of 61 even nodes is exact to the
    digits that matter up to about 300 items per subject; above that raise ``nodes`` (0.15 SD
    spacing, 81 nodes, for 500 to 1,000 items per subject), at a cost that grows with
    ``nodes`` only where cells are missing.

    Returns:
        A :class:`Fit` with ``method="marginal"``: item and global estimates; each subject's
        EAP ability and its posterior SD (``<ability>_sd`` column); ``objective`` = minus the
        marginal log-likelihood plus the item and global penalties;
        ``diagnostics["marginal_log_lik"]`` and ``iterations`` (EM steps taken).

    Raises:
        ValueError: a model with more than one subject parameter, a transformed or non-Normal
            ability prior, an anchored subject, a likelihood other than Bernoulli/Binomial, or
            bad ``nodes``/``max_iter``/``tol``.
    """
    from ._point import _problem

    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1 (got {max_iter})")
    if not tol > 0:
        raise ValueError(f"tol must be > 0 (got {tol})")
    if eap_nodes < 3:
        raise ValueError(f"eap_nodes must be >= 3 (got {eap_nodes})")
    if newton_steps < 1:
        raise ValueError(f"newton_steps must be >= 1 (got {newton_steps})")
    problem = _problem(model, table)
    loc, scale = _ability_prior(problem)
    x, w = quadrature(nodes, loc, scale, rule)
    cols = logistic_columns(problem)
    _check_layout_memory(problem, dense, nodes, eap_nodes)
    # A 1PL on a complete matrix: one row per raw score (see Counts).
    counts = Counts(problem, dense, single=tol >= SINGLE_TOL,
                     grouped=cols is not None and cols[1] == "global",
                     logistic=None if cols is None else cols[1])
    d = problem.dtype
    start = problem.start()
    # Abilities on a fine even grid over +-6 prior SDs: with many items per subject the
    # posterior is narrower than the spacing of the EM's nodes, and its mean and SD need a grid
    # finer than it (the rule is exact to many digits once spacing < posterior SD).
    grid = loc + scale * np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * ((grid - loc) / scale) ** 2
    log_prior -= np.log(np.exp(log_prior).sum())
    t0 = time.perf_counter()
    items, g, it, change, ll, pen, eap, sd = _em(
        _Same(problem), counts, counts.arrays, jnp.asarray(x, d), jnp.asarray(np.log(w), d),
        jnp.asarray(grid, d), jnp.asarray(log_prior, d), start.items, start.globals, max_iter,
        newton_steps, jnp.asarray(tol, d))
    eap, sd = np.asarray(eap), np.asarray(sd)
    if counts.groups is not None:
        eap, sd = eap[counts.groups], sd[counts.groups]
    elapsed = time.perf_counter() - t0
    marginal = float(ll) + log_choose(problem)
    converged = bool(float(change) <= tol)
    name = problem.subject.names[0]
    return Fit(
        problem=problem,
        method="marginal",
        theta=Theta(eap[:, None], np.asarray(items), np.asarray(g)),
        objective=-marginal + float(pen),
        converged=converged,
        diagnostics={"marginal_log_lik": marginal, "iterations": int(it),
                     "max_change": float(change), "nodes": nodes, "seconds": elapsed,
                     "e_step": "scores" if counts.grouped else "dense" if counts.dense
                     else "rows"},
        subject_columns={f"{name}_sd": sd},
    )
