"""The responses as marginal EM reads them: dense subject x item matrices, one row per raw
score (a complete 1PL), or rows (any sparsity); see :mod:`._marginal` for the EM itself.

The layout is chosen from the data (:class:`Counts`); the E- and M-steps ask it for the
products they need (``l_sq`` from ``logit p`` and ``log(1 - p)``, expected counts ``r_iq`` and
``n_iq``, or the two moments the closed-form logistic path reads), so no step needs to know
which layout it runs on.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax._memory import dense_layout
from platinum_jax.models import Binomial

from ._problem import Problem

__all__ = ["Counts", "SINGLE_TOL", "log_choose"]

# Dense E-step where dense_layout says so (at most DENSE_CELLS cells, by default).
# Expected counts from a float32 product where that is exact in the inputs (see Counts), for
# stopping tolerances at least SINGLE_TOL: float32 rounding moves an EM step by about 1e-7,
# so tighter tolerances need the float64 product to be reachable.
_SINGLE_COUNTS = True
SINGLE_TOL = 1e-6


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


def log_choose(problem: Problem) -> float:
    """Constant of the binomial log-likelihood (0 for Bernoulli rows)."""
    t = problem.table
    if not isinstance(problem.model.likelihood, Binomial) or t.trials is None:
        return 0.0
    from scipy.special import gammaln

    n = np.asarray(t.trials, np.float64)
    k = np.asarray(t.response) * n
    w = np.ones(t.n_responses) if t.weight is None else np.asarray(t.weight)
    return float(np.sum(w * (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))))


class Counts:
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
        self.dense = dense_layout(t.n_subjects, t.n_items, dense)
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
                # sums (see logistic_loglik and moments): no K matrix at all.
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
        return isinstance(other, Counts) and self._key() == other._key()

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
