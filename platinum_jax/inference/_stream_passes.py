"""The passes over the data of the streamed 2PL (:mod:`._stream`): the code matrix in blocks of
subjects on the device(s), the E-step's statistics and the EAP abilities, one scan over the
blocks each, split over a mesh of devices when one is given.

For a block of subjects, ``K`` (right) and ``N`` (observed) are its 0/1 matrices (float
``cdt``, exact in float32) and, on ``Q`` nodes ``theta_q``, ``p_jq = sigmoid(a_j (theta_q -
b_j))``:

* ``l_sq = theta_q (K a)_s - (K (a b))_s + (N log(1 - p))_sq``: the success part is linear in
  ``theta_q``, so two columns, not ``Q``; the rest is one matrix product per block.
* M-step statistics: ``r1_j = (K^T E[theta | s])_j`` and the expected attempts
  ``n_jq = (N^T pi)_jq`` (``pi`` the posteriors over the nodes).
* With ``scale``, the curvature of the marginal log-likelihood along the common location and
  scale of the abilities (``theta_q -> mu + s theta_q``): by Louis's identity the observed
  Hessian is the expected complete-data Hessian (from ``n``, no pass needed) plus the posterior
  covariance of the complete-data score, per subject ``u_q = (c_s - d_sq) (1, theta_q)`` with
  ``c_s = (K a)_s`` and ``d_sq = (N (a p))_sq``: one more product, sharing ``N`` with
  ``log(1 - p)``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import CodedResponses

_ROW_ALIGN = CodedResponses.ROW_ALIGN


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
def _sharded(kind, mesh, cdt, scale=False):
    """``_e_pass`` (``kind="e"``) or ``_eap_pass`` (``"eap"``) with each device scanning its own
    blocks: the E-step's statistics summed across the mesh, the abilities left split."""
    P = jax.sharding.PartitionSpec
    axis = mesh.axis_names[0]
    if kind == "e":
        def local(blocks, a, b, nodes, log_w):
            out = _e_local(blocks, a, b, nodes, log_w, cdt, scale)
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


def _block_loglik(block, a, b, nodes, cols, cdt):
    """``l_sq`` of one block of subjects, its ``K`` and ``N`` (float ``cdt``), ``(K a)_s`` and
    ``N @ cols`` (``cols``: ``log(1 - p)`` first, then any further columns, ``(J, Q + m)``)."""
    K = (block == 2).astype(cdt)
    N = (block > 0).astype(cdt)
    lin = (K @ jnp.stack([a, a * b], axis=1).astype(cdt)).astype(a.dtype)
    rest = (N @ cols.astype(cdt)).astype(a.dtype)
    q = nodes.shape[0]
    lsq = lin[:, :1] * nodes[None, :] - lin[:, 1:] + rest[:, :q]
    return lsq, K, N, lin[:, 0], rest[:, q:]


def _e_local(blocks, a, b, nodes, log_w, cdt, scale=False):
    """One pass over the blocks: ``r1 (J,)``, ``n (J, Q)``, the marginal log-likelihood, the
    abilities' moments over the subjects with at least one response ``(count, sum E[theta],
    sum E[theta^2])`` and, with ``scale``, the summed posterior covariance of the score in
    ``(mu, s)`` as ``(var mu, cov, var s)`` (zeros without)."""
    log_q = _log_q(a, b, nodes)
    ones = jnp.ones((log_q.shape[0], 1), log_q.dtype)
    if scale:
        ap = a[:, None] * jax.nn.sigmoid(a[:, None] * (nodes[None, :] - b[:, None]))
        cols = jnp.concatenate([log_q, ones, ap], axis=1)
    else:
        cols = jnp.concatenate([log_q, ones], axis=1)

    def one(carry, block):
        r1, n, ll, mom, cov = carry
        lsq, K, N, ka, extra = _block_loglik(block, a, b, nodes, cols, cdt)
        lsq = lsq + log_w
        norm = jax.scipy.special.logsumexp(lsq, axis=1, keepdims=True)
        post = jnp.exp(lsq - norm)
        e_theta = post @ nodes
        r1 = r1 + (K.T @ e_theta.astype(cdt)).astype(r1.dtype)
        n = n + (N.T @ post.astype(cdt)).astype(n.dtype)
        # subjects with no response (padding among them) carry no information on the scale
        real = (extra[:, 0] > 0).astype(a.dtype)
        mom = mom + jnp.stack([jnp.sum(real), real @ e_theta, real @ (post @ nodes**2)])
        if scale:
            g = ka[:, None] - extra[:, 1:]  # the score's common factor at each node
            e1, e2 = jnp.sum(post * g, axis=1), (post * g) @ nodes
            pg2 = post * g * g
            cov = cov + jnp.stack([jnp.sum(jnp.sum(pg2, axis=1) - e1**2),
                                   jnp.sum(pg2 @ nodes - e1 * e2),
                                   jnp.sum(pg2 @ nodes**2 - e2**2)])
        return (r1, n, ll + jnp.sum(norm), mom, cov), None

    dt = a.dtype
    init = (jnp.zeros(a.shape, dt), jnp.zeros((a.shape[0], nodes.shape[0]), dt),
            jnp.zeros((), dt), jnp.zeros(3, dt), jnp.zeros(3, dt))
    out, _ = jax.lax.scan(one, init, blocks)
    return out


_e_jit = jax.jit(_e_local, static_argnames=("cdt", "scale"))


def _e_pass(blocks, a, b, nodes, log_w, cdt, mesh=None, scale=False):
    if mesh is None:
        return _e_jit(blocks, a, b, nodes, log_w, cdt=cdt, scale=scale)
    return _sharded("e", mesh, cdt, scale)(blocks, a, b, nodes, log_w)


def _eap_local(blocks, a, b, grid, log_prior, level, cdt):
    """Posterior mean, SD and central ``level`` interval of every subject's ability on the
    grid, block by block. The interval's ends are the posterior's quantiles, the grid's
    cumulative mass interpolated linearly between points."""
    log_q = _log_q(a, b, grid)
    tails = jnp.stack([(1.0 - level) / 2.0, (1.0 + level) / 2.0])

    def one(_, block):
        lsq, _, _, _, _ = _block_loglik(block, a, b, grid, log_q, cdt)
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
