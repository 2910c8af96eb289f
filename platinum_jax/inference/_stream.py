"""Item-level 2PL fits at leaderboard scale: responses streamed from Parquet into one byte per
cell, Bock-Aitkin EM over blocks of subjects, EAP abilities in blocks.

Layout. A leaderboard of ``N`` subjects (AI models) and ``J`` items is held as an ``int8``
matrix of codes ``c_sj``: 0 not observed, 1 wrong, 2 right. That is one byte per cell: 0.4 GB
for 40,000 x 10,000 cells, against 0.9 GB for the same 10^8 responses as long rows (two
``int32`` indices and an ``int8`` response), so this layout is the smaller of the two whenever
more than one cell in nine is observed. The Parquet file is read in record batches (never as
one frame): each batch's labels are coded against the labels seen so far, and only the row
codes (9 bytes a response) are kept until the matrix is filled.

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
Time per EM step: ``4 N J Q`` flops in the two products (a few seconds for 4 x 10^8 cells on
two CPU cores).
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

__all__ = ["CodedResponses", "StreamedFit", "read_parquet_streamed", "fit_streamed_2pl",
           "score_streamed_2pl"]

_ROW_ALIGN = 256  # the code matrix's rows are padded to a multiple of this (empty subjects)
_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)
_ALIASES = {"subject": ("subject", "model"), "response": ("response", "score")}


@dataclass(frozen=True)
class CodedResponses:
    """Binary responses as one byte per (subject, item) cell.

    ``codes``: ``(n_rows, n_items)`` int8, 0 not observed, 1 wrong, 2 right; rows from
    ``n_subjects`` on are padding (all 0). ``subjects`` and ``items``: sorted labels."""

    codes: np.ndarray
    subjects: pd.Index
    items: pd.Index
    n_responses: int

    def __post_init__(self):
        c = self.codes
        if not (isinstance(c, np.ndarray) and c.dtype == np.int8 and c.ndim == 2):
            raise ValueError("codes must be a 2-d int8 NumPy array (0 not observed, 1 wrong, "
                             f"2 right); got {type(c).__name__} {getattr(c, 'dtype', '')}")
        if c.shape[0] < len(self.subjects) or c.shape[1] != len(self.items):
            raise ValueError(f"codes has shape {c.shape}; it needs at least one row per subject "
                             f"({len(self.subjects)}) and one column per item "
                             f"({len(self.items)})")

    @property
    def n_subjects(self) -> int:
        return len(self.subjects)

    @property
    def n_items(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return (f"CodedResponses({self.n_responses:,} responses, {self.n_subjects:,} subjects "
                f"x {self.n_items:,} items, {self.codes.nbytes / 2**20:,.0f} MiB)")

    @classmethod
    def from_arrays(cls, subject_index, item_index, response, *, subjects=None, items=None):
        """From row arrays: integer positions and 0/1 responses (labels default to
        ``s0, s1, ...`` and ``i0, i1, ...``)."""
        s = np.asarray(subject_index)
        i = np.asarray(item_index)
        y = np.asarray(response)
        if not (s.shape == i.shape == y.shape and s.ndim == 1):
            raise ValueError("subject_index, item_index and response must be 1-d arrays of one "
                             f"length (got shapes {s.shape}, {i.shape}, {y.shape})")
        n_s = int(s.max()) + 1 if subjects is None else len(subjects)
        n_i = int(i.max()) + 1 if items is None else len(items)
        subjects = pd.Index([f"s{k}" for k in range(n_s)] if subjects is None else subjects,
                            name="subject")
        items = pd.Index([f"i{k}" for k in range(n_i)] if items is None else items, name="item")
        _check_binary(y, "response")
        codes = _fill(s, i, y.astype(np.int8), n_s, n_i, "the arrays")
        return cls(codes, subjects, items, int(s.size))


def _check_binary(y: np.ndarray, where: str, offset: int = 0) -> None:
    bad = ~((y == 0) | (y == 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{where}: response must be 0 or 1 for the streamed 2PL fit; row {offset + k} has "
            f"{y[k].item()!r} ({int(bad.sum())} such rows in this part). Fractions and counts take "
            "ResponseTable and fit(...) instead")


def _fill(s, i, y, n_s, n_i, where) -> np.ndarray:
    """The code matrix from row positions, in slices of rows (the flat index is int64)."""
    n_rows = -(-n_s // _ROW_ALIGN) * _ROW_ALIGN
    codes = np.zeros((n_rows, n_i), np.int8)
    flat_codes = codes.reshape(-1)
    step = 1 << 24
    for k in range(0, s.size, step):
        flat = s[k:k + step].astype(np.int64) * n_i + i[k:k + step]
        flat_codes[flat] = y[k:k + step] + 1
    observed = int(np.count_nonzero(codes))
    if observed != s.size:
        raise ValueError(
            f"{where}: {s.size - observed:,} rows repeat a (subject, item) pair already given; "
            "keep one response per pair (platinum-jax import tidy --duplicates or "
            "ResponseTable.from_frame(..., duplicates=...) combine them)")
    return codes


def _column(names, role, path):
    for name in _ALIASES.get(role, (role,)):
        if name in names:
            return name
    raise ValueError(f"{path}: no {role!r} column (columns: {list(names)}); the streamed reader "
                     "reads subject (or model), item and response (or score)")


def read_parquet_streamed(path: str | Path, *, batch_rows: int = 1 << 22) -> CodedResponses:
    """Binary responses from a long Parquet file (columns subject or model, item, response or
    score), read ``batch_rows`` rows at a time with pyarrow, into :class:`CodedResponses`.

    Memory: 9 bytes a response while reading, then the code matrix (1 byte a cell). Labels are
    sorted as :meth:`ResponseTable.from_frame` sorts them. Raises ``ValueError`` naming the file
    and row for a missing label or response, a response other than 0/1, or a repeated pair."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"responses file {path} does not exist")
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1 (got {batch_rows})")
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    cols = [_column(names, role, path) for role in ("subject", "item", "response")]
    n = pf.metadata.num_rows
    if n == 0:
        raise ValueError(f"{path} has no rows")
    s_rows, i_rows, y_rows = (np.empty(n, np.int32), np.empty(n, np.int32),
                              np.empty(n, np.int8))
    labels: list = [None, None]
    # Non-negative integer labels are their own codes (no hashing); others are coded against
    # the labels seen so far.
    integer = [pa.types.is_integer(pf.schema_arrow.field(c).type) for c in cols[:2]]
    at = 0
    for batch in pf.iter_batches(batch_size=batch_rows, columns=cols):
        m = batch.num_rows
        for k, name in enumerate(cols):
            col = batch.column(k)
            if col.null_count:
                row = at + int(np.flatnonzero(np.asarray(col.is_null()))[0])
                raise ValueError(f"{path}: column {name!r} is empty at row {row}; fill or drop "
                                 "such rows before fitting")
        for k, out in ((0, s_rows), (1, i_rows)):
            col = batch.column(k)
            if integer[k]:
                values = col.to_numpy()
                if values.min() < 0 or values.max() >= np.iinfo(np.int32).max:
                    raise ValueError(f"{path}: integer {cols[k]!r} labels must lie in "
                                     f"[0, 2^31 - 1) for the streamed reader (rows {at} to "
                                     f"{at + m - 1} hold {values.min()} to {values.max()}); "
                                     "write them as strings instead")
                out[at:at + m] = values
                continue
            uniq = pc.unique(col)
            if labels[k] is None:
                labels[k] = uniq
            else:
                new = uniq.filter(pc.invert(pc.is_in(uniq, value_set=labels[k])))
                if len(new):
                    labels[k] = pa.concat_arrays([labels[k], new.cast(labels[k].type)])
            out[at:at + m] = pc.index_in(col, value_set=labels[k]).to_numpy()
        y = batch.column(2).to_numpy(zero_copy_only=False)
        _check_binary(y, str(path), at)
        y_rows[at:at + m] = y
        at += m
    # Sorted labels: remap the codes through each label's rank (skipped when they already are
    # the ranks: integer labels 0 .. n - 1 with none absent).
    index = []
    for k, rows, role in ((0, s_rows, "subject"), (1, i_rows, "item")):
        if integer[k]:
            present = np.bincount(rows) > 0
            label_values = np.flatnonzero(present)
            rank = None if present.all() else (np.cumsum(present) - 1).astype(np.int32)
        else:
            first_seen = pd.Index(labels[k].to_pandas())
            order = first_seen.argsort()
            label_values = first_seen[order]
            rank = np.empty(len(order), np.int32)
            rank[order] = np.arange(len(order), dtype=np.int32)
            if np.array_equal(order, np.arange(len(order))):
                rank = None
        if rank is not None:
            step = 1 << 24
            for j in range(0, rows.size, step):
                rows[j:j + step] = rank[rows[j:j + step]]
        index.append(pd.Index(label_values, name=role))
    codes = _fill(s_rows, i_rows, y_rows, len(index[0]), len(index[1]), str(path))
    return CodedResponses(codes, index[0], index[1], int(n))


# ---------------------------------------------------------------------- the EM
def _blocks(codes: np.ndarray, block_cells: int):
    """The code matrix on the device as ``(n_blocks, rows, n_items)``: ``rows`` a multiple of
    _ROW_ALIGN with at most ``block_cells`` cells (at least _ROW_ALIGN rows), the matrix padded
    with empty subjects to a whole number of blocks."""
    n_rows, n_items = codes.shape
    rows = max(_ROW_ALIGN, block_cells // n_items // _ROW_ALIGN * _ROW_ALIGN)
    rows = min(rows, -(-n_rows // _ROW_ALIGN) * _ROW_ALIGN)
    n_blocks = -(-n_rows // rows)
    dev = jnp.asarray(codes)
    if n_blocks * rows != n_rows:
        dev = jnp.pad(dev, ((0, n_blocks * rows - n_rows), (0, 0)))
    return dev.reshape(n_blocks, rows, n_items), rows


def _log_q(a, b, nodes):
    """``log(1 - p_jq)`` ``(J, Q)``."""
    return -jax.nn.softplus(a[:, None] * (nodes[None, :] - b[:, None]))


def _block_loglik(block, a, b, nodes, log_q, cdt):
    """``l_sq`` of one block of subjects, its ``K`` and ``N`` (float ``cdt``)."""
    K = (block == 2).astype(cdt)
    N = (block > 0).astype(cdt)
    lin = (K @ jnp.stack([a, a * b], axis=1).astype(cdt)).astype(a.dtype)
    rest = (N @ log_q.astype(cdt)).astype(a.dtype)
    return lin[:, :1] * nodes[None, :] - lin[:, 1:] + rest, K, N


@functools.partial(jax.jit, static_argnames=("cdt",))
def _e_pass(blocks, a, b, nodes, log_w, cdt):
    """One pass over the blocks: ``r1 (J,)``, ``n (J, Q)`` and the marginal log-likelihood."""
    log_q = _log_q(a, b, nodes)

    def one(carry, block):
        r1, n, ll = carry
        lsq, K, N = _block_loglik(block, a, b, nodes, log_q, cdt)
        lsq = lsq + log_w
        norm = jax.scipy.special.logsumexp(lsq, axis=1, keepdims=True)
        post = jnp.exp(lsq - norm)
        e_theta = post @ nodes
        r1 = r1 + (K.T @ e_theta.astype(cdt)).astype(r1.dtype)
        n = n + (N.T @ post.astype(cdt)).astype(n.dtype)
        return (r1, n, ll + jnp.sum(norm)), None

    dt = a.dtype
    init = (jnp.zeros(a.shape, dt), jnp.zeros((a.shape[0], nodes.shape[0]), dt),
            jnp.zeros((), dt))
    (r1, n, ll), _ = jax.lax.scan(one, init, blocks)
    return r1, n, ll


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


@functools.partial(jax.jit, static_argnames=("cdt",))
def _eap_pass(blocks, a, b, grid, log_prior, level, cdt):
    """Posterior mean, SD and central ``level`` interval of every subject's ability on the
    grid, block by block. The interval's ends are the posterior's quantiles, the grid's
    cumulative mass interpolated linearly between points."""
    log_q = _log_q(a, b, grid)
    tails = jnp.stack([(1.0 - level) / 2.0, (1.0 + level) / 2.0])

    def one(_, block):
        lsq, _, _ = _block_loglik(block, a, b, grid, log_q, cdt)
        lsq = lsq + log_prior
        post = jnp.exp(lsq - jax.scipy.special.logsumexp(lsq, axis=1, keepdims=True))
        mean = post @ grid
        sd = jnp.sqrt(jnp.maximum(post @ grid**2 - mean**2, 0.0))
        cdf = jnp.cumsum(post, axis=1)
        ends = jax.vmap(lambda c: jnp.interp(tails, c, grid))(cdf)
        return None, (mean, sd, ends[:, 0], ends[:, 1])

    _, out = jax.lax.scan(one, None, blocks)
    return tuple(v.reshape(-1) for v in out)


def _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps, max_iter, tol):
    """EM steps ``F`` accelerated by squared extrapolation (SQUAREM; Varadhan and Roland 2008,
    "Simple and globally convergent methods for accelerating the convergence of any EM
    algorithm"), as :func:`~platinum_jax.inference.fit_marginal` does: from ``x0``, ``x1 = F(x0)``
    and ``x2 = F(x1)`` give ``r = x1 - x0``, ``v = x2 - 2 x1 + x0`` and the point
    ``x' = x0 - 2 alpha r + alpha^2 v``, ``alpha = -|r| / |v|`` in ``[-step_max, -1]``;
    ``F(x')`` is kept when the objective (minus the marginal log-likelihood plus the priors) at
    ``x'`` is no worse than at ``x0``, else ``x2``. Stops when ``F(x0)`` moves no parameter more
    than ``tol``. Returns ``(b, log a, EM steps, last change, log-likelihood at the end)``."""
    def em(b, la):
        r1, n, ll = _e_pass(blocks, jnp.exp(la), b, x, log_w, cdt)
        nb, nla = _m_step(b, la, r0, r1, n, x, newton_steps)
        return nb, nla, float(-ll + jnp.sum(b**2 / 18.0 + la**2 / 2.0)), float(ll)

    def dist(u, w):
        return float(jnp.maximum(jnp.max(jnp.abs(u[0] - w[0])), jnp.max(jnp.abs(u[1] - w[1]))))

    x0, it, step_max, change, ll = (b, la), 0, 1.0, np.inf, np.nan
    while it < max_iter:
        *x1, f0, ll = em(*x0)
        it += 1
        change = dist(x1, x0)
        if change <= tol or it >= max_iter:
            x0 = tuple(x1)
            break
        *x2, _, _ = em(*x1)
        it += 1
        r = (x1[0] - x0[0], x1[1] - x0[1])
        v = (x2[0] - 2 * x1[0] + x0[0], x2[1] - 2 * x1[1] + x0[1])
        rr = float(jnp.sum(r[0] ** 2) + jnp.sum(r[1] ** 2))
        vv = float(jnp.sum(v[0] ** 2) + jnp.sum(v[1] ** 2))
        alpha = min(-1.0, max(-step_max, -np.sqrt(rr / vv) if vv > 0 else -1.0))
        xp = tuple(x0[k] - 2 * alpha * r[k] + alpha**2 * v[k] for k in range(2))
        if it >= max_iter:
            x0 = tuple(x2)
            break
        *fx, fp, _ = em(*xp)
        it += 1
        if np.isfinite(fp) and fp <= f0 and all(bool(jnp.all(jnp.isfinite(u))) for u in fx):
            x0 = tuple(fx)
            step_max = 4.0 * step_max if alpha <= -step_max else step_max
        else:
            x0 = tuple(x2)
            step_max = max(1.0, step_max / 4.0)
    return x0[0], x0[1], it, change, ll


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
                     eap_nodes: int = 241, block_cells: int = 1 << 24,
                     batch_rows: int = 1 << 22) -> StreamedFit:
    """Marginal (Bock-Aitkin EM) 2PL fit of binary responses held one byte per cell, with
    EAP abilities; ``responses`` a :class:`CodedResponses` or a Parquet path (read by
    :func:`read_parquet_streamed`). Float64 (``jax_enable_x64``) is required.

    The estimates are those of ``fit(TwoPL(), table, method="marginal", nodes=nodes)`` (same
    objective, priors and quadrature); the EM steps are extrapolated by SQUAREM, and the fit
    stops when a plain step moves no ``b_j`` or ``log a_j`` more than ``tol``. ``block_cells``: cells per block
    of subjects (memory: about 10 bytes a cell beyond the code matrix).

    Returns:
        A :class:`StreamedFit`; ``diagnostics`` holds the marginal log-likelihood, the EM steps,
        the last change and the seconds of reading and fitting.
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
    blocks, rows = _blocks(codes, block_cells)
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
    b, la, it, change, ll = _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps,
                                     max_iter, tol)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    mean, sd, _, _ = _eap_pass(blocks, jnp.exp(la), b, jnp.asarray(grid, f64),
                               jnp.asarray(log_prior, f64), 0.95, cdt)
    n_s = responses.n_subjects
    items = pd.DataFrame({"difficulty": np.asarray(b), "discrimination": np.exp(np.asarray(la))},
                         index=responses.items)
    subjects = pd.DataFrame({"ability": np.asarray(mean)[:n_s],
                             "ability_sd": np.asarray(sd)[:n_s]}, index=responses.subjects)
    converged = bool(change <= tol)
    return StreamedFit(items, subjects, converged, {
        "marginal_log_lik": float(ll), "iterations": it, "max_change": float(change),
        "nodes": nodes, "n_responses": responses.n_responses,
        "n_subjects": n_s, "n_items": responses.n_items, "block_rows": rows,
        "seconds_read": t_read, "seconds_total": time.perf_counter() - t0})


def score_streamed_2pl(responses: CodedResponses | str | Path, items: pd.DataFrame, *,
                       level: float = 0.95, eap_nodes: int = 241, block_cells: int = 1 << 24,
                       batch_rows: int = 1 << 22) -> pd.DataFrame:
    """EAP abilities of new subjects against frozen 2PL items, block by block.

    ``items``: indexed by item label with ``difficulty`` and ``discrimination`` columns (a
    fit's ``items``); every item of ``responses`` must be there (the extra ones are unused).
    Under the prior ``theta ~ N(0, 1)`` on ``eap_nodes`` even points over +-6, each subject gets
    its posterior mean (``ability``), SD (``ability_sd``) and central ``level`` interval
    (``lower``, ``upper``: posterior quantiles). Float64 required, as for the fit.
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
    blocks, _ = _blocks(responses.codes, block_cells)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    f64 = jnp.float64
    out = _eap_pass(blocks, jnp.asarray(frozen[:, 1], f64), jnp.asarray(frozen[:, 0], f64),
                    jnp.asarray(grid, f64), jnp.asarray(log_prior, f64), level, jnp.float32)
    n_s = responses.n_subjects
    return pd.DataFrame({k: np.asarray(v)[:n_s] for k, v in
                         zip(("ability", "ability_sd", "lower", "upper"), out, strict=True)},
                        index=responses.subjects)
