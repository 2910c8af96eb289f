"""Item-level 2PL fits at leaderboard scale: responses streamed from Parquet into one byte per
cell, Bock-Aitkin EM over blocks of subjects, EAP abilities in blocks.

Layout: :class:`~platinum_jax.data.CodedResponses` (one byte per cell: 0 not observed, 1 wrong,
2 right), read from Parquet in record batches by :func:`~platinum_jax.data.read_parquet_streamed`.

EM (Bock and Aitkin 1981), binary responses, ``p_jq = sigmoid(a_j (theta_q - b_j))`` on ``Q``
nodes ``theta_q`` (:func:`~platinum_jax.inference._marginal.quadrature`). For a block of
subjects, ``K`` (right) and ``N`` (observed) are its 0/1 matrices (float32, exact), and

* E-step: ``l_sq = theta_q (K a)_s - (K (a b))_s + (N log(1 - p))_sq``: the success part is
  linear in ``theta_q``, so two columns, not ``Q``; the rest is one matrix product per block.
* M-step statistics: ``r0_j = sum_s K_sj`` (fixed), ``r1_j = (K^T E[theta | s])_j`` and the
  expected attempts ``n_jq = (N^T pi)_jq``; each item then takes Fisher-scoring steps in
  ``(b_j, log a_j)`` with its 2 x 2 information, keeping the first of the step sizes 1, 1/2,
  ... at which its objective does not rise. The objective is the package's 2PL: minus the
  marginal log-likelihood plus the priors ``b ~ N(0, 3^2)`` and ``log a ~ N(0, 1)``, so the
  estimates equal those of ``fit(TwoPL(), table, method="marginal")`` (a test holds the two
  together).

The products run in float32 (the 0/1 matrices are exact; ``log(1 - p)`` rounds at about
``1e-7``, which moves the estimates by about ``1e-6``); everything else in float64
(``jax_enable_x64``), which the fit needs. Memory: the code matrix plus one block's float32
``K``, ``N`` and products (``block_cells`` cells, 8 bytes each) plus ``(J, Q)`` statistics.
Time per EM step: ``4 N J Q`` flops in the two products (about 2 CPU s for 4 x 10^8 cells, 61
nodes); blocks of 2^22 cells keep them near the caches (0.43 CPU s with 2^24 on 4 x 10^7 cells,
0.22-0.27 s with 2^21-2^22).
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import CodedResponses, read_parquet_streamed

_ROW_ALIGN = CodedResponses.ROW_ALIGN

__all__ = ["StreamedFit", "fit_streamed_2pl", "score_streamed_2pl"]

_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)


# ---------------------------------------------------------------------- the EM
def _blocks(codes: np.ndarray, block_cells: int, mesh=None):
    """The code matrix on the device(s) as ``(n_blocks, rows, n_items)``: ``rows`` a multiple
    of _ROW_ALIGN with at most ``block_cells`` cells (at least _ROW_ALIGN rows), the matrix
    padded with empty subjects to a whole number of blocks, and with a ``mesh`` to a multiple
    of its devices, the blocks split across them."""
    n_rows, n_items = codes.shape
    rows = max(_ROW_ALIGN, block_cells // n_items // _ROW_ALIGN * _ROW_ALIGN)
    per = 1 if mesh is None else mesh.size
    rows = min(rows, -(-n_rows // (_ROW_ALIGN * per)) * _ROW_ALIGN)
    n_blocks = -(-n_rows // (rows * per)) * per
    if n_blocks * rows != n_rows:
        host = np.zeros((n_blocks * rows, n_items), np.int8)
        host[:n_rows] = codes
        codes = host
    host = codes.reshape(n_blocks, rows, n_items)
    if mesh is None:
        return jnp.asarray(host), rows
    spec = jax.sharding.PartitionSpec(mesh.axis_names[0])
    return jax.device_put(host, jax.sharding.NamedSharding(mesh, spec)), rows


def _mesh(mesh):
    """``None`` (one device), ``True`` (every device JAX sees) or a 1-D ``Mesh``."""
    if mesh is None or mesh is False:
        return None
    from ._first_order import row_mesh

    mesh = row_mesh() if mesh is True else mesh
    if len(mesh.axis_names) != 1:
        raise ValueError(f"the subjects shard over a 1-D mesh; this one has axes "
                         f"{mesh.axis_names}: build one with row_mesh()")
    return mesh


@functools.lru_cache(maxsize=16)
def _sharded(kind, mesh, cdt):
    """``_e_pass`` (``kind="e"``) or ``_eap_pass`` (``"eap"``) with each device scanning its own
    blocks: the E-step's statistics summed across the mesh, the abilities left split."""
    P = jax.sharding.PartitionSpec
    axis = mesh.axis_names[0]
    if kind == "e":
        def local(blocks, a, b, nodes, log_w):
            out = _e_local(blocks, a, b, nodes, log_w, cdt)
            return jax.tree.map(lambda v: jax.lax.psum(v, axis), out)
        specs, out_specs = (P(axis), P(), P(), P(), P()), P()
    else:
        def local(blocks, a, b, grid, log_prior, level):
            return _eap_local(blocks, a, b, grid, log_prior, level, cdt)
        specs, out_specs = (P(axis), P(), P(), P(), P(), P()), P(axis)
    # check_vma off: the scan carries start replicated and become per-device sums
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=out_specs,
                                 check_vma=False))


def _host(x) -> np.ndarray:
    """A device array on this host in full; split over several processes
    (``jax.distributed``), every process's part gathered."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def _log_q(a, b, nodes):
    """``log(1 - p_jq)`` ``(J, Q)``."""
    return -jax.nn.softplus(a[:, None] * (nodes[None, :] - b[:, None]))


def _block_loglik(block, a, b, nodes, log_q, cdt):
    """``l_sq`` of one block of subjects, its ``K`` and ``N`` (float ``cdt``) and each
    subject's number of observed responses (a column of ones beside ``log_q``)."""
    K = (block == 2).astype(cdt)
    N = (block > 0).astype(cdt)
    lin = (K @ jnp.stack([a, a * b], axis=1).astype(cdt)).astype(a.dtype)
    ones = jnp.ones((log_q.shape[0], 1), log_q.dtype)
    rest = (N @ jnp.concatenate([log_q, ones], axis=1).astype(cdt)).astype(a.dtype)
    lsq = lin[:, :1] * nodes[None, :] - lin[:, 1:] + rest[:, :-1]
    return lsq, K, N, rest[:, -1]


def _e_local(blocks, a, b, nodes, log_w, cdt):
    """One pass over the blocks: ``r1 (J,)``, ``n (J, Q)``, the marginal log-likelihood and
    the abilities' moments over the subjects with at least one response: ``(count,
    sum E[theta], sum E[theta^2])``."""
    log_q = _log_q(a, b, nodes)

    def one(carry, block):
        r1, n, ll, mom = carry
        lsq, K, N, seen = _block_loglik(block, a, b, nodes, log_q, cdt)
        lsq = lsq + log_w
        norm = jax.scipy.special.logsumexp(lsq, axis=1, keepdims=True)
        post = jnp.exp(lsq - norm)
        e_theta = post @ nodes
        r1 = r1 + (K.T @ e_theta.astype(cdt)).astype(r1.dtype)
        n = n + (N.T @ post.astype(cdt)).astype(n.dtype)
        # subjects with no response (padding among them) carry no information on the scale
        real = (seen > 0).astype(a.dtype)
        mom = mom + jnp.stack([jnp.sum(real), real @ e_theta, real @ (post @ nodes**2)])
        return (r1, n, ll + jnp.sum(norm), mom), None

    dt = a.dtype
    init = (jnp.zeros(a.shape, dt), jnp.zeros((a.shape[0], nodes.shape[0]), dt),
            jnp.zeros((), dt), jnp.zeros(3, dt))
    (r1, n, ll, mom), _ = jax.lax.scan(one, init, blocks)
    return r1, n, ll, mom


_e_jit = jax.jit(_e_local, static_argnames=("cdt",))


def _e_pass(blocks, a, b, nodes, log_w, cdt, mesh=None):
    if mesh is None:
        return _e_jit(blocks, a, b, nodes, log_w, cdt=cdt)
    return _sharded("e", mesh, cdt)(blocks, a, b, nodes, log_w)


def _item_objective(b, la, r0, r1, n, nodes):
    """Per item: ``sum_q n softplus(z) - sum_q r z`` plus the 2PL's priors (``b ~ N(0, 9)``,
    ``log a ~ N(0, 1)``, constants dropped), with ``sum_q r z = a (r1 - b r0)``."""
    a = jnp.exp(la)
    z = a[:, None] * (nodes[None, :] - b[:, None])
    return (jnp.sum(n * jax.nn.softplus(z), axis=1) - a * (r1 - b * r0)
            + b**2 / 18.0 + la**2 / 2.0)


@functools.partial(jax.jit, static_argnames=("newton_steps",))
def _m_step(b, la, r0, r1, n, nodes, newton_steps):
    """Fisher scoring per item in ``(b, log a)``: gradient ``(a sum e + b/9, -sum z e + log a)``,
    information ``sum_q v [[a^2, -a z], [-a z, z^2]] + diag(1/9, 1)`` with ``e = r - n p``,
    ``v = n p (1 - p)``; the first step size of 1, 1/2, ... that does not raise the item's
    objective."""
    steps = jnp.asarray(_STEPS, b.dtype)

    def one(state, _):
        b, la = state
        a = jnp.exp(la)
        z = a[:, None] * (nodes[None, :] - b[:, None])
        p = jax.nn.sigmoid(z)
        v = n * p * (1.0 - p)
        sum_e = r0 - jnp.sum(n * p, axis=1)
        sum_ze = a * (r1 - b * r0) - jnp.sum(z * n * p, axis=1)
        gb = a * sum_e + b / 9.0
        ga = -sum_ze + la
        hbb = a**2 * jnp.sum(v, axis=1) + 1.0 / 9.0
        hba = -a * jnp.sum(v * z, axis=1)
        haa = jnp.sum(v * z * z, axis=1) + 1.0
        det = hbb * haa - hba**2
        db = (haa * gb - hba * ga) / det
        da = (hbb * ga - hba * gb) / det
        ok = jnp.isfinite(db) & jnp.isfinite(da)
        db, da = jnp.where(ok, db, 0.0), jnp.where(ok, da, 0.0)
        f0 = _item_objective(b, la, r0, r1, n, nodes)
        trial = jax.vmap(lambda t: _item_objective(b - t * db, la - t * da, r0, r1, n,
                                                   nodes))(steps)
        good = jnp.isfinite(trial) & (trial <= f0 + 1e-12 * jnp.abs(f0))
        t = steps[jnp.argmax(good, axis=0)]  # the first good one; the last (0) always is
        return (b - t * db, la - t * da), None

    (b, la), _ = jax.lax.scan(one, (b, la), None, length=newton_steps)
    return b, la


@jax.jit
def _expand(b, la, mom):
    """The parameter-expanded step (Liu, Rubin and Wu 1998, "Parameter expansion to accelerate
    EM: the PX-EM algorithm"): in the complete data the abilities are ``N(mu, sigma^2)`` and the
    items ``(b*, a*)`` those just fitted on the nodes; the observed data see only
    ``a = a* sigma``, ``b = (b* - mu) / sigma``. ``(mu, log sigma)`` maximise the abilities'
    expected complete-data log-likelihood plus the items' priors at the reduced ``(b, log a)``,
    ``-S log sigma - (S2 - 2 mu S1 + S mu^2 + sum_j (b*_j - mu)^2 / 9) / (2 sigma^2)
    - sum_j (log a*_j + log sigma)^2 / 2`` (``S, S1, S2`` in ``mom``: the count and the sums of
    ``E[theta]`` and ``E[theta^2]``): ``mu = (S1 + sum b* / 9) / (S + J / 9)``, and
    ``log sigma`` the root of the decreasing ``-S + A sigma^-2 - sum_j (log a*_j + log sigma)``
    (Newton steps; ``A`` the bracket above at ``mu``). Without the priors: the mean and
    variance of the abilities. It moves the common location and scale of all items at once, the
    direction plain EM creeps along when each subject answers many items. It treats the
    abilities as continuous, so on a grid coarser than the posteriors it is no ascent step of
    the quadrature's likelihood (:func:`_squarem` then hands over to plain EM)."""
    count, s1, s2 = mom[0], mom[1], mom[2]
    n_items = b.shape[0]
    mu = (s1 + jnp.sum(b) / 9.0) / (count + n_items / 9.0)
    big_a = s2 - 2.0 * mu * s1 + count * mu**2 + jnp.sum((b - mu) ** 2) / 9.0
    sum_la = jnp.sum(la)

    def newton(ls, _):
        g = -count + big_a * jnp.exp(-2.0 * ls) - sum_la - n_items * ls
        h = -2.0 * big_a * jnp.exp(-2.0 * ls) - n_items
        return ls - g / h, None

    # the root function is decreasing and convex: after the first Newton step every iterate
    # lies at or left of the root and they rise to it
    ls, _ = jax.lax.scan(newton, jnp.zeros((), b.dtype), None, length=30)
    ok = jnp.isfinite(ls) & jnp.isfinite(mu) & (count > 0)
    ls, mu = jnp.where(ok, ls, 0.0), jnp.where(ok, mu, 0.0)
    return (b - mu) * jnp.exp(-ls), la + ls


def _eap_local(blocks, a, b, grid, log_prior, level, cdt):
    """Posterior mean, SD and central ``level`` interval of every subject's ability on the
    grid, block by block. The interval's ends are the posterior's quantiles, the grid's
    cumulative mass interpolated linearly between points."""
    log_q = _log_q(a, b, grid)
    tails = jnp.stack([(1.0 - level) / 2.0, (1.0 + level) / 2.0])

    def one(_, block):
        lsq, _, _, _ = _block_loglik(block, a, b, grid, log_q, cdt)
        lsq = lsq + log_prior
        post = jnp.exp(lsq - jax.scipy.special.logsumexp(lsq, axis=1, keepdims=True))
        mean = post @ grid
        sd = jnp.sqrt(jnp.maximum(post @ grid**2 - mean**2, 0.0))
        cdf = jnp.cumsum(post, axis=1)
        ends = jax.vmap(lambda c: jnp.interp(tails, c, grid))(cdf)
        return None, (mean, sd, ends[:, 0], ends[:, 1])

    _, out = jax.lax.scan(one, None, blocks)
    return tuple(v.reshape(-1) for v in out)


_eap_jit = jax.jit(_eap_local, static_argnames=("cdt",))


def _eap_pass(blocks, a, b, grid, log_prior, level, cdt, mesh=None):
    if mesh is None:
        return _eap_jit(blocks, a, b, grid, log_prior, level, cdt=cdt)
    return _sharded("eap", mesh, cdt)(blocks, a, b, grid, log_prior, jnp.asarray(level))


def _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps, max_iter, tol, mesh,
             expanded=True):
    """EM steps ``F`` accelerated by squared extrapolation (SQUAREM; Varadhan and Roland 2008,
    "Simple and globally convergent methods for accelerating the convergence of any EM
    algorithm"), as :func:`~platinum_jax.inference.fit_marginal` does: from ``x0``, ``x1 = F(x0)``
    and ``x2 = F(x1)`` give ``r = x1 - x0``, ``v = x2 - 2 x1 + x0`` and the point
    ``x' = x0 - 2 alpha r + alpha^2 v``, ``alpha = -|r| / |v|`` in ``[-step_max, -1]``;
    ``F(x')`` is kept when the objective (minus the marginal log-likelihood plus the priors) at
    ``x'`` is no worse than at ``x0``, else ``x2``. Stops when the plain EM step from ``x0``
    moves no parameter more than ``tol``.

    With ``expanded``, ``F`` first ends each EM step with :func:`_expand` (PX-EM), until that
    map moves nothing more than ``tol`` or the objective rises along it; plain EM then
    finishes, so the fixed point is plain EM's.
    Returns ``(b, log a, EM steps, last change, log-likelihood at the end, expanded steps)``."""
    def em(b, la):
        """The plain and the expanded step from ``(b, la)``, the objective and log-likelihood."""
        r1, n, ll, mom = _e_pass(blocks, jnp.exp(la), b, x, log_w, cdt, mesh)
        plain = _m_step(b, la, r0, r1, n, x, newton_steps)
        wide = _expand(*plain, mom) if px else plain
        return plain, wide, float(-ll + jnp.sum(b**2 / 18.0 + la**2 / 2.0)), float(ll)

    def dist(u, w):
        return float(jnp.maximum(jnp.max(jnp.abs(u[0] - w[0])), jnp.max(jnp.abs(u[1] - w[1]))))

    x0, it, step_max, change, ll = (b, la), 0, 1.0, np.inf, np.nan
    px, px_steps, f_prev = expanded, 0, np.inf
    while it < max_iter:
        p1, g1, f0, ll = em(*x0)
        it += 1
        if px and (f0 > f_prev or dist(g1, x0) <= tol):
            px, px_steps = False, it - 1
        f_prev = f0
        x1 = g1 if px else p1
        change = dist(p1, x0)
        if change <= tol or it >= max_iter:
            x0 = p1
            break
        p2, g2, f1, _ = em(*x1)
        it += 1
        if px and not f1 <= f0:  # the expanded step raised the objective: plain EM from here
            px, px_steps, x0 = False, it - 2, p1
            continue
        x2 = g2 if px else p2
        r = (x1[0] - x0[0], x1[1] - x0[1])
        v = (x2[0] - 2 * x1[0] + x0[0], x2[1] - 2 * x1[1] + x0[1])
        rr = float(jnp.sum(r[0] ** 2) + jnp.sum(r[1] ** 2))
        vv = float(jnp.sum(v[0] ** 2) + jnp.sum(v[1] ** 2))
        alpha = min(-1.0, max(-step_max, -np.sqrt(rr / vv) if vv > 0 else -1.0))
        xp = tuple(x0[k] - 2 * alpha * r[k] + alpha**2 * v[k] for k in range(2))
        if it >= max_iter:
            x0 = tuple(x2)
            break
        pp, gp, fp, _ = em(*xp)
        it += 1
        fx = gp if px else pp
        if np.isfinite(fp) and fp <= f0 and all(bool(jnp.all(jnp.isfinite(u))) for u in fx):
            x0 = tuple(fx)
            step_max = 4.0 * step_max if alpha <= -step_max else step_max
        else:
            x0 = tuple(x2)
            step_max = max(1.0, step_max / 4.0)
    return x0[0], x0[1], it, change, ll, px_steps if not px else it


@dataclass
class StreamedFit:
    """A streamed 2PL fit: ``items`` (difficulty, discrimination by item), ``subjects``
    (ability, ability_sd: EAP and posterior SD by subject), ``diagnostics``."""

    items: pd.DataFrame
    subjects: pd.DataFrame
    converged: bool
    diagnostics: dict = field(default_factory=dict)

    def files(self) -> dict[str, str]:
        """``items.csv``, ``subjects.csv`` and ``fit.json``, as ``fit`` writes them."""
        summary = {"model": "2pl", "method": "marginal", "layout": "streamed",
                   "converged": self.converged, "diagnostics": self.diagnostics}
        return {"items.csv": self.items.to_csv(), "subjects.csv": self.subjects.to_csv(),
                "fit.json": json.dumps(summary, indent=2) + "\n"}

    def write(self, out: str | Path, *, overwrite: bool = False) -> list[Path]:
        """Write :meth:`files` into the directory ``out``, all or nothing (a failed run leaves
        ``out`` as it was)."""
        from platinum_jax._outputs import output_directory

        with output_directory(out, "fit", overwrite=overwrite) as d:
            return [d.write_text(name, text) for name, text in self.files().items()]


def fit_streamed_2pl(responses: CodedResponses | str | Path, *, nodes: int = 61,
                     max_iter: int = 500, tol: float = 1e-4, newton_steps: int = 2,
                     eap_nodes: int = 241, block_cells: int = 1 << 22,
                     batch_rows: int = 1 << 22, mesh=None,
                     expanded: bool = True) -> StreamedFit:
    """Marginal (Bock-Aitkin EM) 2PL fit of binary responses held one byte per cell, with
    EAP abilities; ``responses`` a :class:`CodedResponses` or a Parquet path (read by
    :func:`read_parquet_streamed`). Float64 (``jax_enable_x64``) is required.

    The estimates are those of ``fit(TwoPL(), table, method="marginal", nodes=nodes)`` (same
    objective, priors and quadrature); the EM steps are extrapolated by SQUAREM, and the fit
    stops when an EM step moves no ``b_j`` or ``log a_j`` more than ``tol``. ``block_cells``: cells per block
    of subjects (memory: about 10 bytes a cell beyond the code matrix). ``mesh``: ``True``
    (every device JAX sees, every host's under ``jax.distributed``) or a 1-D
    :class:`jax.sharding.Mesh` splits the blocks of subjects across devices; each device runs
    the E-step on its own blocks and the item statistics are summed across them (the same
    estimates as on one device, up to the order of the sums). ``expanded`` (default) ends the
    first EM steps with a parameter-expanded step (PX-EM, Liu, Rubin and Wu 1998) that re-fits
    the abilities' location and scale and moves all items with them, until it stops moving or
    the objective rises along it; plain EM then finishes, so the estimates are plain EM's
    (``expanded=False``), reached in far fewer steps when each subject answers many items.

    Returns:
        A :class:`StreamedFit`; ``diagnostics``: the marginal log-likelihood, the EM steps (the
        first ``expanded_steps`` expanded), the last change, the seconds of reading and fitting.
    """
    from ._marginal import quadrature

    if not jax.config.jax_enable_x64:
        raise ValueError("the streamed fit needs float64: call "
                         "jax.config.update('jax_enable_x64', True) before any JAX work")
    for name, value, least in (("nodes", nodes, 2), ("max_iter", max_iter, 1),
                               ("newton_steps", newton_steps, 1), ("eap_nodes", eap_nodes, 3),
                               ("block_cells", block_cells, 1)):
        if value < least:
            raise ValueError(f"{name} must be >= {least} (got {value})")
    if not tol > 0:
        raise ValueError(f"tol must be > 0 (got {tol})")
    t0 = time.perf_counter()
    if not isinstance(responses, CodedResponses):
        responses = read_parquet_streamed(responses, batch_rows=batch_rows)
    t_read = time.perf_counter() - t0
    codes = responses.codes
    mesh = _mesh(mesh)
    blocks, rows = _blocks(codes, block_cells, mesh)
    cdt = jnp.float32 if tol >= 1e-6 else jnp.float64  # exact 0/1 matrices in float32
    f64 = jnp.float64
    x, w = quadrature(nodes)
    x, log_w = jnp.asarray(x, f64), jnp.asarray(np.log(w), f64)
    # successes and attempts per item from the codes, column by column of blocks
    r0 = np.zeros(responses.n_items)
    att = np.zeros(responses.n_items)
    for k in range(0, codes.shape[0], rows):
        part = codes[k:k + rows]
        r0 += np.count_nonzero(part == 2, axis=0)
        att += np.count_nonzero(part, axis=0)
    # difficulties started where each item's share of successes puts them (at a = 1)
    share = (r0 + 0.5) / (att + 1.0)
    b = jnp.asarray(-np.log(share / (1.0 - share)) * np.sqrt(1.0 + np.pi / 8.0), f64)
    la = jnp.zeros(responses.n_items, f64)
    r0 = jnp.asarray(r0, f64)
    b, la, it, change, ll, px_steps = _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps,
                                               max_iter, tol, mesh, expanded)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    mean, sd, _, _ = _eap_pass(blocks, jnp.exp(la), b, jnp.asarray(grid, f64),
                               jnp.asarray(log_prior, f64), 0.95, cdt, mesh)
    n_s = responses.n_subjects
    items = pd.DataFrame({"difficulty": np.asarray(b), "discrimination": np.exp(np.asarray(la))},
                         index=responses.items)
    subjects = pd.DataFrame({"ability": _host(mean)[:n_s], "ability_sd": _host(sd)[:n_s]},
                            index=responses.subjects)
    converged = bool(change <= tol)
    return StreamedFit(items, subjects, converged, {
        "marginal_log_lik": float(ll), "iterations": it, "max_change": float(change),
        "nodes": nodes, "expanded_steps": px_steps, "n_responses": responses.n_responses,
        "devices": 1 if mesh is None else mesh.size,
        "n_subjects": n_s, "n_items": responses.n_items, "block_rows": rows,
        "seconds_read": t_read, "seconds_total": time.perf_counter() - t0})


def score_streamed_2pl(responses: CodedResponses | str | Path, items: pd.DataFrame, *,
                       level: float = 0.95, eap_nodes: int = 241, block_cells: int = 1 << 22,
                       batch_rows: int = 1 << 22, mesh=None) -> pd.DataFrame:
    """EAP abilities of new subjects against frozen 2PL items, block by block.

    ``items``: indexed by item label with ``difficulty`` and ``discrimination`` columns (a
    fit's ``items``); every item of ``responses`` must be there (the extra ones are unused).
    Under the prior ``theta ~ N(0, 1)`` on ``eap_nodes`` even points over +-6, each subject gets
    its posterior mean (``ability``), SD (``ability_sd``) and central ``level`` interval
    (``lower``, ``upper``: posterior quantiles). Float64 required, as for the fit; ``mesh``
    splits the subjects across devices as in :func:`fit_streamed_2pl`.
    """
    if not jax.config.jax_enable_x64:
        raise ValueError("scoring needs float64: call "
                         "jax.config.update('jax_enable_x64', True) before any JAX work")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1) (got {level})")
    if eap_nodes < 3 or block_cells < 1:
        raise ValueError(f"eap_nodes must be >= 3 and block_cells >= 1 (got {eap_nodes}, "
                         f"{block_cells})")
    missing_cols = {"difficulty", "discrimination"} - set(items.columns)
    if missing_cols:
        raise ValueError(f"items lacks the columns {sorted(missing_cols)}; pass a 2PL fit's "
                         "items table (difficulty, discrimination by item)")
    if not isinstance(responses, CodedResponses):
        responses = read_parquet_streamed(responses, batch_rows=batch_rows)
    unknown = responses.items.difference(items.index)
    if len(unknown):
        raise ValueError(f"{len(unknown)} items of the responses are not in items (e.g. "
                         f"{list(unknown[:5])}); score against the fit that calibrated them")
    frozen = items.loc[responses.items, ["difficulty", "discrimination"]].to_numpy(np.float64)
    if not np.all(np.isfinite(frozen)) or np.any(frozen[:, 1] <= 0):
        raise ValueError("items must have finite difficulties and positive discriminations")
    mesh = _mesh(mesh)
    blocks, _ = _blocks(responses.codes, block_cells, mesh)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    f64 = jnp.float64
    out = _eap_pass(blocks, jnp.asarray(frozen[:, 1], f64), jnp.asarray(frozen[:, 0], f64),
                    jnp.asarray(grid, f64), jnp.asarray(log_prior, f64), level, jnp.float32,
                    mesh)
    n_s = responses.n_subjects
    return pd.DataFrame({k: _host(v)[:n_s] for k, v in
                         zip(("ability", "ability_sd", "lower", "upper"), out, strict=True)},
                        index=responses.subjects)
