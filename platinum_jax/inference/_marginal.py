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

The package's own 1PL and 2PL on a dense matrix take a closed-form path, chosen
automatically (``diagnostics["e_step"]`` says ``"dense"`` or ``"scores"``; ``"rows"`` is the
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
``b ~ N(0, 3^2)``, ``logit c ~ N(-2, 1)``) are kept by default, which makes this Bayes modal
(marginal MAP) estimation: it keeps the 3PL's asymptotes and the discriminations of items
everyone solves finite.

Why marginal: joint MAP fits every ability as a parameter, and with few subjects per item the
abilities are shrunk by their prior, which inflates the discriminations; integrating the
abilities out removes that bias. Float64 (``jax_enable_x64``) is recommended, as for every fit.

Longer than the package's 500-line guide: the EM driver, the two data layouts (dense and
split), the closed-form 1PL/2PL M-step and the acceleration read the same private arrays, and
splitting them along those ideas waits until the fast path is a strategy a model opts into.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax.scipy.special import logsumexp, xlogy

from platinum_jax.data import ResponseTable
from platinum_jax.models._protocol import MeasurementModel
from platinum_jax.models.likelihoods import Bernoulli, Binomial

from ._problem import Problem, Theta
from ._results import Fit

__all__ = ["fit_marginal", "marginal_log_likelihood", "quadrature"]

# Dense E-step when the subject x item matrix has at most this many cells (about 0.8 GB for
# the two float64 matrices): a matrix product beats a scatter over rows on a CPU.
_DENSE_CELLS = 50_000_000
# Expected counts from a float32 product where that is exact in the inputs (see _Counts), for
# stopping tolerances at least _SINGLE_TOL: float32 rounding moves an EM step by about 1e-7,
# so tighter tolerances need the float64 product to be reachable.
_SINGLE_COUNTS = True
_SINGLE_TOL = 1e-6
# Step sizes tried by the M-step's step halving (0 keeps the current values).
_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)


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


def _counts(problem: Problem):
    """Per row: successes ``k`` and attempts ``n``, both times the row weight (Bernoulli
    fractions count as a share of one attempt, as in the cross-entropy they are fitted by)."""
    t = problem.table
    binomial = isinstance(problem.model.likelihood, Binomial) and t.trials is not None
    if t.weight is None and not binomial:  # one attempt per row: n is all ones (None)
        return np.asarray(t.response, np.float64), None
    w = np.ones(t.n_responses) if t.weight is None else np.asarray(t.weight, np.float64)
    n = np.asarray(t.trials, np.float64) if binomial else np.ones(t.n_responses)
    return w * t.response * n, w * n


def _log_choose(problem: Problem) -> float:
    """Constant of the binomial log-likelihood (0 for Bernoulli rows)."""
    t = problem.table
    if not isinstance(problem.model.likelihood, Binomial) or t.trials is None:
        return 0.0
    from scipy.special import gammaln

    n = np.asarray(t.trials, np.float64)
    k = np.asarray(t.response) * n
    w = np.ones(t.n_responses) if t.weight is None else np.asarray(t.weight)
    return float(np.sum(w * (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))))


class _Counts:
    """The responses as the E- and M-steps read them: dense matrices or rows.

    ``grouped`` (a 1PL on a complete matrix): a subject's raw score ``k_s = sum_i y_si`` is
    sufficient for its ability, so subjects with one score share one posterior. The rows are
    then the ``I + 1`` possible scores (a static shape, whatever scores occur), each with its
    subject count ``m_k`` and the mean response row of its subjects; sums over subjects
    become ``m``-weighted sums over scores, and the EM's products shrink from ``n_subjects``
    rows to ``I + 1``."""

    def __init__(self, problem: Problem, dense: bool | None, single: bool = False,
                 grouped: bool = False, logistic: str | None = None):
        t = problem.table
        k, n = _counts(problem)
        cells = t.n_subjects * t.n_items
        self.dense = cells <= _DENSE_CELLS if dense is None else dense
        d = problem.dtype
        self.n_subjects, self.n_items = t.n_subjects, t.n_items
        # Every cell observed once with one attempt and unit weight: N is all ones, and its
        # products reduce to sums (half the matrix work of an EM iteration).
        self.complete = bool(self.dense and t.n_responses == cells
                             and (n is None or np.all(n == 1.0)))
        binary = n is None and bool(np.all((k == 0.0) | (k == 1.0)))
        # Products with the 0/1 matrices in float32, which holds them exactly (binary
        # responses, one attempt each): half the memory traffic of the EM's largest products;
        # the posteriors lose only float32 rounding there.
        self.single = bool(self.dense and single and _SINGLE_COUNTS and binary
                           and np.dtype(d) == np.float64)
        self.grouped = bool(grouped and self.complete and binary
                            and t.n_items + 1 < t.n_subjects)
        # The 1PL with missing cells: the float32 N and K's row and column sums only.
        self.split = bool(self.single and logistic == "global" and not self.complete)
        self.groups = None  # each subject's row (its score) when grouped
        s_idx, i_idx = t.subject_index, t.item_index
        if self.grouped:  # straight from the rows: the subject x item matrix is not needed
            score = np.bincount(s_idx, k, t.n_subjects).astype(np.int64)
            m = np.bincount(score, minlength=t.n_items + 1).astype(np.float64)
            flat = score[s_idx]
            flat *= t.n_items
            flat += i_idx
            M = np.bincount(flat, k, (t.n_items + 1) * t.n_items).reshape(t.n_items + 1, -1)
            self.groups = score
            # the mean response row of each score, its subject count, its successes per item
            self.arrays = tuple(jnp.asarray(x, d) for x in (M / np.maximum(m, 1.0)[:, None], m,
                                                             M))
            if self.single:
                self.arrays += (jnp.asarray(M, np.float32),)
        elif self.dense:
            flat = s_idx.astype(np.int64)  # in place: one array of this length
            flat *= t.n_items
            flat += i_idx
            shape = (t.n_subjects, t.n_items)
            if self.split:
                # The 1PL reads K only through its row sums ((K a)_s = a (K 1)_s) and column
                # sums (see _logistic_loglik and moments): no K matrix at all.
                self.arrays = (jnp.asarray(np.bincount(s_idx, k, t.n_subjects), d),
                               jnp.asarray(np.bincount(i_idx, k, t.n_items), d))
            else:
                K = np.bincount(flat, k, cells).reshape(shape)
                mats = [K]
                # The 1PL/2PL path reads N only through the float32 copy; others need it.
                if not self.complete and not (self.single and logistic):
                    mats.append(np.bincount(flat, n, cells).reshape(shape).astype(np.float64))
                self.arrays = tuple(jnp.asarray(x, d) for x in mats)
            if self.single:
                # Float32 copies at the end of the arrays: K (not for the split 1PL), then N
                # (one attempt in every observed cell) when some cells are missing. Two
                # arrays, not one [K N]: a slice of a joint matrix is copied at every use.
                f32 = () if self.split else (K.astype(np.float32),)
                if not self.complete:
                    N32 = np.zeros(cells, np.float32)
                    N32[flat] = 1.0
                    f32 += (N32.reshape(shape),)
                self.arrays += tuple(jnp.asarray(x) for x in f32)
        else:
            n = np.ones(t.n_responses) if n is None else n
            self.arrays = (jnp.asarray(t.subject_index), jnp.asarray(t.item_index),
                           jnp.asarray(k, d), jnp.asarray(n, d))

    def __hash__(self):  # a static argument: equal when the compiled code is the same
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _Counts) and self._key() == other._key()

    def _key(self):
        return (self.dense, self.complete, self.single, self.grouped, self.split,
                self.n_subjects, self.n_items)

    def total(self, arrays, v):
        """``sum_s v_s`` over subjects of a per-row quantity ``v``."""
        return arrays[1] @ v if self.grouped else jnp.sum(v)

    def subject_loglik(self, arrays, logit_p, log_q):
        """``l_sq`` ``(n_subjects, Q)`` from ``logit p_iq`` and ``log(1 - p_iq)``."""
        if self.complete:
            return arrays[0] @ logit_p + jnp.sum(log_q, axis=0)[None, :]
        if self.dense:
            K, N = arrays[:2]
            return K @ logit_p + N @ log_q
        si, ii, k, n = arrays
        rows = k[:, None] * logit_p[ii] + n[:, None] * log_q[ii]
        return jax.ops.segment_sum(rows, si, self.n_subjects)

    def k32(self, arrays):
        """The float32 copy of the successes (``single``, not ``split``)."""
        return arrays[-1] if self.complete else arrays[-2]

    def n32(self, arrays):
        """The float32 attempts, 0/1 (``single`` with missing cells)."""
        return arrays[-1]

    def expected(self, arrays, post):
        """``r_iq`` and ``n_iq`` ``(n_items, Q)`` from the node posteriors ``(n_subjects, Q)``."""
        if self.single:
            p32 = post.astype(jnp.float32)
            r = (self.k32(arrays).T @ p32).astype(post.dtype)
            if not self.complete:
                return r, (self.n32(arrays).T @ p32).astype(post.dtype)
        elif self.complete:
            r = (arrays[2] if self.grouped else arrays[0]).T @ post
        if self.complete:
            per_node = arrays[1] @ post if self.grouped else jnp.sum(post, axis=0)
            return r, jnp.broadcast_to(per_node, (self.n_items, post.shape[1]))
        if self.dense:
            K, N = arrays[:2]
            return K.T @ post, N.T @ post
        si, ii, k, n = arrays
        ps = post[si]
        return (jax.ops.segment_sum(k[:, None] * ps, ii, self.n_items),
                jax.ops.segment_sum(n[:, None] * ps, ii, self.n_items))

    def moments(self, arrays, post, nodes):
        """What the 1PL/2PL M-step reads of the expected counts on a dense matrix:
        ``r0_i = sum_q r_iq`` and ``r1_i = sum_q theta_q r_iq`` (n_items,), and ``n_iq``.

        The curve's objective and derivatives are linear in ``r_iq`` through
        ``sum_q r_iq z_iq = a_i (r1_i - b_i r0_i)`` and ``sum_q r_iq`` alone, so the successes
        enter through one product of ``K`` with two columns, ``[1, E[theta | s]]``, instead of
        ``Q``; only ``n_iq`` needs the nodes (and is a column sum when every cell is observed)."""
        e_theta = post @ nodes
        two = jnp.stack([jnp.ones_like(e_theta), e_theta], axis=1)
        if self.split:
            # The 1PL reads r1 only through its sum over items (its slope is shared), which is
            # sum_s (K 1)_s E[theta | s]: every item carries the mean.
            r1 = jnp.full((self.n_items,), arrays[0] @ e_theta / self.n_items)
            rk = jnp.stack([arrays[1], r1], axis=1)
        elif self.grouped:
            rk = arrays[2].T @ two
        elif self.single:
            rk = (self.k32(arrays).T @ two.astype(jnp.float32)).astype(post.dtype)
        else:
            rk = arrays[0].T @ two
        if self.complete:
            per_node = arrays[1] @ post if self.grouped else jnp.sum(post, axis=0)
            n = jnp.broadcast_to(per_node, (self.n_items, post.shape[1]))
        elif self.single:
            n = (self.n32(arrays).T @ post.astype(jnp.float32)).astype(post.dtype)
        else:
            n = arrays[1].T @ post
        return rk[:, 0], rk[:, 1], n


def _probabilities(problem: Problem, nodes, items, g):
    """``p_iq`` ``(n_items, Q)`` kept a few epsilons inside (0, 1)."""
    node_rows = nodes[:, None]
    p = jax.vmap(lambda i_row: jax.vmap(lambda s_row: problem.mean(s_row, i_row, g))(node_rows))(
        items)
    eps = 8 * jnp.finfo(p.dtype).eps
    return jnp.clip(p, eps, 1.0 - eps)


def _logistic_columns(problem: Problem):
    """Where the package's 1PL or 2PL keeps its raw difficulty and log discrimination:
    ``(item column of b, "item" or "global", column of log a)``; None for any other model
    (a subclass may change the curve, so only these two classes qualify)."""
    from platinum_jax.models.irt import OnePL, TwoPL

    if type(problem.model) not in (OnePL, TwoPL):
        return None
    items, glob = problem.item.slices(), problem.glob.slices()
    if "discrimination" in items:
        if problem.glob.size:  # the binary likelihoods have no globals; others take the loop
            return None
        return items["difficulty"][0], "item", items["discrimination"][0]
    if problem.item.size != 1 or problem.glob.size != 1:
        return None
    return items["difficulty"][0], "global", glob["discrimination"][0]


def _logistic_loglik(cols, counts, arrays, nodes, items, g):
    """``l_sq`` of the 1PL/2PL on a dense matrix without a matrix product over the nodes.

    ``logit p_iq = a_i (theta_q - b_i)`` is linear in ``theta_q``, so
    ``sum_i K_si logit p_iq = theta_q (K a)_s - (K (a b))_s``: one product of ``K`` with two
    columns instead of ``Q``; the ``log(1 - p_iq)`` part is a column sum when every cell is
    observed once (else one product ``N @ log(1 - p)``)."""
    ib, where, ia = cols
    b = items[:, ib]
    a = jnp.exp(items[:, ia]) if where == "item" else jnp.full_like(b, jnp.exp(g[ia]))
    log_q = -jax.nn.softplus(a[:, None] * (nodes[None, :] - b[:, None]))  # log(1 - p_iq)
    if counts.split:
        # 1PL: (K a)_s = a (K 1)_s. The per-subject constant (K (a b))_s does not move the
        # posterior; only its total enters the log-likelihood, so every subject carries the
        # mean sum_i a b_i (K^T 1)_i / n_subjects instead.
        rows, cols_k, n32 = arrays
        rest = (n32 @ log_q.astype(jnp.float32)).astype(log_q.dtype)
        shift = jnp.sum(a * b * cols_k) / counts.n_subjects
        return (a[0] * rows)[:, None] * nodes[None, :] - shift + rest
    ab = jnp.stack([a, a * b], axis=1)
    if counts.single and not counts.grouped:  # float32 K (exact), (a, a b) rounded ~1e-7
        lin = (counts.k32(arrays) @ ab.astype(jnp.float32)).astype(ab.dtype)
    else:
        lin = arrays[0] @ ab
    if counts.complete:
        rest = jnp.sum(log_q, axis=0)[None, :]
    elif counts.single:  # float32 N (exact) and log(1 - p), as above
        rest = (counts.n32(arrays) @ log_q.astype(jnp.float32)).astype(log_q.dtype)
    else:
        rest = arrays[1] @ log_q
    return lin[:, :1] * nodes[None, :] - lin[:, 1:] + rest


def _subject_loglik(problem, counts, arrays, nodes, items, g):
    """``l_sq`` ``(n_subjects, Q)``: the structured product for a 1PL/2PL on a dense matrix,
    the model's curve on every (item, node) pair otherwise."""
    cols = _logistic_columns(problem)
    if cols is not None and counts.dense:
        return _logistic_loglik(cols, counts, arrays, nodes, items, g)
    p = _probabilities(problem, nodes, items, g)
    log_q = jnp.log1p(-p)
    return counts.subject_loglik(arrays, jnp.log(p) - log_q, log_q)


def _e_step(problem, counts, arrays, nodes, log_w, items, g):
    ll = _subject_loglik(problem, counts, arrays, nodes, items, g) + log_w
    norm = logsumexp(ll, axis=1, keepdims=True)
    return jnp.exp(ll - norm), counts.total(arrays, norm[:, 0])


def _item_objective(problem, nodes, r, n, i_row, free_row, g):
    """One item's expected negative complete-data log-likelihood plus its penalty."""
    p = jax.vmap(lambda s: problem.mean(s[None], i_row, g))(nodes)
    eps = 8 * jnp.finfo(p.dtype).eps
    p = jnp.clip(p, eps, 1.0 - eps)
    nll = -jnp.sum(xlogy(r, p) + xlogy(n - r, 1.0 - p))
    return nll + problem.item_penalty(i_row, free_row, g)


def _scoring_step(fun_p, fun_pen, x, free, n, r, nodes_args):
    """One Fisher-scoring direction for parameters ``x`` of a Bernoulli-type objective:
    ``fun_p(x) -> p_q``; ``fun_pen(x)`` the penalty. Fixed entries do not move."""
    p, jac = jax.vmap(lambda *a: jax.value_and_grad(fun_p)(x, *a))(*nodes_args)
    eps = 8 * jnp.finfo(p.dtype).eps
    p = jnp.clip(p, eps, 1.0 - eps)
    v = p * (1.0 - p)
    grad = -jnp.einsum("q,qa->a", (r - n * p) / v, jac) + jax.grad(fun_pen)(x)
    info = jnp.einsum("q,qa,qb->ab", n / v, jac, jac) + jax.hessian(fun_pen)(x)
    # Fixed entries: identity curvature, no gradient, so their step is zero.
    info = info * jnp.outer(free, free) + jnp.diag(1.0 - free)
    grad = grad * free
    # A tiny ridge keeps the solve defined for an item whose responses carry no information.
    ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(jnp.diag(info))))
    chol = jnp.linalg.cholesky(info + ridge * jnp.eye(x.shape[0], dtype=x.dtype))
    d = jax.scipy.linalg.cho_solve((chol, True), grad)
    return jnp.where(jnp.all(jnp.isfinite(d)), d, 0.0)


def _m_step(problem: Problem, nodes, r, n, items, g, free_I, free_G, newton_steps: int):
    steps = jnp.asarray(_STEPS, items.dtype)

    def item_update(i_row, free_row, r_i, n_i):
        obj = functools.partial(_item_objective, problem, nodes, r_i, n_i, free_row=free_row,
                                g=g)
        fun_p = lambda x, s: problem.mean(s[None], x, g)  # noqa: E731
        fun_pen = lambda x: problem.item_penalty(x, free_row, g)  # noqa: E731

        def one(x, _):
            d = _scoring_step(fun_p, fun_pen, x, free_row, n_i, r_i, (nodes,))
            trial = jax.vmap(lambda t: obj(x - t * d))(steps)
            best = jnp.argmin(jnp.where(jnp.isfinite(trial), trial, jnp.inf))
            return x - steps[best] * d, None

        out, _ = jax.lax.scan(one, i_row, None, length=newton_steps)
        return out

    if not problem.free_G.any():
        return jax.vmap(item_update)(items, free_I, r, n), g
    # With free globals (a shared slope) items and globals move together: alternating them
    # zig-zags, since every difficulty is measured in units of the slope.
    # A loop, not unrolled: one copy of the step in the compiled program.
    return jax.lax.fori_loop(
        0, newton_steps,
        lambda _, x: _joint_step(problem, nodes, r, n, x[0], x[1], free_I, free_G, steps),
        (items, g))


def _joint_step(problem, nodes, r, n, items, g, free_I, free_G, steps):
    """One Fisher-scoring step on (every item, globals) together: the information is an arrow
    (block-diagonal over items, dense in the globals), solved by eliminating the items with one
    small Cholesky each and the globals by their Schur complement; then step halving."""
    p_i = items.shape[1]

    def per_item(x, f, r_i, n_i):
        z = jnp.concatenate([x, g])
        fun_p = lambda z, s: problem.mean(s[None], z[:p_i], z[p_i:])  # noqa: E731
        p, jac = jax.vmap(lambda s: jax.value_and_grad(fun_p)(z, s))(nodes)
        eps = 8 * jnp.finfo(p.dtype).eps
        p = jnp.clip(p, eps, 1.0 - eps)
        v = p * (1.0 - p)
        pen = lambda z: problem.item_penalty(z[:p_i], f, z[p_i:])  # noqa: E731
        grad = -jnp.einsum("q,qa->a", (r_i - n_i * p) / v, jac) + jax.grad(pen)(z)
        info = jnp.einsum("q,qa,qb->ab", n_i / v, jac, jac) + jax.hessian(pen)(z)
        return grad, info

    grads, infos = jax.vmap(per_item)(items, free_I, r, n)
    gI = grads[:, :p_i] * free_I
    gG = (grads[:, p_i:].sum(0) + jax.grad(problem.global_penalty)(g)) * free_G
    HII = infos[:, :p_i, :p_i] * free_I[:, :, None] * free_I[:, None, :] + \
        jax.vmap(jnp.diag)(1.0 - free_I)
    HIG = infos[:, :p_i, p_i:] * free_I[:, :, None] * free_G[None, None, :]
    HGG = (infos[:, p_i:, p_i:].sum(0) + jax.hessian(problem.global_penalty)(g)) * \
        jnp.outer(free_G, free_G) + jnp.diag(1.0 - free_G)
    ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(jax.vmap(jnp.diag)(HII))))
    chol = jnp.linalg.cholesky(HII + ridge * jnp.eye(p_i, dtype=items.dtype))
    solve = jax.vmap(lambda c, b: jax.scipy.linalg.cho_solve((c, True), b))
    X = solve(chol, HIG)  # (n_items, p_i, p_g)
    xg = solve(chol, gI[..., None])[..., 0]
    schur = HGG - jnp.einsum("iap,iaq->pq", HIG, X)
    rhs = gG - jnp.einsum("iap,ia->p", HIG, xg)
    chol_g = jnp.linalg.cholesky(schur + ridge * jnp.eye(g.shape[0], dtype=g.dtype))
    dG = jax.scipy.linalg.cho_solve((chol_g, True), rhs)
    dI = xg - jnp.einsum("iap,p->ia", X, dG)
    ok = jnp.all(jnp.isfinite(dI)) & jnp.all(jnp.isfinite(dG))
    dI, dG = jnp.where(ok, dI, 0.0), jnp.where(ok, dG, 0.0)

    def total(t):
        it, gv = items - t * dI, g - t * dG
        per = jax.vmap(lambda i_row, f, r_i, n_i: _item_objective(
            problem, nodes, r_i, n_i, i_row, f, gv))(it, free_I, r, n)
        return jnp.sum(per) + problem.global_penalty(gv)

    trial = jax.vmap(total)(steps)
    best = jnp.argmin(jnp.where(jnp.isfinite(trial), trial, jnp.inf))
    return items - steps[best] * dI, g - steps[best] * dG


def _logistic_m_step(problem, cols, nodes, r0, r1, n, items, g, free_I, free_G, newton_steps):
    """The M-step of :func:`_m_step` for the 1PL and 2PL, with the curve's derivatives in
    closed form on the ``(n_items, Q)`` grid (the penalties' by autodiff, as there).

    With ``z_iq = a_i (theta_q - b_i)``, ``p = sigmoid(z)``, ``e = r - n p`` and
    ``v = n p (1 - p)``, the expected negative log-likelihood of item ``i`` is
    ``sum_q n softplus(z) - r z``; its gradient in ``(b_i, log a_i)`` is
    ``(a_i sum_q e, -sum_q z e)`` and its Fisher information
    ``sum_q v [[a_i^2, -a_i z], [-a_i z, z^2]]``. The 2PL takes a Fisher-scoring step per item
    (2 x 2 Cholesky); the 1PL's shared ``log a`` couples the items, and its step eliminates
    each difficulty (a scalar) and solves the one global by its Schur complement. Of the
    generic step's step sizes the first at which the objective does not rise (beyond a
    rounding-level slack) is kept, where the generic step tries them all and keeps the best:
    the EM's fixed point is the same, and one evaluation usually suffices.

    The successes ``r_iq`` enter only through ``r0_i = sum_q r_iq`` and
    ``r1_i = sum_q theta_q r_iq`` (:meth:`_Counts.moments`): ``sum_q r z = a_i (r1_i - b_i r0_i)``."""
    ib, where, ia = cols
    steps = jnp.asarray(_STEPS, items.dtype)
    p_i = items.shape[1]
    pen_z = lambda z, f: problem.item_penalty(z[:p_i], f, z[p_i:])  # noqa: E731

    def curve(items, g):
        la = items[..., ia] if where == "item" else g[..., ia, None]
        a = jnp.exp(la)
        return a, a[..., None] * (nodes - items[..., ib, None])

    def r_dot_z(a, items):  # sum_q r_iq z_iq
        return a * (r1 - items[..., ib] * r0)

    def item_nll(items, g):  # (..., n_items)
        a, z = curve(items, g)
        return jnp.sum(n * jax.nn.softplus(z), axis=-1) - r_dot_z(a, items)

    def derivatives(items, g):
        a, z = curve(items, g)
        p = jax.nn.sigmoid(z)
        np_, v = n * p, n * p * (1.0 - p)
        sum_e = r0 - jnp.sum(np_, 1)  # sum_q e_iq
        sum_ze = r_dot_z(a, items) - jnp.sum(z * np_, 1)  # sum_q z_iq e_iq
        zpen = jnp.concatenate([items, jnp.broadcast_to(g, (items.shape[0], g.shape[0]))], 1)
        pg = jax.vmap(jax.grad(pen_z))(zpen, free_I)
        ph = jax.vmap(jax.hessian(pen_z))(zpen, free_I)
        return (a * sum_e, -sum_ze, a**2 * jnp.sum(v, 1),
                -a * jnp.sum(v * z, 1), jnp.sum(v * z * z, 1), pg, ph)

    def first_no_worse(objective, f0):
        """The first of ``_STEPS`` at which ``objective`` (per item or scalar) is finite and
        no worse than ``f0`` (0, i.e. stay, when none is): usually the full step, so one
        evaluation instead of one per step size. Returns the step sizes and the objective
        there."""
        def cond(state):
            k, _, _, done = state
            return (k < len(_STEPS) - 1) & ~jnp.all(done)

        def body(state):
            k, t, f, done = state
            fk = objective(steps[k])
            # A rounding-level slack, so that an item already at its optimum stops at once.
            ok = ~done & jnp.isfinite(fk) & (fk <= f0 + 1e-12 * jnp.abs(f0))
            return k + 1, jnp.where(ok, steps[k], t), jnp.where(ok, fk, f), done | ok

        zero = jnp.zeros_like(f0)
        _, t, f, _ = jax.lax.while_loop(
            cond, body, (jnp.asarray(0), zero, f0, jnp.zeros(f0.shape, bool)))
        return t, f

    if where == "item":
        item_pen = jax.vmap(lambda x, f: problem.item_penalty(x, f, g))

        def step(_, state):
            items, f0 = state
            gb, ga, hbb, hba, haa, pg, ph = derivatives(items, g)
            # The 2 x 2 system of each item in (b, log a), its Cholesky factor written out.
            fb, fa = free_I[:, ib], free_I[:, ia]
            u = (gb + pg[:, ib]) * fb
            w = (ga + pg[:, ia]) * fa
            A = (hbb + ph[:, ib, ib]) * fb + (1.0 - fb)
            B = (hba + ph[:, ib, ia]) * fb * fa
            C = (haa + ph[:, ia, ia]) * fa + (1.0 - fa)
            ridge = 1e-10 * (1.0 + jnp.maximum(jnp.abs(A), jnp.abs(C)))
            l11 = jnp.sqrt(A + ridge)
            l21 = B / l11
            l22 = jnp.sqrt(C + ridge - l21**2)
            y1 = u / l11
            y2 = (w - l21 * y1) / l22
            d_a = y2 / l22
            d_b = (y1 - l21 * d_a) / l11
            d = jnp.zeros_like(items).at[:, ib].set(d_b).at[:, ia].set(d_a)
            d = jnp.where(jnp.all(jnp.isfinite(d), axis=1, keepdims=True), d, 0.0)
            t, f = first_no_worse(
                lambda t: item_nll(items - t * d, g) + item_pen(items - t * d, free_I), f0)
            return items - t[:, None] * d, f

        f0 = item_nll(items, g) + item_pen(items, free_I)
        items, _ = jax.lax.fori_loop(0, newton_steps, step, (items, f0))
        return items, g

    def total(items, g):
        return jnp.sum(item_nll(items, g)) + _penalty(problem, items, free_I, g)

    def joint(_, state):
        items, g, f0 = state
        gb, ga, hbb, hba, haa, pg, ph = derivatives(items, g)
        fI, fG = free_I[:, 0], free_G[0]
        gI = (gb + pg[:, 0]) * fI
        hII = (hbb + ph[:, 0, 0]) * fI + (1.0 - fI)
        hIG = (hba + ph[:, 0, 1]) * fI * fG
        gG = (jnp.sum(ga + pg[:, 1]) + jax.grad(problem.global_penalty)(g)[0]) * fG
        hGG = (jnp.sum(haa + ph[:, 1, 1]) + jax.hessian(problem.global_penalty)(g)[0, 0]) * \
            fG + (1.0 - fG)
        ridge = 1e-10 * (1.0 + jnp.max(jnp.abs(hII)))
        hII = hII + ridge
        dG = (gG - jnp.sum(hIG * gI / hII)) / (hGG + ridge - jnp.sum(hIG**2 / hII))
        dI = (gI - hIG * dG) / hII
        ok = jnp.all(jnp.isfinite(dI)) & jnp.isfinite(dG)
        dI, dG = jnp.where(ok, dI, 0.0)[:, None], jnp.where(ok, dG, 0.0)
        t, f = first_no_worse(lambda t: total(items - t * dI, g - t * dG), f0)
        return items - t * dI, g - t * dG, f

    items, g, _ = jax.lax.fori_loop(0, newton_steps, joint, (items, g, total(items, g)))
    return items, g


def _logistic_start(cols, counts, arrays, items, g, free_I):
    """Free difficulties started where the item's share of successes puts them: with
    ``theta ~ N(0, 1)``, ``E[sigmoid(a (theta - b))] ~ sigmoid(-a b / sqrt(1 + pi a^2 / 8))``,
    so ``b ~ -logit(share) sqrt(1 + pi a^2 / 8) / a`` at the starting ``a`` (the share is
    taken as ``(k + 1/2) / (n + 1)``, finite for items everyone or no one solves). A start
    only: the EM's fixed point does not depend on it, its step count does."""
    ib, where, ia = cols
    a = jnp.exp(items[:, ia] if where == "item" else g[ia])
    if counts.grouped:
        k = arrays[1] @ arrays[0]
    elif counts.split:
        k = arrays[1]  # the successes' column sums
    else:
        k = jnp.sum(arrays[0], axis=0)
    if counts.complete:
        n = jnp.full_like(k, counts.n_subjects)
    else:
        n = jnp.sum(counts.n32(arrays) if counts.single else arrays[1], axis=0)
    share = (k + 0.5) / (n + 1.0)
    b = -jnp.log(share / (1.0 - share)) * jnp.sqrt(1.0 + jnp.pi * a**2 / 8.0) / a
    return items.at[:, ib].set(jnp.where(free_I[:, ib] > 0, b, items[:, ib]))


def _penalty(problem, items, free_I, g):
    pen = jax.vmap(lambda i_row, f: problem.item_penalty(i_row, f, g))(items, free_I)
    return jnp.sum(pen) + problem.global_penalty(g)


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


@functools.partial(jax.jit, static_argnums=(0, 1))
def _posterior(same, counts, arrays, nodes, log_w, items, g):
    """Node posteriors of every subject and the marginal log-likelihood (compiled once per
    shape)."""
    return _e_step(same.problem, counts, arrays, nodes, log_w, items, g)


def _em_map(problem, counts, arrays, nodes, log_w, free_I, free_G, newton_steps, items, g):
    """One EM step ``(items, g) -> F(items, g)`` and the objective at its input:
    ``-log L(items, g) + penalty``."""
    post, ll = _e_step(problem, counts, arrays, nodes, log_w, items, g)
    cols = _logistic_columns(problem) if counts.dense else None
    if cols is None:
        r, n = counts.expected(arrays, post)
        new_items, new_g = _m_step(problem, nodes, r, n, items, g, free_I, free_G, newton_steps)
    else:
        r0, r1, n = counts.moments(arrays, post, nodes)
        new_items, new_g = _logistic_m_step(problem, cols, nodes, r0, r1, n, items, g, free_I,
                                            free_G, newton_steps)
    return new_items, new_g, -ll + _penalty(problem, items, free_I, g)


@functools.partial(jax.jit, static_argnums=(0, 1, 10))
def _em(same, counts, arrays, nodes, log_w, grid, log_prior, items0, g0, max_iter,
        newton_steps, tol):
    """EM accelerated by squared extrapolation (SQUAREM, Varadhan and Roland 2008), then the
    abilities' posterior on the fine grid, in one compiled program.

    Each iteration takes two EM steps ``x1 = F(x0)``, ``x2 = F(x1)``, extrapolates along
    ``r = x1 - x0`` and ``v = x2 - 2 x1 + x0`` to ``x' = x0 - 2 alpha r + alpha^2 v`` with
    ``alpha = -|r| / |v|`` (at most ``-1``, which gives ``x2``; at least ``-step_max``), and
    keeps ``F(x')`` when the objective at ``x'`` is no worse than at ``x0``, else ``x2`` (a
    plain EM step pair, which never makes it worse). EM's linear rate is slow where the
    abilities' posteriors carry much of the information (the shared scale of a 1PL); the
    extrapolation removes most of those iterations. Convergence: the plain EM step at ``x0``
    moves no raw parameter more than ``tol``.
    """
    problem = same.problem
    free_I = jnp.asarray(problem.free_I, items0.dtype)
    free_G = jnp.asarray(problem.free_G, items0.dtype)
    em = functools.partial(_em_map, problem, counts, arrays, nodes, log_w, free_I, free_G,
                           newton_steps)

    # One EM step per pass of the loop (a single copy of the E- and M-steps in the compiled
    # program, which keeps compilation short); ``phase`` says which of the three it is.
    def body(state):
        phase, x, x0, x1, f0, step_max, it, change, last_alpha = state
        fx_i, fx_g, fx = em(*x)
        # phase 0: x = x0, F(x0) = x1; phase 1: x = x1, F(x1) = x2, extrapolate;
        # phase 2: x = x', keep F(x') if the objective at x' is no worse than at x0, else x2.
        r = (x1[0] - x0[0], x1[1] - x0[1])
        v = (fx_i - 2.0 * x1[0] + x0[0], fx_g - 2.0 * x1[1] + x0[1])
        rr = jnp.sum(r[0] ** 2) + jnp.sum(r[1] ** 2)
        vv = jnp.sum(v[0] ** 2) + jnp.sum(v[1] ** 2)
        alpha = jnp.where(vv > 0, -jnp.sqrt(rr / jnp.where(vv > 0, vv, 1.0)), -1.0)
        alpha = jnp.clip(alpha, -step_max, -1.0)
        alpha = jnp.where(phase == 1, alpha, last_alpha)
        ext = (x0[0] - 2.0 * alpha * r[0] + alpha**2 * v[0],
               x0[1] - 2.0 * alpha * r[1] + alpha**2 * v[1])
        ok = jnp.isfinite(fx) & (fx <= f0) & jnp.all(jnp.isfinite(fx_i)) & \
            jnp.all(jnp.isfinite(fx_g))
        res0 = jnp.maximum(jnp.max(jnp.abs(fx_i - x[0]), initial=0.0),
                           jnp.max(jnp.abs(fx_g - x[1]), initial=0.0))
        pick = lambda a0, a1, a2: jax.tree.map(  # noqa: E731
            lambda u, w, z: jnp.select([phase == 0, phase == 1], [u, w], z), a0, a1, a2)
        # x2 is kept in x1's slot during phase 2 (x1 itself is no longer needed).
        kept = jax.tree.map(lambda u, w: jnp.where(ok, u, w), (fx_i, fx_g), x1)
        new_x = pick((fx_i, fx_g), ext, kept)
        new_x0 = pick(x, x0, kept)
        new_x1 = pick((fx_i, fx_g), (fx_i, fx_g), x1)
        new_f0 = jnp.where(phase == 0, fx, f0)
        # Longer extrapolations once the longest allowed one succeeded; shorter after a miss.
        grown = jnp.where(ok & (alpha <= -step_max), 4.0 * step_max,
                          jnp.where(ok, step_max, jnp.maximum(1.0, step_max / 4.0)))
        new_step = jnp.where(phase == 2, grown, step_max)
        new_change = jnp.where(phase == 0, res0, change)
        # Converged at x0: stop with F(x0), which is the better of the two.
        stop = (phase == 0) & (res0 <= tol)
        new_phase = jnp.where(stop, 0, (phase + 1) % 3)
        return (new_phase, new_x, new_x0, new_x1, new_f0, new_step, it + 1, new_change, alpha)

    def cond(state):
        return (state[6] < max_iter) & (state[7] > tol)

    dt = items0.dtype
    inf = jnp.asarray(jnp.inf, dt)
    cols = _logistic_columns(problem) if counts.dense else None
    # The 2PL, and the 1PL on a complete matrix: in the benchmarks it cut their EM steps by a
    # third to a half; the 1PL with missing cells took as many or, in one world of five, three
    # times as many steps from it as from the declared start.
    if cols is not None and (cols[1] == "item" or counts.grouped):
        items0 = _logistic_start(cols, counts, arrays, items0, g0, free_I)
    x_start = (items0, g0)
    state = jax.lax.while_loop(cond, body, (
        jnp.asarray(0, jnp.int32), x_start, x_start, x_start, inf, jnp.asarray(1.0, dt),
        jnp.asarray(0, jnp.int32), inf, jnp.asarray(-1.0, dt)))
    # Out of steps before the extrapolated point was evaluated: keep x2 instead.
    items, g = jax.tree.map(lambda u, w: jnp.where(state[0] == 2, w, u), state[1], state[3])
    it, change = state[6], state[7]
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
    return items, g, it, change, ll, _penalty(problem, items, free_I, g), eap, sd


def marginal_log_likelihood(problem: Problem, items, globals_, *, nodes: int = 61,
                            rule: str = "even", dense: bool | None = None) -> float:
    """``log L(beta, g)`` of :mod:`this module <platinum_jax.inference._marginal>`'s docstring
    at raw item parameters ``items`` ``(n_items, p_i)`` and raw globals ``(p_g,)``, by
    quadrature with ``nodes`` nodes of ``rule`` (:func:`quadrature`; binomial constants
    included)."""
    loc, scale = _ability_prior(problem)
    x, w = quadrature(nodes, loc, scale, rule)
    counts = _Counts(problem, dense)
    d = problem.dtype
    _, ll = _posterior(
        _Same(problem), counts, counts.arrays, jnp.asarray(x, d), jnp.asarray(np.log(w), d),
        jnp.asarray(items, d), jnp.asarray(globals_, d))
    return float(ll) + _log_choose(problem)


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
    cols = _logistic_columns(problem)
    # A 1PL on a complete matrix: one row per raw score (see _Counts).
    counts = _Counts(problem, dense, single=tol >= _SINGLE_TOL,
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
    marginal = float(ll) + _log_choose(problem)
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
