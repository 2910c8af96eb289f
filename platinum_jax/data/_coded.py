"""Binary responses one byte per (subject, item) cell, read from Parquet in record batches.

A leaderboard of ``N`` subjects (AI models) and ``J`` items is held as an ``int8`` matrix of
codes ``c_sj``: 0 not observed, 1 wrong, 2 right. That is one byte per cell: 0.4 GB for
40,000 x 10,000 cells, against 0.9 GB for the same 10^8 responses as long rows (two ``int32``
indices and an ``int8`` response), so this layout is the smaller of the two whenever more than
one cell in nine is observed. The Parquet file is read in record batches (never as one frame):
each batch's labels are coded against the labels seen so far (integer labels are their own
codes), and only the row codes (9 bytes a response) are kept until the matrix is filled.
:func:`platinum_jax.inference.fit_streamed_2pl` fits a 2PL to it block by block.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

__all__ = ["CodedResponses", "read_parquet_streamed"]

_ROW_ALIGN = 256  # the code matrix's rows are padded to a multiple of this (empty subjects)
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
    #: the code matrix's rows are padded to a multiple of this
    ROW_ALIGN: ClassVar[int] = _ROW_ALIGN

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

    @staticmethod
    def parquet_shape(path: str | Path) -> tuple[int | None, int | None, int]:
        """``(subjects, items, rows)`` of a long Parquet file of responses, without reading
        its responses: rows from the metadata; the labels counted (two columns read) up to
        :data:`DENSE_CELLS` rows, above that bounded by the row groups' statistics for
        integer labels (``max - min + 1``), else None."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from platinum_jax._memory import DENSE_CELLS

        pf = pq.ParquetFile(path)
        n = pf.metadata.num_rows
        cols = [_column(pf.schema_arrow.names, role, Path(path)) for role in ("subject", "item")]
        if n > DENSE_CELLS:
            return (*(_integer_span(pf, c) for c in cols), n)
        labels = pf.read(columns=cols)
        return (len(pc.unique(labels.column(0))), len(pc.unique(labels.column(1))), n)

    def to_parquet(self, path: str | Path, *, group_responses: int = 1 << 22) -> int:
        """Write the responses as long rows (subject, item, response: ``int8`` 0 or 1),
        subjects in order, one row group per block of about ``group_responses`` responses:
        memory is one block's rows, never a frame of them all. Integer labels stay integers,
        others are written as strings. Returns the rows written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        subjects, items = _arrow_labels(self.subjects), _arrow_labels(self.items)
        schema = pa.schema([("subject", subjects.type), ("item", items.type),
                            ("response", pa.int8())])
        per_subject = max(1, self.n_responses // max(self.n_subjects, 1))
        step = max(1, group_responses // per_subject)
        written = 0
        with pq.ParquetWriter(path, schema, compression="snappy") as writer:
            for start in range(0, self.n_subjects, step):
                block = self.codes[start:min(start + step, self.n_subjects)]
                s, i = np.nonzero(block)
                writer.write_table(pa.Table.from_arrays(
                    [subjects.take(pa.array(s + start)), items.take(pa.array(i)),
                     pa.array(block[s, i] - 1, pa.int8())], schema=schema))
                written += s.size
        return written

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


def _arrow_labels(index: pd.Index):
    """Labels as an Arrow array: integers stay integers, anything else becomes strings."""
    import pyarrow as pa

    if pd.api.types.is_integer_dtype(index.dtype):
        return pa.array(np.asarray(index, np.int64))
    return pa.array([str(v) for v in index], pa.string())


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
    kind = pf.schema_arrow.field(cols[2]).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
            or pa.types.is_boolean(kind)):
        raise ValueError(f"{path}: column {cols[2]!r} holds {kind} values; the streamed 2PL "
                         "reads responses 0 or 1 (integers, floats or booleans): recode them "
                         "(e.g. correct -> 1, wrong -> 0) and write the file again")
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
    from platinum_jax._memory import check_memory

    cells = len(index[0]) * len(index[1])
    check_memory(cells + 9 * n, f"the code matrix of {path} ({len(index[0]):,} subjects x "
                 f"{len(index[1]):,} items, one byte a cell)",
                 "split the subjects over several files and fit a sample, or use a machine "
                 "with more memory")
    codes = _fill(s_rows, i_rows, y_rows, len(index[0]), len(index[1]), str(path))
    return CodedResponses(codes, index[0], index[1], int(n))


def _integer_span(pf, name: str) -> int | None:
    """Distinct integer labels of column ``name`` at most, from the row groups' statistics
    (None for other labels, or statistics missing)."""
    import pyarrow as pa

    if not pa.types.is_integer(pf.schema_arrow.field(name).type):
        return None
    k = pf.schema_arrow.get_field_index(name)
    lo, hi = [], []
    for g in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(g).column(k).statistics
        if stats is None or not stats.has_min_max:
            return None
        lo.append(stats.min)
        hi.append(stats.max)
    return int(max(hi)) - int(min(lo)) + 1 if lo else None
